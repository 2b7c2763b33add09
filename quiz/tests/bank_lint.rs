//! The bank lint: choice questions must not give their answer away by length, and every wrong
//! choice must say why it is wrong. Run over every shipped bank, in every language.
//!
//! Rules, per bank file and language:
//! 1. **Longest-answer rule.** In at most a third of the bank's single-choice questions may the
//!    right choice be strictly longer than every distractor. If choices were written without
//!    regard to length, the right one would be the longest in about 1/k of k-choice questions
//!    (1/4 with four choices); a third leaves room for a few answers that must be precise, while
//!    the reported starting point (17 of 18) fails it by far. A tie gives nothing away and is
//!    not counted.
//! 2. **Much-longer rule.** In no choice question may a right choice be more than 1.5 times as
//!    long (in characters) as the longest distractor. Item-writing guides ask for choices "about
//!    equal in length"; 1.5× is the point where the difference is visible at a glance: at the
//!    quiz's line width a 90-character distractor fits one line, a right choice of 135 or more
//!    wraps to a second line that no other choice has.
//! 3. **Feedback rule.** Every distractor carries feedback, in every language, saying why it
//!    fails (the bank loader already rejects feedback missing a language).
//!
//! The lint is also run on banks built to break each rule, so it is known to fail when it
//! should.

use tplab_lessons::Catalog;
use tplab_quiz::bank::{Bank, EMBEDDED};
use tplab_quiz::generate::{self, GenKind};
use tplab_quiz::{Lang, Question, QuestionKind};

/// The longest-answer rule's limit: "more than about a third".
const MAX_LONGEST_FRACTION: f64 = 1.0 / 3.0;
/// The much-longer rule's limit (see the module docs).
const MAX_LENGTH_RATIO: f64 = 1.5;

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `(right choice lengths, distractor lengths)` of a choice question in `lang`.
fn lengths(q: &Question, lang: Lang) -> Option<(Vec<usize>, Vec<usize>)> {
    if !matches!(
        q.kind,
        QuestionKind::Single { .. } | QuestionKind::Multiple { .. }
    ) {
        return None;
    }
    let (mut right, mut wrong) = (Vec::new(), Vec::new());
    for (i, c) in q.choices().iter().enumerate() {
        let n = chars(c.get(lang));
        if q.is_correct_choice(i) {
            right.push(n);
        } else {
            wrong.push(n);
        }
    }
    Some((right, wrong))
}

/// Every problem the lint finds in `questions` (one bank) in `lang`.
fn lint(bank: &str, questions: &[Question], lang: Lang, need_feedback: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let (mut singles, mut longest) = (0usize, Vec::new());
    for q in questions {
        let Some((right, wrong)) = lengths(q, lang) else {
            continue;
        };
        let max_wrong = wrong.iter().copied().max().unwrap_or(0);
        if matches!(q.kind, QuestionKind::Single { .. }) {
            singles += 1;
            if right.iter().all(|&r| r > max_wrong) {
                longest.push(q.id.as_str());
            }
        }
        for &r in &right {
            if r as f64 > MAX_LENGTH_RATIO * max_wrong as f64 {
                problems.push(format!(
                    "{bank} [{lang}] '{}': a right choice has {r} characters, more than \
                     {MAX_LENGTH_RATIO}× the longest distractor ({max_wrong}); shorten it or \
                     write distractors as detailed",
                    q.id
                ));
            }
        }
        if need_feedback {
            for i in 0..q.choices().len() {
                if !q.is_correct_choice(i) && q.choice_feedback(i, lang).is_none() {
                    problems.push(format!(
                        "{bank} [{lang}] '{}': choice {} is a distractor without `feedback`",
                        q.id,
                        i + 1
                    ));
                }
            }
        }
    }
    if longest.len() as f64 > MAX_LONGEST_FRACTION * singles as f64 {
        problems.push(format!(
            "{bank} [{lang}]: the right choice is the longest in {} of {singles} single-choice \
             questions (at most a third allowed): {}",
            longest.len(),
            longest.join(", ")
        ));
    }
    problems
}

fn load(file: &str, text: &str) -> Vec<Question> {
    match Bank::from_files([(file, text)], None) {
        Ok(b) => b.questions,
        Err(d) => panic!("{file} does not load:\n{d}"),
    }
}

