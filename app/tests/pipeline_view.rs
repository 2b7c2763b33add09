//! The Pipeline and Cluster views as a learner uses them: the bubble is predicted before it is
//! shown and then equals the engine's; the controls change what the chart draws; the clock
//! steps across the timeline; the interleaved schedule's rule is explained with a fix; a preset
//! selects its layout and the planner's best can replace it; and snapshots at 1280×720,
//! 1600×1000 and 1920×1080, English and Turkish, light and dark, at a desk and on a projector
//! (regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test pipeline_view`).

mod common;
use common::{click, shot_name, snapshot_options, wait_until};
use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotResults};
use tplab::app::{ThemeChoice, SIDE_BAR_WIDTH};
use tplab::lab::ShowMe;
use tplab::views::pipeline::{bubble_options, Pipeline};
use tplab::TplabApp;
use tplab_engine::pipeline::{self, Schedule};
use tplab_lessons::{Lang, View};

fn harness() -> Harness<'static, TplabApp> {
    Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default())
}

/// Opens the Pipeline view on a schedule, as a lesson's Show me button does.
fn open(harness: &mut Harness<'static, TplabApp>, schedule: &str, p: usize, m: usize) {
    harness.state_mut().show_me(&ShowMe {
        view: View::Pipeline,
        schedule: Some(schedule.into()),
        stages: Some(p),
        microbatches: Some(m),
        ..Default::default()
    });
    harness.run_steps(3);
    assert_eq!(harness.state().active_id(), "pipeline");
}

/// The view's state (what it saves).
fn state(harness: &Harness<'static, TplabApp>, id: &str) -> serde_json::Value {
    let json = harness
        .state()
        .view_state(id)
        .unwrap_or_else(|| panic!("no view {id}"));
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"))
}

/// The engine's run for what the view's state says, built independently of the view: the
/// same cost model, then `pipeline::run` on the configuration.
fn engine_run(harness: &Harness<'static, TplabApp>) -> pipeline::PipelineRun {
    let json = harness.state().view_state("pipeline").unwrap_or_default();
    let mut view = Pipeline::default();
    tplab::lab::View::load(&mut view, &json);
    let built = view
        .built()
        .as_ref()
        .unwrap_or_else(|e| panic!("{e:?}"))
        .clone();
    let run = pipeline::run(&built.config).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run, built.run, "the view draws the engine's run");
    run
}

/// What the view shows for a fraction, in English.
fn shown(f: f64) -> String {
    tplab::i18n::percent(tplab_lessons::Lang::En, 100.0 * f, 1)
}

/// GPipe on 4 stages and 8 micro-batches: the question comes first; the right answer is the
/// engine's bubble, 3/11, and the formula beside it says the same.
#[test]
fn the_bubble_is_predicted_first_and_then_equals_the_engines() {
    let mut harness = harness();
    open(&mut harness, "gpipe", 4, 8);
    harness.get_by_label_contains("Predict first: with GPipe, 4 stages and 8 micro-batches");
    assert!(
        harness.query_by_label_contains("Pipeline chart").is_none(),
        "the chart waits for the prediction"
    );
    let run = engine_run(&harness);
    assert_eq!((run.bubble.num, run.bubble.den), (3, 11));
    let (options, right) = bubble_options(&run);
    assert_eq!(options.len(), 4);
    let answer = format!(
        "{}  {}",
        char::from(b'A' + right as u8),
        shown(options[right])
    );
    click(&mut harness, &answer, 3);
    harness.get_by_label_contains(&format!(
        "Bubble measured from the schedule: 3/11 = {}",
        shown(3.0 / 11.0)
    ));
    harness.get_by_label_contains("Formula (P−1)/(M+P−1) = 3/11");
    harness.get_by_label_contains("You predicted 27.3%: right.");
    harness.get_by_label_contains("Pipeline chart: GPipe, 4 stages, 8 micro-batches, bubble 27.3%");

    // A wrong answer on the next schedule is said to be wrong.
    open(&mut harness, "1f1b", 2, 4);
    let run = engine_run(&harness);
    let (options, right) = bubble_options(&run);
    let wrong = (right + 1) % options.len();
    let answer = format!(
        "{}  {}",
        char::from(b'A' + wrong as u8),
        shown(options[wrong])
    );
    click(&mut harness, &answer, 3);
    harness.get_by_label_contains("the schedule says otherwise");
}

