//! Timeline: a Gantt chart (egui_plot) of the trace, one row per GPU, compute in the GPU's
//! colour and communication in grey, with the time source the engine reports.

use crate::i18n::{t, t_args};
use crate::lab::beside::{self, Beside};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::ShowMe;
use crate::lab::View;
use crate::widgets::beside::picker;
use crate::widgets::gantt::{gantt_plot, time_source_text};
use serde::{Deserialize, Serialize};
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::{cost, defaults};
use tplab_engine::trace::{Event, TimeSource, Trace};
use tplab_lessons::Lang;

/// Above this many bars only one layer is drawn at a time.
const MAX_BARS: usize = 6000;

/// GPUs per node assumed for modeled times: a TP group larger than this spans nodes.
const GPUS_PER_NODE: usize = 8;

/// A trace with the cost model's times: what it was made for, the GPU, and the trace (or why not).
type Timed<K> = (K, String, Result<Trace, String>);

/// Timeline state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Timeline {
    /// Layer shown when the whole trace is too large to draw at once.
    pub layer: usize,
    /// GPU whose cost model sets the times; `None` keeps the trace's proportional times.
    pub gpu: Option<String>,
    /// The trace with modeled times, for the (scenario, walk) generations and GPU it was made for.
    #[serde(skip)]
    modeled: Option<Timed<(u64, u64)>>,
    /// The same for the program drawn beside it.
    #[serde(skip)]
    modeled_beside: Option<Timed<beside::Key>>,
}

impl Default for Timeline {
    /// Opens on the cost model's H100 times, the numbers lesson 1 quotes (GPT-2 small at TP=4:
    /// 112.1 µs, 70% of it communication). The proportional times (FLOPs and bytes at nominal
    /// rates) are for comparing bars, not for the lesson's microseconds.
    fn default() -> Self {
        Self {
            layer: 0,
            gpu: Catalogue::default().gpu("h100").ok().map(|g| g.name),
            modeled: None,
            modeled_beside: None,
        }
    }
}

/// The trace with the cost model's times for `gpu`: a TP group of `tp` GPUs, nodes of
/// [`GPUS_PER_NODE`] joined by InfiniBand NDR 400.
pub fn modeled_trace(trace: &Trace, gpu: &str) -> Result<Trace, String> {
    let tp = trace.config.tp.max(1);
    let gpus = if tp > GPUS_PER_NODE {
        tp.div_ceil(GPUS_PER_NODE) * GPUS_PER_NODE
    } else {
        tp
    };
    let catalogue = Catalogue::default();
    let net = defaults::inter_node_for(&catalogue.gpu(gpu).map_err(|e| e.to_string())?);
    let cluster =
        Cluster::new(&catalogue, gpu, gpus, GPUS_PER_NODE, net).map_err(|e| e.to_string())?;
    let mut modeled = trace.clone();
    cost::apply_to_trace(&mut modeled, &cluster);
    Ok(modeled)
}

/// What the times mean, in one line.
pub fn time_source_note(source: TimeSource) -> &'static str {
    match source {
        TimeSource::Proportional => {
            "Times are proportional to FLOPs and bytes at nominal rates: compare bars, not seconds."
        }
        TimeSource::CostModel => {
            "Times are modeled by tplab's cost model (roofline compute, α–β links; a TP group \
             over 8 GPUs crosses InfiniBand)."
        }
        TimeSource::Measured => "Times were measured on a GPU with CUDA events.",
    }
}

/// The events drawn: all of them, or layer `layer`'s when there are too many bars.
fn events_shown(trace: &Trace, one_layer: bool, layer: usize) -> Vec<&Event> {
    trace
        .events
        .iter()
        .filter(|e| !one_layer || e.layer == layer)
        .collect()
}

/// "Makespan 112.1 µs, of which 78.4 µs (70%) is communication every GPU waits for."
fn makespan_text(lang: Lang, trace: &Trace) -> String {
    let makespan_us = trace.makespan_s() * 1e6;
    let comm_us: f64 = trace
        .events
        .iter()
        .filter(|e| e.is_collective())
        .map(|e| e.timing.duration_s * 1e6)
        .sum();
    t_args(
        lang,
        "tl-makespan",
        &[
            ("makespan", crate::i18n::num(lang, makespan_us, 1)),
            ("comm", crate::i18n::num(lang, comm_us, 1)),
            (
                "share",
                crate::i18n::num(
                    lang,
                    100.0 * comm_us / makespan_us.max(f64::MIN_POSITIVE),
                    0,
                ),
            ),
        ],
    )
}

