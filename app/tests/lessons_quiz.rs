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
    h.get_by_label_contains("· forward · g after the MLP:");
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
    // The picked distractor's own feedback, then the explanation.
    h.get_by_label_contains("That is pipeline parallelism: layers are distributed, not split.");
    h.get_by_label_contains("differs from pipeline parallelism");
    h.get_by_label("Score: 1/2");
}

#[test]
fn switching_to_turkish_changes_lessons_and_quiz_live() {
    let mut h = harness();
    open(&mut h, "Lessons");
    h.get_by_label("Türkçe").click();
    h.run_steps(2);
    // The side bar's entry and the view's heading both say it now.
    assert_eq!(h.get_all_by_label("Dersler").count(), 2);
    h.get_by_label_contains("1. Tensör paralelliği nedir");
    assert!(h.get_all_by_label_contains("Göster:").count() >= 1);
    // The choice holds in the quiz too (the side bar names it in Turkish).
    open(&mut h, "Kısa sınav");
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

/// Opens lesson `title` (its list entry starts with it) and presses the Show me with `caption`.
fn show_me_from_lesson(h: &mut Harness<'static, TplabApp>, title: &str, caption: &str) {
    open(h, "Lessons");
    h.get_by_label_contains(title).click();
    h.run_steps(2);
    h.get_by_label_contains(&format!("Show me: {caption}"))
        .click();
    h.run_steps(2);
}

#[test]
fn sequence_parallel_lesson_turns_it_on_and_other_targets_turn_it_off() {
    let mut h = harness();
    show_me_from_lesson(
        &mut h,
        "9. Sequence parallelism",
        "g becomes a reduce-scatter",
    );
    assert_eq!(h.state().active_id(), "step");
    let cfg = h.state().shared.scenario.config().clone();
    assert!(cfg.sequence_parallel);
    assert_eq!(cfg.tp, 4);
    h.get_by_label_contains("· forward · g after attention:");
    h.get_by_label_contains("all-gathers and reduce-scatters: forward 4, backward 6");
    // A target without the field opens its preset as it is: sequence parallelism off.
    show_me_from_lesson(
        &mut h,
        "4. The MLP: columns first",
        "The one all-reduce after fc2",
    );
    assert!(!h.state().shared.scenario.config().sequence_parallel);
}

#[test]
fn planner_show_me_sets_model_and_cluster_over_what_the_learner_changed() {
    let mut h = harness();
    assert!(h.state_mut().load_view_state(
        "planner",
        r#"{"inputs":{"model":"llama3-8b","gpus":128,"global_batch":64}}"#
    ));
    show_me_from_lesson(
        &mut h,
        "8. Why TP stays inside an NVLink node",
        "GPT-3 175B on 64 A100s",
    );
    assert_eq!(h.state().active_id(), "planner");
    let state: serde_json::Value =
        serde_json::from_str(&h.state().view_state("planner").expect("planner state"))
            .expect("planner state is JSON");
    let inputs = &state["inputs"];
    assert_eq!(inputs["model"], "gpt3-175b");
    assert_eq!(inputs["gpu"], "a100-80gb");
    assert_eq!(inputs["gpus"], 64);
    assert_eq!(inputs["gpus_per_node"], 8);
    // The learner's other change is reset to the planner's default, as the lesson assumes.
    assert_eq!(inputs["global_batch"], 512);
}

#[test]
fn timeline_show_me_switches_to_the_cost_model_of_the_named_gpu() {
    let mut h = harness();
    show_me_from_lesson(
        &mut h,
        "1. What tensor parallelism is",
        "Four H100s: the same layer at TP=4",
    );
    assert_eq!(h.state().active_id(), "timeline");
    assert_eq!(h.state().shared.scenario.config().tp, 4);
    let state: serde_json::Value =
        serde_json::from_str(&h.state().view_state("timeline").expect("timeline state"))
            .expect("timeline state is JSON");
    assert_eq!(state["gpu"], "h100-sxm");
    h.get_by_label_contains("Times are modeled by tplab's cost model");
    // The makespan the lesson quotes (lesson numbers are pinned to the engine in tplab-lessons).
    h.get_by_label_contains("Makespan 112.1 µs");
}

#[test]
fn vocabulary_lesson_opens_the_padded_split_at_tp_4() {
    let mut h = harness();
    show_me_from_lesson(
        &mut h,
        "10. The embedding and the LM head",
        "GPT-2's vocabulary over 4 GPUs",
    );
    assert_eq!(h.state().active_id(), "vocab");
    h.get_by_label_contains("V = 50257 padded to 50688 (431 padding rows)");
}
