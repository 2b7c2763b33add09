//! Journeys, tested as journeys: seeded random sequences of what learners do in the design lab
//! and the walkthrough — choose splits, add and remove collectives, toggle sequence parallelism
//! and hand placement, pick a challenge or the free design, check, step through, step back and
//! forth, answer and skip predictions, change the scenario's TP with the digit keys (valid or
//! not), walk Megatron's split, switch language and theme, restart from the saved state —
//! driven through the real app (clicks and keys found by their accessible names). After every
//! action the app is checked against what the engine says of the lab state as it is now:
//!
//! - the walkthrough's steps are the engine's trace of exactly the plan its banner names (the
//!   learner's plan, or Megatron's split of the scenario at its TP; a TP the heads refuse shows
//!   the engine's refusal and a TP that works);
//! - every hand-placed collective is drawn where it acts (or, when it has nothing to do, where it
//!   was placed), and can be removed where it is drawn;
//! - "Step through my plan" is enabled exactly when the engine gives the plan a trace;
//! - a solved challenge and an answered prediction are in the lab file before "Solved" or the
//!   answer is shown, and survive a restart that never ran the app's exit (a kill);
//! - nothing a learner reads carries a dotted op name or a snake_case word.
//!
//! A failing journey prints its seed and the actions that reproduce it. The journey count is
//! `TPLAB_JOURNEYS` (default 500), split over the test functions below.

mod common;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use std::path::PathBuf;
use tplab::lab::design::DesignAction;
use tplab::lab::{Action, ShowMe, WalkChoice};
use tplab::TplabApp;
use tplab_engine::block::design::{
    challenge, design, trace::trace, DesignOptions, ManualKind, ShardingPlan, Site, Split, Weight,
};
use tplab_lessons::{Lang, View};

/// A small, seeded generator (xorshift64*): journeys replay exactly from their seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One thing a learner does.
#[derive(Debug, Clone)]
enum Act {
    OpenChallenge(usize),
    FreeDesign(usize),
    ClickMatrix(Weight),
    ToggleSequenceParallel,
    ToggleHandPlacement,
    AddCollective(Site, ManualKind),
    RemoveDrawnCollective(usize),
    ApplyFirstFix,
    RunAnyway,
    Check,
    StepThroughMyPlan,
    StepKeys(i32),
    AnswerOrSkip(bool),
    BackToMegatron,
    BackToDesign,
    Restart,
    SwitchLanguage,
    SwitchTheme,
    /// A digit key: the scenario's TP (1–8), valid or not for its heads.
    PressTp(usize),
    /// The walkthrough on Megatron's split of the scenario.
    WalkMegatron,
}

const SITES: [Site; 9] = Site::ALL;
const KINDS: [ManualKind; 4] = [
    ManualKind::AllReduce,
    ManualKind::ReduceScatter,
    ManualKind::AllGather,
    ManualKind::AllToAll,
];

fn random_act(rng: &mut Rng) -> Act {
    match rng.below(44) {
        0..=2 => Act::OpenChallenge(1 + rng.below(8)),
        3 => Act::FreeDesign([2, 4, 8][rng.below(3)]),
        4..=12 => Act::ClickMatrix(Weight::ALL[rng.below(4)]),
        13..=14 => Act::ToggleSequenceParallel,
        15..=16 => Act::ToggleHandPlacement,
        17..=19 => Act::AddCollective(SITES[rng.below(SITES.len())], KINDS[rng.below(4)]),
        20..=21 => Act::RemoveDrawnCollective(rng.below(4)),
        22..=23 => Act::ApplyFirstFix,
        24 => Act::RunAnyway,
        25..=27 => Act::Check,
        28..=30 => Act::StepThroughMyPlan,
        31..=33 => Act::StepKeys([-2, -1, 1, 1, 2, 3][rng.below(6)]),
        34..=35 => Act::AnswerOrSkip(rng.below(2) == 0),
        36 => Act::BackToMegatron,
        37 => Act::BackToDesign,
        38 => Act::Restart,
        40..=41 => Act::PressTp(1 + rng.below(8)),
        42..=43 => Act::WalkMegatron,
        _ => {
            if rng.below(2) == 0 {
                Act::SwitchLanguage
            } else {
                Act::SwitchTheme
            }
        }
    }
}

