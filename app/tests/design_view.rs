//! The Design view as a learner uses it: every challenge solved and failed by clicking the
//! matrices, the fixes and the check button (the grade is the engine's, from the same report the
//! view draws); a solved challenge saved with the learner's quiz progress; and snapshots at
//! 1280×720, 1600×1000 and 1920×1080, English and Turkish, light and dark, at a desk and on a
//! projector (regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test design_view`).

mod common;
use common::{click, shot_name, snapshot_options};
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::{Harness, SnapshotResults};
use tplab::app::{ThemeChoice, SIDE_BAR_WIDTH};
use tplab::lab::ShowMe;
use tplab::TplabApp;
use tplab_engine::block::design::challenge;
use tplab_engine::block::design::{ShardingPlan, Split, Weight};
use tplab_lessons::{Lang, View};

fn harness() -> Harness<'static, TplabApp> {
    Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default())
}

/// Opens challenge `stage` (0: the free design) as a lesson's Show me button does.
fn open(harness: &mut Harness<'static, TplabApp>, stage: usize) {
    harness.state_mut().show_me(&ShowMe {
        view: View::Design,
        challenge: (stage > 0).then_some(stage),
        ..Default::default()
    });
    harness.run_steps(3);
    assert_eq!(harness.state().active_id(), "design");
}

fn matrix_label(w: Weight, s: Split) -> String {
    let name = match w {
        Weight::Qkv => "QKV projection",
        Weight::Out => "output projection",
        Weight::Fc1 => "fc1",
        Weight::Fc2 => "fc2",
    };
    let split = match s {
        Split::Replicate => "whole",
        Split::Columns => "its columns",
        Split::Rows => "its rows",
    };
    format!("{name} · {split}")
}

fn next(s: Split) -> Split {
    match s {
        Split::Replicate => Split::Columns,
        Split::Columns => Split::Rows,
        Split::Rows => Split::Replicate,
    }
}

/// Clicks each matrix until it shows `want`'s split, as a learner cycles them.
fn set_splits(harness: &mut Harness<'static, TplabApp>, from: &ShardingPlan, want: &ShardingPlan) {
    for w in Weight::ALL {
        let mut s = from.split(w);
        while s != want.split(w) {
            click(harness, &matrix_label(w, s), 2);
            s = next(s);
        }
        harness.get_by_label(&matrix_label(w, s));
    }
    if from.sequence_parallel != want.sequence_parallel {
        click(
            harness,
            "Sequence parallelism (split the residual stream by tokens)",
            2,
        );
    }
}

fn check(harness: &mut Harness<'static, TplabApp>) {
    click(harness, "Check my plan", 3);
}

/// Every challenge: its start fails with what is missing said, and the answer is reached by
/// clicking (matrices, the sequence-parallel box, a fix button) and solved with three stars.
#[test]
fn every_challenge_is_failed_then_solved_through_the_ui() {
    let mut harness = harness();
    for c in challenge::all() {
        open(&mut harness, c.stage);
        check(&mut harness);
        assert!(
            harness.query_by_label("Not yet:").is_some(),
            "stage {}: the start is not refused",
            c.stage
        );
        set_splits(&mut harness, &c.start, &c.answer);
        // The hand-placed collectives the answer adds: through the fix the view offers once
        // the hint is shown (before it, the fix would give the answer away).
        if c.answer_places_collectives() {
            assert!(
                harness
                    .query_all_by_label_contains("all-reduce after fc2")
                    .next()
                    .is_none(),
                "stage {}: the fix shows before the learner tried",
                c.stage
            );
            click(&mut harness, "Show the hint and the fixes", 2);
            let fix = harness
                .query_all_by_label_contains("all-reduce after fc2")
                .count();
            assert!(fix > 0, "stage {}: no fix button to add the sum", c.stage);
            harness
                .get_by_label_contains("all-reduce after fc2")
                .click();
            harness.run_steps(2);
        }
        if matches!(c.goal, challenge::Goal::RefusedAt { .. }) {
            // The refusal is drawn where it happens, in words.
            harness.get_by_label_contains("GeLU on GPU 0 reads a partial sum of A");
            harness.get_by_label_contains("fc1: its columns instead");
            click(&mut harness, "Run it anyway and see how wrong it is", 2);
            harness.get_by_label_contains("Differs from the reference");
        }
        check(&mut harness);
        // The check that failed first costs the third star.
        assert!(
            harness.query_by_label_contains("Solved ★★☆").is_some(),
            "stage {}: not solved with two stars after a failed check",
            c.stage
        );
        harness.get_by_label_contains("Why: ");
    }
}

