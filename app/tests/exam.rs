//! The certificate exam in the Quiz view, driven as a learner would (kittest), and snapshots of
//! the exam at 1280×720 and 1920×1080 in English and Turkish.
//!
//! Every test in this binary shares one temporary data folder (`TPLAB_DATA_DIR`, set once before
//! any harness exists) holding an issuer key, so the exam signs its certificates.
//! Regenerate the snapshots with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test exam`.

// Test helpers outside #[test] functions unwrap too: a failure there is a failed test.
#![allow(clippy::unwrap_used)]

mod common;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::{Harness, SnapshotResults};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tplab::app::ThemeChoice;
use tplab::TplabApp;
use tplab_quiz::bank::{Bank, QuestionKind};
use tplab_quiz::cert::{IssuerKey, Verdict};
use tplab_quiz::exam::{Exam, Sitting};
use tplab_quiz::grade::expected_answer;
use tplab_quiz::progress::Store;
use tplab_quiz::Lang;

fn issuer() -> IssuerKey {
    IssuerKey::from_seed([9; 32])
}

/// The shared data folder, made (with `issuer.key`) and exported before the first harness.
fn data_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Under the system's temporary folder, one per run: its path (shown on the result page)
        // is as long on every machine, where the target folder's depends on the checkout.
        let d = std::env::temp_dir().join(format!("tplab-exam-tests-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        // Owner-only, as `tplab cert keygen` writes it (a key others can read is refused).
        tplab_quiz::progress::write_atomic_private(
            &d.join("issuer.key"),
            issuer().to_file_text().as_bytes(),
            false,
        )
        .unwrap();
        // Set once, before any other thread of this binary reads it (they all come here first).
        std::env::set_var(tplab_quiz::progress::DATA_DIR_ENV, &d);
        d
    })
}

fn exam() -> Exam {
    Exam::embedded(&Bank::embedded().unwrap()).unwrap()
}

fn harness_sized(w: f32, h: f32, app: TplabApp) -> Harness<'static, TplabApp> {
    data_dir();
    Harness::builder()
        .with_size([w, h])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app)
}

fn open_exam(h: &mut Harness<'static, TplabApp>) {
    click(h, "Quiz", 2);
    click(h, "Certificate exam", 2);
}

fn type_name(h: &mut Harness<'static, TplabApp>, name: &str) {
    h.get_by_role(egui::accesskit::Role::TextInput).focus();
    h.run_steps(1);
    h.get_by_role(egui::accesskit::Role::TextInput)
        .type_text(name);
    h.run_steps(2);
}

/// The seed of the sitting on screen, read from the view's saved state.
fn sitting_seed(h: &Harness<'static, TplabApp>) -> Option<u64> {
    let json: serde_json::Value =
        serde_json::from_str(&h.state().view_state("quiz").unwrap()).unwrap();
    json["sitting"]["seed"].as_u64()
}

fn click_line(h: &mut Harness<'static, TplabApp>, letter: &str) {
    let prefix = format!("{letter}) ");
    h.get_by(|n| n.label().is_some_and(|l| l.starts_with(&prefix)))
        .click();
    // Two frames: a clicked ordering item leaves the list, and the next click must see the
    // list as it is now drawn.
    h.run_steps(2);
}

/// Answers question `i` of `sitting` with the right answer through the widgets, typing numbers
/// the way `lang` writes them.
fn answer_right(h: &mut Harness<'static, TplabApp>, sitting: &Sitting, i: usize, lang: Lang) {
    let (q, p) = (&sitting.questions[i], &sitting.presentations[i]);
    let expected = expected_answer(q, p, Lang::En);
    match &q.kind {
        QuestionKind::Single { .. } | QuestionKind::Multiple { .. } => {
            for l in expected.split(", ") {
                click_line(h, l);
            }
        }
        QuestionKind::Ordering { .. } => {
            for l in expected.split(' ') {
                click_line(h, l);
            }
        }
        QuestionKind::Numeric { answer, .. } => {
            type_name(
                h,
                &tplab_lessons::i18n::num_text(lang, &format!("{answer}")),
            );
        }
    }
}

