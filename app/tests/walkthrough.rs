//! The walkthrough, stepped as a learner steps it: a whole forward and backward pass at TP 1, 2
//! and 4, with and without sequence parallelism, one key press per step. At every step the
//! narration and the placements the lanes draw are the engine's, from the trace.

mod common;
use common::press;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use tplab::lab::walk::walk_steps;
use tplab::lab::ShowMe;
use tplab::widgets::lanes::{narration, placements_text};
use tplab::TplabApp;
use tplab_engine::block::program::schedule;
use tplab_engine::{config::Config, config::Preset};
use tplab_lessons::Lang;

/// Key presses a step takes: one per round of a collective (ring all-reduce on 4 GPUs: 6), one
/// for anything else.
fn presses(trace: &tplab_engine::trace::Trace, first_event: usize) -> usize {
    use tplab_engine::{collectives::CollectiveKind, trace::EventKind};
    let e = &trace.events[first_event];
    match e.kind {
        EventKind::Collective {
            kind, algorithm, ..
        } if kind != CollectiveKind::Identity => {
            let elems = e.output[0] * e.output[1];
            tplab_engine::collectives::plan(kind, algorithm, e.ranks.len(), elems, 8)
                .map_or(1, |p| p.step_count().max(1))
        }
        _ => 1,
    }
}

fn harness_on(cfg: &Config, lang: Lang) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    app.shared.scenario.set_config(cfg.clone());
    app.shared.navigate(ShowMe {
        view: tplab_lessons::View::Step,
        ..Default::default()
    });
    // These tests step through every op; the predictions have their own tests below.
    app.load_view_state("step", r#"{"predict": false}"#);
    let mut harness = Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    tplab::i18n::set_lang(&harness.ctx, lang);
    harness.run_steps(2);
    harness
}

/// The walkthrough with its predictions on (the default), at `cfg`, in `lang`.
fn predicting(cfg: &Config, lang: Lang, presenter: bool) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    app.shared.scenario.set_config(cfg.clone());
    app.shared.presenter = presenter;
    assert!(app.select("step"));
    let mut harness = Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    tplab::i18n::set_lang(&harness.ctx, lang);
    harness.run_steps(2);
    harness
}

fn press_next(harness: &mut Harness<'static, TplabApp>, n: usize) {
    // The arrow key never answers a question: a question on the way is skipped, as a learner
    // who does not want to answer does.
    let skips = [
        "Skip for now (asked again at the end of the layer)",
        "Şimdilik geç (katmanın sonunda yeniden sorulur)",
    ];
    for _ in 0..n {
        let skip = skips
            .iter()
            .find(|s| harness.query_by_label(s).is_some())
            .copied();
        match skip {
            Some(s) => harness.get_by_label(s).click(),
            None => harness.key_press(egui::Key::ArrowRight),
        }
        harness.run_steps(1);
    }
}

