//! Behaviour tests: drive the app by accessible labels, as a learner would.

mod common;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use tplab::lab::ShowMe;
use tplab::TplabApp;

fn harness() -> Harness<'static, TplabApp> {
    Harness::builder()
        .with_size([1280.0, 820.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default())
}

use common::{click, gqa_tp8, press, wait_until};

/// Sets the scenario's configuration, as the Playground's controls do.
fn set_config(harness: &mut Harness<'static, TplabApp>, cfg: tplab_engine::config::Config) {
    harness.state_mut().shared.scenario.set_config(cfg);
}

#[test]
fn starts_on_gpt2_small_at_tp4_in_the_playground() {
    let harness = harness();
    assert_eq!(harness.state().active_id(), "playground");
    let cfg = harness.state().shared.scenario.config();
    assert_eq!((cfg.hidden, cfg.heads, cfg.tp), (768, 12, 4));
    harness.get_by_label_contains("W_qkv [768, 2304]");
}

#[test]
fn clicking_a_tp_button_changes_the_split() {
    let mut harness = harness();
    click(&mut harness, "TP=2", 2);
    assert_eq!(harness.state().shared.scenario.config().tp, 2);
    // Two GPUs: the legend shows GPU 1 but no GPU 2.
    assert!(harness.query_all_by_label("\u{a0}GPU\u{a0}1\u{a0}").count() > 0);
    assert_eq!(
        harness.query_all_by_label("\u{a0}GPU\u{a0}2\u{a0}").count(),
        0
    );
    let plan = &harness.state().shared.scenario.derived().unwrap().plan;
    assert_eq!(plan.tp, 2);
}

#[test]
fn invalid_tp_shows_the_engine_error_and_nearest_sizes() {
    let mut harness = harness();
    // 12 heads cannot be split over 8 GPUs.
    click(&mut harness, "TP=8", 2);
    harness.get_by_label_contains("12 heads cannot be split over 8 GPUs");
    harness.get_by_label_contains("Nearest valid TP sizes: 6, 12");
    // The suggested fix works.
    click(&mut harness, "Use TP=6", 2);
    assert_eq!(harness.state().shared.scenario.config().tp, 6);
    assert!(harness.query_by_label_contains("cannot be split").is_none());
}

