//! Precision lab: the scenario's block in f64, f32, bf16 and f16 at every valid TP up to 8, each
//! measured against the unsharded f64 reference and against TP=1 in the same dtype. The numbers
//! are the engine's ([`precision::sweep`]), computed off the UI thread; the view draws the table,
//! the error distribution in ULPs per TP, and the engine's explanation of why TP=1 and TP=2 differ
//! in the last bits and why that is not a bug.

use super::{config_error_ui, gpu_color, load_json, save_json, Shared, View};
use crate::background::{self, Background};
use egui_plot::{uniform_grid_spacer, Bar, BarChart, Legend, Plot};
use serde::{Deserialize, Serialize};
use tplab_engine::precision::{self, PrecisionReport};
use tplab_engine::{Config, DType};

/// The dtypes swept, in table order.
const DTYPES: [DType; 4] = [DType::F64, DType::F32, DType::Bf16, DType::F16];

/// The TP sizes swept for `cfg`: every valid size up to 8 (TP=1 is always valid).
pub fn sweep_tps(cfg: &Config) -> Vec<usize> {
    cfg.valid_tp_sizes()
        .into_iter()
        .filter(|&t| t <= 8)
        .collect()
}

/// Precision view state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Precision {
    /// Index into the dtypes of the histogram shown.
    pub histogram_dtype: usize,
    #[serde(skip)]
    ran_for: Option<Config>,
    #[serde(skip)]
    job: Option<Background<PrecisionReport>>,
    #[serde(skip)]
    shown: Option<Result<PrecisionReport, String>>,
}

impl View for Precision {
    fn id(&self) -> &'static str {
        "precision"
    }

    fn title(&self) -> &'static str {
        "Precision"
    }

    fn logic(&mut self, ctx: &egui::Context, _shared: &mut Shared) {
        if let Some(r) = background::finished(&mut self.job, ctx) {
            self.shown = Some(r);
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        ui.heading("Precision: the same block in four dtypes and at every TP");
        let cfg = shared.scenario.config().clone();
        if let Err(err) = cfg.validate_for_cpu() {
            if let Some(tp) = config_error_ui(ui, &err, &cfg) {
                shared.scenario.set_tp(tp);
            }
            return;
        }
        let tps = sweep_tps(&cfg);
        ui.label(format!(
            "Forward pass of {} in f64, f32, bf16 and f16 (bf16 and f16 emulated: f32 \
             arithmetic, rounded at every op boundary and in the all-reduce) at TP {}. Each \
             result is compared with the unsharded f64 reference, and with TP=1 in the same \
             dtype: the effect of summation order alone.",
            cfg.label(),
            tps.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let stale = self.ran_for.as_ref().is_some_and(|r| !same_shape(r, &cfg));
        ui.horizontal(|ui| {
            if let Some(job) = &self.job {
                ui.spinner();
                ui.label(format!(
                    "running {} forward passes ({:.1} s)",
                    DTYPES.len() * tps.len(),
                    job.elapsed_s()
                ));
            } else {
                let label = if self.shown.is_none() {
                    "Run the sweep"
                } else {
                    "Run again"
                };
                if ui.button(label).clicked() {
                    self.start(ui.ctx(), cfg.clone(), tps.clone());
                }
                if stale {
                    ui.label("(the scenario changed since this run)");
                }
            }
        });
        match &self.shown {
            None => {}
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, format!("Sweep failed: {e}"));
            }
            Some(Ok(report)) => {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    report_ui(ui, report, &mut self.histogram_dtype);
                });
            }
        }
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

/// Whether two configs give the same sweep (the sweep ignores `tp` and `dtype`).
fn same_shape(a: &Config, b: &Config) -> bool {
    Config {
        tp: 1,
        dtype: DType::F64,
        ..a.clone()
    } == Config {
        tp: 1,
        dtype: DType::F64,
        ..b.clone()
    }
}

impl Precision {
    fn start(&mut self, ctx: &egui::Context, cfg: Config, tps: Vec<usize>) {
        let run_cfg = cfg.clone();
        self.job = Some(Background::once(ctx, move |_| {
            precision::sweep(&run_cfg, &DTYPES, &tps).map_err(|e| e.to_string())
        }));
        self.ran_for = Some(cfg);
    }
}