/// Before g the walkthrough asks what GPU 2 will hold; the narration and the lanes wait; a right
/// and a wrong answer are shown and counted; the bytes question of the backward offers what each
/// GPU really sends (the trace's), and Turkish asks in Turkish.
#[test]
fn the_walkthrough_asks_before_each_collective_and_counts_the_answers() {
    let cfg = Config {
        tp: 4,
        layers: 1,
        ..Preset::Tiny.config()
    };
    let trace = schedule(&cfg).expect("Megatron's plan propagates");
    let steps = walk_steps(&trace);
    let mut h = predicting(&cfg, Lang::En, false);
    // ln1, f (identity), qkv, core, out: then attn.g asks first.
    press_next(&mut h, 5);
    h.get_by_label_contains("Predict: after this all-reduce, what will GPU 2 hold of");
    let g = &trace.events[steps[5].first_event];
    assert!(
        h.query_by_label(&narration(Lang::En, &trace, g)).is_none(),
        "the narration waits"
    );
    // Beside the question, what every GPU holds now (the partial sums), never what the
    // all-reduce leaves (the answer).
    let events = &trace.events[steps[5].first_event..steps[5].first_event + steps[5].events];
    h.get_by_label("What each GPU holds now");
    h.get_by_label(&tplab::widgets::lanes::holdings_text(events, 4));
    assert!(
        h.query_by_label(&placements_text(events, 4)).is_none(),
        "the lanes beside a prediction show what the collective writes"
    );
    h.get_by_label("C  the whole sum, the same on every GPU")
        .click();
    h.run_steps(2);
    h.get_by_label("✔ Right: C  the whole sum, the same on every GPU");
    h.get_by_label(&narration(Lang::En, &trace, g));
    h.get_by_label_contains("You predicted 1 of 1 right.");
    // The ring's rounds, the residual, then the MLP's ops up to mlp.g, which asks again.
    let mlp_g = steps
        .iter()
        .position(|s| {
            s.op.to_string() == "mlp.g" && s.pass == tplab_engine::block::op::Pass::Forward
        })
        .unwrap_or_else(|| panic!("no mlp.g"));
    let mut guard = 0;
    while h.query_by_label_contains("Predict:").is_none() {
        press_next(&mut h, 1);
        guard += 1;
        assert!(guard < 40, "no second question");
    }
    let _ = mlp_g;
    h.get_by_label("A  only its own partial sum, unchanged")
        .click();
    h.run_steps(2);
    h.get_by_label_contains("✖ Not quite: the answer is C");
    h.get_by_label_contains("Lesson 6 (the f and g operators) explains");
    h.get_by_label_contains("You predicted 1 of 2 right.");
    // The backward's first collective asks for bytes; the right option is the trace's count.
    let mut guard = 0;
    while h.query_by_label_contains("how many bytes").is_none() {
        press_next(&mut h, 1);
        guard += 1;
        assert!(guard < 80, "no bytes question");
    }
    let bwd = trace
        .events
        .iter()
        .find(|e| {
            e.pass == tplab_engine::block::op::Pass::Backward
                && e.ranks.len() > 1
                && e.collective_kind()
                    .is_some_and(|k| k != tplab_engine::collectives::CollectiveKind::Identity)
        })
        .unwrap_or_else(|| panic!("no backward collective"));
    let right = tplab_engine::config::human_bytes(bwd.bytes_sent_per_rank);
    let option = h.query_all_by_label_contains(&right).next().and_then(|n| {
        use egui_kittest::kittest::NodeT;
        n.accesskit_node().label().map(|l| l.to_string())
    });
    let option: String = option.unwrap_or_else(|| panic!("{right} is not offered"));
    h.get_by_label(&option).click();
    h.run_steps(2);
    h.get_by_label_contains("✔ Right:");
    h.get_by_label_contains("You predicted 2 of 3 right.");
}

/// On a projector the class answers aloud: → reveals (nothing is counted), the next → plays;
/// with sequence parallelism g is a reduce-scatter, and the answer is "its own tokens".
#[test]
fn on_a_projector_the_next_key_reveals_and_sequence_parallelism_changes_the_answer() {
    let cfg = Config {
        tp: 4,
        layers: 1,
        sequence_parallel: true,
        ..Preset::Tiny.config()
    };
    let mut h = predicting(&cfg, Lang::Tr, true);
    let mut guard = 0;
    while h.query_by_label_contains("Tahmin edin:").is_none() {
        press_next(&mut h, 1);
        guard += 1;
        assert!(guard < 20, "no question");
    }
    // The first forward collective with sequence parallelism is f's all-gather: the whole
    // tensor joined from the slices.
    h.get_by_label_contains("all-gather");
    // The room answers aloud: the hint says what the arrow does, not "once you answer".
    h.get_by_label_contains("Sınıf yüksek sesle");
    assert!(h.query_by_label_contains("siz cevap verince").is_none());
    press_next(&mut h, 1);
    h.get_by_label("Cevap: D  tensörün tamamını, her GPU'nun diliminden birleştirilmiş");
    assert!(
        h.query_by_label_contains("tahminden").is_none(),
        "a class's reveal is not counted"
    );
    // g: a reduce-scatter leaves each GPU its tokens of the sum.
    let mut guard = 0;
    while h
        .query_by_label_contains("reduce-scatter işleminden sonra")
        .is_none()
    {
        press_next(&mut h, 1);
        guard += 1;
        assert!(guard < 40, "no reduce-scatter question");
    }
    press_next(&mut h, 1);
    h.get_by_label("Cevap: B  toplamı, ama yalnızca kendi token'larını (satırlarını)");
}