/// A wrong MLP split is graded as such, the rule's fix repairs a refused program, and the hint
/// costs the third star.
#[test]
fn a_wrong_split_says_what_is_missing_and_a_fix_button_repairs() {
    let mut harness = harness();
    open(&mut harness, 1);
    let c = challenge::stage(1).unwrap_or_else(|e| panic!("{e}"));
    let rows_first = ShardingPlan {
        fc1: Split::Rows,
        fc2: Split::Columns,
        ..c.start.clone()
    };
    set_splits(&mut harness, &c.start, &rows_first);
    check(&mut harness);
    harness.get_by_label("Not yet:");
    harness.get_by_label_contains("all-reduces in its forward pass: 1 (the goal: ");
    harness.get_by_label_contains("other collectives: 1 (the goal: 0)");
    // Checked, the verdict no longer asks for a check.
    harness.get_by_label_contains("does not meet the challenge's goal yet");
    assert!(harness
        .query_by_label_contains("Press \"Check my plan\" to see")
        .is_none());
    // Megatron's MLP split, after the hint: two stars, and the missed one named.
    click(&mut harness, "Show a hint", 2);
    harness.get_by_label_contains("Hint: GeLU works value by value");
    set_splits(&mut harness, &rows_first, &c.answer);
    check(&mut harness);
    harness.get_by_label_contains("Solved ★★☆");
    harness.get_by_label_contains("The hint was shown (the third star");

    // Stage 8 starts refused: the residual add reads a partial sum; the fix adds the sum.
    open(&mut harness, 8);
    harness.get_by_label_contains("The residual add on GPU 0 reads a partial sum of M");
    harness.get_by_label_contains("Try it yourself first");
    click(&mut harness, "Show the hint and the fixes", 2);
    harness.get_by_label_contains("Hint: Follow fc2's output");
    harness
        .get_by_label_contains("all-reduce after fc2")
        .click();
    harness.run_steps(2);
    assert!(harness
        .query_by_label_contains("The residual add on GPU 0")
        .is_none());
    harness.get_by_label_contains("Equal to the unsharded reference");
}

/// A solved challenge is saved with the learner's quiz progress (same store, same lock), and the
/// Turkish view words the rule and the goal in Turkish.
#[test]
fn a_solved_challenge_is_saved_with_the_quiz_progress_and_turkish_is_turkish() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: this binary's only test that reads the data folder sets it before any read.
    unsafe { std::env::set_var("TPLAB_DATA_DIR", dir.path()) };
    let mut harness = harness();
    harness.state_mut().shared.learner = "Ada Lovelace".into();
    open(&mut harness, 3);
    let c = challenge::stage(3).unwrap_or_else(|e| panic!("{e}"));
    set_splits(&mut harness, &c.start, &c.answer);
    check(&mut harness);
    harness.get_by_label_contains("Solved ★★★");
    harness.get_by_label_contains("Saved with Ada Lovelace's quiz progress");
    let store = tplab_quiz::progress::Store::at(dir.path());
    let p = store
        .load("Ada Lovelace")
        .unwrap_or_else(|e| panic!("{e}"))
        .progress;
    assert_eq!(p.challenges.get(c.id).map(|r| r.stars), Some(3));

    tplab::i18n::set_lang(&harness.ctx, Lang::Tr);
    open(&mut harness, 5);
    harness.get_by_label_contains("Kolektifleri kendiniz yerleştirin ve fc1'i");
    let c5 = challenge::stage(5).unwrap_or_else(|e| panic!("{e}"));
    let fc1_rows = ShardingPlan {
        fc1: Split::Rows,
        ..c5.start.clone()
    };
    harness.get_by_label("fc1 · sütunları").click();
    harness.run_steps(2);
    harness.get_by_label("fc1 · satırları");
    let _ = fc1_rows;
    harness.get_by_label_contains("GPU 0 üzerindeki GeLU, A tensörünün bir kısmi toplamını okuyor");
    harness.get_by_label_contains("fc1 matrisini şöyle böl: sütunları");
}

