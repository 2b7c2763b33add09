//! The walkthrough: play, pause, step and scrub over the engine's block program, forward then
//! backward. Each step says in one sentence what happens ([`lanes::narration`]); a lane per GPU
//! shows what that GPU holds of every tensor the op reads and writes, from the engine's
//! placements ([`lanes::lanes_ui`]); a collective moves data between GPUs along its planned
//! messages ([`collectives::plan`]); the f and g points are marked. At TP=1 there is no
//! communication and the collectives are not steps.
//!
//! Animation is time-based (`stable_dt` × speed) and requests repaints only while playing.

use crate::lab::beside::{self, Other};
use crate::lab::load_json;
use crate::lab::predict::Answer;
use crate::lab::save_json;
use crate::lab::walk::{walk_steps, WalkStep};
use crate::lab::Shared;
use crate::lab::ShowMe;
use crate::lab::View;
use crate::widgets::a11y_label;
use crate::widgets::beside::picker;
use crate::widgets::gpu_color;
use crate::widgets::lanes;
pub use crate::widgets::predict::{asks, prediction, Ask, Prediction};
use crate::widgets::text_on;
use crate::widgets::text_shape;
use egui::{Align2, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use serde::{Deserialize, Serialize};
use tplab_engine::block::Op;
use tplab_engine::collectives::{self, Plan};
use tplab_engine::config::human_bytes;
use tplab_engine::run::CollectiveView;
use tplab_engine::{
    block::op::Conjugate,
    block::op::Pass,
    collectives::CollectiveKind,
    trace::{Event, EventKind, Trace},
};
use tplab_lessons::Lang;

/// Largest group whose messages are drawn one by one; larger groups draw one arrow per GPU.
const MAX_DRAWN_MESSAGES: usize = 512;

/// Step-through state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct StepThrough {
    /// Position in steps; the fraction animates a collective's messages.
    pub position: f32,
    /// Steps per second while playing.
    pub speed_steps_per_s: f32,
    #[serde(skip)]
    pub playing: bool,
    /// Numbers mode: on a tiny layer, the values each GPU holds at the all-reduces.
    pub numbers: bool,
    #[serde(skip)]
    numbers_run: Option<(u64, Result<Vec<CollectiveView>, String>)>,
    /// The round of a collective step shown while paused, with the step it belongs to (a jump
    /// elsewhere starts that step at round 0): each key press is one round.
    #[serde(skip)]
    round: (usize, usize),
    #[serde(skip)]
    cache: Option<Cache>,
    /// Predict, then see: before each collective of the first layer the walkthrough asks what
    /// it will do, and plays the step once the learner has answered (or skipped).
    pub predict: bool,
    /// The learner pressed the step key while a question waited (it says what to do).
    #[serde(skip)]
    nudge: bool,
    /// The program stepped beside this one (another TP size, or Megatron's split beside a
    /// learner's plan), its steps matched to this one's.
    #[serde(skip)]
    beside: Option<BesideWalk>,
}

/// The program drawn beside the walk, with its steps and messages, and for each step of the
/// walk the step of this program shown with it.
struct BesideWalk {
    /// The walk's generation the steps were matched for.
    generation: u64,
    other: std::sync::Arc<Other>,
    steps: Vec<WalkStep>,
    plans: Vec<Planned>,
    pairs: Vec<(usize, bool)>,
}

struct Cache {
    generation: u64,
    steps: Vec<WalkStep>,
    /// The planned messages of the scenario's all-reduce (one shape for all f/g collectives).
    /// Message plans of the collectives this scenario issues, by kind and group size (the
    /// whole TP group, or the copies of one replicated KV head).
    plans: Vec<Planned>,
}

impl Default for StepThrough {
    fn default() -> Self {
        Self {
            position: 0.0,
            speed_steps_per_s: 1.0,
            playing: false,
            round: (0, 0),
            numbers: false,
            numbers_run: None,
            cache: None,
            predict: true,
            nudge: false,
            beside: None,
        }
    }
}

impl StepThrough {
    fn refresh(&mut self, shared: &Shared) {
        let generation = walk_generation(shared);
        if self
            .cache
            .as_ref()
            .is_some_and(|c| c.generation == generation)
        {
            return;
        }
        let walked = shared.plan_walk().map(|w| w.trace);
        let source = match &walked {
            Some(t) => Ok(t.as_ref()),
            None => shared.scenario.derived().map(|d| d.trace.as_ref()),
        };
        let (steps, plans) = match source {
            Ok(trace) => (walk_steps(trace), message_plans(trace)),
            Err(_) => (Vec::new(), Vec::new()),
        };
        let last = steps.len().saturating_sub(1) as f32;
        self.position = self.position.clamp(0.0, last);
        // A new program (another layer, TP or algorithm) has rounds of its own: the round shown
        // of the old one would read "round 3 of 2".
        self.round = (0, 0);
        self.cache = Some(Cache {
            generation,
            steps,
            plans,
        });
    }

    fn step_count(&self) -> usize {
        self.cache.as_ref().map_or(0, |c| c.steps.len())
    }

    fn current(&self) -> usize {
        (self.position.floor().max(0.0) as usize).min(self.step_count().saturating_sub(1))
    }

    /// Rounds of step `i`: a collective's rounds (ring: 2(n-1)), 1 for anything else.
    fn rounds(&self, i: usize, trace: &Trace) -> usize {
        let Some(cache) = &self.cache else { return 1 };
        let Some(step) = cache.steps.get(i) else {
            return 1;
        };
        let Some(e) = trace.events.get(step.first_event) else {
            return 1;
        };
        match e.collective_kind() {
            Some(kind) if kind != CollectiveKind::Identity => {
                planned(&cache.plans, e).map_or(1, |p| p.plan.step_count().max(1))
            }
            _ => 1,
        }
    }

    /// The round shown of the current step.
    fn current_round(&self) -> usize {
        let cur = self.current();
        if self.round.0 == cur {
            self.round.1
        } else {
            0
        }
    }

    /// Moves `delta` presses and pauses: a press is one round of a collective, or one step.
    pub fn step_by(&mut self, delta: i32, trace: &Trace) {
        let last = self.step_count().saturating_sub(1);
        let mut cur = self.current();
        let mut round = self.current_round();
        for _ in 0..delta.unsigned_abs() {
            if delta > 0 {
                if round + 1 < self.rounds(cur, trace) {
                    round += 1;
                } else if cur < last {
                    cur += 1;
                    round = 0;
                }
            } else if round > 0 {
                round -= 1;
            } else if cur > 0 {
                cur -= 1;
                round = self.rounds(cur, trace) - 1;
            }
        }
        self.position = cur as f32;
        self.round = (cur, round);
        self.playing = false;
    }

    /// Whether the current step waits for a prediction (not answered, skipped or revealed).
    fn waiting(&self, trace: &Trace, shared: &Shared) -> bool {
        if !self.predict || trace.config.tp <= 1 {
            return false;
        }
        let cur = self.current();
        let Some(step) = self.cache.as_ref().and_then(|c| c.steps.get(cur)) else {
            return false;
        };
        if self.current_round() != 0 || asks(trace, step).is_none() {
            return false;
        }
        shared.predictions.get(&walk_key(shared), cur).is_none()
    }

    /// Records what happened to the current step's question and saves it at once (before the
    /// next frame shows the answer).
    fn answer(&self, shared: &mut Shared, answer: Answer) {
        let key = walk_key(shared);
        shared.predictions.record(&key, self.current(), answer);
        if let Err(e) = shared.save_lab() {
            shared.saved = Some(Err(e));
        }
    }

    /// A step key pressed at a waiting question: on a projector it reveals the answer to the
    /// class (the presenter's clicker asks, then reveals); at a desk it answers nothing and says
    /// so. Returns whether the press was used.
    fn press_at_question(&mut self, shared: &mut Shared) -> bool {
        if shared.presenter {
            self.answer(shared, Answer::Revealed);
        } else {
            self.nudge = true;
        }
        true
    }

    /// Right predictions and predictions answered, of the program walked.
    pub fn tally(&self, shared: &Shared) -> (usize, usize) {
        shared.predictions.tally(&walk_key(shared))
    }

    /// Back to the first step.
    fn restart(&mut self) {
        self.position = 0.0;
        self.round = (0, 0);
        self.playing = false;
    }
}

/// "all-reduces this layer: forward 2, backward 2" for `layer`, with the engine's own account
/// of the KV copies' syncs and sequence parallelism's gathers and scatters (the CLI prints the
/// same words).
pub fn counter_text(trace: &Trace, layer: usize) -> String {
    format!(
        "all-reduces this layer: {}",
        trace.collective_counts(Some(layer)).describe()
    )
}

/// [`counter_text`] in the learner's language.
pub fn counter_text_in(lang: tplab_lessons::Lang, trace: &Trace, layer: usize) -> String {
    if lang == tplab_lessons::Lang::En {
        return counter_text(trace, layer);
    }
    let c = trace.collective_counts(Some(layer));
    let mut text = crate::i18n::t_args(
        lang,
        "st-counter",
        &[
            ("f", c.forward_all_reduce.to_string()),
            ("b", c.backward_all_reduce.to_string()),
        ],
    );
    if c.kv_copy_grad_all_reduce > 0 {
        text.push_str(&crate::i18n::t_args(
            lang,
            "st-counter-kv",
            &[("kv", c.kv_copy_grad_all_reduce.to_string())],
        ));
    }
    if c.forward_other + c.backward_other > 0 {
        text.push_str(&crate::i18n::t_args(
            lang,
            "st-counter-other",
            &[
                ("f", c.forward_other.to_string()),
                ("b", c.backward_other.to_string()),
            ],
        ));
    }
    text
}