/// The data folder of one test: the lab file lives there.
fn data_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tplab-journeys-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a data folder");
    dir
}

/// A fresh app as a restart makes it: the lab read back from the lab file.
fn start_app() -> TplabApp {
    let mut app = TplabApp::default();
    app.shared.persist = true;
    app.shared
        .load_lab()
        .unwrap_or_else(|e| panic!("the lab file reads back: {e}"));
    app
}

fn harness_for(app: TplabApp, lang: Lang) -> Harness<'static, TplabApp> {
    let mut h = Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    tplab::i18n::set_lang(&h.ctx, lang);
    h.run_steps(2);
    h
}

fn lang_of(h: &Harness<'static, TplabApp>) -> Lang {
    tplab::i18n::current_lang(&h.ctx)
}

fn label_of(node: &egui_kittest::Node<'_>) -> String {
    let n = node.accesskit_node();
    n.label().or_else(|| n.value()).unwrap_or_default()
}

fn open_view(h: &mut Harness<'static, TplabApp>, view: View) {
    if h.state().active_id() != view.name() {
        h.state_mut().show_me(&ShowMe {
            view,
            ..Default::default()
        });
        h.run_steps(2);
    }
}

/// Clicks the one node labelled `label`, if there is exactly one and it is enabled.
fn click_if_there(h: &mut Harness<'static, TplabApp>, label: &str) -> bool {
    let clicked = {
        let nodes: Vec<_> = h.query_all_by_label(label).collect();
        match nodes.as_slice() {
            [one] if !one.accesskit_node().is_disabled() => {
                one.click();
                true
            }
            _ => false,
        }
    };
    if clicked {
        h.run_steps(3);
    }
    clicked
}

fn t(lang: Lang, id: &str) -> String {
    tplab::i18n::t(lang, id)
}

fn matrix_label(lang: Lang, w: Weight, s: Split) -> String {
    format!(
        "{} · {}",
        tplab::widgets::plan::weight_words(lang, w),
        tplab::widgets::plan::split_words(lang, s)
    )
}

/// What the engine says of the design lab's plan as it is now, computed afresh by the test.
struct Verdict {
    walkable: bool,
    /// Hand-placed collectives the program places (the others have nothing to do).
    placed: Vec<(Site, ManualKind)>,
    steps: usize,
}

fn verdict(app: &TplabApp) -> Verdict {
    let lab = &app.shared.design;
    let cfg = lab.config();
    let plan = lab.plan();
    let opts = DesignOptions {
        allow_wrong: lab.run_anyway(),
        execute: false,
    };
    let report = design(&cfg, &plan, None, &opts).unwrap_or_else(|e| panic!("{e}"));
    let p = &report.program;
    let placed = p
        .forward
        .iter()
        .filter_map(|s| match s {
            tplab_engine::block::design::Step::Redistribute(d)
                if d.manual && !p.value(d.to).mislabelled =>
            {
                Some((
                    tplab_engine::block::design::site_of(p.value(d.from).tensor)?,
                    d.mv.manual_kind()?,
                ))
            }
            _ => None,
        })
        .collect();
    let t = trace(&cfg, p);
    let steps = t
        .as_ref()
        .map_or(0, |t| tplab::lab::walk::walk_steps(t).len());
    Verdict {
        walkable: t.is_ok(),
        placed,
        steps,
    }
}

fn lab_file(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("lab.json")).unwrap_or_else(|_| "{}".into());
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