/// Changing the schedule, the TP size and the stages changes the chart; the bubble shown is the
/// engine's each time (ZB-H1's depends on the cost model's times, so it is read from the run).
#[test]
fn the_controls_change_what_is_drawn_and_the_bubble_stays_the_engines() {
    let mut harness = harness();
    open(&mut harness, "1f1b", 4, 8);
    click(&mut harness, "Ask me to predict the bubble first", 2);
    harness.get_by_label_contains("Pipeline chart: 1F1B, 4 stages, 8 micro-batches, bubble 27.3%");
    // The schedule's box: pick ZB-H1.
    click(&mut harness, "schedule", 2);
    click(&mut harness, "ZB-H1 (zero bubble)", 3);
    assert_eq!(state(&harness, "pipeline")["schedule"], "zb-h1");
    let zb = engine_run(&harness);
    assert!(zb.bubble_fraction < 3.0 / 11.0, "ZB-H1 fills 1F1B's drain");
    harness.get_by_label_contains(&format!(
        "Pipeline chart: ZB-H1 (zero bubble), 4 stages, 8 micro-batches, bubble {}",
        shown(zb.bubble_fraction)
    ));
    harness.get_by_label_contains(&format!(
        "Bubble measured from the schedule: {}/{}",
        zb.bubble.num, zb.bubble.den
    ));
    // TP 2 instead of 8: the cost model's times change, so W's share and the bubble may too;
    // what is shown is still the engine's.
    click(&mut harness, "2", 3);
    assert_eq!(state(&harness, "pipeline")["tp"], 2);
    let zb2 = engine_run(&harness);
    assert_ne!(zb.costs, zb2.costs, "TP changes the boxes' times");
    harness.get_by_label_contains(&format!("bubble {}", shown(zb2.bubble_fraction)));
    // Eight stages through Show me: the chart has eight rows.
    open(&mut harness, "gpipe", 8, 8);
    harness.get_by_label_contains("Pipeline chart: GPipe, 8 stages, 8 micro-batches");
    harness.get_by_label_contains("peak activations per stage: 8, 8, 8, 8, 8, 8, 8, 8");
    // 1F1B holds at most P − s micro-batches on stage s.
    open(&mut harness, "1f1b", 4, 8);
    harness.get_by_label_contains("peak activations per stage: 4, 3, 2, 1");
}

/// The interleaved schedule refuses micro-batches that are not a multiple of the stages, in
/// words, with the two nearest counts as buttons.
#[test]
fn the_interleaved_rule_is_explained_with_a_fix() {
    let mut harness = harness();
    assert!(harness.state_mut().load_view_state(
        "pipeline",
        r#"{"schedule":"interleaved","stages":4,"microbatches":6,"virtual_stages":2,"predict":false}"#
    ));
    assert!(harness.state_mut().select("pipeline"));
    harness.run_steps(3);
    harness.get_by_label_contains("6 micro-batches over 4 stages; use 4 or 8 micro-batches");
    click(&mut harness, "Use 8 micro-batches", 3);
    let run = engine_run(&harness);
    assert_eq!(run.schedule, Schedule::Interleaved);
    assert_eq!((run.bubble.num, run.bubble.den), (3, 19), "(P−1)/(V·M+P−1)");
    harness.get_by_label_contains("Pipeline chart: interleaved 1F1B, 4 stages, 8 micro-batches");

    tplab::i18n::set_lang(&harness.ctx, Lang::Tr);
    assert!(harness.state_mut().load_view_state(
        "pipeline",
        r#"{"schedule":"interleaved","stages":4,"microbatches":6,"virtual_stages":2,"predict":false}"#
    ));
    harness.run_steps(3);
    harness.get_by_label_contains("4 aşamaya 6 mikro parti; 4 ya da 8 mikro parti kullanın");
}