#[test]
fn every_step_of_a_layer_shows_the_engines_placements_and_narration() {
    for tp in [1, 2, 4] {
        for sp in [false, true] {
            if sp && tp == 1 {
                continue;
            }
            let cfg = Config {
                tp,
                layers: 1,
                sequence_parallel: sp,
                ..Preset::Tiny.config()
            };
            let trace = schedule(&cfg).expect("Megatron's plan propagates");
            let steps = walk_steps(&trace);
            let lang = if tp == 2 { Lang::Tr } else { Lang::En };
            let mut harness = harness_on(&cfg, lang);
            for (i, step) in steps.iter().enumerate() {
                let events = &trace.events[step.first_event..step.first_event + step.events];
                let said = narration(lang, &trace, &events[0]);
                assert!(!said.starts_with("walk-"), "no narration for {}", step.op);
                harness.get_by_label(&said);
                harness.get_by_label(&placements_text(events, tp));
                if i + 1 < steps.len() {
                    // One press per round of a collective, one for any other step.
                    for _ in 0..presses(&trace, step.first_event) {
                        press(&mut harness, egui::Key::PageDown, 1);
                    }
                }
            }
            // Collectives are steps only when there is more than one GPU.
            let collective_steps = steps
                .iter()
                .filter(|s| trace.events[s.first_event].is_collective())
                .count();
            if tp == 1 {
                assert_eq!(collective_steps, 0);
                harness.get_by_label(&tplab::i18n::t(lang, "walk-one-gpu"));
            } else {
                assert!(collective_steps >= 8, "tp={tp} sp={sp}");
            }
            // The last step says it is the end, and where to go from here.
            harness.get_by_label(&tplab::i18n::t(lang, "walk-end"));
            // Home goes back to the start.
            press(&mut harness, egui::Key::Home, 1);
            assert!(harness
                .query_by_label(&tplab::i18n::t(lang, "walk-end"))
                .is_none());
            let first = &trace.events[steps[0].first_event..];
            harness.get_by_label(&narration(lang, &trace, &first[0]));
        }
    }
}

#[test]
fn every_press_is_one_step_or_one_round() {
    let cfg = Config {
        tp: 4,
        layers: 1,
        ..Preset::Tiny.config()
    };
    let trace = schedule(&cfg).expect("Megatron's plan propagates");
    let steps = walk_steps(&trace);
    let mut harness = harness_on(&cfg, Lang::En);
    // ln1, f (identity), qkv, core, out: five steps of one press each.
    for _ in 0..5 {
        harness.key_press(egui::Key::ArrowRight);
    }
    harness.run_steps(1);
    let e = &trace.events[steps[5].first_event];
    harness.get_by_label(&narration(Lang::En, &trace, e));
    // attn.g is a ring all-reduce on 4 GPUs: each press is one of its 6 rounds.
    harness.get_by_label_contains("round 1 of 6");
    for _ in 0..3 {
        harness.key_press(egui::Key::ArrowRight);
    }
    harness.run_steps(1);
    harness.get_by_label_contains("round 4 of 6");
    // Back: rounds 3, 2, 1, then the out-projection before it.
    for _ in 0..4 {
        harness.key_press(egui::Key::PageUp);
    }
    harness.run_steps(1);
    let e = &trace.events[steps[4].first_event];
    harness.get_by_label(&narration(Lang::En, &trace, e));
}