#[test]
fn a_full_sitting_passes_saves_and_shows_a_signed_certificate() {
    let mut h = harness_sized(1280.0, 820.0, TplabApp::default());
    open_exam(&mut h);
    h.get_by_label_contains("questions drawn from a pool of");
    assert!(sitting_seed(&h).is_none());
    h.get_by_label_contains("Certificates are signed by issuer key ed25519:");
    type_name(&mut h, "Ada Lovelace");
    click(&mut h, "Start the exam", 2);
    let seed = sitting_seed(&h).expect("a sitting started");
    let sitting = exam().sitting(seed);
    let total = sitting.questions.len();
    for i in 0..total {
        h.get_by_label_contains(&format!("Question {} of {total}", i + 1));
        answer_right(&mut h, &sitting, i, Lang::En);
        // No verdict while the sitting is open.
        assert!(h.query_by_label("Right").is_none());
        assert!(h.query_by_label_contains("Wrong; the answer is").is_none());
        press(&mut h, egui::Key::Enter, 2); // Next, and on the last question: submit.
    }
    h.get_by_label(&format!("Passed: {total} of {total} right (100%)"));
    h.get_by_label_contains("The result is saved in your progress");
    h.get_by_label_contains("Signed by issuer key ed25519:");
    h.get_by_label_contains("Certificate saved:");
    assert_eq!(h.get_all_by_label("Right").count(), total, "the review");
    // The result is in the learner's progress, with the sitting's seed.
    let store = Store::at(data_dir());
    let p = store.load("Ada Lovelace").unwrap().progress;
    let rec = p.exams.last().unwrap();
    assert!(rec.passed);
    assert_eq!(rec.seed, Some(seed));
    let id = rec.certificate_id.clone().unwrap();
    let png = store
        .certificates_dir()
        .join(format!("tplab-certificate-{id}.png"));
    match tplab_quiz::cert::verify_file(&png, Some(&issuer().public())).unwrap() {
        // The app's exam carries its Open Badges 3.0 credential, as `tplab cert issue` does:
        // baked into the PNG and verified with it, and beside it as a `.jwt`.
        Verdict::Signed { cert, badge, .. } => {
            assert_eq!(cert.name, "Ada Lovelace");
            assert_eq!(cert.score_percent, 100);
            assert!(badge.is_some(), "no Open Badges credential in the PNG");
        }
        v => panic!("{v:?}"),
    }
    let jwt = png.with_extension("jwt");
    match tplab_quiz::cert::verify_file(&jwt, Some(&issuer().public())).unwrap() {
        Verdict::Badge { fingerprint, .. } => {
            assert_eq!(fingerprint, issuer().public().fingerprint());
        }
        v => panic!("{}: {v:?}", jwt.display()),
    }
}

#[test]
fn nothing_is_marked_before_submission_and_a_retake_draws_new_questions() {
    let mut h = harness_sized(1280.0, 820.0, TplabApp::default());
    open_exam(&mut h);
    assert!(h
        .query_by_label("Start the exam")
        .is_some_and(|n| n.accesskit_node().is_disabled()));
    type_name(&mut h, "Grace Hopper");
    press(&mut h, egui::Key::Enter, 2); // Enter starts the exam too.
    let first = sitting_seed(&h).expect("a sitting started");
    h.get_by_label_contains("20 unanswered");
    // Submitting with questions unanswered asks first (issue 22, item 7g); "Keep answering"
    // goes back to the sitting, "Submit anyway" submits.
    click(&mut h, "Submit the exam", 2);
    h.get_by_label("20 questions are unanswered (they count as wrong). Submit anyway?");
    assert!(h.query_by_label_contains("Not passed").is_none());
    click(&mut h, "Keep answering", 2);
    assert!(h.query_by_label_contains("Submit anyway?").is_none());
    assert_eq!(sitting_seed(&h), Some(first), "still sitting");
    click(&mut h, "Submit the exam", 2);
    click(&mut h, "Submit anyway", 2);
    h.get_by_label("Not passed: 0 of 20 right (0%); the pass mark is 80%.");
    // A failed sitting shows topics to revisit, never the answers.
    assert_eq!(
        h.query_all_by_label_contains("the answer is").count(),
        0,
        "no answer is shown after a failed sitting"
    );
    h.get_by_label("Topics to revisit");
    assert!(h.query_all_by_label_contains(" missed").count() >= 2);
    assert!(h.query_by_label_contains("Certificate saved").is_none());
    click(&mut h, "New sitting (new questions)", 2);
    click(&mut h, "Start the exam", 2);
    let second = sitting_seed(&h).expect("a second sitting");
    assert_ne!(first, second);
    let ids = |seed| -> std::collections::BTreeSet<String> {
        exam().draw(seed).into_iter().map(|q| q.id).collect()
    };
    assert!(2 * ids(first).intersection(&ids(second)).count() < 20);
    let p = Store::at(data_dir()).load("Grace Hopper").unwrap().progress;
    assert_eq!(p.exams.len(), 1, "the failed sitting is saved");
    assert!(!p.exams[0].passed);
}

