//! Collectives: an all-reduce animated round by round from the engine's plan
//! ([`collectives::plan`]) — ring (reduce-scatter, then all-gather), recursive halving/doubling,
//! tree and direct — with the partial sums held in each chunk (the plan's symbolic
//! `contributions` replay) and the bytes per link and in total for every algorithm side by side.

use crate::i18n::{bytes, num};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::ShowMe;
use crate::lab::View;
use crate::widgets::errors::collective_error_text;
use serde::{Deserialize, Serialize};
use tplab_engine::capacity::cost;
use tplab_engine::capacity::hardware::{Catalogue, LinkSpec};
use tplab_engine::collectives::Algorithm;
use tplab_engine::collectives::CollectiveKind;
use tplab_engine::collectives::{self, Plan};

/// Largest group animated (rows of chunks stay readable up to here).
pub const MAX_ANIMATED_RANKS: usize = 16;

/// Narrower than this (points), the algorithms table leaves out [`COMPACT_LEAVES_OUT`].
const COMPACT_WIDTH: f32 = 1000.0;

/// What the compact table leaves out: the message count (the rounds say the same) and the
/// busiest link (the bytes sent per GPU bound it).
const COMPACT_LEAVES_OUT: [&str; 2] = ["cl-col-messages", "cl-col-busiest"];

/// Collectives state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Collectives {
    pub algorithm: Algorithm,
    /// Group size animated; `None` follows the scenario's TP.
    pub ranks: Option<usize>,
    /// Position in rounds; the fraction moves the messages.
    pub position: f32,
    pub rounds_per_s: f32,
    #[serde(skip)]
    pub playing: bool,
    #[serde(skip)]
    cache: Option<Cache>,
}

impl Default for Collectives {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::Ring,
            ranks: None,
            position: 0.0,
            rounds_per_s: 0.8,
            playing: false,
            cache: None,
        }
    }
}

struct Cache {
    key: (usize, usize, usize, Algorithm),
    /// Plans of every algorithm on the scenario's payload, in [`Algorithm::ALL`] order.
    plans: Vec<Result<Plan, collectives::CollectiveError>>,
    /// Contribution masks of the animated algorithm after each round.
    masks: Vec<Vec<Vec<u64>>>,
}

impl Collectives {
    fn group_size(&self, shared: &Shared) -> usize {
        self.ranks
            .unwrap_or(shared.scenario.config().tp)
            .clamp(2, MAX_ANIMATED_RANKS)
    }

    fn refresh(&mut self, shared: &Shared) {
        let cfg = shared.scenario.config();
        let n = self.group_size(shared);
        // The all-reduce payload of the scenario's g operator: [tokens, hidden].
        let elems = cfg.tokens().saturating_mul(cfg.hidden).max(1);
        let key = (n, elems, cfg.dtype.size_bytes(), self.algorithm);
        if self.cache.as_ref().is_some_and(|c| c.key == key) {
            return;
        }
        let plans: Vec<Result<Plan, collectives::CollectiveError>> = Algorithm::ALL
            .iter()
            .map(|&a| collectives::plan(CollectiveKind::AllReduce, a, n, elems, key.2))
            .collect();
        let idx = Algorithm::ALL
            .iter()
            .position(|a| *a == self.algorithm)
            .unwrap_or(0);
        let masks = plans[idx]
            .as_ref()
            .ok()
            .and_then(|p| p.contributions().ok())
            .unwrap_or_default();
        let rounds = masks.len().saturating_sub(1) as f32;
        self.position = self.position.clamp(0.0, rounds);
        self.cache = Some(Cache { key, plans, masks });
    }

    fn rounds(&self) -> usize {
        self.cache
            .as_ref()
            .map_or(0, |c| c.masks.len().saturating_sub(1))
    }

    fn animated_plan(&self) -> Option<&Plan> {
        let c = self.cache.as_ref()?;
        let idx = Algorithm::ALL.iter().position(|a| *a == self.algorithm)?;
        c.plans.get(idx)?.as_ref().ok()
    }
}

