//! Side by side: two TP sizes (or a learner's plan and Megatron's split) drawn next to each other
//! in the walkthrough, the Playground and the Timeline, chosen by clicking "side by side" as a
//! learner does; the walkthrough steps both together.

mod common;
use common::{shot_name, snapshot_options};
use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotResults};
use tplab::app::{ThemeChoice, SIDE_BAR_WIDTH};
use tplab::lab::beside::Beside;
use tplab::lab::walk::walk_steps;
use tplab::widgets::lanes::placements_text;
use tplab::TplabApp;
use tplab_engine::block::program::schedule;
use tplab_engine::{config::Config, config::Preset};
use tplab_lessons::Lang;

fn tiny(tp: usize) -> Config {
    Config {
        tp,
        layers: 1,
        ..Preset::Tiny.config()
    }
}

/// The app on `view` at `cfg`, in `lang`, 1600×1000, predictions off.
fn open(view: &str, cfg: &Config, lang: Lang) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    app.shared.scenario.set_config(cfg.clone());
    app.load_view_state("step", r#"{"predict": false}"#);
    assert!(app.select(view));
    let mut harness = Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    tplab::i18n::set_lang(&harness.ctx, lang);
    harness.run_steps(2);
    harness
}

/// Picks `choice` in the view's "side by side" menu, by clicking as a learner does.
fn pick(harness: &mut Harness<'static, TplabApp>, lang: Lang, choice: &str) {
    let label = tplab::i18n::t(lang, "beside-label");
    harness
        .get_by_role_and_label(egui::accesskit::Role::ComboBox, &label)
        .click();
    harness.run_steps(2);
    // The menu's entry: drawn last, above what may carry the same words (the plan walk's
    // "Megatron's split" button).
    harness
        .query_all_by_label(choice)
        .last()
        .unwrap_or_else(|| panic!("{choice:?} is not offered"))
        .click();
    harness.run_steps(3);
}

fn text_of(harness: &Harness<'static, TplabApp>) -> String {
    use egui_kittest::kittest::NodeT;
    let mut out = String::new();
    for n in harness.query_all(egui_kittest::kittest::by()) {
        if let Some(l) = n.accesskit_node().label() {
            out.push_str(&l);
            out.push('\n');
        }
        if let Some(v) = n.accesskit_node().value() {
            out.push_str(&v);
            out.push('\n');
        }
    }
    out
}

/// TP 2 beside TP 4 in the walkthrough: every step shows both programs at the same op, their
/// lanes the engine's placements on 2 and on 4 GPUs, and what each GPU has sent so far.
#[test]
fn the_walkthrough_steps_two_tp_sizes_together() {
    let (two, four) = (
        schedule(&tiny(2)).expect("Megatron's plan propagates"),
        schedule(&tiny(4)).expect("Megatron's plan propagates"),
    );
    let (a, b) = (walk_steps(&two), walk_steps(&four));
    let mut harness = open("step", &tiny(2), Lang::En);
    pick(&mut harness, Lang::En, "TP = 4");
    assert_eq!(harness.state().shared.beside.with, Beside::Tp(4));
    for (i, s) in a.iter().enumerate() {
        let text = text_of(&harness);
        let j = b
            .iter()
            .position(|t| (t.layer, t.pass, t.op) == (s.layer, s.pass, s.op))
            .unwrap_or_else(|| panic!("step {i}: {} has no twin at TP 4", s.op));
        let mine = &two.events[s.first_event..s.first_event + s.events];
        let theirs = &four.events[b[j].first_event..b[j].first_event + b[j].events];
        assert!(
            text.contains(&placements_text(mine, 2)),
            "step {i}: TP 2's lanes missing"
        );
        assert!(
            text.contains(&placements_text(theirs, 4)),
            "step {i}: TP 4's lanes (step {j}) missing:\n{text}"
        );
        assert!(text.contains("TP = 4") && text.contains("This scenario: TP = 2"));
        // Step on: a collective takes a press per round.
        let rounds = |trace: &tplab_engine::trace::Trace, first: usize| {
            let e = &trace.events[first];
            match e.kind {
                tplab_engine::trace::EventKind::Collective {
                    kind, algorithm, ..
                } if kind != tplab_engine::collectives::CollectiveKind::Identity => {
                    tplab_engine::collectives::plan(
                        kind,
                        algorithm,
                        e.ranks.len(),
                        e.output[0] * e.output[1],
                        8,
                    )
                    .map_or(1, |p| p.step_count().max(1))
                }
                _ => 1,
            }
        };
        for _ in 0..rounds(&two, s.first_event) {
            common::press(&mut harness, egui::Key::ArrowRight, 1);
        }
    }
    // At the end both have sent what their traces send: TP 4 more in all than TP 2.
    let sent = |t: &tplab_engine::trace::Trace| -> u64 {
        t.events
            .iter()
            .filter(|e| e.is_collective() && e.ranks.len() > 1 && e.on_rank(0))
            .map(|e| e.bytes_sent_per_rank)
            .sum()
    };
    let text = text_of(&harness);
    for t in [&two, &four] {
        let line = tplab::i18n::t_args(
            Lang::En,
            "beside-sent",
            &[("bytes", tplab::i18n::bytes(Lang::En, sent(t)))],
        );
        assert!(text.contains(&line), "missing {line:?}");
    }
}

