//! Behaviour tests of the lessons and quiz views, driven by accessible labels.

use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use tplab::TplabApp;

fn harness() -> Harness<'static, TplabApp> {
    Harness::builder()
        .with_size([1280.0, 820.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default())
}

fn open(harness: &mut Harness<'static, TplabApp>, view: &str) {
    harness.get_by_label(view).click();
    harness.run_steps(2);
}

#[test]
fn lesson_show_me_lands_on_the_step_view_at_the_event() {
    let mut h = harness();
    open(&mut h, "Lessons");
    assert_eq!(h.state().active_id(), "lessons");
    h.get_by_label_contains("4. The MLP: columns first").click();
    h.run_steps(2);
    h.get_by_label_contains("Why GeLU needs no synchronisation");
    h.get_by_label_contains("Show me: The one all-reduce after fc2")
        .click();
    h.run_steps(2);
    assert_eq!(h.state().active_id(), "step");
    assert_eq!(h.state().shared.scenario.config().tp, 4);
    h.get_by_label_contains("· forward · mlp.g:");
}

#[test]
fn lesson_show_me_opens_grouped_query_attention_in_the_playground() {
    let mut h = harness();
    open(&mut h, "Lessons");
    h.get_by_label_contains("5. Attention: heads across GPUs")
        .click();
    h.run_steps(2);
    h.get_by_label_contains("Show me: Grouped-query attention: 2 KV heads on 4 GPUs")
        .click();
    h.run_steps(2);
    assert_eq!(h.state().active_id(), "playground");
    let cfg = h.state().shared.scenario.config().clone();
    assert_eq!((cfg.tp, cfg.kv_heads), (4, Some(2)));
    h.get_by_label_contains("GPU 0, 1 hold KV head 0; GPU 2, 3 hold KV head 1");
}

#[test]
fn quiz_gives_feedback_right_and_wrong() {
    let mut h = harness();
    open(&mut h, "Quiz");
    assert_eq!(h.state().active_id(), "quiz");
    // The set opens with the guide's first question. Choices are shuffled for every attempt,
    // so pick the right one by its text, not its letter.
    h.get_by_label("What is tensor parallelism for large models?");
    h.get_by_label_contains(") A way to split the math inside a single")
        .click();
    h.run_steps(1);
    h.get_by_label("Check answer").click();
    h.run_steps(2);
    h.get_by_label("Correct!");
    h.get_by_label_contains("It matters because frontier models");
    h.get_by_label("Score: 1/1");
    // Second question: answer wrong, see the right letter and the explanation.
    h.get_by_label("Next question").click();
    h.run_steps(2);
    h.get_by_label("How does tensor parallelism split work across GPUs?");
    h.get_by_label_contains(") It places whole layers").click();
    h.run_steps(1);
    h.get_by_label("Check answer").click();
    h.run_steps(2);
    h.get_by_label_contains("Not quite. The answer is: ");
    h.get_by_label_contains("differs from pipeline parallelism");
    h.get_by_label("Score: 1/2");
}

#[test]
fn switching_to_turkish_changes_lessons_and_quiz_live() {
    let mut h = harness();
    open(&mut h, "Lessons");
    h.get_by_label("Türkçe").click();
    h.run_steps(2);
    h.get_by_label("Dersler");
    h.get_by_label_contains("1. Tensör paralelliği nedir");
    assert!(h.get_all_by_label_contains("Göster:").count() >= 1);
    // The choice holds in the quiz too.
    open(&mut h, "Quiz");
    h.get_by_label("Büyük modeller için tensör paralelliği nedir?");
    h.get_by_label("Cevabı kontrol et");
    h.get_by_label("English").click();
    h.run_steps(2);
    h.get_by_label("What is tensor parallelism for large models?");
}

/// Every lesson renders in both languages with the app's fonts: kittest panics on a character
/// no installed font can draw (egui would otherwise show a box in its place).
#[test]
fn every_lesson_renders_every_glyph_in_both_languages() {
    let catalog = tplab_lessons::Catalog::embedded().expect("the built-in course loads");
    let mut h = harness();
    open(&mut h, "Lessons");
    for (lang, button) in [
        (tplab_lessons::Lang::En, None),
        (tplab_lessons::Lang::Tr, Some("Türkçe")),
    ] {
        if let Some(b) = button {
            h.get_by_label(b).click();
            h.run_steps(2);
        }
        for l in &catalog.lessons {
            h.get_by_label(&format!("{}. {}", l.order, l.title.get(lang)))
                .click();
            h.run_steps(2);
        }
    }
}
