//! The MoE view as a learner uses it: the layer stepped through (router, capacity, dispatch,
//! experts, combine, weighted sum, backward) with every number the engine's; the dispatch's bytes
//! predicted before they are shown; a low capacity factor's drops crossed out and counted; an EP
//! that does not divide the experts refused in words with fixes that work; lesson 16's Show me;
//! and snapshots at 1280×720, 1600×1000 and 1920×1080, English and Turkish, light and dark, at a
//! desk and on a projector (regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test
//! moe_view`).

mod common;
use common::{click, press, shot_name, snapshot_options, wait_until};
use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotResults};
use tplab::app::{ThemeChoice, SIDE_BAR_WIDTH};
use tplab::lab::ShowMe;
use tplab::views::moe::{build, dispatch_options, Moe, Preset};
use tplab::TplabApp;
use tplab_engine::config::human_bytes;
use tplab_lessons::{Lang, View};

fn harness() -> Harness<'static, TplabApp> {
    Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default())
}

/// Opens the MoE view as lesson 16's Show me button does.
fn open(harness: &mut Harness<'static, TplabApp>) {
    harness.state_mut().show_me(&ShowMe {
        view: View::Moe,
        ..Default::default()
    });
    harness.run_steps(3);
    assert_eq!(harness.state().active_id(), "moe");
}

/// Opens the view on a saved state.
fn open_state(harness: &mut Harness<'static, TplabApp>, view: &Moe) {
    let json = serde_json::to_string(view).unwrap_or_else(|e| panic!("{e}"));
    assert!(harness.state_mut().load_view_state("moe", &json));
    assert!(harness.state_mut().select("moe"));
    harness.run_steps(3);
}

/// The view's state (what it saves).
fn state(harness: &Harness<'static, TplabApp>) -> serde_json::Value {
    let json = harness.state().view_state("moe").unwrap_or_default();
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"))
}

/// The engine's run for what the view's state says, built independently of the view's cache.
fn engine(harness: &Harness<'static, TplabApp>) -> tplab::views::moe::Built {
    let json = harness.state().view_state("moe").unwrap_or_default();
    let mut view = Moe::default();
    tplab::lab::View::load(&mut view, &json);
    build(&view.config()).unwrap_or_else(|e| panic!("{e}"))
}

fn position(harness: &Harness<'static, TplabApp>) -> f64 {
    state(harness)["position"].as_f64().unwrap_or(-1.0)
}