/// One GPU has nothing to sum: beside TP 4's all-reduce, TP 1 says so and stays at its last step.
#[test]
fn beside_one_gpu_an_all_reduce_has_no_twin() {
    let four = schedule(&tiny(4)).expect("Megatron's plan propagates");
    let steps = walk_steps(&four);
    let first_collective = steps
        .iter()
        .position(|s| four.events[s.first_event].is_collective())
        .expect("TP 4 communicates");
    let mut harness = open("step", &tiny(4), Lang::Tr);
    pick(&mut harness, Lang::Tr, "TP = 1");
    for _ in 0..first_collective {
        common::press(&mut harness, egui::Key::ArrowRight, 1);
    }
    let text = text_of(&harness);
    let no_step = tplab::i18n::t_args(
        Lang::Tr,
        "beside-no-step",
        &[("k", first_collective.to_string())],
    );
    assert!(text.contains(&no_step), "missing {no_step:?} in\n{text}");
}

/// Beside a learner's plan, Megatron's split on the same GPUs: the column-split fc2's all-gather
/// has no twin in Megatron's program, whose lanes stay at its fc2.
#[test]
fn a_plan_walk_steps_beside_megatron_s_split() {
    use tplab_engine::block::design::{propagate, trace::trace, NamedPlan};
    let cfg = tiny(4);
    let plan = NamedPlan::RowsThenColumns.plan();
    let t = trace(&cfg, &propagate(&cfg, &plan)).unwrap_or_else(|e| panic!("{e}"));
    let mut app = TplabApp::default();
    common::walk_my_plan(&mut app, cfg.tp, &plan);
    let _ = t;
    app.load_view_state("step", r#"{"predict": false}"#);
    let mut harness = Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(3);
    pick(&mut harness, Lang::En, "Megatron's split");
    let text = text_of(&harness);
    assert!(text.contains("Megatron's split on 4 GPUs"), "{text}");
    assert!(text.contains("Your plan on 4 GPUs"), "{text}");
    // Step through the whole plan: where the plan moves a tensor Megatron's split does not, the
    // pane says so; Megatron's split and the plan share their matmuls.
    let mut unmatched = 0;
    for _ in 0..60 {
        if text_of(&harness).contains("Nothing like this step here") {
            unmatched += 1;
        }
        common::press(&mut harness, egui::Key::ArrowRight, 1);
    }
    assert!(unmatched > 0, "the plan's own moves have no twin");
}

/// The Timeline draws both programs on one time axis, each with its makespan; the Playground
/// both sets of matrices with what each GPU holds and sends.
#[test]
fn the_timeline_and_the_playground_draw_both_sizes() {
    let mut harness = open("timeline", &tiny(2), Lang::En);
    pick(&mut harness, Lang::En, "TP = 4");
    let text = text_of(&harness);
    assert!(text.contains("This scenario: TP = 2 · Makespan"), "{text}");
    assert!(text.contains("TP = 4 · Makespan"), "{text}");

    // The choice is shared: the Playground opens with TP 4 beside TP 2.
    assert!(harness.state_mut().select("playground"));
    harness.run_steps(3);
    let text = text_of(&harness);
    assert!(
        text.contains("Each GPU holds 1/2 of every weight matrix"),
        "{text}"
    );
    assert!(
        text.contains("Each GPU holds 1/4 of every weight matrix"),
        "{text}"
    );
    pick(&mut harness, Lang::En, "none");
    assert!(!text_of(&harness).contains("Each GPU holds 1/4"));
}

/// Snapshots of the three views with TP 4 beside TP 2 (GPT-2 small), at the three sizes, both
/// languages and themes, presenter mode included: nothing of the step cut off.
#[test]
fn side_by_side_at_every_size_language_and_theme() {
    let mut results = SnapshotResults::new();
    let gpt2 = Config {
        tp: 2,
        ..Preset::Gpt2Small.config()
    };
    for (view, presses, size, lang, theme, presenter) in [
        (
            "step",
            12,
            (1280.0, 720.0),
            Lang::En,
            ThemeChoice::Light,
            false,
        ),
        (
            "step",
            12,
            (1600.0, 1000.0),
            Lang::Tr,
            ThemeChoice::Dark,
            false,
        ),
        (
            "step",
            12,
            (1920.0, 1080.0),
            Lang::En,
            ThemeChoice::Dark,
            true,
        ),
        (
            "step",
            12,
            (1280.0, 720.0),
            Lang::Tr,
            ThemeChoice::Light,
            true,
        ),
        // g after the MLP: both all-reduces' messages, at the same fraction of each.
        (
            "step",
            13,
            (1600.0, 1000.0),
            Lang::En,
            ThemeChoice::Light,
            false,
        ),
        (
            "step",
            13,
            (1920.0, 1080.0),
            Lang::Tr,
            ThemeChoice::Dark,
            true,
        ),
        // On a projector's 1280×720: the compact message pictures, nothing scrolls.
        (
            "step",
            13,
            (1280.0, 720.0),
            Lang::En,
            ThemeChoice::Light,
            true,
        ),
        (
            "step",
            13,
            (1280.0, 720.0),
            Lang::Tr,
            ThemeChoice::Dark,
            true,
        ),
        (
            "timeline",
            0,
            (1600.0, 1000.0),
            Lang::En,
            ThemeChoice::Light,
            false,
        ),
        (
            "timeline",
            0,
            (1920.0, 1080.0),
            Lang::Tr,
            ThemeChoice::Dark,
            true,
        ),
        (
            "playground",
            0,
            (1280.0, 720.0),
            Lang::En,
            ThemeChoice::Dark,
            false,
        ),
        (
            "playground",
            0,
            (1920.0, 1080.0),
            Lang::Tr,
            ThemeChoice::Light,
            true,
        ),
    ] {
        let mut app = TplabApp::default();
        app.set_theme(theme);
        app.shared.presenter = presenter;
        app.shared.scenario.set_config(gpt2.clone());
        app.shared.beside.with = Beside::Tp(4);
        app.load_view_state("step", r#"{"predict": false}"#);
        assert!(app.select(view));
        let mut harness = common::gl_harness_pixels(app, size, lang, view);
        for _ in 0..presses {
            common::press(&mut harness, egui::Key::ArrowRight, 1);
        }
        harness.run_steps(3);
        if !presenter {
            harness.mask(egui::Rect::from_min_max(
                egui::pos2(0.0, 0.0),
                egui::pos2(SIDE_BAR_WIDTH + 2.0, size.1),
            ));
        }
        let view_name = if presses == 13 { "step_g" } else { view };
        let name = format!(
            "beside_{}",
            shot_name(view_name, size, lang, theme, presenter)
        );
        harness.snapshot_options(&name, &snapshot_options());
        results.extend_harness(&mut harness);
    }
    results.unwrap();
}

/// On a projector at 1280×720, a collective step with TP 4 beside TP 2 (GPT-2 small) fits in
/// both languages: both programs' message pictures, drawn last, end above the window's bottom,
/// so nothing of the step scrolls.
#[test]
fn a_collective_beside_another_fits_a_projector_at_1280x720() {
    let gpt2 = Config {
        tp: 2,
        ..Preset::Gpt2Small.config()
    };
    for lang in [Lang::En, Lang::Tr] {
        // 13 presses: g after the MLP, an all-reduce on both.
        for presses in [13] {
            let mut app = TplabApp::default();
            app.shared.presenter = true;
            app.shared.scenario.set_config(gpt2.clone());
            app.shared.beside.with = Beside::Tp(4);
            app.load_view_state("step", r#"{"predict": false}"#);
            assert!(app.select("step"));
            let mut harness = common::gl_harness_pixels(app, (1280.0, 720.0), lang, "step");
            for _ in 0..presses {
                common::press(&mut harness, egui::Key::ArrowRight, 1);
            }
            harness.run_steps(3);
            let bottom = harness.ctx.content_rect().bottom();
            let moving = tplab::i18n::t_args(lang, "st-lanes-moving", &[("tp", "2".into())]);
            let moving = moving.split(':').next().unwrap_or_default().to_string();
            let pictures: Vec<egui::Rect> = [moving.clone(), moving.replace('2', "4")]
                .iter()
                .flat_map(|l| harness.query_all_by_label_contains(l).map(|n| n.rect()))
                .collect();
            assert_eq!(
                pictures.len(),
                2,
                "{lang:?}: a message picture in each pane"
            );
            for p in &pictures {
                assert!(
                    p.bottom() <= bottom,
                    "{lang:?}, {presses} presses: a message picture ends at {} of {bottom} points",
                    p.bottom()
                );
            }
        }
    }
}

/// A lesson's Show me can open two sizes side by side (`beside = 4`); the next target that names
/// none opens one program again.
#[test]
fn a_lesson_opens_two_sizes_side_by_side_and_the_next_target_one() {
    let catalog = tplab_lessons::Catalog::embedded().unwrap_or_else(|e| panic!("{e:?}"));
    let targets: Vec<&tplab::lab::ShowMe> = catalog.show_me_targets().map(|(_, t)| t).collect();
    let beside = targets
        .iter()
        .find(|t| t.beside == Some(4) && t.view == tplab_lessons::View::Timeline)
        .expect("a lesson shows TP=4 beside another size in the Timeline");
    let plain = targets
        .iter()
        .find(|t| t.beside.is_none() && t.view == tplab_lessons::View::Timeline)
        .expect("a plain Timeline target");
    let mut harness = open("lessons", &tiny(2), Lang::En);
    harness.state_mut().show_me(beside);
    harness.run_steps(3);
    assert_eq!(harness.state().shared.beside.with, Beside::Tp(4));
    assert!(text_of(&harness).contains("TP = 4 · Makespan"));
    harness.state_mut().show_me(plain);
    harness.run_steps(3);
    assert_eq!(harness.state().shared.beside.with, Beside::Nothing);
}
