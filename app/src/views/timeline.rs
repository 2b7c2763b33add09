//! Timeline: a Gantt chart (egui_plot) of the trace, one row per GPU, compute in the GPU's
//! colour and communication in grey, with the time source the engine reports.

use super::{gpu_color, load_json, save_json, text_on, Shared, ShowMe, View};
use crate::i18n::{t, t_args};
use egui_plot::{Bar, BarChart, Legend, Plot, PlotPoint, Text, VLine};
use serde::{Deserialize, Serialize};
use tplab_engine::cost;
use tplab_engine::hardware::{Catalogue, Cluster};
use tplab_engine::trace::Pass;
use tplab_engine::trace::{Event, TimeSource, Trace};
use tplab_lessons::Lang;

/// Above this many bars only one layer is drawn at a time.
const MAX_BARS: usize = 6000;

/// GPUs per node assumed for modeled times: a TP group larger than this spans nodes.
const GPUS_PER_NODE: usize = 8;

/// Timeline state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Timeline {
    /// Layer shown when the whole trace is too large to draw at once.
    pub layer: usize,
    /// GPU whose cost model sets the times; `None` keeps the trace's proportional times.
    pub gpu: Option<String>,
    #[serde(skip)]
    modeled: Option<(u64, String, Result<Trace, String>)>,
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
    let cluster = Cluster::new(
        &Catalogue::default(),
        gpu,
        gpus,
        GPUS_PER_NODE,
        "ib-ndr-400",
    )
    .map_err(|e| e.to_string())?;
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
            "Times are modeled by the engine's cost model (roofline compute, α–β links; a TP group \
             over 8 GPUs crosses InfiniBand)."
        }
        TimeSource::Measured => "Times were measured on a GPU with CUDA events.",
    }
}

/// [`time_source_note`] in the learner's language.
pub fn time_source_text(lang: Lang, source: TimeSource) -> String {
    t(
        lang,
        match source {
            TimeSource::Proportional => "tl-source-proportional",
            TimeSource::CostModel => "tl-source-model",
            TimeSource::Measured => "tl-source-measured",
        },
    )
}

/// Grey of the communication bars.
pub fn comm_color(dark: bool) -> egui::Color32 {
    egui::Color32::from_gray(if dark { 170 } else { 90 })
}

/// Draws `events` as a Gantt chart: one bar chart per GPU in its colour (so the legend's
/// colours are the bars'), communication in grey, each bar named on hover with its start and
/// duration in µs, op names written on the bars wide enough for them, and a line where the
/// backward pass begins.
pub fn gantt_plot(
    ui: &mut egui::Ui,
    lang: Lang,
    id: &str,
    trace: &Trace,
    events: &[&Event],
    height: Option<f32>,
) {
    let dark = ui.visuals().dark_mode;
    let separator = ui.visuals().extreme_bg_color;
    let tp = trace.config.tp.max(1);
    let mut per_rank: Vec<Vec<Bar>> = vec![Vec::new(); tp];
    let mut comm = Vec::new();
    let mut labels: Vec<(f64, f64, f64, String, egui::Color32)> = Vec::new();
    for e in events {
        if e.timing.duration_s <= 0.0 {
            continue; // identity f/g: nothing to draw
        }
        let (start, dur) = (e.timing.start_s * 1e6, e.timing.duration_s * 1e6);
        // The op in words ("g after attention"), not its trace name (`attn.g`).
        let op = super::op_label(lang, e.op);
        let hover_name = format!("{op} ({})", super::pass_name(lang, e.pass));
        for &r in &e.ranks {
            let y = (tp - 1 - r) as f64;
            // A 1-pixel outline in the plot's background colour: consecutive ops of one colour
            // (ln1, qkv, core, out) read as separate blocks, not one bar under the first name.
            let bar = Bar::new(y, dur)
                .base_offset(start)
                .width(0.7)
                .stroke(egui::Stroke::new(1.0, separator))
                .name(&hover_name);
            let fill = if e.is_collective() {
                comm_color(dark)
            } else {
                gpu_color(r, dark)
            };
            labels.push((start + dur / 2.0, y, dur, op.clone(), text_on(fill)));
            if e.is_collective() {
                comm.push(bar.fill(fill));
            } else if let Some(v) = per_rank.get_mut(r) {
                v.push(bar.fill(fill));
            }
        }
    }
    let makespan_us = events
        .iter()
        .map(|e| (e.timing.start_s + e.timing.duration_s) * 1e6)
        .fold(0.0, f64::max);
    let backward_starts = events
        .iter()
        .filter(|e| e.pass == Pass::Backward)
        .map(|e| e.timing.start_s * 1e6)
        .fold(f64::INFINITY, f64::min);
    let hover = |lang: Lang| {
        move |b: &Bar, _: &BarChart| {
            let start = b.base_offset.unwrap_or(0.0);
            t_args(
                lang,
                "tl-bar-hover",
                &[
                    ("name", b.name.clone()),
                    ("start", crate::i18n::num(lang, start, 2)),
                    ("duration", crate::i18n::num(lang, b.value, 2)),
                    ("end", crate::i18n::num(lang, start + b.value, 2)),
                ],
            )
        }
    };
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    // The time axis ends with the data; the legend (one entry per GPU, communication, the
    // backward marker) gets an empty band above the top GPU's row instead of empty time.
    let plot_h = height.unwrap_or_else(|| ui.available_height()).max(120.0);
    let legend_px = (tp + 2) as f32 * (size + 6.0) + 12.0;
    let rows = tp as f64;
    let band = if plot_h > legend_px + 40.0 {
        rows * f64::from(legend_px) / f64::from(plot_h - legend_px)
    } else {
        rows
    };
    let mut plot = Plot::new(id.to_string())
        .legend(Legend::default())
        .x_axis_label(t(lang, "tl-axis-time"))
        .x_axis_formatter(super::axis_numbers(lang))
        .label_formatter(super::hover_numbers(lang))
        .y_axis_formatter(move |mark, _| {
            let v = mark.value.round();
            if (mark.value - v).abs() < 1e-6 && v >= 0.0 && (v as usize) < tp {
                format!("GPU {}", tp - 1 - v as usize)
            } else {
                String::new()
            }
        })
        .include_x(0.0)
        .include_x(makespan_us)
        .include_y(-0.5)
        .include_y(rows - 0.5 + band)
        .set_margin_fraction(egui::Vec2::new(0.03, 0.0))
        .allow_scroll(false);
    if let Some(h) = height {
        plot = plot.height(h);
    }
    let compute_name = t(lang, "tl-compute");
    let comm_name = t(lang, "tl-communication");
    let backward_name = t(lang, "tl-backward-begins");
    plot.show(ui, |plot| {
        for (r, bars) in per_rank.into_iter().enumerate() {
            if bars.is_empty() {
                continue;
            }
            plot.bar_chart(
                BarChart::new(format!("GPU {r} {compute_name}"), bars)
                    .color(gpu_color(r, dark))
                    .horizontal()
                    .element_formatter(Box::new(hover(lang))),
            );
        }
        if !comm.is_empty() {
            plot.bar_chart(
                BarChart::new(comm_name.clone(), comm)
                    .color(comm_color(dark))
                    .horizontal()
                    .element_formatter(Box::new(hover(lang))),
            );
        }
        if backward_starts.is_finite() {
            plot.vline(
                VLine::new(backward_name.clone(), backward_starts)
                    .color(ui_strong(dark))
                    .width(2.0)
                    .style(egui_plot::LineStyle::dashed_loose()),
            );
        }
        // Names on the bars that are wide enough for them (from last frame's scale).
        let px_per_us = plot.transform().dpos_dvalue_x();
        let char_w = 0.55 * 0.8 * size;
        for (x, y, dur, name, ink) in labels {
            if dur * px_per_us > (name.chars().count() as f64 + 1.0) * f64::from(char_w) {
                plot.text(
                    Text::new(
                        "",
                        PlotPoint::new(x, y),
                        egui::RichText::new(name).size(0.8 * size).color(ink),
                    )
                    .allow_hover(false),
                );
            }
        }
    });
}