#[test]
fn stepping_through_forward_counts_the_all_reduces() {
    let mut harness = harness();
    click(&mut harness, "Walkthrough", 2);
    assert_eq!(harness.state().active_id(), "step");
    // Counting, not predicting (the predictions have their own tests).
    harness
        .state_mut()
        .load_view_state("step", r#"{"predict": false}"#);
    harness.run_steps(1);
    harness.get_by_label("all-reduces this layer: forward 2, backward 2");
    harness.get_by_label_contains("issued so far: forward 0, backward 0");
    // Forward of one block: ln1, f, qkv, core, out, g(all-reduce) → the 6th step is attn.g.
    for _ in 0..5 {
        click(&mut harness, "Next step", 1);
    }
    harness.get_by_label_contains("· g after attention:");
    harness.get_by_label_contains("issued so far: forward 1, backward 0");
    // Keyboard: each → is one of the ring's 6 rounds, then the bias+residual.
    for _ in 0..6 {
        press(&mut harness, egui::Key::ArrowRight, 1);
    }
    harness.get_by_label_contains("· forward · output bias and residual — bias + residual,");
}

#[test]
fn play_advances_with_time_and_pause_stops_repainting() {
    let mut harness = harness();
    click(&mut harness, "Walkthrough", 1);
    // Playing, not predicting (playing stops at a question; the predictions have their tests).
    harness
        .state_mut()
        .load_view_state("step", r#"{"predict": false}"#);
    click(&mut harness, "Play", 30);
    assert!(harness.query_by_label("Pause").is_some());
    click(&mut harness, "Pause", 1);
    assert!(harness.query_by_label_contains("Step 1/").is_none());
    // Paused: the UI settles (Harness::run panics if repaints never stop).
    harness.run();
}

#[test]
fn number_keys_set_tp_and_the_side_bar_switches_views() {
    let mut harness = harness();
    press(&mut harness, egui::Key::Num2, 1);
    assert_eq!(harness.state().shared.scenario.config().tp, 2);
    for (label, id) in [
        ("Timeline", "timeline"),
        ("Walkthrough", "step"),
        ("Playground", "playground"),
    ] {
        click(&mut harness, label, 1);
        assert_eq!(harness.state().active_id(), id);
    }
}

#[test]
fn show_me_lands_on_the_named_event() {
    let mut harness = harness();
    harness.state_mut().shared.navigate(ShowMe {
        view: tplab_lessons::View::Step,
        scenario: tplab_engine::overrides::Overrides {
            preset: Some(tplab_engine::config::Preset::Gpt2Small),
            tp: Some(2),
            ..Default::default()
        },
        pass: Some(tplab_engine::block::op::Pass::Backward),
        event: Some("mlp.f.bwd".into()),
        ..Default::default()
    });
    harness.run_steps(2);
    assert_eq!(harness.state().active_id(), "step");
    assert_eq!(harness.state().shared.scenario.config().tp, 2);
    harness
        .get_by_label_contains("· backward · f before the MLP, backward: input gradient summed:");
}

#[test]
fn export_name_carries_the_scenario_label() {
    let harness = harness();
    assert_eq!(
        harness.state().export_file_name(),
        "tplab-playground-h768-a12-f3072-s128-b1-L1-tp4-f32.png"
    );
}

#[test]
fn every_view_draws() {
    let mut harness = harness();
    for label in [
        "Walkthrough",
        "Collectives",
        "Timeline",
        "Memory",
        "Planner",
        "Playground",
    ] {
        click(&mut harness, label, 3);
    }
    assert_eq!(harness.state().active_id(), "playground");
}

#[test]
fn collectives_show_partial_sums_round_by_round() {
    let mut harness = harness();
    click(&mut harness, "Collectives", 2);
    harness.get_by_label_contains("Before round 1 · ");
    // Before any message every GPU holds only its own data.
    harness.get_by_label_contains("What each GPU holds before it: GPU 0: 0 | 0 | 0 | 0;");
    // One press, round 1, as the walkthrough draws it: its messages and the cells after them.
    click(&mut harness, "Next round", 2);
    harness.get_by_label_contains("Round 1 of 6 · reduce-scatter · ");
    let after = harness.get_by_label_contains("Round 1 of 6. Sent this round:");
    let text = format!("{:?}", after);
    assert!(
        text.contains("holds after it") && text.contains('+'),
        "a partial sum after one round: {text}"
    );
    // All rounds: every chunk on every GPU holds the full sum.
    for _ in 0..5 {
        click(&mut harness, "Next round", 1);
    }
    harness.get_by_label_contains("What each GPU holds after it: GPU 0: 0+1+2+3 | 0+1+2+3");
}

#[test]
fn planner_runs_in_the_background_and_ranks_layouts() {
    let mut harness = harness();
    harness.get_by_label("Planner").click();
    let done = wait_until(&mut harness, 600, 20, |h| {
        h.query_by_label_contains("layouts fit;").is_some()
    });
    assert!(done, "the planner never answered");
    harness.get_by_label("Why the winner wins");
}

#[test]
fn verify_runs_off_the_ui_thread_and_passes() {
    let mut harness = harness();
    click(&mut harness, "Verify", 1);
    let done = wait_until(&mut harness, 3000, 10, |h| {
        h.query_by_label_contains("checks within tolerance")
            .is_some()
    });
    assert!(done, "the run never finished");
    harness.get_by_label_contains("Passed: all");
    harness.get_by_label_contains("tolerance: a relative difference");
    harness.get_by_label_contains("Error heatmap");
    // Four all-reduces per layer: forward attn.g, mlp.g; backward mlp.f.bwd, attn.f.bwd.
    harness.get_by_label_contains("Before: each GPU's partial output [128, 768]");
}

#[test]
fn presenter_key_toggles_large_type() {
    let mut harness = harness();
    press(&mut harness, egui::Key::F11, 2);
    assert!(harness.state().shared.presenter);
    assert!((harness.ctx.zoom_factor() - 1.6).abs() < 1e-6);
    // A tooltip on a projector waits for a deliberate hover.
    assert_eq!(
        harness_delay(&harness),
        tplab::app::PRESENTER_TOOLTIP_DELAY_S
    );
    press(&mut harness, egui::Key::F11, 2);
    assert!(!harness.state().shared.presenter);
    assert!((harness.ctx.zoom_factor() - 1.0).abs() < 1e-6);
    assert_eq!(harness_delay(&harness), 0.5);
}

fn harness_delay(harness: &Harness<'static, TplabApp>) -> f32 {
    harness.ctx.global_style().interaction.tooltip_delay
}

#[test]
fn a_huge_config_is_drawn_aggregated_and_refused_for_execution() {
    let mut harness = harness();
    let huge = tplab_engine::config::Config {
        hidden: 16384,
        heads: 128,
        ffn: 65536,
        seq: 32768,
        batch: 8,
        layers: 4,
        tp: 64,
        ..Default::default()
    };
    set_config(&mut harness, huge);
    harness.run_steps(2);
    // The matrices are drawn from the plan's ranges: one grid cell stands for many elements.
    harness.get_by_label_contains("Weight matrices over 64 GPUs: W_qkv [16384, 49152]");
    for label in ["Walkthrough", "Timeline", "Memory", "Collectives"] {
        click(&mut harness, label, 2);
    }
    // Running it would need far more than the memory guard: the engine says so, nothing runs.
    click(&mut harness, "Verify", 2);
    harness.get_by_label_contains("over the 6.0 GiB guard");
}

#[test]
fn hovering_a_slice_names_its_gpu_shape_and_bytes() {
    let mut harness = harness();
    let rect = harness
        .get_by_label_contains("Weight matrices over 4 GPUs")
        .rect();
    // W_qkv is drawn first, below its caption (two lines, then the Q | K | V band: about 47
    // points); its left edge is GPU 0's Q columns.
    harness.hover_at(rect.left_top() + egui::vec2(3.0, 60.0));
    // Tooltips appear once the pointer has rested (egui's tooltip delay).
    harness.run_steps(8);
    // 768 rows × (3 × 192) columns × 4 bytes = 1.7 MiB.
    harness.get_by_label_contains("GPU 0: W_qkv shard [768, 576], 1.7 MiB");
}

#[test]
fn precision_lab_sweeps_dtypes_and_tp_sizes_off_the_ui_thread() {
    let mut harness = harness();
    set_config(&mut harness, tplab_engine::config::Preset::Tiny.config());
    click(&mut harness, "Precision", 2);
    assert_eq!(harness.state().active_id(), "precision");
    harness.get_by_label("Run the sweep").click();
    let done = wait_until(&mut harness, 3000, 10, |h| {
        h.query_by_label("What the numbers say").is_some()
    });
    assert!(done, "the sweep never finished");
    // Every dtype has a TP=1 baseline row; the explanation is the engine's.
    assert!(harness.query_all_by_label("(baseline)").count() == 4);
    harness.get_by_label_contains("Floating-point addition is not associative");
    assert!(harness.query_all_by_label("bf16").count() >= 2);
}

#[test]
fn sequence_parallel_shows_gathers_and_scatters_in_the_step_through() {
    let mut harness = harness();
    click(&mut harness, "sequence parallel", 2);
    assert!(harness.state().shared.scenario.config().sequence_parallel);
    assert!(harness.query_all_by_label("split by tokens 1/TP").count() >= 4);
    click(&mut harness, "Walkthrough", 2);
    harness.get_by_label_contains(
        "all-reduces this layer: forward 0, backward 1; all-gathers and reduce-scatters: \
         forward 4, backward 6",
    );
}

#[test]
fn vocabulary_view_shows_the_padded_split_and_checks_the_parallel_loss() {
    let mut harness = harness();
    set_config(&mut harness, tplab_engine::config::Preset::Tiny.config());
    click(&mut harness, "Vocabulary", 2);
    // Tiny preset: TP=2, so 50257 pads to a multiple of 256: 50432.
    harness.get_by_label_contains("V = 50257 padded to 50432 (175 padding rows)");
    harness.get_by_label("vocabulary split: 25216 rows per GPU, 175 padding rows at the end");
    harness.get_by_label("Check against the reference").click();
    let done = wait_until(&mut harness, 3000, 10, |h| {
        h.query_by_label_contains("Passed: loss").is_some()
    });
    assert!(done, "the check never finished");
}

#[test]
fn training_draws_three_curves_that_coincide() {
    let mut harness = harness();
    click(&mut harness, "Train", 2);
    assert_eq!(harness.state().active_id(), "train");
    harness.get_by_label("Start training").click();
    let start = std::time::Instant::now();
    let done = wait_until(&mut harness, 20000, 10, |h| {
        h.query_by_label_contains("Finished: the loss went from")
            .is_some()
    });
    assert!(done, "training never finished ({:?})", start.elapsed());
    harness.get_by_label_contains("step 200/200");
    harness.get_by_label_contains("largest gap to TP=1 over the run: TP=2");
    // The curves as numbers, for a screen reader and for copying: a row per 10th step.
    harness
        .get_by_label("The curves as numbers (the loss at each step, per TP)")
        .click();
    harness.run_steps(2);
    // TP=4 heads a column beside the plot's legend.
    assert!(harness.get_all_by_label("TP=4").count() >= 2);
    harness.get_by_label("200");
    harness.get_by_label("191");
    // The grouped-query variant is one click away (TP=4 then replicates the KV heads).
    click(&mut harness, "grouped-query attention (2 KV heads)", 2);
    let state: serde_json::Value =
        serde_json::from_str(&harness.state().view_state("train").expect("train state"))
            .expect("JSON");
    assert_eq!(state["config"]["kv_heads"], 2);
}

#[test]
fn grouped_query_attention_shows_which_gpu_holds_which_kv_copy() {
    let mut harness = harness();
    set_config(&mut harness, gqa_tp8());
    harness.run_steps(2);
    // (8 + 2·2) heads × 64 = 768 QKV columns; 4 copies of each KV head.
    harness.get_by_label_contains("W_qkv [512, 768]");
    harness.get_by_label_contains("GPU 0, 1, 2, 3 hold KV head 0; GPU 4, 5, 6, 7 hold KV head 1");
    // The step-through counts the copies' gradient all-reduces apart from f and g.
    click(&mut harness, "Walkthrough", 2);
    harness.get_by_label_contains(
        "all-reduces this layer: forward 2, backward 2; plus all-reduces of replicated KV heads' \
         gradients, one per group of copies: 2",
    );
    click(&mut harness, "Playground", 2);
    // TP=6 breaks both the heads and the KV rules: the error names the KV rule's two options.
    harness.state_mut().shared.scenario.set_tp(6);
    harness.run_steps(2);
    harness.get_by_label_contains("8 heads cannot be split over 6 GPUs");
    let cfg = tplab_engine::config::Config {
        heads: 12,
        kv_heads: Some(4),
        hidden: 768,
        ffn: 3072,
        tp: 6,
        ..Default::default()
    };
    set_config(&mut harness, cfg);
    harness.run_steps(2);
    harness.get_by_label_contains("4 KV heads cannot be spread over 6 GPUs");
    harness.get_by_label_contains("Nearest valid TP sizes: 4, 12");
}