/// Every invariant, after one action; an `Err` names the broken one.
fn check_invariants(
    h: &mut Harness<'static, TplabApp>,
    dir: &std::path::Path,
) -> Result<(), String> {
    let lang = lang_of(h);
    let view = h.state().active_id();
    // Words, not code.
    let code_word = regex_lite_code_word;
    for node in h.query_all_by(|_| true) {
        let text = label_of(&node);
        if let Some(w) = code_word(&text) {
            return Err(format!("a code word '{w}' in \"{text}\""));
        }
    }
    let v = verdict(h.state());
    let lab = &h.state().shared.design;
    if view == "design" {
        // "Step through my plan" is enabled exactly when the engine gives the plan a trace.
        let walk = t(lang, "design-walk");
        let node = h
            .query_by_label(&walk)
            .ok_or_else(|| format!("no \"{walk}\" button"))?;
        let enabled = !node.accesskit_node().is_disabled();
        if enabled != v.walkable {
            return Err(format!(
                "\"{walk}\" enabled {enabled}, the engine says walkable {}",
                v.walkable
            ));
        }
        // Every hand-placed collective is drawn: where it acts, or where it was placed.
        let manual = lab.setup().manual.clone().unwrap_or_default();
        let mut placed = v.placed.clone();
        for (site, kind) in manual {
            let label = match placed.iter().position(|x| *x == (site, kind)) {
                Some(i) => {
                    placed.remove(i);
                    kind.name().to_string()
                }
                None => tplab::i18n::t_args(
                    lang,
                    "design-unplaced",
                    &[("kind", kind.name().to_string())],
                ),
            };
            if h.query_all_by_label(&label).next().is_none() {
                return Err(format!(
                    "the {} after {} is not drawn (\"{label}\")",
                    kind.name(),
                    site.name()
                ));
            }
        }
        // "Solved" is shown only once the lab file holds the stars.
        if let Some(c) = lab.challenge() {
            let prefix = tplab::i18n::t_args(lang, "design-solved", &[("stars", String::new())]);
            let prefix = prefix.trim();
            let solved_shown = h
                .query_all_by(|n| {
                    let l = n.label().or_else(|| n.value()).unwrap_or_default();
                    l.starts_with(prefix) && l.contains('★')
                })
                .next()
                .is_some();
            let file = lab_file(dir);
            let saved = file
                .pointer(&format!("/design/stars/{}", c.id))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            if solved_shown && saved == 0 {
                return Err(format!("challenge {} is shown solved but not saved", c.id));
            }
        }
    }
    if view == "step" && h.state().shared.walk_choice() == WalkChoice::Megatron {
        // Megatron's split of the scenario as it is now (the digit keys change its TP): its
        // trace's steps, or the engine's refusal with a TP that works.
        match h.state().shared.scenario.derived() {
            Ok(d) => {
                let steps = tplab::lab::walk::walk_steps(&d.trace).len();
                if !counts_steps(h, lang, steps) {
                    return Err(format!(
                        "the walkthrough of Megatron's split at TP {} does not count {steps} steps",
                        h.state().shared.scenario.config().tp
                    ));
                }
            }
            Err(_) => {
                // The fixes are buttons: a TP that works, or a head count that does.
                let prefix = |id: &str, arg: &str| {
                    tplab::i18n::t_args(lang, id, &[(arg, String::new())])
                        .trim_end_matches(['\u{2068}', '\u{2069}'])
                        .to_string()
                };
                let (tp, heads) = (prefix("use-tp", "tp"), prefix("use-heads", "heads"));
                if h.query_all_by(|n| {
                    n.label()
                        .is_some_and(|l| l.starts_with(&tp) || l.starts_with(&heads))
                })
                .next()
                .is_none()
                {
                    return Err(format!(
                        "TP {} is refused, but no \"{tp}…\" or \"{heads}…\" fix is offered",
                        h.state().shared.scenario.config().tp
                    ));
                }
            }
        }
    }
    if view == "step" && h.state().shared.walk_choice() == WalkChoice::MyPlan {
        if v.walkable {
            // The banner names exactly the plan the lab holds, and the steps are its trace's.
            let words = tplab::widgets::plan::plan_words(lang, &lab.plan());
            if h.query_all_by_label_contains(&words).next().is_none() {
                return Err(format!("the banner does not name the plan \"{words}\""));
            }
            if !counts_steps(h, lang, v.steps) {
                let seen: Vec<String> = h
                    .query_all_by(|_| true)
                    .map(|n| label_of(&n))
                    .filter(|l| l.contains("Step") || l.contains("Adım") || l.contains("plan"))
                    .take(10)
                    .collect();
                return Err(format!(
                    "the walkthrough does not count {} steps (it shows {seen:?})",
                    v.steps
                ));
            }
        } else if h
            .query_all_by_label(&t(lang, "st-plan-refused-now"))
            .next()
            .is_none()
        {
            return Err("a refused plan is walked without saying so".into());
        }
    }
    Ok(())
}

