//! Timeline: a Gantt chart (egui_plot) of the trace, one row per GPU, compute in the GPU's
//! colour and communication in grey, with the time source the engine reports.

use super::{gpu_color, load_json, save_json, Shared, ShowMe, View};
use egui_plot::{Bar, BarChart, Legend, Plot};
use serde::{Deserialize, Serialize};
use tplab_engine::cost;
use tplab_engine::hardware::{Catalogue, Cluster};
use tplab_engine::trace::{Event, TimeSource, Trace};

/// Above this many bars only one layer is drawn at a time.
const MAX_BARS: usize = 6000;

/// GPUs per node assumed for modeled times: a TP group larger than this spans nodes.
const GPUS_PER_NODE: usize = 8;

/// Timeline state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Timeline {
    /// Layer shown when the whole trace is too large to draw at once.
    pub layer: usize,
    /// GPU whose cost model sets the times; `None` keeps the trace's proportional times.
    pub gpu: Option<String>,
    #[serde(skip)]
    modeled: Option<(u64, String, Result<Trace, String>)>,
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

/// The bars of `events` (one per rank an event runs on), compute and communication apart.
pub fn gantt_bars(trace: &Trace, events: &[&Event], dark: bool) -> (Vec<Bar>, Vec<Bar>) {
    let tp = trace.config.tp.max(1);
    let mut compute = Vec::new();
    let mut comm = Vec::new();
    for e in events {
        if e.timing.duration_s <= 0.0 {
            continue; // identity f/g: nothing to draw
        }
        for &r in &e.ranks {
            let y = (tp - 1 - r) as f64;
            let bar = Bar::new(y, e.timing.duration_s * 1e6)
                .base_offset(e.timing.start_s * 1e6)
                .width(0.7)
                .name(e.label());
            if e.is_collective() {
                comm.push(bar.fill(egui::Color32::from_gray(if dark { 170 } else { 90 })));
            } else {
                compute.push(bar.fill(gpu_color(r, dark)));
            }
        }
    }
    (compute, comm)
}

impl View for Timeline {
    fn id(&self) -> &'static str {
        "timeline"
    }

    fn title(&self) -> &'static str {
        "Timeline"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        ui.heading("Timeline: compute and communication per GPU");
        let derived = match shared.scenario.derived() {
            Ok(d) => d,
            Err(err) => {
                let config = shared.scenario.config().clone();
                if let Some(c) = super::config_error_ui(ui, err, &config) {
                    shared.scenario.set_config(c);
                }
                return;
            }
        };
        let catalogue = Catalogue::default();
        egui::ComboBox::from_label("times")
            .selected_text(match &self.gpu {
                None => "proportional to FLOPs and bytes".to_string(),
                Some(g) => format!("cost model: {g}"),
            })
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut self.gpu, None, "proportional to FLOPs and bytes");
                for g in &catalogue.gpus {
                    ui.selectable_value(
                        &mut self.gpu,
                        Some(g.name.clone()),
                        format!("cost model: {}", g.name),
                    );
                }
            });
        let generation = shared.scenario.generation();
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
        ui.label(time_source_note(trace.time_source));
        let bar_count: usize = trace.events.iter().map(|e| e.ranks.len()).sum();
        let events: Vec<&Event> = if bar_count > MAX_BARS {
            ui.horizontal(|ui| {
                ui.label("Too many events to draw at once; layer:");
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
        ui.label(format!(
            "Makespan {makespan_us:.1} µs, of which {comm_us:.1} µs ({:.0}%) is communication every GPU waits for.",
            100.0 * comm_us / makespan_us.max(f64::MIN_POSITIVE)
        ));
        let dark = ui.visuals().dark_mode;
        let (compute, comm) = gantt_bars(trace, &events, dark);
        let tp = cfg.tp.max(1);
        Plot::new("timeline")
            .legend(Legend::default())
            .x_axis_label("time (µs)")
            .y_axis_formatter(move |mark, _| {
                let v = mark.value.round();
                if (mark.value - v).abs() < 1e-6 && v >= 0.0 && (v as usize) < tp {
                    format!("GPU {}", tp - 1 - v as usize)
                } else {
                    String::new()
                }
            })
            .allow_scroll(false)
            .show(ui, |plot| {
                plot.bar_chart(BarChart::new("compute", compute).horizontal());
                plot.bar_chart(BarChart::new("communication", comm).horizontal());
            });
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