/// An event's input shapes: `[128, 768] · [768, 576]`.
fn input_shapes(e: &Event) -> String {
    e.inputs
        .iter()
        .map(|[r, c]| format!("[{r}, {c}]"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The step's technical line in the learner's language: where it is, the op in words, shapes.
fn describe_short(
    lang: tplab_lessons::Lang,
    trace: &Trace,
    e: &Event,
    step: &WalkStep,
    cur: usize,
    n: usize,
) -> String {
    let pass = crate::widgets::pass_name(lang, step.pass);
    let shapes = input_shapes(e);
    crate::i18n::t_args(
        lang,
        "st-describe",
        &[
            ("n", (cur + 1).to_string()),
            ("total", n.to_string()),
            ("layer", step.layer.to_string()),
            ("pass", pass),
            ("op", step.op.to_string()),
            ("label", crate::widgets::event_op_label(lang, trace, e)),
            ("inputs", shapes),
            ("rows", e.output[0].to_string()),
            ("cols", e.output[1].to_string()),
        ],
    )
}

/// A collective's planned messages and what each GPU holds before each of its rounds (replayed
/// once per trace, not per frame).
struct Planned {
    kind: CollectiveKind,
    /// Its group's size.
    n: usize,
    plan: Plan,
    /// `masks[k][gpu][chunk]`: whose numbers the chunk holds before round `k` (a bit per GPU).
    masks: Vec<Vec<Vec<u64>>>,
}

/// The planned collective of `event` (its kind and group size), if it moves anything.
fn planned<'a>(plans: &'a [Planned], event: &Event) -> Option<&'a Planned> {
    let kind = event.collective_kind()?;
    plans
        .iter()
        .find(|p| p.kind == kind && p.n == event.ranks.len())
}

/// The planned messages of the collectives `trace` issues, by kind and group size (the whole TP
/// group, or the copies of one replicated KV head): what a collective step animates.
fn message_plans(trace: &Trace) -> Vec<Planned> {
    let cfg = &trace.config;
    let elems = cfg.tokens() * cfg.hidden;
    let gs = tplab_engine::block::program::gather_scatter_algorithm(cfg);
    let full = [
        (CollectiveKind::AllReduce, cfg.algorithm, cfg.tp, elems),
        (CollectiveKind::AllGather, gs, cfg.tp, elems),
        (CollectiveKind::ReduceScatter, gs, cfg.tp, elems),
        // A learner's plan may move a tensor between tokens and features.
        (CollectiveKind::AllToAll, gs, cfg.tp, elems),
    ];
    // Subgroup collectives (one per group, all alike): one plan per kind and size.
    let mut groups: Vec<(
        CollectiveKind,
        tplab_engine::collectives::Algorithm,
        usize,
        usize,
    )> = Vec::new();
    for e in trace.events.iter().filter(|e| e.ranks.len() < cfg.tp) {
        if let EventKind::Collective {
            kind, algorithm, ..
        } = e.kind
        {
            let n = e.ranks.len();
            if !groups.iter().any(|g| g.0 == kind && g.2 == n) {
                groups.push((kind, algorithm, n, e.output[0] * e.output[1]));
            }
        }
    }
    full.into_iter()
        .chain(groups)
        .filter_map(|(kind, algorithm, n, elems)| {
            let plan = collectives::plan(kind, algorithm, n, elems, cfg.dtype.size_bytes()).ok()?;
            let masks = plan.contributions().ok()?;
            Some(Planned {
                kind,
                n,
                plan,
                masks,
            })
        })
        .collect()
}

/// "By the end of this step each GPU has sent 1.5 MiB": what GPU 0 sends in the collectives up to and
/// including trace event `upto`.
fn sent_so_far(lang: Lang, trace: &Trace, upto: usize) -> String {
    let sent: u64 = trace
        .events
        .iter()
        .take(upto + 1)
        .filter(|e| e.is_collective() && e.ranks.len() > 1 && e.on_rank(0))
        .map(|e| e.bytes_sent_per_rank)
        .sum();
    crate::i18n::t_args(
        lang,
        "beside-sent",
        &[("bytes", crate::i18n::bytes(lang, sent))],
    )
}

/// The program beside the walk at the step matched to the walk's step `cur`: its name, where it
/// is, what it has sent, its lanes and, for a collective, its messages at the same fraction of
/// the collective as the walk's (its lanes unless `with_lanes` is off).
#[allow(clippy::too_many_arguments)]
fn beside_pane(
    ui: &mut egui::Ui,
    lang: Lang,
    b: &BesideWalk,
    cur: usize,
    frac: f32,
    reserve: f32,
    lanes_n: Option<usize>,
    with_lanes: bool,
) {
    let trace = match &b.other.derived {
        Ok(d) => &d.trace,
        Err(e) => {
            ui.strong(b.other.label(lang));
            ui.colored_label(
                ui.visuals().error_fg_color,
                crate::i18n::t_args(lang, "beside-error", &[("error", e.to_string())]),
            );
            return;
        }
    };
    let Some(&(j, same)) = b.pairs.get(cur) else {
        return;
    };
    let Some(step) = b.steps.get(j) else {
        return;
    };
    let events = &trace.events[step.first_event..step.first_event + step.events];
    let Some(event) = events.first() else {
        return;
    };
    ui.label(
        egui::RichText::new(format!(
            "{} · {}",
            b.other.label(lang),
            sent_so_far(lang, trace, event.index)
        ))
        .strong(),
    );
    // The same op as the walk's: the narration above says what it does on both.
    if !same {
        ui.colored_label(
            ui.visuals().warn_fg_color,
            crate::i18n::t_args(lang, "beside-no-step", &[("k", (j + 1).to_string())]),
        );
    }
    if with_lanes {
        lanes::lanes_sized(ui, lang, trace, events, reserve, lanes_n);
    }
    if same && event.is_collective() {
        ui.add_space(4.0);
        gpus_ui(ui, trace, step, &b.plans, frac, with_lanes);
    }
}

impl StepThrough {
    /// Matches the program beside the walk (if any) to the walk's steps, once per change.
    fn match_beside(&mut self, other: Option<std::sync::Arc<Other>>, generation: u64) {
        let Some(other) = other else {
            self.beside = None;
            return;
        };
        let fresh = self.beside.as_ref().is_some_and(|b| {
            b.generation == generation && std::sync::Arc::ptr_eq(&b.other, &other)
        });
        if fresh {
            return;
        }
        let Some(cache) = &self.cache else {
            self.beside = None;
            return;
        };
        let (steps, plans) = match &other.derived {
            Ok(d) => (walk_steps(&d.trace), message_plans(&d.trace)),
            Err(_) => (Vec::new(), Vec::new()),
        };
        let pairs = beside::align(&cache.steps, &steps);
        self.beside = Some(BesideWalk {
            generation,
            other,
            steps,
            plans,
            pairs,
        });
    }
}

/// Communicating collectives issued in `layer` up to and including trace event `upto`.
fn issued_so_far(trace: &Trace, layer: usize, upto: usize) -> (usize, usize) {
    let mut fwd_bwd = (0, 0);
    for e in trace.events[..=upto.min(trace.events.len().saturating_sub(1))].iter() {
        let communicates = e
            .collective_kind()
            .is_some_and(|k| k != CollectiveKind::Identity);
        if e.layer == layer && communicates {
            match e.pass {
                Pass::Forward => fwd_bwd.0 += 1,
                Pass::Backward => fwd_bwd.1 += 1,
            }
        }
    }
    fwd_bwd
}

impl View for StepThrough {
    fn id(&self) -> &'static str {
        "step"
    }

    fn title(&self) -> &'static str {
        "Walkthrough"
    }

    fn logic(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        self.refresh(shared);
        // A link's `step=`: that step, its question answered by the link (a teacher shows it).
        if let Some(n) = shared.open_step.take() {
            let last = self.step_count().saturating_sub(1);
            self.position = n.min(last) as f32;
            self.round = (n.min(last), 0);
            self.playing = false;
        }
        shared.walk_at = Some(self.current());
        if shared.keys.toggle_play {
            if !self.playing && self.current() + 1 >= self.step_count() {
                self.position = 0.0; // play again from the start
            }
            self.playing = !self.playing;
        }
        if shared.keys.restart {
            self.restart();
        }
        let walked = shared.plan_walk().map(|w| w.trace);
        let scenario_trace = shared.scenario.derived().ok().map(|d| d.trace.clone());
        let trace = match (&walked, &scenario_trace) {
            (Some(t), _) => t.as_ref(),
            (None, Some(t)) => t,
            (None, None) => return,
        };
        let mut presses = shared.keys.step;
        // A step that waits for a prediction: a press forward never answers it. On a projector
        // the first press reveals the answer to the class, the next one plays it; at a desk the
        // press stops there and the card says to answer or skip.
        if presses > 0 && self.waiting(trace, shared) {
            self.press_at_question(shared);
            presses = if shared.presenter { presses - 1 } else { 0 };
        }
        if presses != 0 {
            self.nudge = false;
            self.step_by(presses, trace);
        }
        let before = self.current();
        if self.playing {
            let last = self.step_count().saturating_sub(1) as f32;
            // Time-based: the same speed at any frame rate; a long stall moves at most 0.25 s.
            // A collective takes one step's time per round, so that a class can follow each.
            let dt_s = ctx.input(|i| i.stable_dt).min(0.25);
            let rounds = self.rounds(self.current(), trace) as f32;
            self.position += dt_s * self.speed_steps_per_s / rounds;
            if self.position >= last {
                self.position = last;
                self.playing = false;
            }
            // Playing stops at the start of a step that asks first.
            if self.current() != before && self.waiting(trace, shared) {
                self.position = self.current() as f32;
                self.playing = false;
            }
            ctx.request_repaint();
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        self.refresh(shared);
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| crate::i18n::t(lang, id);
        crate::widgets::links::view_heading(ui, tr("st-title"));
        // A projector of 720 lines (450 points at presenter mode's zoom): the strip shows the
        // current pass only, the "beside it" picker joins the counters' row and the lanes draw
        // compact, so that every GPU's lane is on screen with the step's words.
        let short = shared.presenter && crate::widgets::short_screen(ui.ctx());
        let generation = walk_generation(shared);
        let walked = shared.plan_walk();
        let other = shared.beside.other(&shared.scenario, walked.as_ref());
        if let Some(w) = &walked {
            if plan_walk_banner(ui, lang, w, shared) {
                return;
            }
        } else if shared.walk_choice() == crate::lab::WalkChoice::MyPlan {
            // The learner's plan was changed in the design lab since and is refused now: the
            // walkthrough says so instead of playing another plan.
            refused_plan_banner(ui, lang, shared);
            return;
        }
        let walked_trace = walked.as_ref().map(|w| w.trace.clone());
        let trace_arc: std::sync::Arc<Trace> = match &walked_trace {
            Some(t) => t.clone(),
            None => match crate::widgets::derived_or_fixes(ui, &mut shared.scenario) {
                Some(d) => d.trace.clone(),
                None => return,
            },
        };
        let trace: &Trace = &trace_arc;
        let n = self.step_count();
        if n == 0 {
            ui.label(tr("st-empty"));
            return;
        }
        ui.horizontal_wrapped(|ui| {
            let pressed = crate::widgets::player_buttons(
                ui,
                lang,
                self.playing,
                [
                    "st-play",
                    "st-pause",
                    "st-previous",
                    "st-next",
                    "st-restart",
                ],
            );
            if pressed.play {
                if !self.playing && self.current() + 1 >= n {
                    self.position = 0.0;
                }
                self.playing = !self.playing;
            }
            if pressed.previous {
                self.step_by(-1, trace);
            }
            if pressed.next {
                if self.waiting(trace, shared) {
                    self.press_at_question(shared);
                } else {
                    self.step_by(1, trace);
                }
            }
            if pressed.restart {
                self.restart();
            }
            // A slider is a row of its own that a wrapping row cannot break: on a phone each
            // starts a line (else it runs off the screen and widens everything below).
            let narrow = ui.max_rect().width() < 600.0;
            if narrow {
                ui.end_row();
                // The slider's bar gives way to its number and name.
                ui.spacing_mut().slider_width = (ui.max_rect().width() - 170.0).max(60.0);
            }
            // A separate integer: a slider bound to `position` would round away the fraction.
            // Counted from 1, as the "Step k/n" line beside it counts.
            let mut scrub = self.current() + 1;
            if ui
                .add(egui::Slider::new(&mut scrub, 1..=n).text(tr("st-step")))
                .changed()
            {
                self.position = (scrub.max(1) - 1) as f32;
                self.playing = false;
            }
            if narrow {
                ui.end_row();
            }
            ui.add(
                egui::Slider::new(&mut self.speed_steps_per_s, 0.25..=8.0)
                    .logarithmic(true)
                    .custom_formatter(crate::widgets::widget_number(lang))
                    .custom_parser(crate::widgets::parse_number)
                    .text(tr("st-speed")),
            );
            if narrow {
                ui.end_row();
            }
            if !short {
                beside_picker(ui, lang, shared, trace, walked.is_some());
            }
        });
        self.match_beside(other, generation);
        let Some(cache) = &self.cache else {
            return;
        };
        let cur = self.current();
        let step = &cache.steps[cur];
        // The messages drawn: moving while playing; paused, the middle of the round shown.
        let rounds = self.rounds(cur, trace);
        let frac = if self.playing {
            self.position - cur as f32
        } else {
            (self.current_round() as f32 + 0.5) / rounds as f32
        };
        let event = &trace.events[step.first_event];
        let events = &trace.events[step.first_event..step.first_event + step.events];
        let question = if self.predict && trace.config.tp > 1 {
            prediction(lang, trace, step)
        } else {
            None
        };
        let key = walk_key(shared);
        let answered = shared.predictions.get(&key, cur).map(|a| match a {
            Answer::Picked { choice, right } => Some((choice, right)),
            Answer::Skipped | Answer::Revealed => None,
        });
        // A skipped question keeps its answer for when it comes back at the end of the layer.
        let skipped = matches!(shared.predictions.get(&key, cur), Some(Answer::Skipped));
        if let (Some(q), None, 0) = (&question, answered, self.current_round()) {
            // Ask first: the narration, the lanes and the messages wait for the answer.
            let heading = lanes::step_heading(lang, cur + 1, n, step.layer, step.pass);
            let mut picked: Option<usize> = None;
            let mut reveal = false;
            let mut skip = false;
            let presenter = shared.presenter;
            let nudge = self.nudge;
            let predict = &mut self.predict;
            let ask = |ui: &mut egui::Ui| {
                egui::Frame::group(ui.style()).show(ui, |ui| {
                    ui.set_width(ui.available_width());
                    ui.strong(heading);
                    let body = ui.style().text_styles[&egui::TextStyle::Body].size;
                    // On a projector the question and its options are in large type.
                    // (`short` is a projector's short screen.)
                    let (q_size, o_size) = if short {
                        // 720 lines: a long (Turkish) question and four options stay on screen.
                        (1.55 * body, 1.3 * body)
                    } else if presenter {
                        (1.9 * body, 1.6 * body)
                    } else {
                        (1.35 * body, 1.1 * body)
                    };
                    ui.label(egui::RichText::new(&q.question).size(q_size).strong());
                    ui.add_space(6.0);
                    if presenter {
                        // The class answers aloud; the presenter reveals.
                        for (i, o) in q.options.iter().enumerate() {
                            ui.label(
                                egui::RichText::new(format!("{}  {o}", option_letter(i)))
                                    .size(o_size)
                                    .color(ui.visuals().strong_text_color()),
                            );
                            ui.add_space(4.0);
                        }
                        ui.add_space(6.0);
                        if ui.button(tr("walk-predict-reveal")).clicked() {
                            reveal = true;
                        }
                    } else {
                        for (i, o) in q.options.iter().enumerate() {
                            if ui
                                .button(
                                    egui::RichText::new(format!("{}  {o}", option_letter(i)))
                                        .size(o_size),
                                )
                                .clicked()
                            {
                                picked = Some(i);
                            }
                        }
                        ui.add_space(6.0);
                        if ui.button(tr("walk-predict-skip")).clicked() {
                            skip = true;
                        }
                    }
                    if presenter {
                        // The room answers aloud: the arrow key reveals, it never waits for a pick.
                        ui.weak(tr("walk-predict-wait-presenter"));
                    } else if nudge {
                        ui.colored_label(ui.visuals().warn_fg_color, tr("walk-predict-nudge"));
                    } else {
                        ui.weak(tr("walk-predict-wait"));
                    }
                    ui.checkbox(predict, tr("walk-predict-toggle"))
                        .on_hover_text(tr("walk-predict-toggle-hint"));
                });
            };
            // Beside the question, what every GPU holds now (what the step reads): the learner
            // predicts from the picture, which keeps the answer back. Under it on a narrow
            // screen.
            let events_now = events;
            if ui.available_width() > 640.0 {
                ui.horizontal_top(|ui| {
                    let w = ui.available_width();
                    let h = ui.available_height();
                    let gap = ui.spacing().item_spacing.x;
                    ui.allocate_ui(Vec2::new(0.56 * w - gap, h), |ui| {
                        ui.vertical(ask);
                    });
                    ui.allocate_ui(Vec2::new(0.44 * w - gap, h), |ui| {
                        ui.vertical(|ui| {
                            ui.strong(tr("walk-predict-now"));
                            if let Some(size) = held_size(lang, trace, events_now) {
                                ui.label(size);
                            }
                            lanes::lanes_before(ui, lang, trace, events_now);
                        });
                    });
                });
            } else {
                ask(ui);
                ui.strong(tr("walk-predict-now"));
                if let Some(size) = held_size(lang, trace, events_now) {
                    ui.label(size);
                }
                lanes::lanes_before(ui, lang, trace, events_now);
            }
            // Saved before the next frame shows "right" or "not quite".
            if let Some(i) = picked {
                self.nudge = false;
                self.answer(
                    shared,
                    Answer::Picked {
                        choice: i,
                        right: i == q.right,
                    },
                );
            } else if skip {
                self.nudge = false;
                self.answer(shared, Answer::Skipped);
            } else if reveal {
                self.nudge = false;
                self.answer(shared, Answer::Revealed);
            }
            let (right, total) = self.tally(shared);
            if total > 0 {
                ui.label(crate::i18n::t_args(
                    lang,
                    "walk-predict-tally",
                    &[("right", right.to_string()), ("total", total.to_string())],
                ));
            }
            return;
        }
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            let mut heading = lanes::step_heading(lang, cur + 1, n, step.layer, step.pass);
            if rounds > 1 {
                heading.push_str(" · ");
                heading.push_str(&crate::i18n::t_args(
                    lang,
                    "walk-round",
                    &[
                        ("k", (self.current_round() + 1).to_string()),
                        ("rounds", rounds.to_string()),
                    ],
                ));
            }
            ui.strong(heading);
            if let (Some(q), Some(a), false) = (&question, answered, skipped) {
                let answer = format!("{}  {}", option_letter(q.right), q.options[q.right]);
                match a {
                    Some((_, true)) => {
                        ui.colored_label(
                            crate::widgets::ok_ink(ui),
                            crate::i18n::t_args(lang, "walk-predict-right", &[("answer", answer)]),
                        );
                    }
                    Some((choice, false)) => {
                        ui.colored_label(
                            ui.visuals().warn_fg_color,
                            crate::i18n::t_args(
                                lang,
                                "walk-predict-wrong",
                                &[("answer", answer), ("lesson", q.lesson.clone())],
                            ),
                        );
                        // Why the option picked is not it, before why the answer is.
                        if let Some(not) = q.why_not.get(choice).filter(|w| !w.is_empty()) {
                            ui.label(not);
                        }
                    }
                    None => {
                        ui.label(crate::i18n::t_args(
                            lang,
                            "walk-predict-answer",
                            &[("answer", answer)],
                        ));
                    }
                }
                // Why, with the step's own numbers.
                ui.label(&q.why);
            }
            let narration = ui.label(
                egui::RichText::new(if walked_trace.is_some() {
                    lanes::plan_narration(lang, trace, event)
                } else {
                    lanes::narration(lang, trace, event)
                })
                .size(
                    if short { 1.0 } else { 1.15 }
                        * ui.style().text_styles[&egui::TextStyle::Body].size,
                ),
            );
            // A live region: a screen reader announces the new step's words when it changes.
            ui.ctx().accesskit_node_builder(narration.id, |node| {
                node.set_live(egui::accesskit::Live::Polite)
            });
            if trace.config.tp <= 1 {
                ui.label(crate::i18n::t_args(lang, "walk-one-gpu", &[]));
            }
        });
        // The last step says so (the arrow key does nothing more), and where to go from here.
        if cur + 1 == n {
            ui.strong(tr("walk-end"));
        }
        // The end of a layer: questions skipped in it come back.
        let layer_ends = cache
            .steps
            .get(cur + 1)
            .is_none_or(|next| next.layer != step.layer);
        if layer_ends && self.predict {
            let skipped: Vec<usize> = shared
                .predictions
                .skipped(&key)
                .into_iter()
                .filter(|i| cache.steps.get(*i).is_some_and(|s| s.layer == step.layer))
                .collect();
            if let Some(&first) = skipped.first() {
                let mut ask = false;
                egui::Frame::group(ui.style()).show(ui, |ui| {
                    ui.horizontal_wrapped(|ui| {
                        ui.strong(crate::i18n::t_args(
                            lang,
                            "walk-skipped-back",
                            &[("count", skipped.len().to_string())],
                        ));
                        ask = ui.button(tr("walk-skipped-ask")).clicked();
                    });
                });
                if ask {
                    for i in &skipped {
                        shared.predictions.forget(&key, *i);
                    }
                    self.position = first as f32;
                    self.round = (first, 0);
                    self.playing = false;
                }
            }
        }
        let (right, total) = self.tally(shared);
        let mut ask_again = false;
        ui.horizontal_wrapped(|ui| {
            ui.strong(counter_text_in(lang, trace, step.layer));
            let (f, b) = issued_so_far(trace, step.layer, step.first_event);
            ui.label(crate::i18n::t_args(
                lang,
                "st-issued",
                &[("f", f.to_string()), ("b", b.to_string())],
            ));
            if total > 0 {
                ui.label(crate::i18n::t_args(
                    lang,
                    "walk-predict-tally",
                    &[("right", right.to_string()), ("total", total.to_string())],
                ));
            }
            ui.checkbox(&mut self.predict, tr("walk-predict-toggle"))
                .on_hover_text(tr("walk-predict-toggle-hint"));
            // Answers are kept across restarts (a student's progress); a lecturer who rehearsed
            // wants the class to be asked afresh.
            let answered = shared.predictions.of(&key).is_some_and(|a| !a.is_empty());
            ask_again = self.predict
                && answered
                && ui
                    .button(tr("walk-predict-again"))
                    .on_hover_text(tr("walk-predict-again-hint"))
                    .clicked();
            if short {
                beside_picker(ui, lang, shared, trace, walked.is_some());
            }
        });
        if ask_again {
            shared.predictions.clear(&key);
            self.position = 0.0;
            self.round = (0, 0);
            self.playing = false;
            return;
        }
        let line = if lang == tplab_lessons::Lang::En {
            describe(event, step, cur, n, trace.config.tp)
        } else {
            describe_short(lang, trace, event, step, cur, n)
        };
        if !shared.presenter {
            // The technical line (op names, shapes) is for a desk, not for a class.
            ui.label(egui::RichText::new(line).weak());
        }
        // On a projector with two programs side by side, the lanes need the strip's room (the
        // heading says where the step is).
        // On a projector a collective's rounds need the strip's room too (the heading says where
        // the step is).
        if !(shared.presenter && (self.beside.is_some() || event.is_collective())) {
            ui.add_space(6.0);
            pass_strip(
                ui,
                trace,
                &cache.steps,
                cur,
                &mut self.position,
                &mut self.playing,
                short,
            );
        }
        ui.add_space(8.0);
        // A collective's message picture goes under the lanes: leave it room (two programs side
        // by side draw it compact, the GPUs' names only: see [`gpus_ui`]).
        let reserve = match (event.is_collective(), self.beside.is_some()) {
            (false, _) => 0.0,
            (true, false) => 190.0,
            (true, true) => COMPACT_MESSAGES_H + 12.0,
        };
        // What does not fit (large type, a small screen) scrolls instead of being cut off; the
        // Numbers switch stays below, in view.
        let row = ui.spacing().interact_size.y + ui.spacing().item_spacing.y;
        let beside_walk = self.beside.as_ref();
        // Rows kept below the lanes for the Numbers switch (not drawn beside another program,
        // nor on a short projector screen unless it is on: there the lanes and their key need
        // the row, and the tiny layer's numbers are a desk's).
        let numbers_switch = !short || self.numbers;
        let below = if beside_walk.is_some() || !numbers_switch {
            0.0
        } else {
            1.15
        };
        let lanes_h = (ui.available_height() - below * row).max(4.0 * row);
        egui::ScrollArea::vertical()
            .id_salt("walk-lanes")
            .max_height(lanes_h)
            .auto_shrink([false, true])
            .show(ui, |ui| match beside_walk {
                // A collective next to the lanes: what each GPU holds, and this round's chunks,
                // side by side, so both are on screen together (a projector included).
                None if event.is_collective() && ui.available_width() > 640.0 => {
                    let round = if self.playing {
                        ((frac * rounds as f32).floor() as usize).min(rounds.saturating_sub(1))
                    } else {
                        self.current_round()
                    };
                    ui.columns_const(|[left, right]| {
                        // Every lane fits the height the round picture has: on a projector the
                        // learner sees all GPUs and the round together, nothing scrolls.
                        let height = lanes_h.max(120.0);
                        let lanes_n = trace.config.tp.min(lanes::MAX_LANES);
                        left.allocate_ui(Vec2::new(left.available_width(), height), |ui| {
                            // What the collective leaves shows faint until its last round.
                            let pending = round + 1 < rounds;
                            lanes::lanes_fitted(ui, lang, trace, events, lanes_n, pending);
                        });
                        round_picture(
                            right,
                            lang,
                            event,
                            &cache.plans,
                            round,
                            frac,
                            self.playing,
                            height,
                            shared.presenter,
                        );
                    });
                }
                None if short => {
                    lanes::lanes_compact(ui, lang, trace, events, reserve);
                    if event.is_collective() {
                        ui.add_space(4.0);
                        gpus_ui(ui, trace, step, &cache.plans, frac, false);
                    }
                }
                None => {
                    lanes::lanes_ui(ui, lang, trace, events, reserve);
                    if event.is_collective() {
                        ui.add_space(4.0);
                        gpus_ui(ui, trace, step, &cache.plans, frac, false);
                    }
                }
                Some(b) => {
                    crate::widgets::columns(ui, 2, |cols| {
                        let caption = if walked_trace.is_some() {
                            crate::i18n::t_args(
                                lang,
                                "beside-your-plan",
                                &[("tp", trace.config.tp.to_string())],
                            )
                        } else {
                            crate::i18n::t_args(
                                lang,
                                "beside-this",
                                &[("tp", trace.config.tp.to_string())],
                            )
                        };
                        let lanes_n =
                            Some(trace.config.tp.max(b.other.config.tp).min(lanes::MAX_LANES));
                        cols[0].label(
                            egui::RichText::new(format!(
                                "{caption} · {}",
                                sent_so_far(lang, trace, event.index)
                            ))
                            .strong(),
                        );
                        // A projector's short screen at a collective: the two rings and what
                        // each side has sent, the lesson's point (rounds and bytes); the lanes
                        // pushed the second ring below the fold.
                        let with_lanes = !(short && event.is_collective());
                        if with_lanes {
                            lanes::lanes_sized(&mut cols[0], lang, trace, events, reserve, lanes_n);
                        }
                        if event.is_collective() {
                            cols[0].add_space(4.0);
                            gpus_ui(&mut cols[0], trace, step, &cache.plans, frac, with_lanes);
                        }
                        beside_pane(
                            &mut cols[1],
                            lang,
                            b,
                            cur,
                            frac,
                            reserve,
                            lanes_n,
                            with_lanes,
                        );
                    });
                }
            });
        // The numbers run Megatron's split on the scenario: not a learner's plan, nor two.
        if walked_trace.is_none() && self.beside.is_none() && numbers_switch {
            let key = (step.layer, step.pass, step.op);
            // The round shown and the collective's schedule: the numbers follow the picture.
            // (Copied only while the numbers are shown: a tiny layer, a few GPUs.)
            let round = planned(&cache.plans, event)
                .filter(|_| self.numbers)
                .map(|p| (self.current_round(), p.masks.clone()));
            self.numbers_ui(ui, shared, lang, key, round);
        }
    }

    fn show_me(&mut self, target: &ShowMe, shared: &mut Shared) {
        self.refresh(shared);
        let Some(cache) = &self.cache else { return };
        let pass = target.pass;
        let layer = target.layer.unwrap_or(0);
        let found = cache.steps.iter().position(|s| {
            s.layer == layer
                && pass.is_none_or(|p| p == s.pass)
                && target
                    .event
                    .as_deref()
                    .is_none_or(|e| Some(s.op) == Op::from_name(e))
        });
        if let Some(i) = found {
            self.position = i as f32;
            // A lesson's button shows its step; it does not ask first.
            let key = walk_key(shared);
            if asks_at(cache, i, shared).is_some() {
                shared.predictions.record(&key, i, Answer::Revealed);
            }
        }
        self.playing = false;
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    /// `<step>-<pass>-<op>-<scenario>`: `tplab-step-13-forward-mlp.g-h768-….png`.
    fn export_name(&self, shared: &Shared) -> Option<String> {
        let cache = self.cache.as_ref()?;
        let cur = self.current();
        let step = cache.steps.get(cur)?;
        Some(format!(
            "{}-{}-{}-{}",
            cur + 1,
            step.pass.name(),
            step.op,
            shared.scenario.config().label()
        ))
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

/// The numbers layer: 4 tokens, hidden 8, 2 heads, TP 2, in f64: small enough to print every
/// value each GPU holds.
pub fn numbers_config() -> tplab_engine::config::Config {
    tplab_engine::config::Config {
        hidden: 8,
        heads: 2,
        kv_heads: None,
        ffn: 32,
        seq: 4,
        batch: 1,
        layers: 1,
        dtype: tplab_engine::dtype::DType::F64,
        tp: 2,
        sequence_parallel: false,
        ..tplab_engine::config::Preset::Tiny.config()
    }
}

/// Whether `cfg` is small enough for numbers mode (every recorded tensor printable).
fn printable(cfg: &tplab_engine::config::Config) -> bool {
    cfg.tokens() * cfg.hidden <= 64 && cfg.tp <= 4
}

impl StepThrough {
    /// Numbers mode: a switch, and at the all-reduces every GPU's partial sum, the sum, and the
    /// reference's value beside it.
    fn numbers_ui(
        &mut self,
        ui: &mut egui::Ui,
        shared: &mut Shared,
        lang: Lang,
        (layer, pass, op): (usize, Pass, Op),
        round: Option<(usize, Vec<Vec<Vec<u64>>>)>,
    ) {
        let t = |id: &str| crate::i18n::t(lang, id);
        let cfg = shared.scenario.config().clone();
        ui.horizontal(|ui| {
            ui.checkbox(&mut self.numbers, t("walk-numbers"));
            if self.numbers && !printable(&cfg) && ui.button(t("walk-numbers-switch")).clicked() {
                shared.scenario.set_config(numbers_config());
            }
        });
        if !self.numbers || !printable(&cfg) {
            return;
        }
        let generation = shared.scenario.generation();
        if self
            .numbers_run
            .as_ref()
            .is_none_or(|(g, _)| *g != generation)
        {
            // A tiny layer: the whole run takes milliseconds, once per scenario.
            let run = tplab_engine::run::run_typed::<f64>(&cfg, &|_, _| {})
                .map(|r| r.report.collectives)
                .map_err(|e| e.to_string());
            self.numbers_run = Some((generation, run));
        }
        let Some((_, run)) = &self.numbers_run else {
            return;
        };
        let views = match run {
            Ok(v) => v,
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
                return;
            }
        };
        let Some(c) = views
            .iter()
            .find(|c| c.layer == layer && c.pass == pass && c.op == op)
        else {
            ui.label(t("walk-numbers-at"));
            return;
        };
        let grid = |ui: &mut egui::Ui, id: String, title: String, m: &ndarray::Array2<f64>| {
            ui.vertical(|ui| {
                ui.strong(title);
                egui::Grid::new(id).spacing([6.0, 2.0]).show(ui, |ui| {
                    for row in m.rows() {
                        for v in row {
                            ui.monospace(crate::i18n::num_text(lang, &format!("{v:+.2}")));
                        }
                        ui.end_row();
                    }
                });
            });
        };
        // Two rows, so that nothing runs off a 1280-pixel screen: the partial sums, then their
        // sum beside the reference.
        egui::ScrollArea::horizontal()
            .id_salt("numbers")
            .show(ui, |ui| {
                ui.horizontal_top(|ui| {
                    for (r, p) in c.partials.iter().enumerate() {
                        let title = format!(
                            "{} · {}",
                            crate::i18n::t_args(lang, "walk-gpu", &[("r", r.to_string())]),
                            t("walk-placement-partial")
                        );
                        grid(ui, format!("partial{r}"), title, p);
                        if r + 1 < c.partials.len() {
                            ui.label("+");
                        }
                    }
                });
                // Round by round, as the picture above: each GPU's numbers before this round,
                // every chunk the sum of the partial sums it holds so far.
                if let Some((k, masks)) = &round {
                    if let Some(state) = masks.get(*k + 1).filter(|_| !c.partials.is_empty()) {
                        let rounds = masks.len().saturating_sub(1);
                        ui.horizontal_top(|ui| {
                            for (r, held) in state.iter().enumerate() {
                                let title = crate::i18n::t_args(
                                    lang,
                                    "walk-numbers-round",
                                    &[
                                        ("r", r.to_string()),
                                        ("k", (k + 1).min(rounds.max(1)).to_string()),
                                        ("rounds", rounds.to_string()),
                                    ],
                                );
                                ui.vertical(|ui| {
                                    ui.strong(title);
                                    round_grid(ui, lang, ("round", r), &c.partials, held);
                                });
                            }
                        });
                        ui.weak(t("walk-numbers-round-key"));
                    }
                }
                ui.horizontal_top(|ui| {
                    ui.label("=");
                    grid(ui, "sum".into(), t("walk-numbers-sum"), &c.result);
                    grid(
                        ui,
                        "reference".into(),
                        t("walk-numbers-reference"),
                        &c.reference,
                    );
                });
            });
        let verdict = if c.check.passed {
            "walk-numbers-match"
        } else {
            "walk-numbers-mismatch"
        };
        ui.label(crate::i18n::t_args(
            lang,
            verdict,
            &[
                ("error", crate::i18n::sci(lang, c.check.max_rel_error, 1)),
                ("tolerance", crate::i18n::sci(lang, c.check.tolerance, 1)),
            ],
        ));
    }
}

/// One GPU's numbers at a round of a collective: the buffer cut into `held.len()` chunks, row by
/// row, each chunk the sum of the partial sums of the GPUs it holds (`held[c]`, a bit per GPU);
/// "·" where it holds nothing yet, bold where it holds everyone's.
fn round_grid(
    ui: &mut egui::Ui,
    lang: Lang,
    id: (&str, usize),
    partials: &[ndarray::Array2<f64>],
    held: &[u64],
) {
    let Some(first) = partials.first() else {
        return;
    };
    let (rows, cols) = first.dim();
    let total = rows * cols;
    let chunks = held.len().max(1);
    let full = if partials.len() >= 64 {
        u64::MAX
    } else {
        (1u64 << partials.len()) - 1
    };
    egui::Grid::new(id).spacing([6.0, 2.0]).show(ui, |ui| {
        for i in 0..rows {
            for j in 0..cols {
                let flat = i * cols + j;
                let chunk = (flat * chunks / total.max(1)).min(chunks - 1);
                let mask = held.get(chunk).copied().unwrap_or(0);
                if mask == 0 {
                    ui.monospace("  ·  ");
                    continue;
                }
                let v: f64 = partials
                    .iter()
                    .enumerate()
                    .filter(|(q, _)| mask >> q & 1 == 1)
                    .map(|(_, p)| p[[i, j]])
                    .sum();
                let text = egui::RichText::new(crate::i18n::num_text(lang, &format!("{v:+.2}")))
                    .monospace();
                ui.label(if mask & full == full {
                    text.strong()
                } else {
                    text
                });
            }
            ui.end_row();
        }
    });
}

/// One sentence about the current step.
fn describe(e: &Event, step: &WalkStep, cur: usize, n: usize, tp: usize) -> String {
    // The op in words (its label), not its trace name (`attn.g`).
    let head = format!(
        "Step {}/{n} · layer {} · {} · {}",
        cur + 1,
        step.layer,
        step.pass.name(),
        step.op.label()
    );
    match &e.kind {
        EventKind::Compute { op, parallel } => {
            let shapes = input_shapes(e);
            // "LayerNorm 1 — LayerNorm" says it twice: the kind only when the name lacks it.
            let (name, kind) = (e.op.label(), op.label());
            let label = if name.starts_with(kind) {
                name.to_string()
            } else {
                format!("{name} — {kind}")
            };
            // The op's label starts the sentence: the head without it (not "fc2: fc2").
            let head = format!(
                "Step {}/{n} · layer {} · {}",
                cur + 1,
                step.layer,
                step.pass.name()
            );
            format!(
                "{head} · {label}, {} on every GPU, inputs {shapes}, output [{}, {}]",
                parallel.label(),
                e.output[0],
                e.output[1]
            )
        }
        EventKind::Collective {
            kind,
            algorithm,
            steps,
        } => {
            let op = e.conjugate.map_or("", |c| c.name());
            let article = if kind.name().starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            let planned = matches!(
                e.op.kind(),
                tplab_engine::block::OpKind::Collective(tplab_engine::block::Role::Move)
            );
            match kind {
                // Not the move's label ("GeLU output redistributed"): nothing is redistributed.
                CollectiveKind::Identity if op.is_empty() && e.is_identity_half() => format!(
                    "Step {}/{n} · layer {} · {} · the identity, the other half of an all-reduce \
                     in the other pass — no communication",
                    cur + 1,
                    step.layer,
                    step.pass.name()
                ),
                CollectiveKind::Identity if op.is_empty() => {
                    format!("{head}: each GPU keeps its slice — no communication")
                }
                CollectiveKind::Identity => format!(
                    "{head}: the {op} operator is the identity here — no communication"
                ),
                // "an all-reduce", "a reduce-scatter".
                _ => format!(
                    "{head}: {} {} ({algorithm}, {steps} steps) of [{}, {}] = {} per GPU, each GPU sends {}",
                    if e.ranks.len() < tp {
                        format!(
                            "GPUs {} (copies of one KV head) sum their K/V gradients with {article}",
                            e.ranks
                                .iter()
                                .map(|r| r.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    } else if op.is_empty() && planned {
                        article.to_string()
                    } else if op.is_empty() {
                        "a sequence-parallel".to_string()
                    } else {
                        format!("the {op} operator:")
                    },
                    kind.name(),
                    e.output[0],
                    e.output[1],
                    human_bytes(e.bytes),
                    human_bytes(e.bytes_sent_per_rank)
                ),
            }
        }
    }
}

/// The steps of the current layer, forward row and backward row, with f and g marked.
/// The "side by side" picker (on the controls' row, or the counters' row on a short projector
/// screen); a new choice is drawn at once.
fn beside_picker(ui: &mut egui::Ui, lang: Lang, shared: &mut Shared, trace: &Trace, walking: bool) {
    if picker(ui, lang, "step", &mut shared.beside, &trace.config, walking) {
        ui.ctx().request_repaint();
    }
}

/// What GPU 0 holds of the tensor a collective reads, with its shape, number type and bytes
/// ("dH2 is [128, 768] in f32: GPU 0 holds 384.0 KiB of it"): what a question about the bytes
/// sent is worked out from.
fn held_size(lang: Lang, trace: &Trace, events: &[Event]) -> Option<String> {
    let e = events.first()?;
    e.collective_kind()?;
    let t = e.reads.first()?;
    let p = t.on(0)?;
    let dtype = trace.config.dtype;
    let (rows, cols) = (t.shape[0], t.shape[1]);
    let [r, c] = p.local_shape(t.shape);
    let elems = r * c;
    Some(crate::i18n::t_args(
        lang,
        "walk-predict-size",
        &[
            ("tensor", lanes::symbol(t.tensor)),
            ("shape", format!("[{rows}, {cols}]")),
            ("dtype", dtype.name().to_string()),
            (
                "bytes",
                crate::i18n::bytes(lang, (elems * dtype.size_bytes()) as u64),
            ),
        ],
    ))
}

/// The layer's ops in two rows, forward and backward, the current one ringed (clicking one goes
/// there); with `one_pass`, the current step's pass only (a short projector screen).
fn pass_strip(
    ui: &mut egui::Ui,
    trace: &Trace,
    steps: &[WalkStep],
    cur: usize,
    position: &mut f32,
    playing: &mut bool,
    one_pass: bool,
) {
    let layer = steps[cur].layer;
    let passes: Vec<Pass> = if one_pass {
        vec![steps[cur].pass]
    } else {
        vec![Pass::Forward, Pass::Backward]
    };
    let dark = ui.visuals().dark_mode;
    let width = ui.available_width();
    let row_h = 26.0;
    // Room above the first row for the current chip's ring (drawn outside its box).
    let margin = 6.0;
    let (resp, painter) = ui.allocate_painter(
        Vec2::new(width, passes.len() as f32 * (row_h + 14.0) + margin),
        Sense::click(),
    );
    let text = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    // The theme's strong selection colour (dark blue on light, pale blue on dark): the pale
    // selection fill is hard to see on a light theme's white.
    let accent = ui.visuals().selection.stroke.color;
    let mut shapes = Vec::new();
    for (row, pass) in passes.into_iter().enumerate() {
        let y = resp.rect.top() + margin + row as f32 * (row_h + 14.0);
        shapes.push(text_shape(
            &painter,
            Pos2::new(resp.rect.left(), y + row_h / 2.0),
            Align2::LEFT_CENTER,
            crate::widgets::pass_name(crate::widgets::lang(ui), pass),
            12.0,
            text,
        ));
        let row_steps: Vec<(usize, &WalkStep)> = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.layer == layer && s.pass == pass)
            .collect();
        let x0 = resp.rect.left() + 70.0;
        let w = ((width - 70.0) / row_steps.len().max(1) as f32).max(8.0);
        for (k, (i, s)) in row_steps.iter().enumerate() {
            let rect =
                Rect::from_min_size(Pos2::new(x0 + k as f32 * w, y), Vec2::new(w - 3.0, row_h));
            let e = &trace.events[s.first_event];
            let short = s.op.name().trim_end_matches(".bwd");
            match (e.collective_kind(), e.conjugate) {
                (Some(kind), Some(conj)) => {
                    let letter = match conj {
                        Conjugate::F => "f",
                        Conjugate::G => "g",
                    };
                    let all_reduce = kind != CollectiveKind::Identity;
                    let c = rect.center();
                    let r = row_h * 0.45;
                    let diamond = vec![
                        Pos2::new(c.x, c.y - r),
                        Pos2::new(c.x + r, c.y),
                        Pos2::new(c.x, c.y + r),
                        Pos2::new(c.x - r, c.y),
                    ];
                    let fill = if all_reduce {
                        gpu_color(3, dark)
                    } else {
                        egui::Color32::TRANSPARENT
                    };
                    shapes.push(egui::Shape::convex_polygon(
                        diamond,
                        fill,
                        Stroke::new(1.5, text),
                    ));
                    shapes.push(text_shape(
                        &painter,
                        c,
                        Align2::CENTER_CENTER,
                        letter,
                        13.0,
                        if all_reduce { text_on(fill) } else { text },
                    ));
                    let note = if all_reduce {
                        kind.name().to_string()
                    } else {
                        crate::i18n::t(crate::widgets::lang(ui), "st-identity")
                    };
                    shapes.push(text_shape(
                        &painter,
                        Pos2::new(c.x, rect.bottom() + 1.0),
                        Align2::CENTER_TOP,
                        note,
                        9.0,
                        weak,
                    ));
                }
                _ => {
                    shapes.push(egui::Shape::rect_filled(
                        rect,
                        3.0,
                        ui.visuals().faint_bg_color,
                    ));
                    shapes.push(egui::Shape::rect_stroke(
                        rect,
                        3.0,
                        Stroke::new(0.5, weak),
                        StrokeKind::Inside,
                    ));
                    if w > 24.0 {
                        let label = short.rsplit('.').next().unwrap_or(short);
                        // Words, not the op's code name `bias_residual`; a learner's plan's own
                        // moves by what they do.
                        let planned = matches!(
                            e.op.kind(),
                            tplab_engine::block::OpKind::Collective(
                                tplab_engine::block::Role::Move
                            )
                        );
                        let label = match e.collective_kind() {
                            Some(CollectiveKind::Identity) if planned && e.is_identity_half() => {
                                crate::i18n::t(crate::widgets::lang(ui), "st-identity")
                            }
                            Some(CollectiveKind::Identity) if planned => {
                                crate::i18n::t(crate::widgets::lang(ui), "st-strip-slice")
                            }
                            Some(kind) if planned => kind.name().to_string(),
                            _ if matches!(
                                e.op,
                                Op::AttnBiasResidual
                                    | Op::MlpBiasResidual
                                    | Op::AttnBiasResidualBwd
                                    | Op::MlpBiasResidualBwd
                            ) =>
                            {
                                crate::i18n::t(crate::widgets::lang(ui), "st-strip-bias-residual")
                            }
                            // The op's short name in the learner's language ("dikkat" for
                            // `core`); a name with no entry keeps its own.
                            _ => {
                                let id = format!("st-strip-op-{label}");
                                let words = crate::i18n::t(crate::widgets::lang(ui), &id);
                                if words == id {
                                    label.to_string()
                                } else {
                                    words
                                }
                            }
                        };
                        // Shrunk to fit its box; a long name that would shrink below the
                        // others' size goes on two lines ("bias +" over "residual").
                        let fit = |s: &str| (w - 6.0) / (0.55 * s.chars().count().max(1) as f32);
                        // A name too long for the smallest size in a narrow box (a long plan on
                        // a projector) goes on two lines at its hyphen or space.
                        let hyphen = label.rfind('-').map(|i| i + 1);
                        let space = label.rfind(' ');
                        let label = match label.split_once(" + ") {
                            Some((a, b)) if fit(&label) < 9.0 => format!("{a} +\n{b}"),
                            _ if fit(&label) < 8.5 => match (hyphen, space) {
                                (Some(i), _) => format!("{}\n{}", &label[..i], &label[i..]),
                                (None, Some(i)) => {
                                    format!("{}\n{}", &label[..i], &label[i + 1..])
                                }
                                _ => label,
                            },
                            _ => label,
                        };
                        let longest = label.lines().map(fit).fold(f32::INFINITY, f32::min);
                        shapes.push(text_shape(
                            &painter,
                            rect.center(),
                            Align2::CENTER_CENTER,
                            &label,
                            longest.clamp(6.0, 10.0),
                            text,
                        ));
                    }
                }
            }
            if *i == cur {
                shapes.push(egui::Shape::rect_stroke(
                    rect.expand(2.0),
                    4.0,
                    Stroke::new(2.5, accent),
                    StrokeKind::Outside,
                ));
            }
            if resp.clicked()
                && resp
                    .interact_pointer_pos()
                    .is_some_and(|p| rect.contains(p))
            {
                *position = *i as f32;
                *playing = false;
            }
        }
    }
    painter.extend(shapes);
    let current = steps[cur].op;
    a11y_label(
        &resp,
        &crate::i18n::t_args(
            crate::widgets::lang(ui),
            "st-strip-a11y",
            &[
                ("layer", layer.to_string()),
                (
                    "current",
                    crate::widgets::trace_op_label(crate::widgets::lang(ui), trace, current),
                ),
            ],
        ),
    );
}

/// A GPU's box in the compact message picture (two programs side by side): its name's height.
const COMPACT_BOX_H: f32 = 30.0;
/// Below a compact box: the arrows and dots close under it, no ring-step caption (the heading
/// says which round it is).
const COMPACT_GAP_Y: f32 = 30.0;
/// The compact message picture's height for up to 8 GPUs.
const COMPACT_MESSAGES_H: f32 = COMPACT_BOX_H + COMPACT_GAP_Y;

/// One box per GPU with its current op; a collective's messages as moving dots.
fn gpus_ui(
    ui: &mut egui::Ui,
    trace: &Trace,
    step: &WalkStep,
    plans: &[Planned],
    frac: f32,
    compact: bool,
) {
    let tp = trace.config.tp.max(1);
    let dark = ui.visuals().dark_mode;
    let per_row = tp.min(8);
    let rows = tp.div_ceil(per_row);
    let width = ui.available_width();
    let box_w = (width / per_row as f32 - 16.0).clamp(40.0, 180.0);
    // Compact (two programs side by side): the GPUs' names only, the op is in the narration.
    let box_h = if compact {
        COMPACT_BOX_H
    } else if tp > 8 {
        44.0
    } else {
        84.0
    };
    let gap_y = if compact { COMPACT_GAP_Y } else { 60.0 };
    let height = rows as f32 * (box_h + gap_y);
    let (resp, painter) = ui.allocate_painter(Vec2::new(width, height), Sense::hover());
    let text = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    let spacing = width / per_row as f32;
    let box_rect = |r: usize| {
        let (row, col) = (r / per_row, r % per_row);
        Rect::from_min_size(
            Pos2::new(
                resp.rect.left() + col as f32 * spacing + (spacing - box_w) / 2.0,
                resp.rect.top() + row as f32 * (box_h + gap_y) + 10.0,
            ),
            Vec2::new(box_w, box_h),
        )
    };
    let events = &trace.events[step.first_event..step.first_event + step.events];
    let collective = events.first().and_then(|e| e.collective_kind());
    let mut shapes = Vec::with_capacity(tp * 6);
    for r in 0..tp {
        let rect = box_rect(r);
        let color = gpu_color(r, dark);
        let active = events.iter().any(|e| e.on_rank(r));
        let computing = active && collective.is_none();
        let fill = if computing {
            color
        } else {
            color.gamma_multiply(0.18)
        };
        shapes.push(egui::Shape::rect_filled(rect, 6.0, fill));
        shapes.push(egui::Shape::rect_stroke(
            rect,
            6.0,
            Stroke::new(if active { 2.5 } else { 1.0 }, color),
            StrokeKind::Inside,
        ));
        let ink = if computing { text_on(color) } else { text };
        // The name on top, the chunks' strip at the bottom (see [`held_strips`]).
        let (at, align) = if compact {
            (rect.center_top() + Vec2::new(0.0, 2.0), Align2::CENTER_TOP)
        } else {
            (rect.center_top() + Vec2::new(0.0, 4.0), Align2::CENTER_TOP)
        };
        shapes.push(text_shape(
            &painter,
            at,
            align,
            format!("GPU {r}"),
            if tp > 8 { 11.0 } else { 14.0 },
            ink,
        ));
        if tp <= 8 && !compact {
            if let Some(e) = events.iter().find(|e| e.on_rank(r)) {
                let [rows_, cols] = e.output;
                // The op in words and its output's shape, wrapped to the box (not the trace's
                // `mlp.g -> [128, 768]`).
                let lang = crate::widgets::lang(ui);
                let caption = crate::i18n::t_args(
                    lang,
                    "st-gpu-box",
                    &[
                        ("op", crate::widgets::event_op_label(lang, trace, e)),
                        ("rows", rows_.to_string()),
                        ("cols", cols.to_string()),
                    ],
                );
                let galley = painter.layout(
                    caption,
                    egui::FontId::proportional(11.0),
                    ink,
                    (rect.width() - 8.0).max(20.0),
                );
                // Only where it fits above the chunks' bar (two lines); a narrow box (four
                // GPUs in half a projector) leaves the op to the narration.
                if galley.size().y <= 0.36 * rect.height() {
                    let at = Align2::CENTER_CENTER
                        .anchor_size(rect.center() + Vec2::new(0.0, 8.0), galley.size());
                    shapes.push(egui::Shape::galley(at.min, galley, ink));
                }
            }
        }
    }
    let moving = collective.is_some_and(|k| k != CollectiveKind::Identity);
    if moving {
        // The plan's local ranks map onto the event's group (all GPUs, or the copies of one
        // replicated KV head).
        if let Some(e) = events.first() {
            if let Some(planned) = planned(plans, e) {
                let plan = &planned.plan;
                let rank_of = |i: usize| e.ranks.get(i).copied().unwrap_or(0);
                held_strips(&mut shapes, planned, frac, &box_rect, &rank_of, dark, text);
                messages(
                    &painter,
                    &mut shapes,
                    plan,
                    frac,
                    box_rect,
                    rank_of,
                    dark,
                    weak,
                    compact,
                );
            }
        }
    }
    painter.extend(shapes);
    let lang = crate::widgets::lang(ui);
    let what = crate::i18n::t_args(
        lang,
        if moving {
            "st-lanes-moving"
        } else {
            "st-lanes-running"
        },
        &[
            ("tp", tp.to_string()),
            ("op", crate::widgets::trace_op_label(lang, trace, step.op)),
        ],
    );
    a11y_label(&resp, &what);
}

/// Inside each GPU's box, a strip of its chunks at this point of the collective: each chunk a
/// sliver per GPU whose numbers it holds so far, so partial sums grow and whole chunks spread
/// round by round (from the middle of a round on, what the round leaves behind).
fn held_strips(
    shapes: &mut Vec<egui::Shape>,
    planned: &Planned,
    frac: f32,
    box_rect: &dyn Fn(usize) -> Rect,
    rank_of: &dyn Fn(usize) -> usize,
    dark: bool,
    ink: egui::Color32,
) {
    let (plan, masks) = (&planned.plan, &planned.masks);
    let rounds = plan.step_count().max(1);
    let at = frac.clamp(0.0, 1.0) * rounds as f32;
    let round = (at.floor() as usize).min(rounds - 1);
    let index = if at - round as f32 >= 0.5 {
        round + 1
    } else {
        round
    };
    let Some(state) = masks.get(index).or(masks.last()) else {
        return;
    };
    let n = plan.n.max(1);
    for (i, held) in state.iter().enumerate() {
        let rect = box_rect(rank_of(i));
        let h = (rect.height() * 0.3).clamp(7.0, 14.0);
        let strip = Rect::from_min_max(
            Pos2::new(rect.left() + 4.0, rect.bottom() - h - 3.0),
            Pos2::new(rect.right() - 4.0, rect.bottom() - 3.0),
        );
        let chunks = held.len().max(1);
        let cell_w = strip.width() / chunks as f32;
        for (c, mask) in held.iter().enumerate() {
            let cell = Rect::from_min_size(
                Pos2::new(strip.left() + c as f32 * cell_w, strip.top()),
                Vec2::new(cell_w - 1.0, strip.height()),
            );
            shapes.push(egui::Shape::rect_filled(
                cell,
                1.0,
                egui::Color32::from_gray(if dark { 40 } else { 250 }),
            ));
            let sliver = cell.width() / n as f32;
            for q in (0..n).filter(|q| mask >> q & 1 == 1) {
                let x = cell.left() + q as f32 * sliver;
                shapes.push(egui::Shape::rect_filled(
                    Rect::from_min_max(
                        Pos2::new(x, cell.top()),
                        Pos2::new(x + sliver, cell.bottom()),
                    ),
                    0.0,
                    gpu_color(rank_of(q), dark),
                ));
            }
            shapes.push(egui::Shape::rect_stroke(
                cell,
                1.0,
                Stroke::new(0.5, ink),
                StrokeKind::Inside,
            ));
        }
    }
}

/// Arrows for the messages of the current round of `plan`, with a dot travelling along each;
/// `rank_of` maps the plan's ranks to GPUs. `compact`: the arrows close under the boxes and no
/// ring-step caption.
#[allow(clippy::too_many_arguments)]
fn messages(
    painter: &egui::Painter,
    shapes: &mut Vec<egui::Shape>,
    plan: &Plan,
    frac: f32,
    box_rect: impl Fn(usize) -> Rect,
    rank_of: impl Fn(usize) -> usize,
    dark: bool,
    weak: egui::Color32,
    compact: bool,
) {
    let rounds = plan.step_count().max(1);
    let t = frac.clamp(0.0, 0.999) * rounds as f32;
    let round = t.floor() as usize;
    let along = t - round as f32;
    let round_steps: Vec<_> = plan.steps.iter().filter(|s| s.index == round).collect();
    if let Some(first) = round_steps.first().filter(|_| !compact) {
        shapes.push(text_shape(
            painter,
            box_rect(0).left_bottom() + Vec2::new(0.0, 34.0),
            Align2::LEFT_TOP,
            {
                // The ring-step caption in the learner's language.
                let lang = crate::i18n::current_lang(painter.ctx());
                crate::i18n::t_args(
                    lang,
                    "st-ring-caption",
                    &[
                        (
                            "algorithm",
                            crate::widgets::algorithm_name(lang, plan.algorithm),
                        ),
                        ("k", (round + 1).to_string()),
                        ("rounds", rounds.to_string()),
                        ("phase", crate::widgets::phase_name(lang, first.phase)),
                    ],
                )
            },
            12.0,
            weak,
        ));
    }
    for s in round_steps.into_iter().take(MAX_DRAWN_MESSAGES) {
        let (src, dst) = (rank_of(s.src), rank_of(s.dst));
        let (a, b) = (box_rect(src), box_rect(dst));
        let (from, to) = if (a.center().y - b.center().y).abs() < 1.0 {
            // Same row: arc below the boxes so opposite directions do not overlap.
            let lift = match (compact, src < dst) {
                (false, true) => 14.0,
                (false, false) => 26.0,
                (true, true) => 7.0,
                (true, false) => 16.0,
            };
            (
                a.center_bottom() + Vec2::new(0.0, lift),
                b.center_bottom() + Vec2::new(0.0, lift),
            )
        } else {
            (a.center(), b.center())
        };
        let color = gpu_color(src, dark);
        shapes.push(egui::Shape::line_segment(
            [from, to],
            Stroke::new(1.5, color),
        ));
        let dir = (to - from).normalized();
        let tip = to;
        let side = Vec2::new(-dir.y, dir.x) * 4.0;
        shapes.push(egui::Shape::convex_polygon(
            vec![tip, tip - dir * 8.0 + side, tip - dir * 8.0 - side],
            color,
            Stroke::NONE,
        ));
        let dot = from + (to - from) * along;
        shapes.push(egui::Shape::circle_filled(dot, 5.0, color));
    }
}

/// "A", "B", … for the options of a prediction.
fn option_letter(i: usize) -> char {
    char::from(b'A' + (i % 26) as u8)
}

/// The cache key: the scenario's generation, or the design lab's version of the learner's plan.
fn walk_generation(shared: &Shared) -> u64 {
    match shared.plan_walk() {
        Some(w) => (1 << 63) | w.generation,
        None => shared.scenario.generation(),
    }
}

/// The predictions key: the program walked, by what it is (stable across restarts).
fn walk_key(shared: &Shared) -> String {
    match shared.plan_walk() {
        Some(w) => format!("mine:{}:{}", w.config.label(), w.plan.describe()),
        None => format!("megatron:{}", shared.scenario.config().label()),
    }
}

/// The collective of `event` at `round`: the chunks each GPU holds and this round's messages
/// ([`crate::widgets::collective::chunks_ui`]), from the collective's own schedule, under a
/// caption naming the round and its phase.
#[allow(clippy::too_many_arguments)]
fn round_picture(
    ui: &mut egui::Ui,
    lang: Lang,
    event: &Event,
    plans: &[Planned],
    round: usize,
    frac: f32,
    playing: bool,
    height: f32,
    presenter: bool,
) {
    if event.collective_kind().is_none() {
        return;
    }
    let Some(Planned { plan, masks, .. }) = planned(plans, event) else {
        // An identity half moves nothing: there is no round to draw.
        ui.label(crate::i18n::t(lang, "walk-round-none"));
        return;
    };
    let top = ui.cursor().top();
    let rounds = plan.step_count().max(1);
    let phase = plan
        .steps
        .iter()
        .find(|s| s.index == round)
        .map(|s| crate::widgets::phase_name(lang, s.phase))
        .unwrap_or_default();
    let body = ui.style().text_styles[&egui::TextStyle::Body].size;
    // Left-aligned: in the justified column beside the lanes a wrapped caption was stretched
    // ("Round  1  of  6:").
    let caption = ui
        .with_layout(egui::Layout::top_down(egui::Align::Min), |ui| {
            ui.label(
                egui::RichText::new(crate::i18n::t_args(
                    lang,
                    "walk-round-caption",
                    &[
                        ("k", (round + 1).to_string()),
                        ("rounds", rounds.to_string()),
                        ("phase", phase),
                    ],
                ))
                .strong()
                .size(1.1 * body),
            )
        })
        .inner;
    // The key under the caption; on a projector too where the screen has the room (1080p,
    // 1600x1000), else it is the teacher's to say (a hover) and the picture keeps the height.
    let used = ui.cursor().top() - top;
    if presenter && height - used < 20.0 * body {
        caption.on_hover_text(crate::i18n::t(lang, "walk-round-key"));
    } else {
        ui.weak(crate::i18n::t(lang, "walk-round-key"));
    }
    let used = ui.cursor().top() - top;
    let size = Vec2::new(ui.available_width(), (height - used - 8.0).max(80.0));
    // Paused, a round shows what it leaves behind; playing, the messages travel from before.
    crate::widgets::collective::chunks_ui(ui, plan, masks, round, frac, playing, size, !playing);
}

/// The banner when the learner's plan has no trace any more (changed in the design lab since
/// "Step through my plan", and refused now).
fn refused_plan_banner(ui: &mut egui::Ui, lang: tplab_lessons::Lang, shared: &mut Shared) {
    egui::Frame::group(ui.style())
        .stroke(egui::Stroke::new(1.5, ui.visuals().warn_fg_color))
        .show(ui, |ui| {
            ui.label(crate::i18n::t(lang, "st-plan-refused-now"));
            ui.horizontal_wrapped(|ui| way_back_buttons(ui, lang, shared));
        });
}

/// "Back to the design lab" and "Megatron's split", under a learner's plan: true when the
/// learner went back to Megatron's split this frame.
fn way_back_buttons(ui: &mut egui::Ui, lang: tplab_lessons::Lang, shared: &mut Shared) -> bool {
    if ui.button(crate::i18n::t(lang, "st-plan-back")).clicked() {
        shared.navigate(ShowMe {
            view: tplab_lessons::View::Design,
            ..Default::default()
        });
    }
    let megatron = ui
        .button(crate::i18n::t(lang, "st-plan-megatron"))
        .clicked();
    if megatron {
        shared.act(crate::lab::Action::WalkMegatron);
    }
    megatron
}

/// Whether step `i` of the cached walk asks a question (for a jump that should not ask).
fn asks_at(cache: &Cache, i: usize, shared: &Shared) -> Option<()> {
    let step = cache.steps.get(i)?;
    let walked = shared.plan_walk().map(|w| w.trace);
    let trace = match &walked {
        Some(t) => t.as_ref(),
        None => &shared.scenario.derived().ok()?.trace,
    };
    asks(trace, step).map(|_| ())
}

/// The banner over a learner's plan: what is walked, and the ways back. True when the learner
/// left the plan this frame (the view draws Megatron's split from the next frame).
fn plan_walk_banner(
    ui: &mut egui::Ui,
    lang: tplab_lessons::Lang,
    w: &crate::lab::PlanWalk,
    shared: &mut Shared,
) -> bool {
    let splits = crate::widgets::plan::plan_words(lang, &w.plan);
    let mut left = false;
    egui::Frame::group(ui.style())
        .stroke(egui::Stroke::new(1.5, ui.visuals().selection.stroke.color))
        .show(ui, |ui| {
            // A student's plan the class's console put here is said to be one (the design lab
            // holds it until the teacher changes it).
            let students = shared
                .students_plan
                .as_ref()
                .is_some_and(|p| *p == shared.design.plan());
            ui.horizontal_wrapped(|ui| {
                ui.strong(crate::i18n::t_args(
                    lang,
                    if students {
                        "st-plan-walk-student"
                    } else if shared.presenter {
                        "st-plan-walk-presenter"
                    } else {
                        "st-plan-walk"
                    },
                    &[
                        ("splits", splits),
                        ("tp", w.trace.config.tp.to_string()),
                        ("hidden", w.config.hidden.to_string()),
                        ("heads", w.config.heads.to_string()),
                        ("tokens", (w.config.seq * w.config.batch).to_string()),
                    ],
                ));
                left = way_back_buttons(ui, lang, shared);
            });
        });
    left
}
