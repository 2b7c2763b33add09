//! GPU: the devices and libraries the probe found, a Run button that executes the scenario's
//! shards on the GPU, the measured timeline beside the trace's own, per-op ratios and the error
//! against the CPU reference. With no GPU: what was looked for and what would be needed.

use super::timeline::gantt_bars;
use super::{load_json, save_json, Shared, View};
use crate::background::{self, Background, Reporter};
use egui_plot::{BarChart, Legend, Plot};
use serde::{Deserialize, Serialize};
use tplab_engine::trace::{Event, Trace};
use tplab_engine::{Config, DType};
use tplab_kernels::summary::{op_table, OpRow};
use tplab_kernels::{DeviceMode, Probe, RunOptions};

/// What a finished run shows.
struct RunView {
    label: String,
    devices: String,
    /// The trace with `timing` replaced by the measured times (for the Gantt chart).
    measured: Trace,
    /// The trace's own times.
    predicted: Trace,
    ops: Vec<OpRow>,
    verification: String,
    passed: bool,
    iteration_ms: f64,
}

/// GPU view state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Gpu {
    /// f32 or bf16.
    pub dtype: DType,
    pub iters: usize,
    #[serde(skip)]
    probe: Option<Probe>,
    #[serde(skip)]
    job: Option<Background<RunView>>,
    #[serde(skip)]
    last: Option<Result<RunView, String>>,
}

impl Default for Gpu {
    fn default() -> Self {
        Self {
            dtype: DType::F32,
            iters: 5,
            probe: None,
            job: None,
            last: None,
        }
    }
}

/// Runs `cfg` on device 0, compares with the CPU reference; runs off the UI thread.
fn execute(cfg: Config, iters: usize, progress: &Reporter) -> Result<RunView, String> {
    let mut report = |stage: &str, f: f64| progress.report(f as f32, stage);
    let run = tplab_kernels::run(
        &cfg,
        &RunOptions {
            iters,
            mode: DeviceMode::SingleDevice(0),
        },
        &mut report,
    )
    .map_err(|e| e.to_string())?;
    report("computing the CPU reference", 1.0);
    let model = tplab_kernels::run::device_model(&cfg);
    let reference = tplab_kernels::reference::reference(&cfg, &model);
    let v = tplab_kernels::verify::verify_run(&cfg, &run, &reference);
    let mut measured = run.trace.clone();
    for e in &mut measured.events {
        if let Some(m) = e.measured {
            e.timing = m;
        }
    }
    let mut its = run.iteration_ms.clone();
    its.sort_by(f64::total_cmp);
    Ok(RunView {
        label: cfg.label(),
        devices: format!("{} — {}", run.devices.join(", "), run.mode),
        ops: op_table(&run.trace),
        predicted: run.trace,
        measured,
        verification: tplab_kernels::verify::summary(&v),
        passed: v.passed(),
        iteration_ms: its.get(its.len() / 2).copied().unwrap_or(0.0),
    })
}

fn probe_ui(ui: &mut egui::Ui, p: &Probe) {
    let lang = super::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    ui.label(crate::i18n::t_args(
        lang,
        "gpu-cuda-compiled",
        &[(
            "answer",
            tr(if p.compiled_with_cuda {
                "serve-yes"
            } else {
                "serve-no"
            }),
        )],
    ));
    egui::Grid::new("gpu-libs").striped(true).show(ui, |ui| {
        ui.strong(tr("gpu-col-library"));
        ui.strong(tr("gpu-col-state"));
        ui.strong(tr("gpu-col-version"));
        ui.strong(tr("gpu-col-needed"));
        ui.end_row();
        for l in &p.libraries {
            ui.label(l.name);
            if l.found {
                ui.label(tr("gpu-found"));
            } else {
                ui.colored_label(ui.visuals().warn_fg_color, tr("gpu-missing"));
            }
            ui.label(l.version.as_deref().unwrap_or("-"));
            ui.label(l.needed_for);
            ui.end_row();
        }
    });
    for l in p.libraries.iter().filter(|l| !l.found) {
        ui.label(format!(
            "{} (looked for {}): {}",
            l.name,
            l.looked_for,
            l.advice.as_deref().unwrap_or("")
        ));
    }
    for d in &p.devices {
        ui.label(format!(
            "GPU {}: {} — compute capability {}.{}, {:.1} GiB, {:.1} GiB free",
            d.ordinal,
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.total_memory_bytes as f64 / (1u64 << 30) as f64,
            d.free_memory_bytes as f64 / (1u64 << 30) as f64
        ));
    }
    if p.usable() {
        ui.label(p.headline());
    } else {
        ui.colored_label(ui.visuals().warn_fg_color, p.headline());
        for pr in p.problems.iter().skip(1) {
            ui.label(pr);
        }
        ui.label(tr("gpu-without"));
    }
}