#[test]
fn fc1_on_gpu_1_holds_the_second_quarter_of_w1() {
    let cfg = Config {
        layers: 1,
        ..Preset::Gpt2Small.config()
    };
    assert_eq!(cfg.tp, 4);
    let trace = schedule(&cfg).expect("Megatron's plan propagates");
    let steps = walk_steps(&trace);
    let at = steps
        .iter()
        .position(|s| s.op == tplab_engine::block::Op::Fc1)
        .expect("fc1 is a step");
    let events = &trace.events[steps[at].first_event..steps[at].first_event + steps[at].events];
    let text = placements_text(events, 4);
    assert!(
        text.contains("GPU 1: H2, W1[:, 768:1536], b1[:, 768:1536] -> A[:, 768:1536]"),
        "{text}"
    );
}

/// A teacher starts straight in class mode: `tplab --view walkthrough --presenter --lang tr`.
#[test]
fn launch_flags_open_the_walkthrough_in_presenter_mode_in_turkish() {
    let launch = tplab::app::Launch::new(Some("walkthrough"), true, Some(Lang::Tr), None)
        .expect("walkthrough is a view");
    let mut harness = Harness::builder()
        .with_size([1280.0, 720.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default());
    let ctx = harness.ctx.clone();
    harness.state_mut().apply_launch(&ctx, &launch);
    harness.run_steps(2);
    assert_eq!(harness.state().active_id(), "step");
    assert!(harness.state().shared.presenter);
    assert_eq!(tplab::i18n::current_lang(&harness.ctx), Lang::Tr);
    harness.get_by_label_contains("Adım 1/");
    let err = tplab::app::Launch::new(Some("walkthru"), false, None, None)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("unknown view 'walkthru'") && err.contains("walkthrough, playground"),
        "{err}"
    );
}

/// The first screen offers three ways in, in the learner's language, and each lands where it says.
#[test]
fn the_first_screen_leads_to_a_lesson_the_walkthrough_or_the_quiz() {
    for (label_en, label_tr, view) in [
        ("Start with lesson 1", "1. dersle başla", "lessons"),
        (
            "Walk through a layer, step by step",
            "Bir katmanı adım adım izle",
            "step",
        ),
        ("Take the quiz", "Teste başla", "quiz"),
    ] {
        for lang in [Lang::En, Lang::Tr] {
            let mut app = TplabApp::default();
            app.welcome = true;
            let mut harness = Harness::builder()
                .with_size([1280.0, 720.0])
                .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
            tplab::i18n::set_lang(&harness.ctx, lang);
            harness.run_steps(2);
            let label = if lang == Lang::En { label_en } else { label_tr };
            harness.get_by_label(label).click();
            harness.run_steps(2);
            assert!(!harness.state().welcome);
            assert_eq!(harness.state().active_id(), view, "{label}");
        }
    }
}

/// A Show me lands on the scenario it names and nothing left over: a learner who switched to the
/// tree algorithm and sequence parallelism, then presses a ring demo's button, sees ring.
#[test]
fn show_me_sets_every_scenario_field_and_leaves_nothing_over() {
    let mut app = TplabApp::default();
    let mut cfg = app.shared.scenario.config().clone();
    cfg.algorithm = tplab_engine::collectives::Algorithm::Tree;
    cfg.sequence_parallel = true;
    cfg.layers = 5;
    app.shared.scenario.set_config(cfg);
    app.show_me(&ShowMe {
        view: tplab_lessons::View::Collectives,
        scenario: tplab_engine::overrides::Overrides {
            tp: Some(4),
            ..Default::default()
        },
        ..Default::default()
    });
    let now = app.shared.scenario.config();
    assert_eq!(now.algorithm, tplab_engine::collectives::Algorithm::Ring);
    assert!(!now.sequence_parallel);
    assert_eq!((now.layers, now.tp, now.hidden), (1, 4, 768));
    // A target naming no scenario field keeps the learner's.
    app.show_me(&ShowMe {
        view: tplab_lessons::View::Quiz,
        ..Default::default()
    });
    assert_eq!(app.shared.scenario.config().tp, 4);
}