/// Whether the walkthrough's heading counts `steps` steps ("Step k/N · …"), or a prediction
/// waits in its place.
fn counts_steps(h: &Harness<'static, TplabApp>, lang: Lang, steps: usize) -> bool {
    let of_total = format!("/{steps} · ");
    let heading = h
        .query_all_by(|n| {
            n.label()
                .or_else(|| n.value())
                .is_some_and(|l| l.contains(&of_total))
        })
        .next()
        .is_some();
    heading
        || h.query_all_by_label(&t(lang, "walk-predict-skip"))
            .next()
            .is_some()
}

/// A dotted op name (`mlp.fc1`, `attn.g`) or a snake_case word (`bias_residual`).
fn regex_lite_code_word(text: &str) -> Option<String> {
    for word in text.split(|c: char| c.is_whitespace() || "(),;:'\"[]{}<>«»“”".contains(c)) {
        let w = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '.');
        let lower = w
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.' || c.is_ascii_digit());
        if !lower || w.len() < 3 {
            continue;
        }
        // A weight or bias written as maths (W_qkv, b_fc1: one letter, then its subscript) is
        // notation the lessons define, not a code name.
        let maths = w.len() > 2 && w.as_bytes()[1] == b'_' && !w[2..].contains('_');
        let snake = !maths && w.contains('_') && w.split('_').all(|p| !p.is_empty());
        let dotted = ["attn.", "mlp.", "ce.", "embed.", "lm_head."]
            .iter()
            .any(|p| w.starts_with(p) && w.len() > p.len());
        if snake || dotted {
            return Some(w.to_string());
        }
    }
    None
}