/// On a projector the class answers aloud: the clicker's first press (→) reveals the bubble
/// without a prediction recorded.
#[test]
fn a_clicker_press_reveals_the_bubble() {
    let mut harness = harness();
    open(&mut harness, "gpipe", 4, 8);
    harness.get_by_label_contains("Predict first");
    common::press(&mut harness, egui::Key::PageDown, 2);
    assert!(harness.query_by_label_contains("Predict first").is_none());
    harness.get_by_label_contains("Bubble measured from the schedule: 3/11");
    assert!(harness.query_by_label_contains("You predicted").is_none());
}

/// The clock: Home takes it to the start, → moves it to the next box edge, Space plays it to
/// the end.
#[test]
fn the_clock_steps_and_plays_across_the_timeline() {
    let mut harness = harness();
    open(&mut harness, "1f1b", 4, 8);
    click(&mut harness, "Ask me to predict the bubble first", 2);
    common::press(&mut harness, egui::Key::Home, 2);
    harness.get_by_label("Clock: 0 µs");
    assert_eq!(state(&harness, "pipeline")["clock"], 0.0);
    common::press(&mut harness, egui::Key::ArrowRight, 2);
    let after = state(&harness, "pipeline")["clock"]
        .as_f64()
        .unwrap_or_default();
    let run = engine_run(&harness);
    // The first edge is the end of stage 0's first forward.
    let first_end = run.timeline[0][0].end as f64;
    let json = harness.state().view_state("pipeline").unwrap_or_default();
    let mut view = Pipeline::default();
    tplab::lab::View::load(&mut view, &json);
    let total = view.built().as_ref().map(|b| b.total_ticks()).unwrap_or(1) as f64;
    assert!((after - first_end / total).abs() < 1e-9, "{after}");
    common::press(&mut harness, egui::Key::Space, 1);
    assert_eq!(state(&harness, "pipeline")["playing"], true);
    let done = wait_until(&mut harness, 3000, 5, |h| {
        state(h, "pipeline")["clock"].as_f64() == Some(1.0)
    });
    assert!(done, "the clock never reached the end");
    assert_eq!(state(&harness, "pipeline")["playing"], false);
}

