//! Every Show me target opens what its question talks about: the TP size, the number of GPUs,
//! the GPU and the model its prompt names ([`tplab_lessons::ShowMe::disagreements`]). Lesson
//! targets are checked against their labels by `tplab lessons check` (the catalog's loader).

use tplab_quiz::bank::Bank;
use tplab_quiz::generate::{generate, GenKind};
use tplab_quiz::{Lang, Question};

fn problems_of(q: &Question) -> Vec<String> {
    let Some(t) = &q.show_me else {
        return Vec::new();
    };
    let text = match &t.label {
        Some(label) => format!("{} {}", q.prompt(Lang::En), label.en),
        None => q.prompt(Lang::En).to_string(),
    };
    t.disagreements(&text)
        .into_iter()
        .map(|d| format!("{} ({}): {d}", q.id, t.describe()))
        .collect()
}

#[test]
fn bank_targets_open_what_the_question_names() {
    let bank = Bank::embedded().expect("the shipped banks load");
    let problems: Vec<String> = bank.questions.iter().flat_map(problems_of).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn generated_targets_open_what_the_question_names() {
    let mut problems = Vec::new();
    for kind in GenKind::ALL {
        for seed in 0..200 {
            problems.extend(problems_of(&generate(kind, seed)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checker finds the mismatches the course once had (issue 24): a question about 8 GPUs
/// that opened TP 4, a planner with no model, GPT-3 shown on GPT-2 small's layer.
#[test]
fn the_checker_finds_known_mismatches() {
    let parse = |s: &str| -> tplab_lessons::ShowMe { toml::from_str(s).expect("a target") };
    let ring = parse("view = \"collectives\"\ntp = 4");
    assert!(!ring
        .disagreements("How many steps does a ring all-reduce over 8 GPUs take?")
        .is_empty());
    let planner = parse("view = \"planner\"\ntp = 4");
    assert!(!planner
        .disagreements("Why does TP over InfiniBand hurt?")
        .is_empty());
    let memory = parse("view = \"memory\"\ntp = 8");
    assert!(!memory
        .disagreements("A 175B-parameter model in bf16 is split with TP=8.")
        .is_empty());
    let timeline = parse("view = \"timeline\"\ntp = 4");
    assert!(!timeline
        .disagreements("Compute and communication per GPU on H100s")
        .is_empty());
    let ok = parse("view = \"timeline\"\ntp = 4\ngpu = \"h100\"");
    assert_eq!(
        ok.disagreements("Four H100s: the same layer at TP=4"),
        Vec::<String>::new()
    );
}