/// Performs one action through the app as a learner would.
fn perform(h: &mut Harness<'static, TplabApp>, act: &Act, dir: &std::path::Path) {
    let lang = lang_of(h);
    match act {
        Act::OpenChallenge(stage) => {
            h.state_mut().show_me(&ShowMe {
                view: View::Design,
                challenge: Some(*stage),
                ..Default::default()
            });
            h.run_steps(3);
        }
        Act::FreeDesign(tp) => {
            open_view(h, View::Design);
            h.state_mut()
                .shared
                .act(Action::Design(DesignAction::SelectStage(0)));
            h.run_steps(2);
            click_if_there(
                h,
                &tplab::i18n::t_args(lang, "design-tp", &[("n", tp.to_string())]),
            );
        }
        Act::ClickMatrix(w) => {
            open_view(h, View::Design);
            let split = h.state().shared.design.plan().split(*w);
            click_if_there(h, &matrix_label(lang, *w, split));
        }
        Act::ToggleSequenceParallel => {
            open_view(h, View::Design);
            click_if_there(h, &t(lang, "design-sp"));
        }
        Act::ToggleHandPlacement => {
            open_view(h, View::Design);
            click_if_there(h, &t(lang, "design-by-hand"));
        }
        Act::AddCollective(after, kind) => {
            open_view(h, View::Design);
            if h.state().shared.design.setup().manual.is_some() {
                h.state_mut()
                    .shared
                    .act(Action::Design(DesignAction::AddCollective {
                        after: *after,
                        kind: *kind,
                    }));
                h.run_steps(3);
            }
        }
        Act::RemoveDrawnCollective(i) => {
            open_view(h, View::Design);
            // A collective that has nothing to do is removed by clicking it where it is drawn.
            let manual = h
                .state()
                .shared
                .design
                .setup()
                .manual
                .clone()
                .unwrap_or_default();
            if manual.is_empty() {
                return;
            }
            let (site, kind) = manual[i % manual.len()];
            let v = verdict(h.state());
            let before = manual.len();
            if v.placed.contains(&(site, kind)) {
                // A placed one: its chip's click removes it (several chips may share the name).
                let label = kind.name().to_string();
                let nodes: Vec<_> = h.query_all_by_label(&label).collect();
                if let Some(n) = nodes.first() {
                    n.click();
                }
                h.run_steps(3);
            } else {
                let label = tplab::i18n::t_args(
                    lang,
                    "design-unplaced",
                    &[("kind", kind.name().to_string())],
                );
                let nodes: Vec<_> = h.query_all_by_label(&label).collect();
                assert!(
                    !nodes.is_empty(),
                    "the unplaced {} after {} is drawn",
                    kind.name(),
                    site.name()
                );
                nodes[0].click();
                h.run_steps(3);
                let after = h
                    .state()
                    .shared
                    .design
                    .setup()
                    .manual
                    .clone()
                    .unwrap_or_default()
                    .len();
                assert_eq!(
                    after + 1,
                    before,
                    "clicking a collective that has nothing to do removes it"
                );
            }
        }
        Act::ApplyFirstFix => {
            open_view(h, View::Design);
            let report = h.state().shared.design.derived();
            let fix = report
                .report
                .as_ref()
                .ok()
                .and_then(|r| r.errors.first().cloned())
                .and_then(|e| {
                    e.actions
                        .into_iter()
                        .find(|f| !matches!(f, tplab_engine::block::design::Fix::Slice))
                });
            if let Some(fix) = fix {
                // A repair challenge holds its fixes back until the hint.
                click_if_there(h, &t(lang, "design-fixes-show"));
                click_if_there(h, &tplab::views::design::fix_text(lang, &fix));
            }
        }
        Act::RunAnyway => {
            open_view(h, View::Design);
            let label = t(lang, "design-run-anyway");
            click_if_there(h, &label);
        }
        Act::Check => {
            open_view(h, View::Design);
            click_if_there(h, &t(lang, "design-check"));
        }
        Act::StepThroughMyPlan => {
            open_view(h, View::Design);
            click_if_there(h, &t(lang, "design-walk"));
        }
        Act::StepKeys(n) => {
            if h.state().active_id() != "step" {
                return;
            }
            let key = if *n > 0 {
                egui::Key::ArrowRight
            } else {
                egui::Key::ArrowLeft
            };
            for _ in 0..n.unsigned_abs() {
                h.key_press(key);
                h.run_steps(1);
            }
            h.run_steps(2);
        }
        Act::AnswerOrSkip(answer) => {
            if h.state().active_id() != "step" {
                return;
            }
            let skip = t(lang, "walk-predict-skip");
            if h.query_by_label(&skip).is_none() {
                return;
            }
            if *answer {
                let first: Vec<_> = h
                    .query_all_by(|n| n.label().is_some_and(|l| l.starts_with("A  ")))
                    .collect();
                if let Some(b) = first.first() {
                    b.click();
                }
            } else {
                h.get_by_label(&skip).click();
            }
            h.run_steps(1);
            // Saved before the next frame shows the answer.
            let file = lab_file(dir);
            assert!(
                file.pointer("/predictions/by_walk")
                    .and_then(serde_json::Value::as_object)
                    .is_some_and(|m| !m.is_empty()),
                "an answered or skipped prediction is in the lab file at once"
            );
            h.run_steps(2);
        }
        Act::BackToMegatron => {
            if h.state().active_id() == "step" {
                click_if_there(h, &t(lang, "st-plan-megatron"));
            }
        }
        Act::BackToDesign => {
            if h.state().active_id() == "step" {
                click_if_there(h, &t(lang, "st-plan-back"));
            }
        }
        Act::Restart => {
            // A kill: the app's exit never ran; only what was saved as it happened survives.
            let before = h.state().shared.design.clone();
            // A reveal is for the room that saw it: a restart asks again; answers and skips stay.
            let mut preds = h.state().shared.predictions.clone();
            preds.drop_reveals();
            let mut app = start_app();
            let stars_kept = challenge::all()
                .iter()
                .all(|c| app.shared.design.stars(c.id) >= before.stars(c.id));
            assert!(stars_kept, "every star survives a restart");
            assert_eq!(
                app.shared.predictions, preds,
                "every prediction survives a restart"
            );
            app.shared.autostart_jobs = false;
            let active = h.state().active_id();
            app.select(active);
            *h = harness_for(app, lang);
        }
        Act::SwitchLanguage => {
            let other = if lang == Lang::En { Lang::Tr } else { Lang::En };
            tplab::i18n::set_lang(&h.ctx, other);
            h.run_steps(2);
        }
        Act::SwitchTheme => {
            let next = if h.ctx.theme() == egui::Theme::Dark {
                tplab::app::ThemeChoice::Light
            } else {
                tplab::app::ThemeChoice::Dark
            };
            h.state_mut().set_theme(next);
            h.run_steps(2);
        }
        Act::PressTp(n) => {
            let key = [
                egui::Key::Num1,
                egui::Key::Num2,
                egui::Key::Num3,
                egui::Key::Num4,
                egui::Key::Num5,
                egui::Key::Num6,
                egui::Key::Num7,
                egui::Key::Num8,
            ][(*n - 1).min(7)];
            h.key_press(key);
            h.run_steps(3);
        }
        Act::WalkMegatron => {
            h.state_mut().show_me(&ShowMe {
                view: View::Step,
                ..Default::default()
            });
            h.state_mut().shared.act(Action::WalkMegatron);
            h.run_steps(3);
        }
    }
}