/// At the first backward step the walkthrough asks which operator's backward makes the GPUs
/// communicate: f before the MLP (its backward all-reduces the input gradient), not g, GeLU or
/// LayerNorm — read off the trace. With sequence parallelism g's backward communicates too, so
/// the question is not asked there.
#[test]
fn the_first_backward_step_asks_which_operator_communicates() {
    let cfg = Config {
        tp: 4,
        layers: 1,
        ..Preset::Tiny.config()
    };
    let trace = schedule(&cfg).expect("Megatron's plan propagates");
    let steps = walk_steps(&trace);
    let first_bwd = steps
        .iter()
        .position(|s| s.pass == tplab_engine::block::op::Pass::Backward)
        .unwrap_or_else(|| panic!("no backward"));
    let mut h = predicting(&cfg, Lang::En, false);
    let mut guard = 0;
    while h
        .query_by_label_contains("which of these makes the GPUs communicate")
        .is_none()
    {
        press_next(&mut h, 1);
        guard += 1;
        assert!(guard < 80, "never asked");
    }
    // It is the first backward step that asks (the forward's questions were revealed on the way).
    assert!(h
        .query_by_label_contains(&format!("Step {}/", first_bwd + 1))
        .is_some());
    h.get_by_label("C  f before the MLP").click();
    h.run_steps(2);
    h.get_by_label("✔ Right: C  f before the MLP");

    let sp = Config {
        sequence_parallel: true,
        ..cfg
    };
    let trace = schedule(&sp).expect("Megatron's plan propagates");
    let steps = walk_steps(&trace);
    let step = steps
        .iter()
        .find(|s| s.pass == tplab_engine::block::op::Pass::Backward)
        .unwrap_or_else(|| panic!("no backward"));
    assert!(tplab::views::step::prediction(Lang::En, &trace, step).is_none());
}

/// A screen reader hears each step: the narration is a polite live region, and it is the new
/// step's words after a press.
#[test]
fn the_narration_is_announced_when_the_step_changes() {
    let cfg = Preset::Gpt2Small.config();
    let mut harness = harness_on(&cfg, Lang::En);
    // The text, once (a label and its text run both carry it).
    let live = |h: &Harness<'static, TplabApp>| -> Vec<String> {
        let texts: std::collections::BTreeSet<String> = h
            .query_all_by(|n| n.live() == egui::accesskit::Live::Polite)
            .filter_map(|n| {
                let node = egui_kittest::kittest::NodeT::accesskit_node(&n);
                node.value().or(node.label()).map(|s| s.to_string())
            })
            .collect();
        texts.into_iter().collect()
    };
    let first = live(&harness);
    assert_eq!(first.len(), 1, "{first:?}");
    press(&mut harness, egui::Key::ArrowRight, 2);
    let second = live(&harness);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(first, second, "the live region kept the first step's words");
}

/// A skipped question keeps its answer: nothing of it is shown when it is skipped, the end of the
/// layer offers it again, and asked again it is the same question, still unanswered. A wrong pick
/// says why that option is not it.
#[test]
fn a_skipped_question_comes_back_unanswered_and_a_wrong_pick_says_why_not() {
    let cfg = Config {
        tp: 4,
        layers: 1,
        ..Preset::Tiny.config()
    };
    let mut h = predicting(&cfg, Lang::En, false);
    press_next(&mut h, 5); // ln1, f, qkv, core, out: attn.g asks.
    h.get_by_label_contains("Predict: after this all-reduce, what will GPU 2 hold of");
    h.get_by_label("Skip for now (asked again at the end of the layer)")
        .click();
    h.run_steps(2);
    assert!(
        h.query_by_label_contains("The answer:").is_none(),
        "a skipped question showed its answer"
    );
    assert!(h
        .query_by_label_contains("the whole sum, the same on every GPU")
        .is_none());
    // To the end of the layer's forward and backward: the skipped question is offered again.
    let mut guard = 0;
    while h.query_by_label("Ask them now").is_none() {
        press_next(&mut h, 1);
        guard += 1;
        assert!(guard < 80, "the skipped question was not offered again");
    }
    h.get_by_label_contains("You skipped");
    h.get_by_label("Ask them now").click();
    h.run_steps(2);
    h.get_by_label_contains("Predict: after this all-reduce, what will GPU 2 hold of");
    // A wrong pick: the answer, and why the option picked is not it.
    h.get_by_label("B  the sum, but only its own tokens (rows)")
        .click();
    h.run_steps(2);
    h.get_by_label_contains("Not quite: the answer is C");
    h.get_by_label_contains(
        "is what a reduce-scatter leaves; this all-reduce leaves something else",
    );
}