/// The strongest text colour of the theme (lines drawn over the bars).
fn ui_strong(dark: bool) -> egui::Color32 {
    if dark {
        egui::Color32::WHITE
    } else {
        egui::Color32::BLACK
    }
}

impl View for Timeline {
    fn id(&self) -> &'static str {
        "timeline"
    }

    fn title(&self) -> &'static str {
        "Timeline"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = super::lang(ui);
        ui.heading(t(lang, "tl-title"));
        let generation = shared.scenario.generation();
        let Some(derived) = super::derived_or_fixes(ui, &mut shared.scenario) else {
            return;
        };
        let catalogue = Catalogue::default();
        let proportional = t(lang, "tl-times-proportional");
        let model = |g: &str| t_args(lang, "tl-times-model", &[("gpu", super::gpu_name(g))]);
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
        let trace = match &self.gpu {
            None => &derived.trace,
            Some(gpu) => {
                let stale = self
                    .modeled
                    .as_ref()
                    .is_none_or(|(g, name, _)| *g != generation || name != gpu);
                if stale {
                    let t = modeled_trace(&derived.trace, gpu);
                    self.modeled = Some((generation, gpu.clone(), t));
                }
                match self.modeled.as_ref().map(|m| &m.2) {
                    Some(Ok(t)) => t,
                    Some(Err(e)) => {
                        ui.colored_label(ui.visuals().error_fg_color, e);
                        &derived.trace
                    }
                    None => &derived.trace,
                }
            }
        };
        let cfg = &trace.config;
        ui.label(time_source_text(lang, trace.time_source));
        let bar_count: usize = trace.events.iter().map(|e| e.ranks.len()).sum();
        let events: Vec<&Event> = if bar_count > MAX_BARS {
            ui.horizontal(|ui| {
                ui.label(t(lang, "tl-too-many"));
                ui.add(egui::DragValue::new(&mut self.layer).range(0..=cfg.layers - 1));
            });
            trace
                .events
                .iter()
                .filter(|e| e.layer == self.layer)
                .collect()
        } else {
            trace.events.iter().collect()
        };
        let makespan_us = trace.makespan_s() * 1e6;
        let comm_us: f64 = trace
            .events
            .iter()
            .filter(|e| e.is_collective())
            .map(|e| e.timing.duration_s * 1e6)
            .sum();
        ui.label(t_args(
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
        ));
        gantt_plot(ui, lang, "timeline", trace, &events, None);
    }

    /// A target's `gpu` switches to the cost model's times for that GPU.
    fn show_me(&mut self, target: &ShowMe, _shared: &Shared) {
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
