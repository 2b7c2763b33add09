//! The GPU view: on a machine without a GPU it says why it is idle and keeps Run disabled.

use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use tplab::TplabApp;

#[test]
fn gpu_view_reports_the_probe_and_guards_the_run_button() {
    let mut harness = Harness::builder()
        .with_size([1280.0, 900.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default());
    harness.get_by_label("GPU").click();
    harness.run_steps(2);
    assert_eq!(harness.state().active_id(), "gpu");
    harness.get_by_label("GPU: the same shards on real hardware");
    let probe = tplab_kernels::probe();
    if probe.usable() {
        harness.get_by_label_contains("ready:");
    } else {
        // What was looked for and what is missing, in place; Run cannot be pressed.
        harness.get_by_label_contains("unavailable:");
        harness.get_by_label_contains("CUDA support compiled in");
        let run = harness.get_by_label("Run on the GPU");
        assert!(
            run.accesskit_node().is_disabled(),
            "Run must be disabled without a usable GPU"
        );
    }
}

/// The GPU view runs Megatron's split or the design lab's plan: the lab's plan is offered only
/// once the Design view has shown one, and is then described in words (its splits and GPUs).
#[test]
fn gpu_view_offers_the_design_labs_plan() {
    let mut harness = Harness::builder()
        .with_size([1280.0, 900.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default());
    harness.get_by_label("GPU").click();
    harness.run_steps(2);
    // The design lab's plan is one lab state: offered from the start (the free design's).
    let lab = harness.get_by_label("your plan from the design lab");
    assert!(
        !lab.accesskit_node().is_disabled(),
        "the lab's plan is offered"
    );
    harness.get_by_label("Design").click();
    harness.run_steps(3);
    harness.get_by_label("GPU").click();
    harness.run_steps(2);
    harness
        .get_by_label("your plan from the design lab")
        .click();
    harness.run_steps(2);
    harness.get_by_label_contains("Your plan on 2 GPUs: QKV projection");
    // Back to Megatron's split: the plan's line goes.
    harness
        .get_by_label("Megatron-LM's (fused kernels)")
        .click();
    harness.run_steps(2);
    assert!(harness
        .query_by_label_contains("Your plan on 2 GPUs")
        .is_none());
}
