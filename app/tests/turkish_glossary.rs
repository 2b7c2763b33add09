//! One Turkish term per concept everywhere a learner reads Turkish: the app's Fluent files, the
//! quiz banks, the generated questions, the lessons and their Show me targets. The glossary and
//! its finder are `tplab_lessons::glossary` (listed in lessons/README.md).

use tplab_lessons::glossary::{rejected_in_fluent, rejected_in_markdown, rejected_in_text};
use tplab_lessons::{Catalog, Lang, View};
use tplab_quiz::generate::{generate, GenKind};
use tplab_quiz::{Bank, Question, QuestionKind};

/// Every Turkish string of a question: prompt, explanation, choices or items, unit, feedback.
fn turkish_of(q: &Question) -> Vec<String> {
    let mut out = vec![
        q.prompt(Lang::Tr).to_string(),
        q.explanation(Lang::Tr).to_string(),
    ];
    match &q.kind {
        QuestionKind::Single { choices, .. } | QuestionKind::Multiple { choices, .. } => {
            out.extend(choices.iter().map(|c| c.tr.clone()));
        }
        QuestionKind::Ordering { items } => out.extend(items.iter().map(|c| c.tr.clone())),
        QuestionKind::Numeric { unit, .. } => out.extend(unit.iter().map(|u| u.tr.clone())),
    }
    out.extend(q.choice_feedback.iter().flatten().map(|f| f.tr.clone()));
    out
}

#[test]
fn fluent_files_use_the_glossary_s_terms() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../lessons/i18n/tr");
    let mut problems = Vec::new();
    let mut files = 0;
    for entry in std::fs::read_dir(dir).expect("lessons/i18n/tr") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "ftl") {
            files += 1;
            let text = std::fs::read_to_string(&path).expect("a Fluent file");
            for r in rejected_in_fluent(&text) {
                problems.push(format!("{}: {r}", path.display()));
            }
        }
    }
    assert!(files >= 5, "found {files} Fluent files in {dir}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn quiz_banks_and_generated_questions_use_the_glossary_s_terms() {
    let bank = Bank::embedded().expect("the shipped banks load");
    let mut problems = Vec::new();
    let mut check = |id: &str, texts: Vec<String>| {
        for t in texts {
            for r in rejected_in_text(&t) {
                problems.push(format!("{id}: {r}"));
            }
        }
    };
    for q in &bank.questions {
        check(&q.id, turkish_of(q));
    }
    for kind in GenKind::ALL {
        for seed in 0..60 {
            let q = generate(kind, seed);
            check(&q.id, turkish_of(&q));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn lessons_and_show_me_targets_use_the_glossary_s_terms() {
    let catalog = Catalog::embedded().expect("the shipped lessons load");
    let mut problems = Vec::new();
    for l in &catalog.lessons {
        for r in rejected_in_markdown(l.body.get(Lang::Tr)) {
            problems.push(format!("lesson {}: {r}", l.slug));
        }
        for r in rejected_in_text(&l.title.tr) {
            problems.push(format!("lesson {} title: {r}", l.slug));
        }
        for t in &l.show_me {
            for r in rejected_in_text(&t.describe_in(Lang::Tr)) {
                problems.push(format!("lesson {} Show me: {r}", l.slug));
            }
        }
    }
    for v in View::ALL {
        for r in rejected_in_text(&v.name_in(Lang::Tr)) {
            problems.push(format!("view {}: {r}", v.name()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Issue 37's Turkish pairs: each variant a Turkish engineer would rewrite is refused, and the
/// wording the course uses instead passes; the checks above run the same finder over the
/// lessons, the banks, the generated questions and the Fluent files.
#[test]
fn the_glossary_covers_the_third_reading_s_pairs() {
    let pairs = [
        ("fc1'in çıkışı", "fc1'in çıktısı (çıkış projeksiyonu ayrı)"),
        ("kod çözme adımı", "token üretimi (decode) adımı"),
        ("uzmanlar karışımı", "Uzmanların Karması (MoE)"),
        (
            "güvenlik ve gözlemlenebilirlik boşlukları",
            "güvenlik ve gözlemlenebilirlik eksiklikleri",
        ),
        ("sıralar üzerinden ortalama", "rank'ler üzerinden ortalama"),
        ("dil modeli başlığı", "dil modeli kafası"),
        ("o ağ ekseni", "o ızgara (mesh) ekseni"),
        ("Korkuluk: kıyaslayın.", "Önlem: kıyaslayın."),
        ("bir ileri geçiş bir tık", "bir ileri geçiş bir birim süre"),
        (
            "EP grupları kopyaları döşer",
            "EP grupları kopyaları tam olarak paylaşır",
        ),
        ("düz çok kafalı dikkat", "klasik çok kafalı dikkat"),
        ("f ileri geçişte birim", "f ileri geçişte birim dönüşüm"),
    ];
    for (bad, good) in pairs {
        assert_eq!(rejected_in_text(bad).len(), 1, "{bad:?} must be refused");
        assert_eq!(rejected_in_text(good), Vec::new(), "{good:?} must pass");
    }
}