/// The view at a desk and on a projector, showing a refused program (the most it ever shows):
/// nothing cut off, at every size, in both languages and themes.
#[test]
fn the_design_view_at_every_size_language_and_theme() {
    let mut results = SnapshotResults::new();
    for (size, lang, theme, presenter) in [
        ((1280.0, 720.0), Lang::En, ThemeChoice::Light, false),
        ((1600.0, 1000.0), Lang::Tr, ThemeChoice::Dark, false),
        ((1920.0, 1080.0), Lang::En, ThemeChoice::Dark, false),
        ((1280.0, 720.0), Lang::Tr, ThemeChoice::Light, true),
        ((1280.0, 720.0), Lang::En, ThemeChoice::Dark, true),
        ((1600.0, 1000.0), Lang::En, ThemeChoice::Light, true),
        ((1920.0, 1080.0), Lang::Tr, ThemeChoice::Dark, true),
    ] {
        let mut app = TplabApp::default();
        app.set_theme(theme);
        app.shared.presenter = presenter;
        app.show_me(&ShowMe {
            view: View::Design,
            challenge: Some(5),
            ..Default::default()
        });
        let mut harness = common::gl_harness_pixels(app, size, lang, "design");
        let fc1 = match lang {
            Lang::En => "fc1 · its columns",
            Lang::Tr => "fc1 · sütunları",
        };
        harness.get_by_label(fc1).click();
        harness.run_steps(3);
        if !presenter {
            harness.mask(egui::Rect::from_min_max(
                egui::pos2(0.0, 0.0),
                egui::pos2(SIDE_BAR_WIDTH + 2.0, size.1),
            ));
        }
        let name = format!(
            "design_{}",
            shot_name("refused", size, lang, theme, presenter)
        );
        harness.snapshot_options(&name, &snapshot_options());
        results.extend_harness(&mut harness);
    }
    results.unwrap();
}

/// On a projector (1280×720 in presenter mode), a refused plan shows the whole chain, the broken
/// rule and every one of its fix buttons without scrolling, in both languages: the fixes are what
/// the class is asked to choose between.
#[test]
fn a_refused_plan_and_its_fixes_fit_a_projector_at_1280x720() {
    use tplab::views::design::fix_text;
    use tplab::widgets::plan::rule_text;
    use tplab_engine::block::design::{design, DesignOptions, Fix};
    let c = challenge::stage(5).unwrap_or_else(|e| panic!("{e}"));
    let plan = ShardingPlan {
        fc1: Split::Rows,
        ..c.start.clone()
    };
    let opts = DesignOptions {
        allow_wrong: false,
        execute: true,
    };
    let report = design(&c.config, &plan, None, &opts).unwrap_or_else(|e| panic!("{e}"));
    let error = report
        .errors
        .first()
        .unwrap_or_else(|| panic!("stage 5 with fc1 split by rows is refused"));
    for lang in [Lang::En, Lang::Tr] {
        let mut app = TplabApp::default();
        app.shared.presenter = true;
        app.show_me(&ShowMe {
            view: View::Design,
            challenge: Some(5),
            ..Default::default()
        });
        let mut harness = common::gl_harness_pixels(app, (1280.0, 720.0), lang, "design");
        let fc1 = match lang {
            Lang::En => "fc1 · its columns",
            Lang::Tr => "fc1 · sütunları",
        };
        harness.get_by_label(fc1).click();
        harness.run_steps(3);
        // The page scrolls inside the central panel, whose margin (8 points) hides what ends
        // below it; 8 more so that the last row is not cut by the fold (before this layout the
        // last Turkish fix ended 10.5 points above the window's bottom and was cut in the PNG).
        let window = harness.ctx.content_rect();
        let fold = window.bottom() - 16.0;
        let mut shown = vec![(
            "the broken rule".to_string(),
            harness
                .get_by_label(&rule_text(lang, error.kind, error))
                .rect(),
        )];
        for fix in error.actions.iter().filter(|f| !matches!(f, Fix::Slice)) {
            let label = fix_text(lang, fix);
            let rect = harness.get_by_label(&label).rect();
            shown.push((label, rect));
        }
        assert!(shown.len() > 2, "{lang:?}: the error offers fixes");
        // The error box's last line, under its fixes.
        let anyway = match lang {
            Lang::En => "Run it anyway and see how wrong it is",
            Lang::Tr => "Yine de",
        };
        let rect = harness.get_by_label_contains(anyway).rect();
        shown.push(("run it anyway".to_string(), rect));
        for (what, rect) in shown {
            assert!(
                rect.bottom() <= fold && rect.right() <= window.right(),
                "{lang:?}: {what} ends at ({}, {}), below the fold at {fold} or right of the \
                 {} point wide window",
                rect.right(),
                rect.bottom(),
                window.right()
            );
        }
    }
}

