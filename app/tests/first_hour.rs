//! The rough edges a first hour hit (issue 22, item 7), driven as a learner drives the app:
//! the walkthrough's round after the layer changes, digits typed in the Quiz, the right choice
//! marked with its lesson linked, and a lesson's previous/next buttons. (The exam's question
//! before submitting unanswered questions is in `exam.rs`, with the exam's data folder.)

mod common;
use common::{click, press};
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use tplab::lab::ShowMe;
use tplab::TplabApp;

fn harness(app: TplabApp) -> Harness<'static, TplabApp> {
    let mut h = Harness::builder()
        .with_size([1280.0, 820.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    h.run_steps(2);
    h
}

/// A node's accessible text (its label, or a text label's value).
fn text(node: &egui_kittest::Node<'_>) -> String {
    let n = node.accesskit_node();
    n.label().or_else(|| n.value()).unwrap_or_default()
}

#[test]
fn the_walkthroughs_round_starts_again_when_the_layer_changes() {
    let mut app = TplabApp::default();
    // Rounds, not predictions (a new scenario would ask at this step again).
    app.load_view_state("step", r#"{"predict": false}"#);
    let mut h = harness(app);
    // GPT-2 small on 4 GPUs, at the g after attention: a ring all-reduce of 6 rounds.
    h.state_mut().show_me(&ShowMe {
        view: tplab_lessons::View::Step,
        event: Some("attn.g".into()),
        ..Default::default()
    });
    h.run_steps(2);
    h.get_by_label_contains("round 1 of 6");
    press(&mut h, egui::Key::ArrowRight, 1);
    press(&mut h, egui::Key::ArrowRight, 1);
    h.get_by_label_contains("round 3 of 6");
    // The numbers layer (2 GPUs): the same step is a ring of 2 rounds, shown from its first.
    let numbers = tplab::views::step::numbers_config();
    h.state_mut().shared.scenario.set_config(numbers);
    h.run_steps(2);
    assert!(h.query_by_label_contains("round 3 of 2").is_none());
    h.get_by_label_contains("round 1 of 2");
}

#[test]
fn digits_typed_in_the_quiz_or_a_lesson_do_not_change_tp() {
    let mut h = harness(TplabApp::default());
    for view in ["Quiz", "Lessons"] {
        click(&mut h, view, 2);
        press(&mut h, egui::Key::Num8, 2);
        press(&mut h, egui::Key::Num2, 2);
        assert_eq!(h.state().shared.scenario.config().tp, 4, "{view}");
    }
    // Elsewhere a digit is still a TP size.
    click(&mut h, "Playground", 2);
    press(&mut h, egui::Key::Num2, 2);
    assert_eq!(h.state().shared.scenario.config().tp, 2);
}

#[test]
fn quiz_feedback_marks_the_right_choice_and_links_its_lesson() {
    let mut app = TplabApp::default();
    // The practice set's first question: the guide's "What is tensor parallelism", one right
    // choice, citing the lesson what-is-tp.
    assert!(app.load_view_state("quiz", r#"{"seed":7,"index":0}"#));
    assert!(app.select("quiz"));
    let mut h = harness(app);
    assert!(h.query_by_label_contains("the right answer").is_none());
    // A wrong pick (the seed puts the right choice first).
    h.get_by(|n| n.label().is_some_and(|l| l.starts_with("B) ")))
        .click();
    h.run_steps(2);
    click(&mut h, "Check answer", 2);
    let marked: Vec<String> = h
        .query_all_by_label_contains("✔ the right answer")
        .map(|n| text(&n))
        .collect();
    assert_eq!(marked.len(), 1, "{marked:?}");
    assert!(marked[0].contains("split the math inside a single layer"));
    // The wrong pick says it was the learner's.
    let mine: Vec<String> = h
        .query_all_by_label_contains("✖ your answer")
        .map(|n| text(&n))
        .collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert!(mine[0].starts_with("B) "), "{mine:?}");
    let catalog = tplab_lessons::Catalog::embedded().unwrap();
    let lesson = catalog.get("what-is-tp").unwrap();
    let link = format!(
        "Lesson {}: {}",
        lesson.order,
        lesson.title.get(tplab_lessons::Lang::En)
    );
    click(&mut h, &link, 3);
    assert_eq!(h.state().active_id(), "lessons");
    h.get_by_label(&format!(
        "Lesson {} of {}",
        lesson.order,
        catalog.lessons.len()
    ));
}

#[test]
fn a_lesson_has_previous_and_next_buttons() {
    let mut h = harness(TplabApp::default());
    click(&mut h, "Lessons", 2);
    let catalog = tplab_lessons::Catalog::embedded().unwrap();
    let total = catalog.lessons.len();
    let title = |i: usize| {
        catalog.lessons[i]
            .title
            .get(tplab_lessons::Lang::En)
            .to_string()
    };
    h.get_by_label(&format!("Lesson 1 of {total}"));
    assert!(h.query_by_label("◀ Previous lesson").is_none());
    // The button at the top (the same one ends the lesson's text).
    let next = format!("Next lesson: {} ▶", title(1));
    h.get_all_by_label(&next).next().unwrap().click();
    h.run_steps(2);
    h.get_by_label(&format!("Lesson 2 of {total}"));
    click(&mut h, "◀ Previous lesson", 2);
    h.get_by_label(&format!("Lesson 1 of {total}"));
}

#[test]
fn eight_gpus_on_gpt2_small_show_why_and_offer_sixteen_heads() {
    let mut h = harness(TplabApp::default());
    click(&mut h, "TP=8", 2);
    // The heads drawn by GPU, 8 placed and 4 left over, and why.
    h.get_by_label("12 heads coloured by GPU: 1 per GPU, 4 left over");
    h.get_by_label_contains("12 heads over 8 GPUs is 1 whole head(s) each with 4 left over");
    click(
        &mut h,
        "Use 16 heads of size 48 (splits over 8 GPUs: one node)",
        2,
    );
    let cfg = h.state().shared.scenario.config().clone();
    assert_eq!((cfg.hidden, cfg.heads, cfg.tp), (768, 16, 8));
    assert!(h.state().shared.scenario.derived().is_ok());
    h.get_by_label_contains("W_qkv [768, 2304]");
}

#[test]
fn the_timeline_opens_on_lesson_ones_numbers() {
    // Lesson 1: GPT-2 small at TP=4 on H100s takes 112.1 µs, 78.6 µs of it communication.
    let mut h = harness(TplabApp::default());
    click(&mut h, "Timeline", 3);
    h.get_by_label(
        "Makespan 112.1 µs, of which 78.6 µs (70%) is communication every GPU waits for.",
    );
}

#[test]
fn precision_and_train_start_by_themselves_when_first_shown() {
    let mut app = TplabApp::default();
    // The app's own start-up turns this on (`TplabApp::new`); `default()` leaves it off.
    app.shared.autostart_jobs = true;
    // A small layer: the sweep is quick.
    app.shared
        .scenario
        .set_config(tplab_engine::config::Preset::Tiny.config());
    let mut h = harness(app);
    click(&mut h, "Precision", 2);
    let started = h.query_by_label_contains("forward passes (").is_some()
        || h.query_by_label_contains("Reference: max|y|").is_some();
    assert!(started, "the sweep did not start");
    assert!(h.query_by_label("Run the sweep").is_none());
    assert!(common::wait_until(&mut h, 3000, 10, |h| h
        .query_by_label_contains("Reference: max|y|")
        .is_some()));
    // Training starts too: its button is Stop while it runs.
    click(&mut h, "Train", 2);
    h.get_by_label("Stop");
    click(&mut h, "Stop", 2);
    assert!(common::wait_until(&mut h, 3000, 10, |h| h
        .query_by_label("Start training")
        .is_some()));
    // Shown again, it does not start a second time by itself.
    click(&mut h, "Playground", 2);
    click(&mut h, "Train", 2);
    h.get_by_label("Start training");
}

#[test]
fn each_view_links_the_lesson_that_explains_it() {
    let mut h = harness(TplabApp::default());
    let catalog = tplab_lessons::Catalog::embedded().unwrap();
    let en = tplab_lessons::Lang::En;
    for (view, slug) in [
        ("Playground", "what-is-tp"),
        ("Walkthrough", "f-and-g"),
        ("Collectives", "all-reduce"),
        ("Vocabulary", "vocab-parallel"),
    ] {
        click(&mut h, view, 2);
        let lesson = catalog.get(slug).unwrap();
        let link = format!("Lesson {}: {}", lesson.order, lesson.title.get(en));
        click(&mut h, &link, 3);
        assert_eq!(h.state().active_id(), "lessons", "{view}");
        h.get_by_label(&format!(
            "Lesson {} of {}",
            lesson.order,
            catalog.lessons.len()
        ));
    }
    // The Lessons and Quiz views have no such link.
    assert!(h.query_by_label_contains("Lesson 1: ").is_none());
}

/// The Playground at TP=8 on GPT-2 small (12 heads: 4 left over), at a desk and on a projector.
#[test]
fn heads_that_do_not_split_snapshots() {
    use tplab::app::{ThemeChoice, SIDE_BAR_WIDTH};
    use tplab_lessons::Lang;
    let mut results = egui_kittest::SnapshotResults::new();
    for (w, hgt, lang, theme, presenter, name) in [
        (
            1280.0,
            720.0,
            Lang::En,
            ThemeChoice::Light,
            false,
            "1280x720_en_light",
        ),
        (
            1600.0,
            1000.0,
            Lang::Tr,
            ThemeChoice::Light,
            false,
            "1600x1000_tr_light",
        ),
        (
            1920.0,
            1080.0,
            Lang::Tr,
            ThemeChoice::Dark,
            true,
            "1920x1080_tr_dark_presenter",
        ),
    ] {
        let mut app = TplabApp::default();
        app.set_theme(theme);
        app.shared.presenter = presenter;
        app.shared.scenario.set_tp(8);
        let mut h = common::gl_harness_pixels(app, (w, hgt), lang, "playground");
        if !presenter {
            h.mask(egui::Rect::from_min_max(
                egui::pos2(0.0, 0.0),
                egui::pos2(SIDE_BAR_WIDTH + 2.0, hgt),
            ));
        }
        h.snapshot_options(format!("heads_tp8_{name}"), &common::snapshot_options());
        results.extend_harness(&mut h);
    }
    results.unwrap();
}