/// Lesson 16's layer (Mixtral-like, 64 tokens, EP 4): each step's heading and numbers are the
/// engine's; the dispatch waits for a prediction, whose right answer is GPU 0's bytes as the
/// engine counted them; Home goes back, Space plays to the end.
#[test]
fn the_layer_is_stepped_through_with_the_engines_numbers() {
    let mut harness = harness();
    open(&mut harness);
    let b = engine(&harness);
    let c = b.config().clone();
    assert_eq!(
        (c.experts, c.top_k, c.ep, c.etp, c.tokens),
        (8, 2, 4, 1, 64)
    );
    harness.get_by_label_contains("Step 1/7 · forward · router and top-k");
    // Token 0's picks, best first, with the reference's gates.
    let (j0, j1) = (b.routing.chosen[0][0], b.routing.chosen[0][1]);
    let gate = |g: f64| tplab::i18n::num(Lang::En, g, 2);
    harness.get_by_label_contains(&format!(
        "Token 0 picks expert {j0} (gate {}) and expert {j1} (gate {})",
        gate(b.routing.gates[0][0]),
        gate(b.routing.gates[0][1])
    ));
    harness.get_by_label_contains("Routing: 64 tokens × 8 experts, 128 picks");
    press(&mut harness, egui::Key::ArrowRight, 2);
    harness.get_by_label_contains("Step 2/7 · forward · capacity");
    harness.get_by_label_contains("No capacity limit");
    harness.get_by_label_contains("Capacity: 64 tokens × 8 experts, 0 picks dropped");
    // The dispatch asks first.
    press(&mut harness, egui::Key::ArrowRight, 2);
    harness.get_by_label_contains("Predict first: GPU 0 holds 16 tokens and experts 0–1");
    assert!(harness
        .query_by_label_contains("Dispatch all-to-all, bytes sent")
        .is_none());
    let (options, right) = dispatch_options(&b);
    let sent = b.sent("moe.dispatch");
    assert_eq!(options[right], sent[0]);
    // GPU 0's bytes are its rows for other EP ranks' experts, a row of h f64 numbers each.
    let off_rank: usize = (1..c.ep).map(|d| b.rows[0][d]).sum();
    assert_eq!(sent[0], (off_rank * c.hidden * 8) as u64);
    let answer = format!(
        "{}  {}",
        char::from(b'A' + right as u8),
        human_bytes(options[right])
    );
    click(&mut harness, &answer, 3);
    harness.get_by_label_contains(&format!("You predicted {}: right.", human_bytes(sent[0])));
    let listed: Vec<String> = sent
        .iter()
        .enumerate()
        .map(|(g, x)| format!("GPU {g} {}", human_bytes(*x)))
        .collect();
    harness.get_by_label_contains(&format!(
        "Dispatch all-to-all, bytes sent: {}",
        listed.join(", ")
    ));
    harness.get_by_label_contains(&format!("GPU 0 sends {}", human_bytes(sent[0])));
    // Experts, combine, sum, backward.
    press(&mut harness, egui::Key::ArrowRight, 2);
    harness.get_by_label_contains("Step 4/7 · forward · experts compute");
    let kept: Vec<String> = b
        .report
        .routing
        .tokens_per_expert
        .iter()
        .map(usize::to_string)
        .collect();
    harness.get_by_label_contains(&format!(
        "Experts: rows per expert {}; ETP 1",
        kept.join(", ")
    ));
    click(&mut harness, "Next step", 2);
    harness.get_by_label_contains("Step 5/7 · forward · combine (all-to-all)");
    let combine = b.sent("moe.combine");
    harness.get_by_label_contains(&format!("GPU 0 sends {}", human_bytes(combine[0])));
    click(&mut harness, "Next step", 2);
    harness.get_by_label_contains("Step 6/7 · forward · weighted sum");
    click(&mut harness, "Next step", 2);
    harness.get_by_label_contains("Step 7/7 · backward · backward collectives");
    harness.get_by_label("router's weight gradient, summed over the EP group");
    // The check against the reference, from the engine's report.
    assert!(b.report.passed());
    harness.get_by_label_contains("Checked against the unsharded reference (f64, ");
    harness.get_by_label_contains("Routing and drops: identical to the reference's.");
    // Back to the start, then play to the end (the dispatch was answered: nothing stops it).
    press(&mut harness, egui::Key::Home, 2);
    assert_eq!(position(&harness), 0.0);
    click(&mut harness, "Previous step", 2);
    assert_eq!(position(&harness), 0.0, "no step before the first");
    press(&mut harness, egui::Key::Space, 1);
    assert_eq!(state(&harness)["playing"], true);
    let done = wait_until(&mut harness, 4000, 5, |h| {
        (position(h) - 6.0).abs() < 1e-6 && state(h)["playing"] == false
    });
    assert!(done, "playing never reached the last step");
}

/// A wrong prediction is said to be wrong; the clicker's first press reveals without an answer.
#[test]
fn the_dispatch_prediction_is_answered_and_revealed() {
    let mut harness = harness();
    let mut view = Moe::with_preset(Preset::Switch);
    view.position = 2.0;
    open_state(&mut harness, &view);
    harness.get_by_label_contains("Predict first: GPU 0 holds 8 tokens");
    let b = engine(&harness);
    let (options, right) = dispatch_options(&b);
    assert_eq!(options.len(), 4);
    let wrong = (right + 1) % options.len();
    click(
        &mut harness,
        &format!(
            "{}  {}",
            char::from(b'A' + wrong as u8),
            human_bytes(options[wrong])
        ),
        3,
    );
    harness.get_by_label_contains("the engine counted otherwise");

    // Another layer: the clicker's → reveals, with no answer recorded.
    let mut view = Moe::with_preset(Preset::Etp);
    view.position = 2.0;
    open_state(&mut harness, &view);
    harness.get_by_label_contains("Predict first");
    press(&mut harness, egui::Key::PageDown, 2);
    assert!(harness.query_by_label_contains("Predict first").is_none());
    assert_eq!(
        position(&harness),
        2.0,
        "the press revealed, it did not move on"
    );
    harness.get_by_label_contains("Dispatch all-to-all, bytes sent");
    assert!(harness.query_by_label_contains("You predicted").is_none());
}