/// The English Fluent file words each challenge exactly as the engine does (the CLI prints the
/// engine's), and the Turkish file has every part of every challenge.
#[test]
fn the_challenges_read_the_same_in_the_app_and_the_cli_and_exist_in_turkish() {
    use tplab::views::design::challenge_text;
    for c in challenge::all() {
        for (part, want) in [
            ("title", c.title),
            ("goal", c.goal_text),
            ("hint", c.hint),
            ("why", c.why),
        ] {
            assert_eq!(challenge_text(Lang::En, &c, part), want, "{} {part}", c.id);
            let tr = challenge_text(Lang::Tr, &c, part);
            assert!(
                !tr.starts_with("design-ch-") && tr != want,
                "{} {part}: {tr}",
                c.id
            );
        }
    }
}

/// A walkthrough prediction (before attention's g, GPT-2 small on 4 GPUs) at a desk and on a
/// projector: the question and its options are whole at every size, in both languages.
#[test]
fn a_walkthrough_prediction_at_every_size_language_and_theme() {
    let mut results = SnapshotResults::new();
    for (size, lang, theme, presenter) in [
        ((1280.0, 720.0), Lang::En, ThemeChoice::Light, false),
        ((1600.0, 1000.0), Lang::Tr, ThemeChoice::Dark, false),
        ((1920.0, 1080.0), Lang::En, ThemeChoice::Dark, false),
        ((1280.0, 720.0), Lang::Tr, ThemeChoice::Light, true),
        ((1600.0, 1000.0), Lang::En, ThemeChoice::Light, true),
        ((1920.0, 1080.0), Lang::Tr, ThemeChoice::Dark, true),
    ] {
        let mut app = TplabApp::default();
        app.set_theme(theme);
        app.shared.presenter = presenter;
        assert!(app.select("step"));
        let mut harness = common::gl_harness_pixels(app, size, lang, "prediction");
        // ln1, f, qkv, core, out: the next step, attention's g, asks first.
        for _ in 0..5 {
            common::press(&mut harness, egui::Key::ArrowRight, 1);
        }
        harness.run_steps(2);
        let asked = match lang {
            Lang::En => "Predict: after this all-reduce",
            Lang::Tr => "Tahmin edin: bu all-reduce",
        };
        harness.get_by_label_contains(asked);
        if !presenter {
            harness.mask(egui::Rect::from_min_max(
                egui::pos2(0.0, 0.0),
                egui::pos2(SIDE_BAR_WIDTH + 2.0, size.1),
            ));
        }
        let name = format!(
            "predict_{}",
            shot_name("attn_g", size, lang, theme, presenter)
        );
        harness.snapshot_options(&name, &snapshot_options());
        results.extend_harness(&mut harness);
    }
    results.unwrap();
}