/// A preset selects its layout; the colour toggle and the planner's best change the drawing.
#[test]
fn a_cluster_preset_selects_its_layout() {
    let mut harness = harness();
    assert!(harness.state_mut().select("cluster"));
    harness.run_steps(3);
    harness.get_by_label_contains("TP 8 × PP 8 × DP 1 = 64 GPUs (8 nodes of 8)");
    click(&mut harness, "A trillion parameters on 3072 GPUs", 3);
    harness.get_by_label_contains("TP 8 × PP 64 × DP 6 = 3072 GPUs (384 nodes of 8)");
    harness.get_by_label_contains(
        "Pipeline sends between 64 stages: across nodes, over InfiniBand HDR 200 Gb/s",
    );
    harness.get_by_label_contains(
        "TP all-reduces (groups of 8, two per layer each way): inside the node, over NVLink 3",
    );
    click(&mut harness, "70B served at TP 4", 3);
    harness.get_by_label_contains("TP 4 × PP 1 × DP 1 = 4 GPUs (one node of 8)");
    harness.get_by_label_contains("GPU 5: unused");
    click(&mut harness, "175B on one 8-GPU node", 3);
    harness.get_by_label_contains("this layout does not fit for training");
    // GPU 3 of the one node: TP rank 3 of 8 holds heads 36 to 47 of GPT-3's 96.
    harness.get_by_label_contains(
        "GPU 3 (rank 3), TP rank 3 · stage 0 · replica 0, layers 0 to 95, heads 36 to 47",
    );
    click(&mut harness, "pipeline stage", 2);
    assert_eq!(state(&harness, "cluster")["color_by"], "stage");

    // Clicking a node of the overview draws that node's GPUs: on 64 GPUs as TP 8 × PP 8, node
    // n is stage n.
    click(&mut harness, "GPT-3 175B on 64 A100s", 2);
    click(&mut harness, "the guide's", 2);
    harness
        .get_by_label_contains("Cluster: 8 nodes, 64 GPUs in use")
        .click();
    harness.run_steps(2);
    let node = state(&harness, "cluster")["node"].as_u64().unwrap_or(0);
    assert!(node > 0, "the click selected no other node");
    harness.get_by_label_contains(&format!("Node {node} (the nodes are numbered 0 to 7)"));
    harness.get_by_label_contains(&format!(
        "GPU 0 (rank {}), TP rank 0 · stage {node} · replica 0",
        8 * node
    ));

    // The planner's best on its default cluster is the planner's own winner.
    click(&mut harness, "GPT-3 175B on 64 A100s", 2);
    click(&mut harness, "the planner's best", 2);
    let best = tplab::lab::planner::run_planner(&Default::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .plan
        .ranked[0]
        .layout;
    let want = format!("TP {} × PP {} × DP {} = 64 GPUs", best.tp, best.pp, best.dp);
    let shown = wait_until(&mut harness, 30_000, 10, |h| {
        h.query_by_label_contains("The planner is ranking")
            .is_none()
            && h.query_by_label_contains(&want).is_some()
    });
    assert!(shown, "the planner's best ({want}) never showed");
}

/// The Planner's winner for the learner's own inputs, drawn on its GPUs from the Planner's
/// button: the Cluster view shows the planner's layout for those inputs.
#[test]
fn the_planners_winner_opens_on_its_gpus() {
    let mut harness = harness();
    let inputs = tplab::lab::planner::PlannerInputs {
        model: tplab_engine::capacity::models::ModelPreset::Llama3_8b,
        gpus: 16,
        ..Default::default()
    };
    let saved = serde_json::json!({ "inputs": inputs }).to_string();
    assert!(harness.state_mut().load_view_state("planner", &saved));
    assert!(harness.state_mut().select("planner"));
    let best = tplab::lab::planner::run_planner(&inputs)
        .unwrap_or_else(|e| panic!("{e}"))
        .plan
        .ranked[0]
        .layout;
    let button = format!("See the winner, {}, on its GPUs", best.label());
    let ready = wait_until(&mut harness, 30_000, 10, |h| {
        h.query_by_label(&button).is_some()
    });
    assert!(ready, "no button '{button}'");
    click(&mut harness, &button, 3);
    assert_eq!(harness.state().active_id(), "cluster");
    let want = format!("TP {} × PP {} × DP {} = 16 GPUs", best.tp, best.pp, best.dp);
    let shown = wait_until(&mut harness, 30_000, 10, |h| {
        h.query_by_label_contains(&want).is_some()
    });
    assert!(shown, "the Cluster view never drew {want}");
    harness.get_by_label_contains("Your Planner inputs: Llama 3 8B on 16 A100 80GB GPUs");
    assert_eq!(state(&harness, "cluster")["preset"], "custom");
}

/// A Show me target opens its cluster, and one naming a field of another view is refused.
#[test]
fn show_me_targets_open_a_cluster_and_check_their_fields() {
    let mut harness = harness();
    harness.state_mut().show_me(&ShowMe {
        view: View::Cluster,
        cluster: Some("1t-3d".into()),
        ..Default::default()
    });
    harness.run_steps(3);
    assert_eq!(harness.state().active_id(), "cluster");
    harness.get_by_label_contains("TP 8 × PP 64 × DP 6");
    let bad = ShowMe {
        view: View::Step,
        stages: Some(4),
        ..Default::default()
    };
    let e = bad
        .validate()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.contains("`stages` is set but the step view does not use it"),
        "{e}"
    );
    let interleaved = ShowMe {
        view: View::Pipeline,
        schedule: Some("interleaved".into()),
        stages: Some(4),
        microbatches: Some(6),
        ..Default::default()
    };
    let e = interleaved
        .validate()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("use 4 or 8 micro-batches"), "{e}");
    let unknown = ShowMe {
        view: View::Cluster,
        cluster: Some("2t".into()),
        ..Default::default()
    };
    assert!(unknown.validate().is_err());
}