/// Switch-like top-1 with a capacity factor of 1: each expert takes ceil(1·1·32/8) = 4 tokens,
/// the rest are dropped; the capacity step names every dropped pick the engine reports and
/// counts them, and the weighted sum says how many tokens lost a part.
#[test]
fn a_low_capacity_factor_drops_picks_and_shows_them() {
    let mut harness = harness();
    let mut view = Moe::with_preset(Preset::Switch);
    view.position = 1.0;
    open_state(&mut harness, &view);
    let b = engine(&harness);
    assert_eq!(b.report.capacity, 4);
    let dropped = &b.report.routing.dropped;
    assert!(!dropped.is_empty(), "capacity 1 drops on this seed");
    let listed: Vec<String> = dropped
        .iter()
        .map(|d| format!("token {} › expert {}", d.token, d.expert))
        .collect();
    harness.get_by_label_contains(&format!(
        "Capacity: 32 tokens × 8 experts, {} picks dropped: {}",
        dropped.len(),
        listed.join(", ")
    ));
    harness.get_by_label_contains(&format!(
        "rounded up: 1.00·1·32/8 gives 4, taken in token order. {} of 32 assignments do not fit",
        dropped.len()
    ));
    // Without the limit nothing is dropped.
    click(
        &mut harness,
        "Limit each expert's tokens (capacity factor)",
        3,
    );
    assert_eq!(state(&harness)["capacity_limited"], false);
    assert_eq!(state(&harness)["preset"], "custom");
    harness.get_by_label_contains("Capacity: 32 tokens × 8 experts, 0 picks dropped");
    // Step 6 with the limit back: the tokens that lost a part.
    click(
        &mut harness,
        "Limit each expert's tokens (capacity factor)",
        3,
    );
    click(&mut harness, "6 weighted sum", 3);
    harness.get_by_label_contains(&format!("{} picks were dropped", dropped.len()));
    harness.get_by_label_contains(&format!(
        "Weighted sum: 32 tokens, {} picks dropped",
        dropped.len()
    ));
}

/// EP 3 does not divide 8 experts: the engine's rule in words, the valid sizes as buttons, and a
/// click runs the layer; ETP 3 does not divide the FFN width 64; k over the experts.
#[test]
fn an_invalid_layout_is_refused_with_fixes_that_work() {
    let mut harness = harness();
    let mut view = Moe::with_preset(Preset::Mixtral);
    view.ep = 3;
    open_state(&mut harness, &view);
    harness.get_by_label_contains(
        "Invalid choice: 8 experts cannot be shared out over EP 3: every EP rank holds the same \
         number of whole experts, so EP must divide the experts. Valid EP sizes: 1, 2, 4 or 8.",
    );
    for ep in [1, 2, 4, 8] {
        harness.get_by_label(&format!("Use EP {ep}"));
    }
    click(&mut harness, "Use EP 2", 3);
    assert_eq!(state(&harness)["ep"], 2);
    harness.get_by_label_contains("EP 2 × ETP 1");
    harness.get_by_label_contains("Step 1/7");

    let mut view = Moe::with_preset(Preset::Mixtral);
    view.etp = 3;
    open_state(&mut harness, &view);
    harness.get_by_label_contains("cannot be cut into 3 equal slices");
    click(&mut harness, "Use ETP 4", 3);
    assert_eq!(state(&harness)["etp"], 4);
    harness.get_by_label_contains("16 GPUs: EP 4 × ETP 4");

    let mut view = Moe::with_preset(Preset::Mixtral);
    view.experts = 2;
    view.ep = 2;
    view.top_k = 3;
    open_state(&mut harness, &view);
    harness.get_by_label_contains("A token picks 3 different experts, but there are only 2");
    click(&mut harness, "Use k = 2", 3);
    assert_eq!(state(&harness)["top_k"], 2);
    harness.get_by_label_contains("Step 1/7");

    // In Turkish, the same rule in Turkish.
    tplab::i18n::set_lang(&harness.ctx, Lang::Tr);
    let mut view = Moe::with_preset(Preset::Mixtral);
    view.ep = 3;
    open_state(&mut harness, &view);
    harness.get_by_label_contains("8 uzman EP 3 üzerine paylaştırılamaz");
    harness.get_by_label("EP 4 kullan");
}