/// "Step through my plan": the walkthrough walks the learner's own program (the engine's trace
/// of it), says whose plan it is, words each step from the trace (fc1 split by rows leaves a
/// partial sum of A that is summed before GeLU), and "Megatron's split" goes back.
#[test]
fn my_plan_is_stepped_through_in_the_walkthrough() {
    let mut harness = harness();
    open(&mut harness, 1);
    let c = challenge::stage(1).unwrap_or_else(|e| panic!("{e}"));
    let rows_first = ShardingPlan {
        fc1: Split::Rows,
        fc2: Split::Columns,
        ..c.start.clone()
    };
    set_splits(&mut harness, &c.start, &rows_first);
    click(&mut harness, "Step through my plan", 3);
    assert_eq!(harness.state().active_id(), "step");
    harness.get_by_label_contains("Your plan on 2 GPUs");
    // Predictions have their own tests: here the steps play without asking.
    harness
        .state_mut()
        .load_view_state("step", r#"{"predict": false}"#);
    harness.run_steps(2);
    // ln1, qkv, attention, out, residual, ln2, fc1: then fc1's partial sums summed into a whole
    // copy on every GPU (GeLU needs the whole sum, and fc2 split by columns reads all of U).
    let mut seen_fc1 = false;
    let mut seen_sum = false;
    for _ in 0..30 {
        common::press(&mut harness, egui::Key::ArrowRight, 2);
        seen_fc1 |= harness
            .query_by_label_contains("fc1 (row-parallel): each GPU reads")
            .is_some();
        seen_sum |= harness
            .query_all_by_label_contains(
                "all-reduce over 2 GPUs: A goes from partial sum to whole copy",
            )
            .next()
            .is_some();
    }
    assert!(seen_fc1 && seen_sum, "fc1 {seen_fc1}, sum {seen_sum}");
    click(&mut harness, "Megatron's split", 3);
    assert!(harness
        .query_by_label_contains("Your plan on 2 GPUs")
        .is_none());
    // A lesson's Show me after a walk lands on Megatron's split too.
    assert!(harness.state().shared.plan_walk().is_none());
}

/// The walkthrough on a learner's plan at a desk and on a projector, both languages: the banner,
/// the narration and the lanes are whole.
#[test]
fn a_plan_walk_at_a_desk_and_on_a_projector() {
    use tplab_engine::block::design::{propagate, trace::trace, NamedPlan};
    let mut results = SnapshotResults::new();
    for (size, lang, theme, presenter) in [
        ((1280.0, 720.0), Lang::En, ThemeChoice::Light, false),
        ((1920.0, 1080.0), Lang::Tr, ThemeChoice::Dark, true),
    ] {
        let mut app = TplabApp::default();
        app.set_theme(theme);
        app.shared.presenter = presenter;
        let cfg = tplab_engine::config::Config {
            tp: 4,
            layers: 1,
            ..tplab_engine::config::Preset::Tiny.config()
        };
        let plan = NamedPlan::RowsThenColumns.plan();
        let t = trace(&cfg, &propagate(&cfg, &plan)).unwrap_or_else(|e| panic!("{e}"));
        common::walk_my_plan(&mut app, cfg.tp, &plan);
        let _ = t;
        app.load_view_state("step", r#"{"predict": false}"#);
        let mut harness = common::gl_harness_pixels(app, size, lang, "plan walk");
        // ln1, qkv, attention, out, the residual stream's all-gather of Z, residual, ln2: fc1
        // split by rows reads its slice of H2.
        for _ in 0..7 {
            common::press(&mut harness, egui::Key::ArrowRight, 1);
        }
        harness.run_steps(3);
        if !presenter {
            harness.mask(egui::Rect::from_min_max(
                egui::pos2(0.0, 0.0),
                egui::pos2(SIDE_BAR_WIDTH + 2.0, size.1),
            ));
        }
        let name = format!(
            "walk_{}",
            shot_name("rows_then_columns", size, lang, theme, presenter)
        );
        harness.snapshot_options(&name, &snapshot_options());
        results.extend_harness(&mut harness);
    }
    results.unwrap();
}

/// A plan with sequence parallelism and QKV split by rows moves H1 from its tokens to its
/// columns: the walkthrough steps through the all-to-all round by round like any collective.
#[test]
fn an_all_to_all_is_stepped_through_round_by_round() {
    use tplab_engine::block::design::{propagate, trace::trace, NamedPlan};
    let cfg = tplab_engine::config::Config {
        tp: 4,
        layers: 1,
        sequence_parallel: true,
        ..tplab_engine::config::Preset::Tiny.config()
    };
    let plan = ShardingPlan {
        qkv: Split::Rows,
        sequence_parallel: true,
        ..NamedPlan::Megatron.plan()
    };
    let t = trace(&cfg, &propagate(&cfg, &plan)).unwrap_or_else(|e| panic!("{e}"));
    let mut app = TplabApp::default();
    common::walk_my_plan(&mut app, cfg.tp, &plan);
    let _ = t;
    app.load_view_state("step", r#"{"predict": false}"#);
    let mut harness = Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(3);
    let mut rounds = 0;
    for _ in 0..8 {
        common::press(&mut harness, egui::Key::ArrowRight, 2);
        if harness
            .query_by_label_contains(
                "all-to-all over 4 GPUs: H1 goes from its tokens to its columns",
            )
            .is_some()
        {
            rounds += 1;
        }
    }
    // Pairwise exchange on 4 GPUs: 3 rounds, one press each.
    assert_eq!(rounds, 3);
}

/// The web edition's test hook and a restart read the design lab's state from the lab itself:
/// the challenge opened, the plan, the stars.
#[test]
fn the_design_labs_state_is_read_from_the_lab() {
    let mut harness = harness();
    open(&mut harness, 1);
    let json = harness.state().view_state("design").unwrap_or_default();
    let state: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(state["stage"], 1, "{json}");
    assert!(state["setup"]["fc1"].is_string(), "{json}");
    assert!(state["stars"].is_object(), "{json}");
}

/// Every challenge of the design lab has the lesson that explains it (its "Try it yourself"
/// opens the challenge), and the view's lesson link follows the challenge on screen: the
/// attention's challenge links to the attention's lesson, not the MLP's.
#[test]
fn each_challenge_links_to_its_own_lesson() {
    let orders: Vec<u32> = (1..=8)
        .map(|stage| {
            tplab::widgets::links::lesson_for_challenge(stage)
                .unwrap_or_else(|| panic!("challenge {stage} has no lesson"))
                .order
        })
        .collect();
    assert_eq!(orders, [4, 5, 6, 4, 4, 9, 5, 6]);
    let mut app = TplabApp::default();
    app.show_me(&tplab::lab::ShowMe {
        view: tplab_lessons::View::Design,
        challenge: Some(2),
        ..Default::default()
    });
    let mut h = egui_kittest::Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    h.run_steps(3);
    assert!(h.query_by_label_contains("Lesson 5: Attention").is_some());
    assert!(h.query_by_label_contains("Lesson 4: The MLP").is_none());
}

/// What the app put on the clipboard in the frame after `label` was pressed.
fn copied_by(harness: &mut Harness<'static, TplabApp>, label: &str) -> String {
    harness.get_by_label(label).click();
    for _ in 0..3 {
        harness.step();
        let copied = harness
            .output()
            .platform_output
            .commands
            .iter()
            .find_map(|c| match c {
                egui::OutputCommand::CopyText(text) => Some(text.clone()),
                _ => None,
            });
        if let Some(text) = copied {
            return text;
        }
    }
    panic!("\"{label}\" copied nothing");
}

/// Pastes `text` into a fresh app's "Paste a plan" box and presses "Use this plan".
fn pasted_into_a_fresh_app(text: &str) -> ShardingPlan {
    let mut fresh = harness();
    open(&mut fresh, 0);
    let input = |h: &Harness<'static, TplabApp>| {
        h.query_all_by_label("Paste a plan:")
            .find(|n| {
                matches!(
                    n.accesskit_node().role(),
                    egui::accesskit::Role::MultilineTextInput | egui::accesskit::Role::TextInput
                )
            })
            .map(|n| n.focus())
            .is_some()
    };
    assert!(input(&fresh), "the paste box is found by its name");
    fresh.run_steps(2);
    fresh.event(egui::Event::Paste(text.to_string()));
    fresh.run_steps(2);
    // The pasted file makes the box taller: the button may sit below the window's edge, where a
    // pointer would scroll first. Pressed as a screen reader or the keyboard would.
    fresh.get_by_label("Use this plan").click_accesskit();
    fresh.run_steps(3);
    assert!(
        fresh
            .query_all_by_label("Paste a plan:")
            .all(|n| n.value().is_none_or(|v| v.is_empty())),
        "the box is emptied once the plan is taken"
    );
    fresh.state().shared.design.plan()
}

/// Issue 40: "Copy my plan" and "Copy as a tplab command" give what a fresh app's paste box turns
/// back into the same plan, and what `tplab design` takes (the file with --file, the flags as
/// they are).
#[test]
fn a_copied_plan_pastes_into_a_fresh_app_and_tplab_design_takes_it() {
    let mut harness = harness();
    open(&mut harness, 0);
    let from = harness.state().shared.design.plan();
    let mut want = from.clone();
    want.set_split(Weight::Qkv, Split::Replicate);
    want.set_split(Weight::Out, Split::Replicate);
    want.set_split(Weight::Fc1, Split::Columns);
    want.set_split(Weight::Fc2, Split::Rows);
    want.sequence_parallel = false;
    set_splits(&mut harness, &from, &want);
    let plan = harness.state().shared.design.plan();
    assert_eq!(plan, want, "the clicks made the plan");

    let file = copied_by(&mut harness, "Copy my plan");
    let flags = copied_by(&mut harness, "Copy as a tplab command");
    assert!(flags.starts_with("tplab design "), "{flags}");
    assert_eq!(
        pasted_into_a_fresh_app(&file),
        plan,
        "the plan file, pasted"
    );
    assert_eq!(pasted_into_a_fresh_app(&flags), plan, "the flags, pasted");

    let dir = std::env::temp_dir().join(format!("tplab-copied-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let path = dir.join("PLAN.toml");
    std::fs::write(&path, &file).unwrap_or_else(|e| panic!("{e}"));
    let (ok, out, err) = common::tplab(&["design", "--file", &path.to_string_lossy(), "--json"]);
    assert!(ok, "tplab design --file takes the copied plan: {err}");
    let (ok2, out2, err2) = common::tplab(
        &flags
            .trim_start_matches("tplab ")
            .split_whitespace()
            .chain(["--json"])
            .collect::<Vec<_>>(),
    );
    assert!(ok2, "tplab design takes the copied flags: {err2}");
    let _ = std::fs::remove_dir_all(&dir);
    let a: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let b: serde_json::Value =
        serde_json::from_str(&out2).unwrap_or_else(|e| panic!("{e}: {out2}"));
    assert_eq!(
        a["plan"], b["plan"],
        "the file and the flags are the same plan"
    );
}

/// The lecturer's report: a student typing "Ayse Student" in the name box was saved as "A"
/// (the box vanished once the name was no longer empty, and the focus with it). Typed one
/// letter a frame, the whole name arrives, and the box still has the focus.
#[test]
fn the_name_box_keeps_the_focus_while_a_name_is_typed() {
    let mut harness = harness();
    harness.state_mut().shared.learner.clear();
    open(&mut harness, 1);
    let label = "Your name, to keep your stars with your quiz progress:";
    let focus = |h: &Harness<'static, TplabApp>| {
        h.query_all_by_label(label)
            .find(|n| n.accesskit_node().role() == egui::accesskit::Role::TextInput)
            .map(|n| n.focus())
            .is_some()
    };
    assert!(focus(&harness), "the name box is found by its label");
    harness.run_steps(2);
    let name = "Ayse Student";
    for c in name.chars() {
        harness.event(egui::Event::Text(c.to_string()));
        harness.run_steps(1);
    }
    harness.run_steps(2);
    assert_eq!(harness.state().shared.learner, name);
    let still = harness
        .query_all_by_label(label)
        .any(|n| n.accesskit_node().role() == egui::accesskit::Role::TextInput && n.is_focused());
    assert!(still, "the box keeps the focus after the last letter");
}
