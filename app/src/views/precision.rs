//! Precision lab: the scenario's block in f64, f32, bf16 and f16 at every valid TP up to 8, each
//! measured against the unsharded f64 reference and against TP=1 in the same dtype. The numbers
//! are the engine's ([`precision::sweep`]), computed off the UI thread; the view draws the table,
//! the error distribution in ULPs per TP, and the engine's explanation of why TP=1 and TP=2 differ
//! in the last bits and why that is not a bug.

use crate::background::{self, Background};
use crate::i18n::{t, t_args};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::config_error_ui;
use crate::widgets::gpu_color;
use egui_plot::{uniform_grid_spacer, Bar, BarChart, Legend, Plot};
use serde::{Deserialize, Serialize};
use tplab_engine::labs::precision::{self, PrecisionReport};
use tplab_engine::{config::Config, dtype::DType};
use tplab_lessons::Lang;

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
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        crate::widgets::links::view_heading(ui, tr("pr-title"));
        let cfg = shared.scenario.config().clone();
        if let Err(err) = cfg.validate_for_cpu() {
            if let Some(c) = config_error_ui(ui, &err, &cfg) {
                shared.scenario.set_config(c);
            }
            return;
        }
        let tps = sweep_tps(&cfg);
        ui.label(t_args(
            lang,
            "pr-intro",
            &[
                (
                    "label",
                    t_args(
                        lang,
                        "pr-layer",
                        &[
                            ("hidden", cfg.hidden.to_string()),
                            ("heads", cfg.heads.to_string()),
                            ("ffn", cfg.ffn.to_string()),
                            ("tokens", cfg.tokens().to_string()),
                        ],
                    ),
                ),
                ("tps", crate::widgets::list_words(lang, &tps)),
            ],
        ));
        // First shown: the sweep starts by itself, in the background worker.
        if shared.autostart_jobs && self.ran_for.is_none() && self.job.is_none() {
            self.start(ui.ctx(), cfg.clone(), tps.clone());
        }
        let stale = self.ran_for.as_ref().is_some_and(|r| !same_shape(r, &cfg));
        ui.horizontal(|ui| {
            if let Some(job) = &self.job {
                ui.spinner();
                ui.label(t_args(
                    lang,
                    "pr-running",
                    &[
                        ("count", (DTYPES.len() * tps.len()).to_string()),
                        ("seconds", crate::i18n::num(lang, job.elapsed_s(), 1)),
                    ],
                ));
            } else {
                let label = if self.shown.is_none() {
                    tr("pr-run")
                } else {
                    tr("pr-run-again")
                };
                if ui.button(label).clicked() {
                    self.start(ui.ctx(), cfg.clone(), tps.clone());
                }
                if stale {
                    ui.label(tr("pr-stale"));
                }
            }
        });
        match &self.shown {
            None => {}
            Some(Err(e)) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    t_args(lang, "pr-failed", &[("error", e.clone())]),
                );
            }
            Some(Ok(report)) => {
                egui::ScrollArea::both().show(ui, |ui| {
                    report_ui(ui, lang, report, &mut self.histogram_dtype);
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

fn report_ui(ui: &mut egui::Ui, lang: Lang, report: &PrecisionReport, histogram_dtype: &mut usize) {
    let tr = |id: &str| t(lang, id);
    ui.add_space(4.0);
    ui.label(t_args(
        lang,
        "pr-reference",
        &[
            ("max", crate::i18n::num(lang, report.reference_max_abs, 3)),
            ("rms", crate::i18n::num(lang, report.reference_rms, 3)),
            ("k", report.reduction_len.to_string()),
        ],
    ));
    egui::Grid::new("precision-table")
        .striped(true)
        .show(ui, |ui| {
            for h in [
                "pr-col-dtype",
                "pr-col-tp",
                "pr-col-rel",
                "pr-col-eps",
                "pr-col-rms",
                "pr-col-differs",
                "pr-col-ulps",
            ] {
                header(ui, tr(h));
            }
            ui.end_row();
            for row in &report.rows {
                ui.label(row.dtype.to_string());
                ui.label(row.tp.to_string());
                ui.label(crate::i18n::sci(lang, row.vs_reference.max_rel, 2));
                ui.label(crate::i18n::num(lang, row.vs_reference.max_rel_ulps, 1));
                ui.label(crate::i18n::sci(lang, row.vs_reference.rms, 2));
                match &row.vs_tp1 {
                    Some(o) => {
                        ui.label(t_args(
                            lang,
                            "pr-differs",
                            &[
                                (
                                    "percent",
                                    crate::i18n::num(
                                        lang,
                                        100.0 * o.differing as f64 / o.elements.max(1) as f64,
                                        1,
                                    ),
                                ),
                                ("elements", o.elements.to_string()),
                            ],
                        ));
                        ui.label(format!(
                            "{} / {}",
                            crate::i18n::num(lang, o.median_ulps, 1),
                            crate::i18n::num(lang, o.max_ulps, 1)
                        ));
                    }
                    None => {
                        ui.label(tr("pr-baseline"));
                        ui.label("");
                    }
                }
                ui.end_row();
            }
        });
    ui.separator();
    ui.horizontal_wrapped(|ui| {
        ui.label(tr("pr-histogram-of"));
        let dtypes: Vec<DType> = report.dtypes.clone();
        *histogram_dtype = (*histogram_dtype).min(dtypes.len().saturating_sub(1));
        for (i, d) in dtypes.iter().enumerate() {
            ui.selectable_value(histogram_dtype, i, d.to_string());
        }
    });
    if let Some(&dtype) = report.dtypes.get(*histogram_dtype) {
        histogram_ui(ui, lang, report, dtype);
    }
    ui.separator();
    findings_ui(ui, lang, report);
    ui.add_space(4.0);
    ui.strong(tr("pr-why-title"));
    let why = if lang == Lang::En {
        report.explanation.replace('\n', " ")
    } else {
        tr("pr-why")
    };
    ui.add(egui::Label::new(why).wrap());
}

/// A column header broken into lines of at most [`HEADER_EMS`] letters' height wide, between
/// words, so that a long header ("TP=1'e göre medyan / en büyük ULP") takes two lines rather
/// than run off the window. (Line breaks in the text, not a wrapping label: a grid row takes
/// its height from last frame's cells, and a wrapped label's second line overlapped the row
/// below.)
fn header(ui: &mut egui::Ui, text: String) {
    let width = HEADER_EMS * ui.text_style_height(&egui::TextStyle::Body);
    let font = egui::TextStyle::Body.resolve(ui.style());
    let text_width = |s: &str| {
        ui.painter()
            .layout_no_wrap(s.to_string(), font.clone(), egui::Color32::PLACEHOLDER)
            .size()
            .x
    };
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let longer = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if !line.is_empty() && text_width(&longer) > width {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = longer;
        }
    }
    lines.push(line);
    ui.strong(lines.join("\n"));
}

/// A header's widest line, in multiples of the body text's height.
const HEADER_EMS: f32 = 9.0;

/// `x` with `sig` significant digits: plain (`0.43`, `24`) when 1e-3 ≤ |x| < 1e4, scientific
/// (`4.3e-5`) otherwise, in `lang`'s digits.
fn plain_or_sci(lang: Lang, x: f64, sig: usize) -> String {
    let a = x.abs();
    if x == 0.0 {
        crate::i18n::num(lang, 0.0, 0)
    } else if (1e-3..1e4).contains(&a) {
        let magnitude = a.log10().floor() as i64;
        let decimals = (sig as i64 - 1 - magnitude).max(0) as usize;
        crate::i18n::num(lang, x, decimals)
    } else {
        crate::i18n::sci(lang, x, sig.saturating_sub(1))
    }
}

/// What the numbers say, as one table (a row per dtype: the bounds, the spread of the error
/// against f64 over the TP sizes, the largest difference between any TP and TP=1) and one
/// sentence, instead of a sentence per dtype and TP.
fn findings_ui(ui: &mut egui::Ui, lang: Lang, report: &PrecisionReport) {
    let tr = |id: &str| t(lang, id);
    let k = report.reduction_len as f64;
    ui.strong(tr("pr-findings-title"));
    egui::Grid::new("precision-findings")
        .striped(true)
        .show(ui, |ui| {
            for h in [
                "pr-col-dtype",
                "pr-f-bounds",
                "pr-f-spread",
                "pr-f-vs-tp1",
                "pr-f-verdict",
            ] {
                header(ui, tr(h));
            }
            ui.end_row();
            for &d in &report.dtypes {
                let rows: Vec<_> = report.rows.iter().filter(|r| r.dtype == d).collect();
                let Some(first) = rows.first() else { continue };
                let eps = first.epsilon;
                let rels = rows.iter().map(|r| r.vs_reference.max_rel);
                let (lo, hi) = rels.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
                    (lo.min(v), hi.max(v))
                });
                let max_diff = rows
                    .iter()
                    .filter_map(|r| r.vs_tp1.as_ref())
                    .map(|o| o.max_diff_rel_ulps)
                    .fold(0.0f64, f64::max);
                ui.label(d.to_string());
                ui.label(format!(
                    "{} / {}",
                    plain_or_sci(lang, k.sqrt() * eps, 2),
                    plain_or_sci(lang, k * eps, 2)
                ));
                ui.label(format!(
                    "{} - {}",
                    plain_or_sci(lang, lo, 3),
                    plain_or_sci(lang, hi, 3)
                ));
                ui.label(t_args(
                    lang,
                    "pr-f-eps",
                    &[("eps", crate::i18n::num(lang, max_diff, 1))],
                ));
                let within = hi <= k * eps;
                ui.label(tr(if within { "pr-f-ok" } else { "pr-f-over" }));
                ui.end_row();
            }
        });
    ui.add(
        egui::Label::new(t_args(
            lang,
            "pr-findings",
            &[("k", report.reduction_len.to_string())],
        ))
        .wrap(),
    );
}