/// On a projector (presenter mode at 1920×1080 and 1600×1000, English and Turkish), every step
/// of the default layer at TP 4 has all four GPUs' lanes whole on screen: none below the fold
/// (fc2's tall W2 once pushed GPU 3 out of sight at 1080 lines; the lanes now go two to a row
/// where one column cannot hold them).
#[test]
fn on_a_projector_every_step_shows_every_gpus_lane_without_scrolling() {
    for (w, h) in [(1920.0, 1080.0), (1600.0, 1000.0), (1280.0, 720.0)] {
        for lang in [Lang::En, Lang::Tr] {
            let mut app = TplabApp::default();
            app.shared.presenter = true;
            let trace = app
                .shared
                .scenario
                .derived()
                .expect("the default scenario is valid")
                .trace
                .clone();
            assert_eq!(trace.config.tp, 4, "the default scenario is TP 4");
            app.shared.navigate(ShowMe {
                view: tplab_lessons::View::Step,
                ..Default::default()
            });
            app.load_view_state("step", r#"{"predict": false}"#);
            // The window in pixels: presenter mode's zoom makes them fewer, larger points.
            let mut harness = common::gl_harness_pixels(app, (w, h), lang, "walkthrough");
            let window = harness.ctx.content_rect();
            let steps = walk_steps(&trace);
            for (i, step) in steps.iter().enumerate() {
                let events = &trace.events[step.first_event..step.first_event + step.events];
                let what = format!("{w}x{h} {lang:?} step {} ({})", i + 1, step.op);
                let lanes = harness.get_by_label(&placements_text(events, 4)).rect();
                assert!(
                    window.contains_rect(lanes.shrink(0.5)),
                    "{what}: the lanes {lanes:?} are not whole in {window:?}"
                );
                if i + 1 < steps.len() {
                    for _ in 0..presses(&trace, step.first_event) {
                        press(&mut harness, egui::Key::PageDown, 1);
                    }
                }
            }
        }
    }
}

/// A lecturer who rehearsed the walkthrough gets its predictions back for the class: "Ask the
/// predictions again" forgets the answers (kept across restarts) and goes back to the first
/// step, where the first question is asked again.
#[test]
fn a_rehearsed_walkthrough_asks_its_predictions_again() {
    let cfg = Config {
        tp: 4,
        layers: 1,
        ..Preset::Tiny.config()
    };
    let mut h = predicting(&cfg, Lang::En, false);
    assert!(h.query_by_label("Ask the predictions again").is_none());
    press_next(&mut h, 5);
    h.get_by_label("C  the whole sum, the same on every GPU")
        .click();
    h.run_steps(2);
    h.get_by_label_contains("You predicted 1 of 1 right.");
    h.get_by_label("Ask the predictions again").click();
    h.run_steps(2);
    assert!(h.query_all_by_label_contains("Step 1/").next().is_some());
    assert!(h.query_by_label_contains("You predicted").is_none());
    press_next(&mut h, 5);
    h.get_by_label_contains("Predict: after this all-reduce, what will GPU 2 hold of");
}