/// "Play" or "Pause", with Space named in its hover text (the walkthrough's words): whether it
/// was clicked.
pub fn play_button(ui: &mut egui::Ui, playing: bool) -> bool {
    let lang = crate::widgets::lang(ui);
    let label = crate::i18n::t(lang, if playing { "st-pause" } else { "st-play" });
    ui.button(label)
        .on_hover_text(crate::i18n::t(lang, "st-key-space"))
        .clicked()
}

impl Collectives {
    /// One frame of the clock and of the keys in `shared`: Space plays or pauses (from the start
    /// again once finished), each arrow or clicker press is exactly one round and pauses, Home
    /// goes back to the start; while playing, `dt_s` seconds move `rounds_per_s` rounds on.
    /// Returns whether it is still playing (and wants the next frame).
    pub fn advance(&mut self, shared: &Shared, dt_s: f32) -> bool {
        self.refresh(shared);
        let keys = shared.keys;
        let last = self.rounds() as f32;
        if keys.toggle_play {
            self.toggle_play();
        }
        if keys.restart {
            self.position = 0.0;
            self.playing = false;
        }
        if keys.step != 0 {
            self.step_by(keys.step);
        }
        if self.playing {
            // A long stall moves at most a quarter of a second.
            self.position += dt_s.min(0.25) * self.rounds_per_s;
            if self.position >= last {
                self.position = last;
                self.playing = false;
            }
        }
        self.playing
    }

    /// Plays or pauses; playing once finished starts again from the first round.
    fn toggle_play(&mut self) {
        if !self.playing && self.position >= self.rounds() as f32 {
            self.position = 0.0;
        }
        self.playing = !self.playing;
    }

    /// `delta` rounds on (or back) from the round shown, and pauses.
    fn step_by(&mut self, delta: i32) {
        let next = self.position.floor() + delta as f32;
        self.position = next.clamp(0.0, self.rounds() as f32);
        self.playing = false;
    }

    /// Rounds finished at the position shown (the grid holds the chunks after them).
    pub fn rounds_done(&self) -> usize {
        (self.position.floor().max(0.0) as usize).min(self.rounds())
    }
}