/// One group of bars per ULP bin, one bar per TP: the distributions lie on top of each other,
/// which is the point (no TP size is more accurate than another).
fn histogram_ui(ui: &mut egui::Ui, lang: Lang, report: &PrecisionReport, dtype: DType) {
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
                crate::i18n::num_text(lang, &format!(">{}", b.lower_ulps))
            } else {
                crate::i18n::num_text(lang, &format!("≤{}", b.upper_ulps))
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
                    let c = gpu_color(k, dark);
                    Bar::new(
                        i as f64 - 0.4 + width * (k as f64 + 0.5),
                        100.0 * b.count as f64 / total,
                    )
                    .width(width)
                    // Solid: egui_plot's default fill is near-black on the dark theme.
                    .fill(c.gamma_multiply(0.85))
                    .stroke(egui::Stroke::new(1.0, c))
                })
                .collect();
            BarChart::new(format!("TP={}", row.tp), bars).color(gpu_color(k, dark))
        })
        .collect();
    Plot::new(format!("precision-hist-{dtype}"))
        .legend(Legend::default())
        .height(220.0)
        .y_axis_label(t(lang, "pr-axis-share"))
        .y_axis_formatter(crate::widgets::axis_numbers(lang))
        .label_formatter(crate::widgets::hover_numbers(
            lang,
            t(lang, "pr-axis-ulps"),
            t(lang, "pr-axis-share"),
        ))
        .x_grid_spacer(uniform_grid_spacer(|_| [1.0, 2.0, 4.0]))
        .include_x(-0.5)
        .include_x(bins - 0.5)
        // Every bin named, in full ink, where bins are 24 points apart or more (the default
        // spacing named every other one, and the others faded).
        .custom_x_axes(vec![egui_plot::AxisHints::new_x()
            .label(t(lang, "pr-axis-ulps"))
            .label_spacing(24.0..=24.0)
            .formatter(move |mark, _| {
                let i = mark.value.round();
                if (mark.value - i).abs() > 1e-6 || i < 0.0 {
                    return String::new();
                }
                labels.get(i as usize).cloned().unwrap_or_default()
            })])
        .allow_scroll(false)
        .show(ui, |plot| {
            for c in charts {
                plot.bar_chart(c);
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain notation between 1e-3 and 1e4 (the findings table's `4.3e-1 / 2.4e1` reads
    /// `0.43 / 24`), scientific outside, with the language's decimal mark.
    #[test]
    fn numbers_are_plain_in_the_readable_range() {
        assert_eq!(plain_or_sci(Lang::En, 0.43, 2), "0.43");
        assert_eq!(plain_or_sci(Lang::En, 24.0, 2), "24");
        assert_eq!(plain_or_sci(Lang::Tr, 0.43, 2), "0,43");
        assert_eq!(plain_or_sci(Lang::En, 0.00123, 3), "0.00123");
        assert_eq!(plain_or_sci(Lang::En, 4.24e-7, 3), "4.24e-7");
        assert_eq!(plain_or_sci(Lang::En, 12345.0, 2), "1.2e4");
        assert_eq!(plain_or_sci(Lang::En, 0.0, 2), "0");
    }
}