/// Runs `count` journeys of `len` actions from `first_seed`.
fn journeys(name: &str, first_seed: u64, count: usize, len: usize) {
    let dir = data_dir(name);
    // SAFETY of the environment: every test of this binary sets the same folder's parent; the
    // lab file's path is read when it is written.
    std::env::set_var("TPLAB_DATA_DIR", &dir);
    for seed in first_seed..first_seed + count as u64 {
        let _ = std::fs::remove_file(dir.join("lab.json"));
        let mut rng = Rng::new(seed);
        let mut h = harness_for(start_app(), Lang::En);
        let mut done: Vec<Act> = Vec::new();
        for _ in 0..len {
            let act = random_act(&mut rng);
            perform(&mut h, &act, &dir);
            done.push(act);
            if let Err(e) = check_invariants(&mut h, &dir) {
                panic!(
                    "journey {seed} broke an invariant: {e}\nthe learner's actions:\n{}",
                    done.iter()
                        .enumerate()
                        .map(|(i, a)| format!("  {}. {a:?}", i + 1))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
        }
    }
}

fn journey_count() -> usize {
    std::env::var("TPLAB_JOURNEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500)
}

/// One test binary shares one process environment (the data folder): the fixed journeys, then
/// the seeded ones, run in one test, one after another, each from its own seed.
#[test]
fn journeys_keep_every_invariant() {
    let dir = data_dir("fixed");
    std::env::set_var("TPLAB_DATA_DIR", &dir);
    fixed_journeys(&dir);
    journeys("random", 1, journey_count(), 8);
}

/// The fixed journeys: the paths that found the stale copies.
fn fixed_journeys(dir: &std::path::Path) {
    let run = |acts: &[Act]| {
        let _ = std::fs::remove_file(dir.join("lab.json"));
        let mut h = harness_for(start_app(), Lang::En);
        for (i, act) in acts.iter().enumerate() {
            perform(&mut h, act, dir);
            if let Err(e) = check_invariants(&mut h, dir) {
                panic!("fixed journey, action {} ({act:?}): {e}", i + 1);
            }
        }
        h
    };
    // Item 1: challenge 3 solved with Megatron's split built by hand, checked, stepped through:
    // the walkthrough plays that plan (2 all-reduces forward), not the one before the last click.
    let c3 = challenge::stage(3).unwrap_or_else(|e| panic!("{e}"));
    let mut acts = vec![Act::OpenChallenge(3)];
    let want = tplab_engine::block::design::NamedPlan::Megatron.plan();
    let mut s = c3.start.clone();
    for w in Weight::ALL {
        while s.split(w) != want.split(w) {
            acts.push(Act::ClickMatrix(w));
            s = cycle(&s, w);
        }
    }
    acts.extend([Act::Check, Act::StepThroughMyPlan]);
    let h = run(&acts);
    assert_eq!(h.state().active_id(), "step");
    assert_eq!(
        h.state().shared.design.plan().split(Weight::Out),
        Split::Rows
    );
    let walked = h
        .state()
        .shared
        .plan_walk()
        .expect("the learner's plan is walked");
    let forward_all_reduces = walked.trace.collective_counts(Some(0)).forward_all_reduce;
    assert_eq!(
        forward_all_reduces, 2,
        "Megatron's split all-reduces twice forward"
    );
    h.get_by_label_contains("all-reduces this layer: forward 2");

    // Items 2 and 3: challenge 8, an all-gather after fc2 that has nothing to do is drawn and
    // removed where it is drawn; the fixed plan can be stepped through at once.
    let h = run(&[
        Act::OpenChallenge(8),
        Act::AddCollective(Site::Fc2, ManualKind::AllGather),
        Act::RemoveDrawnCollective(usize::MAX),
        Act::ApplyFirstFix,
        Act::ApplyFirstFix,
        Act::Check,
        Act::StepThroughMyPlan,
    ]);
    let _ = h;

    // Item 4: a solved challenge survives a kill right after "Solved".
    let c8 = challenge::stage(8).unwrap_or_else(|e| panic!("{e}"));
    let mut h = harness_for(start_app(), Lang::En);
    h.state_mut().show_me(&ShowMe {
        view: View::Design,
        challenge: Some(8),
        ..Default::default()
    });
    h.run_steps(2);
    let answer = c8.answer.clone();
    h.state_mut().shared.design = {
        let mut d = h.state().shared.design.clone();
        apply_plan(&mut d, &answer);
        d
    };
    h.run_steps(2);
    click_if_there(&mut h, "Check my plan");
    h.get_by_label_contains("Solved");
    drop(h);
    let app = start_app();
    assert!(
        app.shared.design.stars(c8.id) > 0,
        "challenge 8's stars survive a kill"
    );
}

fn cycle(p: &ShardingPlan, w: Weight) -> ShardingPlan {
    let next = match p.split(w) {
        Split::Replicate => Split::Columns,
        Split::Columns => Split::Rows,
        Split::Rows => Split::Replicate,
    };
    let mut q = p.clone();
    match w {
        Weight::Qkv => q.qkv = next,
        Weight::Out => q.out = next,
        Weight::Fc1 => q.fc1 = next,
        Weight::Fc2 => q.fc2 = next,
    }
    q
}

/// Sets the lab's plan to `plan` through its actions (as clicks would).
fn apply_plan(d: &mut tplab::lab::design::DesignLab, plan: &ShardingPlan) {
    for w in Weight::ALL {
        d.apply(&DesignAction::SetSplit(w, plan.split(w)));
    }
    d.apply(&DesignAction::SetSequenceParallel(plan.sequence_parallel));
    match &plan.manual {
        None => {
            d.apply(&DesignAction::SetManual(false));
        }
        Some(list) => {
            d.apply(&DesignAction::SetManual(true));
            for c in d.setup().manual.clone().unwrap_or_default() {
                d.apply(&DesignAction::RemoveCollective {
                    after: c.0,
                    kind: c.1,
                });
            }
            for c in list {
                d.apply(&DesignAction::AddCollective {
                    after: c.after,
                    kind: c.kind,
                });
            }
        }
    }
}