#[test]
fn every_shipped_bank_passes_the_lint_in_every_language() {
    let mut problems = Vec::new();
    let mut singles = 0;
    for (file, text) in EMBEDDED {
        let qs = load(file, text);
        singles += qs
            .iter()
            .filter(|q| matches!(q.kind, QuestionKind::Single { .. }))
            .count();
        for lang in Lang::ALL {
            problems.extend(lint(file, &qs, lang, true));
        }
    }
    assert!(
        singles >= 18,
        "the lint saw {singles} single-choice questions"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Generated choice questions have fixed choices whose right one depends on the numbers: the
/// much-longer rule and the feedback rule hold for them too (over many seeds, so every verdict
/// occurs).
#[test]
fn generated_choice_questions_pass_the_lint() {
    let mut problems = Vec::new();
    for kind in GenKind::ALL {
        for seed in 0..60 {
            let q = generate::generate(kind, seed);
            for lang in Lang::ALL {
                // The longest-answer rule is about a bank's authored set; one generated question
                // alone is a set of one, so only rules 2 and 3 apply.
                problems.extend(
                    lint(&q.id, std::slice::from_ref(&q), lang, true)
                        .into_iter()
                        .filter(|p| !p.contains("is the longest in")),
                );
            }
        }
    }
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A test bank's question `id` of `kind`: a placeholder prompt and explanation (its Turkish
/// `explanation_tr`), then `rest`. It starts with a newline: in a bank of one question,
/// `[[question]]` stands on line 2.
fn question(id: &str, kind: &str, explanation_tr: &str, rest: &str) -> String {
    format!(
        "\n[[question]]\nid = \"{id}\"\nkind = \"{kind}\"\nprompt = {{ en = \"P\", tr = \"P\" }}\n\
         explanation = {{ en = \"E\", tr = \"{explanation_tr}\" }}\n{rest}"
    )
}

/// A test bank's single-choice question `id` with `choices` (TOML inline tables), see
/// [`question`].
fn single(id: &str, choices: &[&str]) -> String {
    let lines: String = choices.iter().map(|c| format!("  {c},\n")).collect();
    question(id, "single", "E", &format!("choices = [\n{lines}]\n"))
}

/// Three single-choice questions that give their answers away (see the test below).
fn giveaway() -> String {
    let no = r#"feedback = { en = "no", tr = "hayır" }"#;
    let right_long =
        r#"{ correct = true, en = "the right answer, long", tr = "doğru cevap, uzun" }"#;
    [
        single(
            "a",
            &[
                &format!(r#"{{ en = "short", tr = "kısa", {no} }}"#),
                right_long,
                &format!(r#"{{ en = "also short", tr = "bu da kısa", {no} }}"#),
            ],
        ),
        single(
            "b",
            &[
                right_long,
                r#"{ en = "a wrong one, not long", tr = "yanlış olan, uzun değil" }"#,
            ],
        ),
        single(
            "c",
            &[
                r#"{ correct = true, en = "1234", tr = "1234" }"#,
                &format!(r#"{{ en = "1234", tr = "1234", {no} }}"#),
            ],
        ),
    ]
    .concat()
}

#[test]
fn the_lint_fails_banks_that_give_answers_away() {
    let qs = load("giveaway.toml", &giveaway());
    let en = lint("giveaway.toml", &qs, Lang::En, true);
    let all = en.join("\n");
    // Rule 1: right choice longest in 2 of 3 (the tie in 'c' does not count).
    assert!(
        all.contains("the longest in 2 of 3 single-choice questions"),
        "{all}"
    );
    // Rule 2: 'a' has 22 characters against 10 (2.2×); 'b' 22 against 21 passes.
    assert!(
        all.contains("'a': a right choice has 22 characters"),
        "{all}"
    );
    assert!(!all.contains("'b': a right choice"), "{all}");
    // Rule 3: 'b' has a distractor without feedback.
    assert!(
        all.contains("'b': choice 2 is a distractor without `feedback`"),
        "{all}"
    );
    // Turkish is checked separately: "doğru cevap, uzun" (17) against "bu da kısa" (10) is 1.7×.
    let tr = lint("giveaway.toml", &qs, Lang::Tr, true).join("\n");
    assert!(
        tr.contains("[tr] 'a': a right choice has 17 characters"),
        "{tr}"
    );
}

#[test]
fn feedback_without_a_language_is_refused_by_the_loader() {
    let text = single(
        "f",
        &[
            r#"{ correct = true, en = "x", tr = "x" }"#,
            r#"{ en = "y", tr = "y", feedback = { en = "why not", tr = " " } }"#,
        ],
    );
    let d = Bank::from_files([("f.toml", text.as_str())], None).unwrap_err();
    assert!(
        d.to_string()
            .contains("question 'f': choice 2's feedback has no tr text"),
        "{d}"
    );
}

#[test]
fn malformed_bank_names_file_line_and_rule() {
    let rest = r#"choices = [{ en = "x", tr = "x", correct = true }, { en = "y", tr = "y", correct = true }]
show_me = { view = "step", tp = 8 }
"#;
    let text = question("a", "single", "", rest);
    let d = Bank::from_files([("bad.toml", text.as_str())], None).unwrap_err();
    let s = d.to_string();
    assert!(
        s.contains("bad.toml:2: question 'a': explanation has no tr text"),
        "{s}"
    );
    assert!(
        s.contains("bad.toml:2: question 'a': a single-choice question needs exactly one"),
        "{s}"
    );
    assert!(s.contains("12 heads cannot be split over 8 GPUs"), "{s}");

    let syntax = "[[question]]\nid = \"b\"\nkind = single\n";
    let d = Bank::from_files([("syntax.toml", syntax)], None).unwrap_err();
    assert_eq!(d.0[0].file, "syntax.toml");
    assert_eq!(d.0[0].line, Some(3), "{d}");
}

#[test]
fn unknown_lesson_is_reported() {
    let text = question(
        "n",
        "numeric",
        "E",
        "lesson = \"no-such-lesson\"\nanswer = 1\n",
    );
    let cat = Catalog::embedded().unwrap();
    let d = Bank::from_files([("x.toml", text.as_str())], Some(&cat)).unwrap_err();
    assert!(d
        .to_string()
        .contains("lesson 'no-such-lesson' does not exist"));
}

/// The one gloss that introduces "all-reduce" in Turkish, naming the guide's calque.
const ALL_REDUCE_GLOSS: &str = "(tümüne indirgeme; rehberde 'tümünü azaltma')";

/// Turkish terminology (issue 17): words a Turkish ML engineer would correct, with the fix.
const TURKISH_DONTS: [(&str, &str); 7] = [
    (
        "tümünü azaltma",
        "say \"all-reduce\" (the gloss appears once, where it is introduced)",
    ),
    ("ileride", "\"ileri geçişte\""),
    ("geride", "\"geri geçişte\""),
    ("transformatör", "\"Transformer\""),
    ("uyanların", "\"Uygun olanların\""),
    ("işlenmiş bir örnek", "\"Çözümlü örnek\""),
    ("sınır modelleri", "\"öncü (frontier) modeller\""),
];

/// Loanwords that take their Turkish suffix after an apostrophe: `token'ı`, `bias'ı`.
const LOANWORDS: [&str; 2] = ["token", "bias"];

/// Problems in one Turkish text.
fn turkish_problems(id: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // Turkish lower case: İ → i and I → ı (Rust's default maps İ to i + a combining dot).
    let lower = text
        .replace(ALL_REDUCE_GLOSS, "")
        .replace('İ', "i")
        .replace('I', "ı")
        .to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .collect();
    for (bad, fix) in TURKISH_DONTS {
        let found = if bad.contains(' ') {
            lower.contains(bad)
        } else {
            words.contains(&bad)
        };
        if found {
            out.push(format!("'{id}' [tr]: \"{bad}\": {fix}"));
        }
    }
    for w in &words {
        for lw in LOANWORDS {
            if let Some(rest) = w.strip_prefix(lw) {
                if rest.chars().next().is_some_and(char::is_alphabetic) {
                    out.push(format!(
                        "'{id}' [tr]: \"{w}\": write the suffix after an apostrophe ({lw}'{rest})"
                    ));
                }
            }
        }
    }
    out
}

fn turkish_texts(q: &Question) -> Vec<String> {
    let mut out = vec![
        q.prompt(Lang::Tr).to_string(),
        q.explanation(Lang::Tr).to_string(),
    ];
    for (i, c) in q.choices().iter().enumerate() {
        out.push(c.get(Lang::Tr).to_string());
        out.extend(q.choice_feedback(i, Lang::Tr).map(str::to_string));
    }
    if let QuestionKind::Ordering { items } = &q.kind {
        out.extend(items.iter().map(|i| i.get(Lang::Tr).to_string()));
    }
    out
}

#[test]
fn turkish_terminology_is_what_a_turkish_engineer_writes() {
    let mut questions = Bank::embedded().expect("banks load").questions;
    let glosses: usize = questions
        .iter()
        .flat_map(turkish_texts)
        .map(|t| t.matches(ALL_REDUCE_GLOSS).count())
        .sum();
    assert_eq!(
        glosses, 1,
        "the all-reduce gloss appears exactly once in the banks"
    );
    for kind in GenKind::ALL {
        questions.extend((0..40).map(|seed| generate::generate(kind, seed)));
    }
    let mut problems: Vec<String> = questions
        .iter()
        .flat_map(|q| {
            turkish_texts(q)
                .into_iter()
                .flat_map(|t| turkish_problems(&q.id, &t))
                .collect::<Vec<_>>()
        })
        .collect();
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The check itself finds what it should.
    let bad = turkish_problems(
        "x",
        "İleride iki tümünü azaltma; tokenların biası; token'ların bias'ı; ileri geçişte",
    );
    assert_eq!(bad.len(), 4, "{bad:?}");
}