/// Lesson 16 has a Show me into the MoE view; it validates and opens lesson 16's layer.
#[test]
fn lesson_16_shows_the_moe_view() {
    let catalog = tplab_lessons::Catalog::embedded().expect("the embedded lessons load");
    let target = catalog
        .show_me_targets()
        .find(|(l, t)| l.slug == "pipeline-and-experts" && t.view == View::Moe)
        .map(|(_, t)| t.clone())
        .expect("lesson 16 has a Show me into the MoE view");
    target.validate().unwrap_or_else(|e| panic!("{e}"));
    let mut harness = harness();
    // Somewhere else first: the button resets the view to the lesson's layer.
    let mut view = Moe::with_preset(Preset::Switch);
    view.position = 4.0;
    open_state(&mut harness, &view);
    harness.state_mut().show_me(&target);
    harness.run_steps(3);
    assert_eq!(harness.state().active_id(), "moe");
    assert_eq!(state(&harness)["preset"], "mixtral");
    harness.get_by_label_contains("Step 1/7");
    harness.get_by_label_contains("64 tokens, hidden 32, FFN 64 per expert, 8 experts, top-2");
}

/// On a projector at 1280×720 every step of every preset fits, in English and in Turkish: the
/// reference check, drawn last, ends above the window's bottom and inside its right edge
/// (nothing scrolls, nothing is cut off).
#[test]
fn every_step_fits_a_projector_at_1280x720() {
    for lang in [Lang::En, Lang::Tr] {
        for preset in Preset::ALL {
            for step in 0..tplab::views::moe::STEPS {
                let mut app = TplabApp::default();
                app.shared.presenter = true;
                assert!(app.select("moe"));
                let mut view = Moe::with_preset(preset);
                view.position = step as f32;
                view.predict = false;
                let json = serde_json::to_string(&view).unwrap_or_else(|e| panic!("{e}"));
                assert!(app.load_view_state("moe", &json));
                let mut harness = common::gl_harness_pixels(app, (1280.0, 720.0), lang, "moe");
                harness.run_steps(3);
                let bottom = harness.ctx.content_rect().bottom();
                let check: Vec<egui::Rect> = harness
                    .query_all_by_label_contains("f64")
                    .map(|n| n.rect())
                    .collect();
                assert_eq!(
                    check.len(),
                    1,
                    "{lang:?} {preset:?} step {step}: one check line"
                );
                let right = harness.ctx.content_rect().right();
                assert!(
                    check[0].right() <= right,
                    "{lang:?} {preset:?} step {}: the page is wider than the window",
                    step + 1
                );
                assert!(
                    check[0].bottom() <= bottom,
                    "{lang:?} {preset:?} step {}: the check ends at {} of {bottom} points",
                    step + 1,
                    check[0].bottom()
                );
            }
        }
    }
}

/// What each snapshot shows: the preset and the step (0-based), with the prediction answered
/// (skipped) unless `question`.
struct Shot {
    what: &'static str,
    preset: Preset,
    step: f32,
    question: bool,
    ep: Option<usize>,
    at: ((f32, f32), Lang, ThemeChoice, bool),
}