#[test]
fn enter_checks_a_practice_answer_then_moves_on() {
    let mut h = harness_sized(1280.0, 820.0, TplabApp::default());
    click(&mut h, "Quiz", 2);
    h.get_by_label("What is tensor parallelism for large models?");
    h.get_by_label_contains(") A way to split the math inside a single")
        .click();
    h.run_steps(1);
    press(&mut h, egui::Key::Enter, 2);
    h.get_by_label("Correct!");
    press(&mut h, egui::Key::Enter, 2);
    h.get_by_label("How does tensor parallelism split work across GPUs?");
    h.get_by_label("Score: 1/1");
}

#[test]
fn a_name_with_a_direction_override_cannot_start_the_exam() {
    let mut h = harness_sized(1280.0, 820.0, TplabApp::default());
    open_exam(&mut h);
    type_name(&mut h, "Mallory\u{202E}yrollaM");
    h.get_by_label_contains("U+202E");
    press(&mut h, egui::Key::Enter, 2);
    assert!(sitting_seed(&h).is_none());
}

// ----- snapshots -----

use common::{click, gl_harness_in, press};

/// The Quiz view in exam mode with a fixed sitting (seed 2026, question `index`), in `lang`
/// and `theme`.
fn exam_snapshot_harness(
    w: f32,
    h: f32,
    lang: Lang,
    index: usize,
    theme: ThemeChoice,
) -> Harness<'static, TplabApp> {
    data_dir();
    let mut app = TplabApp::default();
    app.set_theme(theme);
    app.select("quiz");
    let state = serde_json::json!({
        "mode": "Exam",
        "learner": "Şule Öztürk",
        "sitting": { "seed": 2026, "index": index, "drafts": [] },
    });
    assert!(app.load_view_state("quiz", &state.to_string()));
    gl_harness_in(app, w, h, lang == Lang::Tr)
}

/// [`common::snapshot`], its result kept in `results`.
fn snapshot(harness: &mut Harness<'static, TplabApp>, name: &str, results: &mut SnapshotResults) {
    common::snapshot(harness, name);
    results.extend_harness(harness);
}

/// The longest prompt of the fixed sitting, so the snapshot shows the worst wrapping.
fn longest_question(seed: u64) -> usize {
    let s = exam().sitting(seed);
    (0..s.questions.len())
        .max_by_key(|&i| {
            let q = &s.questions[i];
            q.prompt(Lang::Tr).len()
                + s.presentations[i]
                    .lines(q, Lang::Tr)
                    .iter()
                    .map(|(_, t)| t.len())
                    .sum::<usize>()
        })
        .unwrap_or(0)
}

#[test]
fn exam_snapshots() {
    let index = longest_question(2026);
    let mut results = SnapshotResults::new();
    for (w, h) in [(1280.0, 720.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::Tr] {
            let mut harness = exam_snapshot_harness(w, h, lang, index, ThemeChoice::Light);
            let name = format!("exam_{}x{}_{}", w, h, lang.code());
            snapshot(&mut harness, &name, &mut results);
        }
    }
    // Dark, at the middle size, in Turkish (the longer texts).
    let mut harness = exam_snapshot_harness(1600.0, 1000.0, Lang::Tr, index, ThemeChoice::Dark);
    snapshot(&mut harness, "exam_1600x1000_tr_dark", &mut results);
    results.unwrap();
}