fn report_ui(ui: &mut egui::Ui, report: &PrecisionReport, histogram_dtype: &mut usize) {
    ui.add_space(4.0);
    ui.label(format!(
        "Reference: max|y| = {:.3}, RMS {:.3}; longest reduction K = {}. ULPs are counted at \
         max(|value|, RMS) so that values near zero do not inflate them.",
        report.reference_max_abs, report.reference_rms, report.reduction_len
    ));
    egui::Grid::new("precision-table")
        .striped(true)
        .show(ui, |ui| {
            for h in [
                "dtype",
                "TP",
                "max rel error vs f64",
                "in ε",
                "RMS error",
                "differs from TP=1",
                "median / max ULPs vs TP=1",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for row in &report.rows {
                ui.label(row.dtype.to_string());
                ui.label(row.tp.to_string());
                ui.label(format!("{:.2e}", row.vs_reference.max_rel));
                ui.label(format!("{:.1}", row.vs_reference.max_rel_ulps));
                ui.label(format!("{:.2e}", row.vs_reference.rms));
                match &row.vs_tp1 {
                    Some(o) => {
                        ui.label(format!(
                            "{:.1}% of {}",
                            100.0 * o.differing as f64 / o.elements.max(1) as f64,
                            o.elements
                        ));
                        ui.label(format!("{:.1} / {:.1}", o.median_ulps, o.max_ulps));
                    }
                    None => {
                        ui.label("(baseline)");
                        ui.label("");
                    }
                }
                ui.end_row();
            }
        });
    ui.separator();
    ui.horizontal(|ui| {
        ui.label("Error against f64, in ULPs of");
        let dtypes: Vec<DType> = report.dtypes.clone();
        *histogram_dtype = (*histogram_dtype).min(dtypes.len().saturating_sub(1));
        for (i, d) in dtypes.iter().enumerate() {
            ui.selectable_value(histogram_dtype, i, d.to_string());
        }
    });
    if let Some(&dtype) = report.dtypes.get(*histogram_dtype) {
        histogram_ui(ui, report, dtype);
    }
    ui.separator();
    ui.strong("What the numbers say");
    for f in report.findings() {
        ui.label(f);
    }
    ui.add_space(4.0);
    ui.strong("Why TP=1 and TP=2 differ, and why that is not a bug");
    ui.label(report.explanation.replace('\n', " "));
}

/// One group of bars per ULP bin, one bar per TP: the distributions lie on top of each other,
/// which is the point (no TP size is more accurate than another).
fn histogram_ui(ui: &mut egui::Ui, report: &PrecisionReport, dtype: DType) {
    let rows: Vec<_> = report.rows.iter().filter(|r| r.dtype == dtype).collect();
    let Some(first) = rows.first() else { return };
    let labels: Vec<String> = first
        .vs_reference
        .histogram
        .bins
        .iter()
        .map(|b| {
            if b.upper_ulps == 0.0 {
                "0".to_string()
            } else if b.upper_ulps.is_infinite() {
                format!(">{}", b.lower_ulps)
            } else {
                format!("≤{}", b.upper_ulps)
            }
        })
        .collect();
    let bins = labels.len() as f64;
    let n = rows.len().max(1) as f64;
    let width = 0.8 / n;
    let dark = ui.visuals().dark_mode;
    let charts: Vec<BarChart> = rows
        .iter()
        .enumerate()
        .map(|(k, row)| {
            let total = row.vs_reference.histogram.total().max(1) as f64;
            let bars = row
                .vs_reference
                .histogram
                .bins
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    Bar::new(
                        i as f64 - 0.4 + width * (k as f64 + 0.5),
                        100.0 * b.count as f64 / total,
                    )
                    .width(width)
                })
                .collect();
            BarChart::new(format!("TP={}", row.tp), bars).color(gpu_color(k, dark))
        })
        .collect();
    Plot::new(format!("precision-hist-{dtype}"))
        .legend(Legend::default())
        .height(220.0)
        .y_axis_label("% of outputs")
        .x_axis_label("|error| in ULPs at max(|reference|, RMS)")
        .x_grid_spacer(uniform_grid_spacer(|_| [1.0, 2.0, 4.0]))
        .include_x(-0.5)
        .include_x(bins - 0.5)
        .x_axis_formatter(move |mark, _| {
            let i = mark.value.round();
            if (mark.value - i).abs() > 1e-6 || i < 0.0 {
                return String::new();
            }
            labels.get(i as usize).cloned().unwrap_or_default()
        })
        .allow_scroll(false)
        .show(ui, |plot| {
            for c in charts {
                plot.bar_chart(c);
            }
        });
}