impl View for Collectives {
    fn id(&self) -> &'static str {
        "collectives"
    }

    fn title(&self) -> &'static str {
        "Collectives"
    }

    fn logic(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        if self.advance(shared, ctx.input(|i| i.stable_dt)) {
            ctx.request_repaint();
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        self.refresh(shared);
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| crate::i18n::t(lang, id);
        crate::widgets::links::view_heading(ui, tr("cl-title"));
        ui.horizontal_wrapped(|ui| {
            egui::ComboBox::from_label(tr("cl-algorithm"))
                .selected_text(crate::widgets::algorithm_name(lang, self.algorithm))
                .show_ui(ui, |ui| {
                    for a in Algorithm::ALL {
                        if ui
                            .selectable_value(
                                &mut self.algorithm,
                                a,
                                crate::widgets::algorithm_name(lang, a),
                            )
                            .changed()
                        {
                            self.position = 0.0;
                        }
                    }
                });
            let mut n = self.group_size(shared);
            let l = ui.label(tr("cl-gpus"));
            if ui
                .add(egui::DragValue::new(&mut n).range(2..=MAX_ANIMATED_RANKS))
                .labelled_by(l.id)
                .changed()
            {
                self.ranks = Some(n);
            }
            if self.ranks.is_some() && ui.button(tr("cl-follow")).clicked() {
                self.ranks = None;
            }
            if play_button(ui, self.playing) {
                self.toggle_play();
            }
            let back = ui.button(tr("cl-previous"));
            if back.on_hover_text(tr("st-key-left")).clicked() {
                self.step_by(-1);
            }
            let on = ui.button(tr("cl-next"));
            if on.on_hover_text(tr("st-key-right")).clicked() {
                self.step_by(1);
            }
            // A slider is a row of its own that a wrapping row cannot break: on a phone it
            // starts a line, its bar as long as the line leaves.
            if ui.max_rect().width() < 600.0 {
                ui.end_row();
                ui.spacing_mut().slider_width = (ui.max_rect().width() - 200.0).max(60.0);
            }
            let done_text = crate::i18n::t_args(
                lang,
                "cl-rounds-done",
                &[("rounds", self.rounds().to_string())],
            );
            // Nor does it move to the next line when the buttons before it leave too little
            // room (a lesson's "Follow scenario TP" on a projector): it would widen the page
            // and cut the chunks' last column.
            crate::widgets::keep_together(ui, &[&done_text], crate::widgets::slider_extra(ui));
            let mut scrub = self.rounds_done();
            if ui
                .add(egui::Slider::new(&mut scrub, 0..=self.rounds()).text(done_text))
                .changed()
            {
                self.position = scrub as f32;
                self.playing = false;
            }
        });
        self.refresh(shared);
        let Some(cache) = &self.cache else { return };
        let Some(plan) = self.animated_plan() else {
            if let Some(Err(e)) = cache.plans.get(
                Algorithm::ALL
                    .iter()
                    .position(|a| *a == self.algorithm)
                    .unwrap_or(0),
            ) {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    collective_error_text(crate::widgets::lang(ui), e),
                );
            }
            return;
        };
        let rounds = self.rounds();
        let k = self.rounds_done();
        let frac = self.position - k as f32;
        // The walkthrough's convention, one press a round: paused after k rounds, the picture is
        // round k, its messages as arrows and the cells as they are after them ("k of n rounds
        // done"); before the first press, round 1's messages wait to leave and every GPU holds
        // only its own data; playing, round k + 1's messages travel from the cells before them.
        let phase = |round: usize| {
            plan.steps
                .iter()
                .find(|s| s.index == round)
                .map(|s| crate::widgets::phase_name(lang, s.phase))
                .unwrap_or_default()
        };
        let (line, drawn_round, after) = if k >= rounds {
            (
                crate::i18n::t_args(lang, "cl-finished", &[("rounds", rounds.to_string())]),
                rounds.saturating_sub(1),
                true,
            )
        } else if self.playing {
            let line = crate::i18n::t_args(
                lang,
                "cl-round-line",
                &[
                    ("k", (k + 1).to_string()),
                    ("rounds", rounds.to_string()),
                    ("phase", phase(k)),
                ],
            );
            (line, k, false)
        } else if k == 0 {
            (crate::i18n::t(lang, "cl-round-before"), 0, false)
        } else {
            let line = crate::i18n::t_args(
                lang,
                "cl-round-line-after",
                &[
                    ("k", k.to_string()),
                    ("rounds", rounds.to_string()),
                    ("phase", phase(k - 1)),
                ],
            );
            (line, k - 1, true)
        };
        ui.label(line);
        let size = egui::vec2(
            ui.available_width().min(1100.0),
            (ui.available_height() - below_reserve(ui)).max(18.0 * plan.n as f32),
        );
        crate::widgets::collective::chunks_ui(
            ui,
            plan,
            &cache.masks,
            drawn_round,
            frac,
            self.playing,
            size,
            after,
        );
        ui.separator();
        // The chunks stay in view; what is below them scrolls when the window is short.
        egui::ScrollArea::vertical()
            .id_salt("cl-below-chunks")
            .auto_shrink([false, true])
            .show(ui, |ui| comparison_ui(ui, shared, &cache.plans));
    }

    fn show_me(&mut self, target: &ShowMe, _shared: &mut Shared) {
        if let Some(a) = target.scenario.algorithm {
            self.algorithm = a;
        }
        self.ranks = target.scenario.tp;
        self.position = 0.0;
        self.playing = false;
        self.cache = None;
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

/// Height kept under the chunks for the comparison (which scrolls below them): on a
/// projector's short screen the picture, the lesson's subject, takes most of it.
fn below_reserve(ui: &egui::Ui) -> f32 {
    if crate::widgets::short_screen(ui.ctx()) {
        90.0
    } else {
        200.0
    }
}

/// Steps, bytes per GPU, busiest link and total for every algorithm on the scenario's payload.
fn comparison_ui(
    ui: &mut egui::Ui,
    shared: &Shared,
    plans: &[Result<Plan, collectives::CollectiveError>],
) {
    let cfg = shared.scenario.config();
    let payload = cfg.tokens() as u64 * cfg.hidden as u64 * cfg.dtype.size_bytes() as u64;
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    ui.strong(crate::i18n::t_args(
        lang,
        "cl-side-title",
        &[
            ("tokens", cfg.tokens().to_string()),
            ("hidden", cfg.hidden.to_string()),
            ("dtype", cfg.dtype.to_string()),
            ("bytes", bytes(lang, payload)),
        ],
    ));
    let catalogue = Catalogue::default();
    let links: Vec<LinkSpec> = ["nvlink4", "ib-ndr-400"]
        .into_iter()
        .filter_map(|name| catalogue.link(name).ok())
        .collect();
    // Narrow (presenter mode at 1280×720 is 800 points wide): without the message count and the
    // busiest link, so that the modeled times stay on screen; wider still scrolls sideways.
    let compact = ui.available_width() < COMPACT_WIDTH;
    let shown = |h: &str| !(compact && COMPACT_LEAVES_OUT.contains(&h));
    // Compact on a projector, long headers and names take two lines so that the table fits;
    // a phone's table scrolls sideways with one-line cells.
    let split = compact && ui.ctx().content_rect().width() >= crate::widgets::NARROW_WIDTH;
    egui::ScrollArea::horizontal()
        .id_salt("algorithms-scroll")
        .show(ui, |ui| {
            // Headers of several words need a gap wider than a word's space to read as columns.
            let gap = egui::vec2(
                2.0 * ui.spacing().item_spacing.x,
                ui.spacing().item_spacing.y,
            );
            egui::Grid::new("algorithms")
                .striped(true)
                .spacing(gap)
                .show(ui, |ui| {
                    let columns = [
                        "cl-col-algorithm",
                        "cl-col-rounds",
                        "cl-col-messages",
                        "cl-col-max-sent",
                        "cl-col-busiest",
                        "cl-col-total",
                        "cl-col-nvlink",
                        "cl-col-ib",
                    ];
                    for h in columns.into_iter().filter(|h| shown(h)) {
                        // Compact, the widest header in fewer words.
                        let h = if compact && h == "cl-col-max-sent" {
                            "cl-col-max-sent-short"
                        } else {
                            h
                        };
                        let h = tr(h);
                        ui.strong(if split { two_lines(&h) } else { h });
                    }
                    ui.end_row();
                    for (a, p) in Algorithm::ALL.iter().zip(plans) {
                        let name = crate::widgets::algorithm_name(lang, *a);
                        ui.label(if split { two_lines(&name) } else { name });
                        match p {
                            Ok(p) => {
                                let sent = p.bytes_sent_per_rank().into_iter().max().unwrap_or(0);
                                let link = p.link_bytes().into_iter().flatten().max().unwrap_or(0);
                                let cells = [
                                    ("cl-col-rounds", p.step_count().to_string()),
                                    ("cl-col-messages", p.steps.len().to_string()),
                                    ("cl-col-max-sent", bytes(lang, sent)),
                                    ("cl-col-busiest", bytes(lang, link)),
                                    ("cl-col-total", bytes(lang, p.total_bytes())),
                                ];
                                for (_, text) in cells.into_iter().filter(|(h, _)| shown(h)) {
                                    ui.label(text);
                                }
                                for link in &links {
                                    let t = cost::collective_time_s(
                                        CollectiveKind::AllReduce,
                                        *a,
                                        p.n,
                                        payload,
                                        link,
                                    );
                                    ui.label(t.map_or_else(
                                        |e| collective_error_text(lang, &e),
                                        |t_s| format!("{} µs", num(lang, t_s * 1e6, 1)),
                                    ));
                                }
                            }
                            Err(e) => {
                                ui.label(collective_error_text(lang, e));
                            }
                        }
                        ui.end_row();
                    }
                });
        });
    ui.label(tr("cl-side-note"));
    if let Some(n) = plans.iter().find_map(|p| p.as_ref().ok().map(|p| p.n)) {
        nccl_sweep_ui(ui, &catalogue, n, payload);
    }
}

/// `text` on two lines, broken at the space nearest its middle (a compact table's headers and
/// long names: Turkish's "bağlantılardaki toplam bayt" kept the modeled times off a projector).
fn two_lines(text: &str) -> String {
    // "model: NVLink 4" keeps what follows its colon together.
    if let Some((head, tail)) = text.split_once(": ") {
        return format!("{head}:\n{tail}");
    }
    let middle = text.chars().count() / 2;
    let split = text
        .char_indices()
        .enumerate()
        .filter(|(_, (_, c))| *c == ' ')
        .min_by_key(|(i, _)| i.abs_diff(middle))
        .map(|(_, (at, _))| at);
    match split {
        Some(at) => format!("{}\n{}", &text[..at], &text[at + 1..]),
        None => text.to_string(),
    }
}

/// The same all-reduce as NCCL runs it on H100s in one NVSwitch node, swept over message sizes
/// as nccl-tests reports it, with the algorithm and protocol NCCL's tuner picks
/// (`tplab collective` prints the full sweep).
fn nccl_sweep_ui(ui: &mut egui::Ui, catalogue: &Catalogue, n: usize, payload: u64) {
    use tplab_engine::capacity::nccl::{self, Fabric};
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    let (Ok(intra), Ok(inter)) = (catalogue.link("nvlink4"), catalogue.link("ib-ndr-400")) else {
        return;
    };
    let Ok(fabric) = Fabric::new(n, n, intra, inter, true) else {
        return;
    };
    egui::CollapsingHeader::new(tr("cap-nccl-title"))
        .id_salt("nccl-sweep")
        .show(ui, |ui| {
            egui::Grid::new("nccl-sweep-grid")
                .striped(true)
                .show(ui, |ui| {
                    for h in [
                        "cap-nccl-size",
                        "cap-nccl-time",
                        "cap-nccl-algbw",
                        "cap-nccl-busbw",
                        "cap-nccl-algo",
                        "cap-nccl-proto",
                    ] {
                        ui.strong(tr(h));
                    }
                    ui.end_row();
                    let mut sizes: Vec<u64> = (0..8).map(|i| 8u64 << (4 * i)).collect();
                    sizes.push(16 << 30);
                    if payload > 0 && payload <= nccl::MAX_MESSAGE_BYTES {
                        sizes.push(payload);
                        sizes.sort_unstable();
                        sizes.dedup();
                    }
                    for size in sizes {
                        let Ok(c) =
                            nccl::predict(CollectiveKind::AllReduce, size, &fabric, None, None)
                        else {
                            continue;
                        };
                        let name = bytes(lang, size);
                        if size == payload {
                            ui.strong(name);
                        } else {
                            ui.label(name);
                        }
                        ui.label(num(lang, c.time_s * 1e6, 1));
                        ui.label(num(lang, c.algbw / 1e9, 2));
                        ui.label(num(lang, c.busbw / 1e9, 2));
                        ui.label(c.algo.name());
                        ui.label(c.proto.name());
                        ui.end_row();
                    }
                });
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::KeyActions;

    #[test]
    fn two_lines_breaks_at_the_space_nearest_the_middle() {
        assert_eq!(
            two_lines("bağlantılardaki toplam bayt"),
            "bağlantılardaki\ntoplam bayt"
        );
        assert_eq!(two_lines("model: IB NDR 400"), "model:\nIB NDR 400");
        assert_eq!(two_lines("rounds"), "rounds");
    }

    /// The view's English is the engine's sentence for every kind of collective error; the
    /// Turkish differs and names the same numbers and names.
    #[test]
    fn collective_errors_read_as_the_engine_in_english_and_exist_in_turkish() {
        use collectives::CollectiveError as E;
        use tplab_lessons::Lang;
        let errors = [
            E::EmptyGroup,
            E::LengthMismatch {
                rank: 3,
                expected: 96,
                found: 95,
            },
            E::RootOutOfRange { root: 7, n: 4 },
            E::Unsupported {
                kind: "broadcast",
                algorithm: Algorithm::RecursiveHalvingDoubling,
                supported: "ring, tree",
            },
            E::NotPowerOfTwo {
                kind: "reduce-scatter",
                n: 6,
            },
            E::TooManyRanks { n: 80, max: 64 },
            E::ProgramOrder {
                op: tplab_engine::block::Op::Fc2Bwd,
                tensor: tplab_engine::block::program::tensors::DY,
            },
            E::ForeignOp {
                op: tplab_engine::block::Op::EmbedLookup,
            },
        ];
        let words = |s: &str| -> std::collections::BTreeSet<String> {
            s.split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ':')
                .filter(|w| w.chars().any(|c| c.is_ascii_digit()) || w.contains(['.', '_']))
                .map(|w| {
                    w.trim_matches(|c: char| !c.is_ascii_alphanumeric())
                        .to_string()
                })
                .filter(|w| !w.is_empty())
                .collect()
        };
        for e in &errors {
            let display = e.to_string();
            assert_eq!(collective_error_text(Lang::En, e), display);
            let tr = collective_error_text(Lang::Tr, e);
            assert_ne!(tr, display);
            for w in words(&display) {
                assert!(tr.contains(&w), "{tr}\nlacks {w} (from: {display})");
            }
        }
        // Collective and algorithm names stay names.
        let tr = collective_error_text(Lang::Tr, &errors[3]);
        assert!(
            tr.contains("broadcast") && tr.contains("recursive-halving-doubling"),
            "{tr}"
        );
        assert!(tr.contains("ring, tree"), "{tr}");
    }

    /// The app's state with these keys pressed this frame.
    fn keys(toggle_play: bool, step: i32, restart: bool) -> Shared {
        let mut shared = Shared::default();
        shared.keys = KeyActions {
            toggle_play,
            step,
            restart,
        };
        shared
    }

    /// One press is one round whatever the clock did; Space plays at `rounds_per_s`, stops at
    /// the end and starts again from round 1 when pressed there; Home goes back.
    #[test]
    fn presses_step_one_round_and_play_runs_on_the_clock() {
        let shared = Shared::default();
        let mut c = Collectives::default();
        c.refresh(&shared);
        let n = c.rounds();
        assert_eq!(
            n,
            2 * (shared.scenario.config().tp - 1),
            "ring: 2(n-1) rounds"
        );
        let none = keys(false, 0, false);
        assert!(!c.advance(&none, 1.0), "paused at the start");
        assert_eq!(c.rounds_done(), 0);
        assert!(c.advance(&keys(true, 0, false), 0.1));
        assert!((c.position - 0.1 * c.rounds_per_s).abs() < 1e-6);
        // A press while a message is in flight: the next round, paused.
        assert!(!c.advance(&keys(false, 1, false), 0.1));
        assert_eq!((c.rounds_done(), c.position), (1, 1.0));
        assert!(!c.advance(&keys(false, 3, false), 0.1));
        assert_eq!(c.rounds_done(), 4);
        assert!(!c.advance(&keys(false, -1, false), 0.1));
        assert_eq!(c.rounds_done(), 3);
        // Playing to the end stops there (a stall moves at most 0.25 s per frame).
        c.advance(&keys(true, 0, false), 0.0);
        let mut frames = 0;
        while c.advance(&none, 10.0) {
            frames += 1;
            assert!(frames < 100, "never stopped");
        }
        assert_eq!(c.rounds_done(), n);
        assert!(frames as f32 >= (n as f32 - 3.0) / (0.25 * c.rounds_per_s) - 1.0);
        // Space at the end: from the first round again.
        assert!(c.advance(&keys(true, 0, false), 0.0));
        assert_eq!(c.rounds_done(), 0);
        assert!(!c.advance(&keys(false, 2, false), 0.0));
        assert!(!c.advance(&keys(false, 0, true), 0.0));
        assert_eq!((c.rounds_done(), c.playing), (0, false));
    }
}