fn gantt(ui: &mut egui::Ui, id: &str, trace: &Trace, height: f32) {
    let dark = ui.visuals().dark_mode;
    let events: Vec<&Event> = trace.events.iter().collect();
    let (compute, comm) = gantt_bars(trace, &events, dark);
    let tp = trace.config.tp.max(1);
    let compute_name = crate::i18n::t(super::lang(ui), "tl-compute");
    let comm_name = crate::i18n::t(super::lang(ui), "tl-communication");
    Plot::new(id.to_string())
        .height(height)
        .legend(Legend::default())
        .x_axis_label(crate::i18n::t(super::lang(ui), "tl-axis-time"))
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
            plot.bar_chart(BarChart::new(compute_name, compute).horizontal());
            plot.bar_chart(BarChart::new(comm_name, comm).horizontal());
        });
}

fn result_ui(ui: &mut egui::Ui, r: &RunView) {
    let lang = super::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    ui.label(crate::i18n::t_args(
        lang,
        "gpu-on",
        &[("label", r.label.clone()), ("devices", r.devices.clone())],
    ));
    ui.label(crate::i18n::t_args(
        lang,
        "gpu-iteration",
        &[("ms", format!("{:.3}", r.iteration_ms))],
    ));
    let color = if r.passed {
        ui.visuals().text_color()
    } else {
        ui.visuals().error_fg_color
    };
    ui.colored_label(
        color,
        crate::i18n::t_args(lang, "gpu-against", &[("result", r.verification.clone())]),
    );
    ui.columns(2, |cols| {
        cols[0].strong(tr("gpu-measured"));
        gantt(&mut cols[0], "gpu-measured", &r.measured, 220.0);
        cols[1].strong(tr("gpu-predicted"));
        cols[1].label(super::timeline::time_source_text(
            lang,
            r.predicted.time_source,
        ));
        gantt(&mut cols[1], "gpu-predicted", &r.predicted, 220.0);
    });
    ui.label(tr("gpu-per-op"));
    egui::ScrollArea::both().max_height(260.0).show(ui, |ui| {
        egui::Grid::new("gpu-ops").striped(true).show(ui, |ui| {
            for h in [
                "vo-col-pass",
                "pg-col-op",
                "gpu-col-measured",
                "gpu-col-predicted",
                "gpu-col-ratio",
            ] {
                ui.strong(tr(h));
            }
            ui.end_row();
            for o in &r.ops {
                ui.label(o.pass.name());
                ui.label(o.op.name());
                ui.label(
                    o.measured_ms
                        .map(|m| format!("{m:.4}"))
                        .unwrap_or_else(|| "-".into()),
                );
                ui.label(format!("{:.4}", o.predicted_ms));
                ui.label(
                    o.share_ratio
                        .map(|s| format!("{s:.2}"))
                        .unwrap_or_else(|| "-".into()),
                );
                ui.end_row();
            }
        });
    });
}

impl View for Gpu {
    fn id(&self) -> &'static str {
        "gpu"
    }

    fn title(&self) -> &'static str {
        "GPU"
    }

    fn logic(&mut self, ctx: &egui::Context, _shared: &mut Shared) {
        if let Some(r) = background::finished(&mut self.job, ctx) {
            self.last = Some(r);
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = super::lang(ui);
        let tr = |id: &str| crate::i18n::t(lang, id);
        ui.heading(tr("gpu-title"));
        let probe = self.probe.get_or_insert_with(tplab_kernels::probe);
        probe_ui(ui, probe);
        if ui.button(tr("gpu-look-again")).clicked() {
            self.probe = Some(tplab_kernels::probe());
        }
        let usable = self.probe.as_ref().is_some_and(Probe::usable);
        ui.separator();
        let cfg = Config {
            dtype: self.dtype,
            ..shared.scenario.config().clone()
        };
        ui.horizontal_wrapped(|ui| {
            ui.label(crate::i18n::t_args(
                lang,
                "gpu-scenario",
                &[("label", cfg.label())],
            ));
            egui::ComboBox::from_label(tr("pg-dtype"))
                .selected_text(self.dtype.name())
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut self.dtype, DType::F32, "f32");
                    ui.selectable_value(&mut self.dtype, DType::Bf16, "bf16");
                });
            ui.add(
                egui::DragValue::new(&mut self.iters)
                    .range(1..=100)
                    .prefix(tr("gpu-iterations")),
            );
        });
        let check = tplab_kernels::run::check_config(&cfg);
        if let Err(e) = &check {
            ui.colored_label(ui.visuals().error_fg_color, e.to_string());
        }
        let running = self.job.is_some();
        let can_run = usable && check.is_ok() && !running;
        if ui
            .add_enabled(can_run, egui::Button::new(tr("gpu-run")))
            .on_disabled_hover_text(tr("gpu-run-disabled"))
            .clicked()
        {
            let iters = self.iters;
            let run_cfg = cfg.clone();
            self.job = Some(Background::once(ui.ctx(), move |progress| {
                execute(run_cfg, iters, progress)
            }));
        }
        if let Some(job) = &self.job {
            let (f, stage) = job.progress();
            ui.add(egui::ProgressBar::new(f).text(format!("{stage} ({:.1} s)", job.elapsed_s())));
        }
        match &self.last {
            Some(Ok(r)) => result_ui(ui, r),
            Some(Err(e)) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    crate::i18n::t_args(lang, "gpu-failed", &[("error", e.clone())]),
                );
            }
            None => {}
        }
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}