/// The result page after a submitted sitting (every answer right) with the certificate shown.
/// The certificate's picture and the saved path carry today's date and a temporary folder, so
/// they are masked; the layout around them is compared.
#[test]
fn exam_result_snapshots() {
    let sitting = exam().sitting(2026);
    let last = sitting.questions.len() - 1;
    let mut results = SnapshotResults::new();
    for (w, h) in [(1280.0, 720.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::Tr] {
            let mut harness = exam_snapshot_harness(w, h, lang, 0, ThemeChoice::Light);
            for i in 0..=last {
                answer_right(&mut harness, &sitting, i, lang);
                press(&mut harness, egui::Key::Enter, 2);
            }
            harness.run_steps(2);
            let saved_line = |v: &str| {
                v.starts_with("Certificate saved") || v.starts_with("Sertifika kaydedildi")
            };
            let masks: Vec<egui::Rect> = harness
                .query_all_by(|n| n.value().is_some_and(|v| saved_line(&v)))
                .map(|n| n.rect())
                .chain(harness.query_all_by_label("certificate").map(|n| n.rect()))
                .collect();
            assert!(
                masks.len() >= 2,
                "the saved path and the picture are on screen"
            );
            // Masked to the right edge: the process id in the path varies in length.
            for m in masks {
                harness.mask(m.with_max_x(w));
            }
            let name = format!("exam_result_{}x{}_{}", w, h, lang.code());
            snapshot(&mut harness, &name, &mut results);
        }
    }
    results.unwrap();
}

/// The result page of a failed sitting (submitted with nothing answered): the lessons to
/// revisit and how many of their questions were missed, and no answer.
#[test]
fn exam_failed_result_snapshots() {
    let mut results = SnapshotResults::new();
    for (w, h, lang, theme, presenter) in [
        (1280.0, 720.0, Lang::En, ThemeChoice::Light, false),
        (1920.0, 1080.0, Lang::Tr, ThemeChoice::Light, false),
        (1600.0, 1000.0, Lang::Tr, ThemeChoice::Dark, false),
        (1920.0, 1080.0, Lang::Tr, ThemeChoice::Dark, true),
    ] {
        data_dir();
        let mut app = TplabApp::default();
        app.set_theme(theme);
        app.shared.presenter = presenter;
        app.select("quiz");
        let state = serde_json::json!({
            "mode": "Exam",
            "learner": "Şule Öztürk",
            "sitting": { "seed": 2026, "index": 0, "drafts": [] },
        });
        assert!(app.load_view_state("quiz", &state.to_string()));
        let mut harness = if presenter {
            common::gl_harness_pixels(app, (w, h), lang, "quiz")
        } else {
            gl_harness_in(app, w, h, lang == Lang::Tr)
        };
        let submit = match lang {
            Lang::En => "Submit the exam",
            Lang::Tr => "Sınavı gönder",
        };
        click(&mut harness, submit, 2);
        let anyway = match lang {
            Lang::En => "Submit anyway",
            Lang::Tr => "Yine de gönder",
        };
        click(&mut harness, anyway, 2);
        let heading = match lang {
            Lang::En => "Topics to revisit",
            Lang::Tr => "Tekrar çalışılacak konular",
        };
        harness.get_by_label(heading);
        assert!(harness.query_by_label_contains("the answer is").is_none());
        assert!(harness.query_by_label_contains("doğru cevap").is_none());
        harness.run_steps(2);
        let name = format!(
            "exam_failed_{}x{}_{}_{}{}",
            w,
            h,
            lang.code(),
            if theme == ThemeChoice::Dark {
                "dark"
            } else {
                "light"
            },
            if presenter { "_presenter" } else { "" }
        );
        if presenter {
            harness.snapshot_options(&name, &common::snapshot_options());
            results.extend_harness(&mut harness);
        } else {
            snapshot(&mut harness, &name, &mut results);
        }
    }
    results.unwrap();
}