impl View for Timeline {
    fn id(&self) -> &'static str {
        "timeline"
    }

    fn title(&self) -> &'static str {
        "Timeline"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, t(lang, "tl-title"));
        let walk = shared.plan_walk();
        let other = shared.beside.other(&shared.scenario, walk.as_ref());
        let scenario_generation = shared.scenario.generation();
        let Some(derived) = crate::widgets::derived_or_fixes(ui, &mut shared.scenario) else {
            return;
        };
        // Beside Megatron's split, the learner's plan (from the design lab) is what is timed.
        let plan_shown = matches!(other.as_ref().map(|o| o.with), Some(Beside::Megatron));
        let (base, walk_generation) = match (&walk, plan_shown) {
            (Some(w), true) => (w.trace.as_ref(), w.generation),
            _ => (derived.trace.as_ref(), 0),
        };
        let catalogue = Catalogue::default();
        let proportional = t(lang, "tl-times-proportional");
        let model = |g: &str| {
            t_args(
                lang,
                "tl-times-model",
                &[("gpu", crate::widgets::gpu_name(g))],
            )
        };
        ui.horizontal_wrapped(|ui| {
            egui::ComboBox::from_label(t(lang, "tl-times"))
                .selected_text(match &self.gpu {
                    None => proportional.clone(),
                    Some(g) => model(g),
                })
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.gpu, None, proportional.clone());
                    for g in &catalogue.gpus {
                        ui.selectable_value(&mut self.gpu, Some(g.name.clone()), model(&g.name));
                    }
                });
            ui.add_space(12.0);
            if picker(
                ui,
                lang,
                "timeline",
                &mut shared.beside,
                &base.config,
                walk.is_some(),
            ) {
                ui.ctx().request_repaint();
            }
        });
        let key = (scenario_generation, walk_generation);
        let trace = match &self.gpu {
            None => base,
            Some(gpu) => {
                let stale = self
                    .modeled
                    .as_ref()
                    .is_none_or(|(k, name, _)| *k != key || name != gpu);
                if stale {
                    let t = modeled_trace(base, gpu);
                    self.modeled = Some((key, gpu.clone(), t));
                }
                match self.modeled.as_ref().map(|m| &m.2) {
                    Some(Ok(t)) => t,
                    Some(Err(e)) => {
                        ui.colored_label(ui.visuals().error_fg_color, e);
                        base
                    }
                    None => base,
                }
            }
        };
        ui.label(time_source_text(lang, trace.time_source));
        let beside_trace: Option<(String, &Trace)> = match &other {
            None => None,
            Some(o) => match &o.derived {
                Err(e) => {
                    ui.colored_label(
                        ui.visuals().error_fg_color,
                        t_args(lang, "beside-error", &[("error", e.to_string())]),
                    );
                    None
                }
                Ok(d) => {
                    let other_key = (scenario_generation, walk_generation, o.with);
                    let timed = match &self.gpu {
                        None => None,
                        Some(gpu) => {
                            let stale = self
                                .modeled_beside
                                .as_ref()
                                .is_none_or(|(k, name, _)| *k != other_key || name != gpu);
                            if stale {
                                self.modeled_beside =
                                    Some((other_key, gpu.clone(), modeled_trace(&d.trace, gpu)));
                            }
                            self.modeled_beside.as_ref().and_then(|m| m.2.as_ref().ok())
                        }
                    };
                    Some((o.label(lang), timed.unwrap_or(&d.trace)))
                }
            },
        };
        let cfg = &trace.config;
        let bar_count: usize = trace.events.iter().map(|e| e.ranks.len()).sum::<usize>()
            + beside_trace.as_ref().map_or(0, |(_, b)| {
                b.events.iter().map(|e| e.ranks.len()).sum::<usize>()
            });
        let one_layer = bar_count > MAX_BARS;
        if one_layer {
            ui.horizontal(|ui| {
                ui.label(t(lang, "tl-too-many"));
                ui.add(egui::DragValue::new(&mut self.layer).range(0..=cfg.layers - 1));
            });
        }
        let layer = self.layer;
        let shown = |trace| events_shown(trace, one_layer, layer);
        let events = shown(trace);
        match beside_trace {
            None => {
                ui.label(makespan_text(lang, trace));
                gantt_plot(ui, lang, "timeline", trace, &events, None, None);
            }
            Some((label, other_trace)) => {
                // Both on one time axis: the longer program sets it, so bars compare in µs.
                let other_events = shown(other_trace);
                let end = |ev: &[&Event]| {
                    ev.iter()
                        .map(|e| (e.timing.start_s + e.timing.duration_s) * 1e6)
                        .fold(0.0, f64::max)
                };
                let x_max = end(&events).max(end(&other_events));
                let line = ui.spacing().interact_size.y + ui.spacing().item_spacing.y;
                // Each plot's share of the height grows with its rows (GPUs and legend).
                let room = (ui.available_height() - 2.0 * line).max(240.0);
                let weight = |t: &Trace| (t.config.tp.max(1) + 4) as f32;
                let share = weight(trace) / (weight(trace) + weight(other_trace));
                let (height, other_height) = (room * share, room * (1.0 - share));
                let this = match (&walk, plan_shown) {
                    (Some(_), true) => t_args(
                        lang,
                        "beside-your-plan",
                        &[("tp", trace.config.tp.to_string())],
                    ),
                    _ => t_args(lang, "beside-this", &[("tp", trace.config.tp.to_string())]),
                };
                ui.label(format!("{this} · {}", makespan_text(lang, trace)));
                gantt_plot(
                    ui,
                    lang,
                    "timeline",
                    trace,
                    &events,
                    Some(height),
                    Some(x_max),
                );
                ui.label(format!("{label} · {}", makespan_text(lang, other_trace)));
                gantt_plot(
                    ui,
                    lang,
                    "timeline-beside",
                    other_trace,
                    &other_events,
                    Some(other_height),
                    Some(x_max),
                );
            }
        }
    }

    /// A target's `gpu` switches to the cost model's times for that GPU.
    fn show_me(&mut self, target: &ShowMe, _shared: &mut Shared) {
        if let Some(spec) = target
            .gpu
            .as_deref()
            .and_then(|g| Catalogue::default().gpu(g).ok())
        {
            self.gpu = Some(spec.name);
        }
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}