/// The combinations every view test renders: each size at a desk and on a projector, both
/// languages and themes; 1280×720 on a projector in both languages (the tightest).
const SHOTS: [((f32, f32), Lang, ThemeChoice, bool); 7] = [
    ((1280.0, 720.0), Lang::En, ThemeChoice::Light, false),
    ((1600.0, 1000.0), Lang::Tr, ThemeChoice::Dark, false),
    ((1920.0, 1080.0), Lang::En, ThemeChoice::Dark, false),
    ((1280.0, 720.0), Lang::Tr, ThemeChoice::Light, true),
    ((1280.0, 720.0), Lang::En, ThemeChoice::Dark, true),
    ((1600.0, 1000.0), Lang::En, ThemeChoice::Light, true),
    ((1920.0, 1080.0), Lang::Tr, ThemeChoice::Dark, true),
];

fn shoot(
    results: &mut SnapshotResults,
    view: &str,
    state: &str,
    what: &str,
    (size, lang, theme, presenter): ((f32, f32), Lang, ThemeChoice, bool),
) {
    let mut app = TplabApp::default();
    app.set_theme(theme);
    app.shared.presenter = presenter;
    assert!(app.select(view));
    assert!(app.load_view_state(view, state));
    let mut harness = common::gl_harness_pixels(app, size, lang, view);
    harness.run_steps(3);
    if !presenter {
        harness.mask(egui::Rect::from_min_max(
            egui::pos2(0.0, 0.0),
            egui::pos2(SIDE_BAR_WIDTH + 2.0, size.1),
        ));
    }
    let name = format!("{view}_{}", shot_name(what, size, lang, theme, presenter));
    harness.snapshot_options(&name, &snapshot_options());
    results.extend_harness(&mut harness);
}

/// The chart after the prediction, a different schedule at each size; the question itself on a
/// projector at 1280×720.
#[test]
fn the_pipeline_view_at_every_size_language_and_theme() {
    let mut results = SnapshotResults::new();
    let schedules = [
        "1f1b",
        "interleaved",
        "zb-h1",
        "1f1b",
        "interleaved",
        "gpipe",
        "zb-h1",
    ];
    for (shot, schedule) in SHOTS.into_iter().zip(schedules) {
        let state = format!(
            r#"{{"schedule":"{schedule}","stages":4,"microbatches":8,"virtual_stages":2,"predict":false}}"#
        );
        shoot(&mut results, "pipeline", &state, schedule, shot);
    }
    for shot in SHOTS.into_iter().filter(|s| s.3 && s.0 .0 == 1280.0) {
        shoot(
            &mut results,
            "pipeline",
            r#"{"predict":true}"#,
            "predict",
            shot,
        );
    }
    // Mid-animation: the clock line, the boxes it has passed filled, the others outlined.
    let playing = r#"{"schedule":"1f1b","stages":4,"microbatches":8,"clock":0.4,"predict":false}"#;
    for shot in [SHOTS[2], SHOTS[3]] {
        shoot(&mut results, "pipeline", playing, "clock", shot);
    }
    results.unwrap();
}

/// Each preset, one per size, language and theme.
#[test]
fn the_cluster_view_at_every_size_language_and_theme() {
    let mut results = SnapshotResults::new();
    let presets = [
        "planner-64",
        "1t-3d",
        "175b-one-node",
        "70b-serve-tp4",
        "1t-3d",
        "175b-one-node",
        "planner-64",
    ];
    for (shot, preset) in SHOTS.into_iter().zip(presets) {
        let state = format!(r#"{{"preset":"{preset}","color_by":"tp","source":"guide"}}"#);
        shoot(&mut results, "cluster", &state, preset, shot);
    }
    results.unwrap();
}