fn shoot(results: &mut SnapshotResults, shot: &Shot) {
    let (size, lang, theme, presenter) = shot.at;
    let mut app = TplabApp::default();
    app.set_theme(theme);
    app.shared.presenter = presenter;
    assert!(app.select("moe"));
    let mut view = Moe::with_preset(shot.preset);
    view.position = shot.step;
    view.predict = shot.question;
    if let Some(ep) = shot.ep {
        view.ep = ep;
    }
    let json = serde_json::to_string(&view).unwrap_or_else(|e| panic!("{e}"));
    assert!(app.load_view_state("moe", &json));
    let mut harness = common::gl_harness_pixels(app, size, lang, "moe");
    harness.run_steps(3);
    if !presenter {
        harness.mask(egui::Rect::from_min_max(
            egui::pos2(0.0, 0.0),
            egui::pos2(SIDE_BAR_WIDTH + 2.0, size.1),
        ));
    }
    let name = format!("moe_{}", shot_name(shot.what, size, lang, theme, presenter));
    harness.snapshot_options(&name, &snapshot_options());
    results.extend_harness(&mut harness);
}

/// Every step once, each at a different size, language, theme and desk/projector; the
/// question and a refusal.
#[test]
fn the_moe_view_at_every_size_language_and_theme() {
    use Lang::{En, Tr};
    use ThemeChoice::{Dark, Light};
    let shots = [
        Shot {
            what: "router",
            preset: Preset::Mixtral,
            step: 0.0,
            question: false,
            ep: None,
            at: ((1280.0, 720.0), En, Light, false),
        },
        Shot {
            what: "capacity",
            preset: Preset::Switch,
            step: 1.0,
            question: false,
            ep: None,
            at: ((1600.0, 1000.0), Tr, Dark, false),
        },
        Shot {
            what: "question",
            preset: Preset::Mixtral,
            step: 2.0,
            question: true,
            ep: None,
            at: ((1280.0, 720.0), En, Dark, true),
        },
        Shot {
            what: "dispatch",
            preset: Preset::Mixtral,
            step: 2.0,
            question: false,
            ep: None,
            at: ((1920.0, 1080.0), En, Dark, false),
        },
        Shot {
            what: "experts",
            preset: Preset::Etp,
            step: 3.0,
            question: false,
            ep: None,
            at: ((1280.0, 720.0), Tr, Light, true),
        },
        Shot {
            what: "combine",
            preset: Preset::Etp,
            step: 4.0,
            question: false,
            ep: None,
            at: ((1600.0, 1000.0), En, Light, true),
        },
        Shot {
            what: "sum",
            preset: Preset::Switch,
            step: 5.0,
            question: false,
            ep: None,
            at: ((1920.0, 1080.0), Tr, Dark, true),
        },
        Shot {
            what: "backward",
            preset: Preset::Mixtral,
            step: 6.0,
            question: false,
            ep: None,
            at: ((1600.0, 1000.0), Tr, Light, false),
        },
        Shot {
            what: "refused",
            preset: Preset::Mixtral,
            step: 0.0,
            question: false,
            ep: Some(3),
            at: ((1280.0, 720.0), Tr, Dark, true),
        },
    ];
    let mut results = SnapshotResults::new();
    for shot in &shots {
        shoot(&mut results, shot);
    }
}

/// Every MoE layer a Show me target may name opens in the view, and lesson 16's Switch target
/// opens the layer that drops tokens.
#[test]
fn every_moe_layer_a_target_names_opens() {
    for layer in tplab_lessons::MOE_LAYERS {
        let target = tplab::lab::ShowMe {
            view: tplab_lessons::View::Moe,
            moe: Some(layer.to_string()),
            ..Default::default()
        };
        assert_eq!(target.validate(), Ok(()), "{layer}");
        let mut app = tplab::TplabApp::default();
        app.show_me(&target);
        let saved = app
            .view_state("moe")
            .unwrap_or_else(|| panic!("no MoE state"));
        assert!(
            saved.contains(&format!("\"preset\":\"{layer}\"")),
            "{layer}: the view opened {saved}"
        );
    }
}
