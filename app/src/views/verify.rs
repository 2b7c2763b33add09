//! Verify: the sharded run on virtual GPUs against the CPU reference ([`run::run_with_progress`]),
//! computed off the UI thread with a progress bar. For each all-reduce: every rank's partial
//! output before it, the result after it, the reference, and a heatmap of the error, with the
//! max abs / relative error and the tolerance with its reason.
//!
//! Heatmaps are pooled to at most [`MAX_CELLS`] a side and uploaded as textures once per run,
//! so frames stay cheap.

use crate::background::{self, Background};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::a11y_label;
use crate::widgets::config_error_ui;
use crate::widgets::verdict::verdict_ui;
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use tplab_engine::config::Config;
use tplab_engine::run::{self, RunReport};

/// Largest heatmap side in cells; bigger matrices are pooled (a sample for values, the max for
/// errors).
pub const MAX_CELLS: usize = 96;
/// Partial outputs drawn one by one up to this many ranks.
const MAX_DRAWN_RANKS: usize = 8;

/// A matrix pooled to at most `MAX_CELLS` a side: `(rows, cols, values)` row-major.
pub fn pool<M>(rows: usize, cols: usize, at: M, use_max: bool) -> (usize, usize, Vec<f64>)
where
    M: Fn(usize, usize) -> f64,
{
    let (pr, pc) = (rows.clamp(1, MAX_CELLS), cols.clamp(1, MAX_CELLS));
    let mut out = vec![0.0; pr * pc];
    for (i, cell) in out.iter_mut().enumerate() {
        let (r, c) = (i / pc, i % pc);
        let (r0, r1) = (r * rows / pr, ((r + 1) * rows / pr).max(r * rows / pr + 1));
        let (c0, c1) = (c * cols / pc, ((c + 1) * cols / pc).max(c * cols / pc + 1));
        let mut acc = 0.0f64;
        let mut n = 0.0f64;
        for rr in r0..r1.min(rows) {
            for cc in c0..c1.min(cols) {
                let v = at(rr, cc);
                if use_max {
                    acc = acc.max(v);
                } else if n == 0.0 {
                    // Values: one sample per cell (a mean of random data would fade to 0).
                    acc = v;
                }
                n += 1.0;
            }
        }
        *cell = acc;
    }
    (pr, pc, out)
}

/// Diverging blue–white–orange (colour-blind safe) for values in `[-1, 1]`.
fn diverging(v: f64) -> egui::Color32 {
    let t = v.clamp(-1.0, 1.0) as f32;
    let (end, s) = if t < 0.0 {
        ([0x00, 0x72, 0xB2], -t)
    } else {
        ([0xE6, 0x9F, 0x00], t)
    };
    let mix = |e: u8| (255.0 + (f32::from(e) - 255.0) * s) as u8;
    egui::Color32::from_rgb(mix(end[0]), mix(end[1]), mix(end[2]))
}

/// Sequential white → vermillion → black for errors in `[0, 1]`.
fn sequential(v: f64) -> egui::Color32 {
    let t = v.clamp(0.0, 1.0) as f32;
    let lerp = |a: f32, b: f32, s: f32| (a + (b - a) * s) as u8;
    if t < 0.5 {
        let s = t * 2.0;
        egui::Color32::from_rgb(
            lerp(255.0, 213.0, s),
            lerp(255.0, 94.0, s),
            lerp(255.0, 0.0, s),
        )
    } else {
        let s = (t - 0.5) * 2.0;
        egui::Color32::from_rgb(lerp(213.0, 40.0, s), lerp(94.0, 10.0, s), lerp(0.0, 0.0, s))
    }
}

/// Decades of the error colour scale below the tolerance.
pub const ERROR_DECADES: f64 = 6.0;

/// Where an error, as a fraction of what the tolerance allows, sits on the colour scale: 0 at
/// 10^-6 of the tolerance or less, 1 at the tolerance and beyond, log in between; so an error of
/// 1e-7 in a check that allows 1e-5 is pale, not alarming.
pub fn error_position(ratio: f64) -> f64 {
    if ratio <= 0.0 || !ratio.is_finite() {
        return if ratio.is_nan() || ratio == f64::INFINITY {
            1.0
        } else {
            0.0
        };
    }
    ((ratio.log10() + ERROR_DECADES) / ERROR_DECADES).clamp(0.0, 1.0)
}

/// How dark a position on the error scale is drawn: quadratic, so that errors a thousand times
/// below the tolerance stay pale and only those near it are dark.
fn error_shade(position: f64) -> f64 {
    position * position
}

/// The error colour scale: a gradient bar from 10^-6 of the tolerance to the tolerance, in
/// the sequential colours of the error heatmap, with its ticks.
fn error_legend(ui: &mut egui::Ui, lang: tplab_lessons::Lang, allowed: f64) {
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    let w = (16.0 * size).min(ui.available_width());
    let (resp, painter) = ui.allocate_painter(egui::vec2(w, 2.6 * size), egui::Sense::hover());
    let bar = egui::Rect::from_min_size(resp.rect.min, egui::vec2(w, 0.9 * size));
    let n = 48;
    for i in 0..n {
        let x0 = bar.left() + w * i as f32 / n as f32;
        let x1 = bar.left() + w * (i + 1) as f32 / n as f32;
        painter.rect_filled(
            egui::Rect::from_x_y_ranges(x0..=x1 + 0.5, bar.y_range()),
            0.0,
            sequential(error_shade((i as f64 + 0.5) / n as f64)),
        );
    }
    painter.rect_stroke(
        bar,
        0.0,
        egui::Stroke::new(1.0, ui.visuals().weak_text_color()),
        egui::StrokeKind::Outside,
    );
    let text = ui.visuals().text_color();
    for k in 0..=3 {
        let exp = -(ERROR_DECADES as i32) + 2 * k;
        let x = bar.left() + w * k as f32 / 3.0;
        let label = if exp == 0 {
            crate::i18n::t(lang, "vf-scale-tol")
        } else {
            crate::i18n::sci(lang, allowed * 10f64.powi(exp), 0)
        };
        let anchor = match k {
            0 => egui::Align2::LEFT_TOP,
            3 => egui::Align2::RIGHT_TOP,
            _ => egui::Align2::CENTER_TOP,
        };
        painter.text(
            egui::pos2(x, bar.bottom() + 2.0),
            anchor,
            label,
            egui::FontId::proportional(0.8 * size),
            text,
        );
    }
    a11y_label(&resp, &crate::i18n::t(lang, "vf-a11y-scale"));
}

/// A pooled matrix as a texture.
struct Heatmap {
    texture: egui::TextureHandle,
    /// Rows × columns of the full matrix.
    shape: [usize; 2],
}

fn heatmap(ctx: &egui::Context, name: &str, a: &Array2<f64>, scale: f64, error: bool) -> Heatmap {
    let (rows, cols) = a.dim();
    let (pr, pc, vals) = pool(rows, cols, |r, c| a[[r, c]], error);
    let pixels = vals
        .iter()
        .map(|v| {
            if error {
                sequential(error_shade(error_position(
                    v / scale.max(f64::MIN_POSITIVE),
                )))
            } else {
                diverging(v / scale.max(f64::MIN_POSITIVE))
            }
        })
        .collect();
    let image = egui::ColorImage::new([pc, pr], pixels);
    Heatmap {
        texture: ctx.load_texture(name, image, egui::TextureOptions::NEAREST),
        shape: [rows, cols],
    }
}

/// Textures of one all-reduce.
struct CollectiveMaps {
    /// Which all-reduce: layer, pass, op.
    layer: usize,
    pass: tplab_engine::block::op::Pass,
    op: tplab_engine::block::Op,
    partials: Vec<Heatmap>,
    result: Heatmap,
    reference: Heatmap,
    error: Heatmap,
    max_abs_error: f64,
    max_rel_error: f64,
    /// The absolute error the tolerance allows (the top of the error colour scale).
    allowed_abs: f64,
}

impl CollectiveMaps {
    /// `layer 0, forward: g after attention`, in the learner's language.
    fn label(&self, lang: tplab_lessons::Lang) -> String {
        crate::i18n::t_args(
            lang,
            "vf-collective-label",
            &[
                ("layer", self.layer.to_string()),
                ("pass", crate::widgets::pass_name(lang, self.pass)),
                ("op", crate::widgets::op_label(lang, self.op)),
            ],
        )
    }
}

/// A finished run with its textures.
struct Shown {
    report: RunReport,
    maps: Vec<CollectiveMaps>,
}

/// Verify state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Verify {
    /// Index of the all-reduce shown.
    pub selected: usize,
    #[serde(skip)]
    ran_for: Option<Config>,
    #[serde(skip)]
    job: Option<Background<RunReport>>,
    #[serde(skip)]
    shown: Option<Result<Shown, String>>,
}

fn build_maps(ctx: &egui::Context, report: &RunReport) -> Vec<CollectiveMaps> {
    report
        .collectives
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // One colour scale for the partials, the result and the reference: compare them.
            // The 99th percentile of |value|, so a few outliers do not wash the maps out.
            let mut mags: Vec<f64> = c
                .partials
                .iter()
                .chain([&c.result, &c.reference])
                .flat_map(|a| a.iter().step_by(7))
                .map(|v| v.abs())
                .collect();
            mags.sort_by(f64::total_cmp);
            let scale = mags.get(mags.len() * 99 / 100).copied().unwrap_or(1.0);
            let err =
                tplab_engine::block::verify::error_matrix(c.result.view(), c.reference.view());
            // Errors coloured against what the tolerance allows (log scale, see error_position).
            let err_scale = c.check.tolerance * c.check.reference_max_abs.max(1.0);
            CollectiveMaps {
                layer: c.layer,
                pass: c.pass,
                op: c.op,
                partials: c
                    .partials
                    .iter()
                    .take(MAX_DRAWN_RANKS)
                    .enumerate()
                    .map(|(r, p)| heatmap(ctx, &format!("p{i}-{r}"), p, scale, false))
                    .collect(),
                result: heatmap(ctx, &format!("r{i}"), &c.result, scale, false),
                reference: heatmap(ctx, &format!("f{i}"), &c.reference, scale, false),
                error: heatmap(ctx, &format!("e{i}"), &err, err_scale, true),
                max_abs_error: c.check.max_abs_error,
                max_rel_error: c.check.max_rel_error,
                allowed_abs: err_scale,
            }
        })
        .collect()
}

impl View for Verify {
    fn id(&self) -> &'static str {
        "verify"
    }

    fn title(&self) -> &'static str {
        "Verify"
    }

    fn logic(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        match background::finished(&mut self.job, ctx) {
            Some(Ok(report)) => {
                let maps = build_maps(ctx, &report);
                self.selected = self.selected.min(maps.len().saturating_sub(1));
                self.shown = Some(Ok(Shown { report, maps }));
            }
            Some(Err(e)) => self.shown = Some(Err(e)),
            None => {}
        }
        let cfg = shared.scenario.config();
        // Runs only configurations the engine accepts; the error shows in `ui` otherwise.
        // One run at a time: a change made meanwhile starts the next run when this one ends.
        if self.job.is_none()
            && self.ran_for.as_ref() != Some(cfg)
            && cfg.validate_for_cpu().is_ok()
        {
            self.start(ctx, cfg.clone());
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, crate::i18n::t(lang, "vf-title"));
        let cfg = shared.scenario.config().clone();
        if let Err(err) = cfg.validate_for_cpu() {
            if let Some(c) = config_error_ui(ui, &err, &cfg) {
                shared.scenario.set_config(c);
            }
            return;
        }
        ui.horizontal(|ui| {
            if let Some(job) = &self.job {
                let (frac, stage) = job.progress();
                ui.spinner();
                ui.add(
                    egui::ProgressBar::new(frac)
                        .desired_width(240.0)
                        .text(format!(
                            "{} ({} s)",
                            stage_text(lang, stage),
                            crate::i18n::num(lang, job.elapsed_s(), 1)
                        )),
                );
            } else if ui.button(crate::i18n::t(lang, "vf-run-again")).clicked() {
                self.start(ui.ctx(), cfg.clone());
            }
        });
        match &self.shown {
            None => {}
            Some(Err(e)) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    crate::i18n::t_args(lang, "vf-failed", &[("error", e.clone())]),
                );
            }
            Some(Ok(shown)) => shown_ui(ui, shown, &mut self.selected),
        }
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

impl Verify {
    fn start(&mut self, ctx: &egui::Context, cfg: Config) {
        let run_cfg = cfg.clone();
        self.job = Some(Background::once(ctx, move |progress| {
            let report = |stage: &str, frac: f32| progress.report(frac, stage);
            run::run_with_progress(&run_cfg, &report).map_err(|e| e.to_string())
        }));
        self.ran_for = Some(cfg);
    }
}

fn shown_ui(ui: &mut egui::Ui, shown: &Shown, selected: &mut usize) {
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    let ta = |id: &str, args: &[(&str, String)]| crate::i18n::t_args(lang, id, args);
    let report = &shown.report;
    verdict_ui(
        ui,
        &report.verification,
        &crate::widgets::scenario_words(lang, &report.config),
        None,
    );
    ui.separator();
    if shown.maps.is_empty() {
        ui.label(tr("vf-tp1"));
        return;
    }
    egui::ComboBox::from_label(tr("vf-all-reduce"))
        .selected_text(
            shown
                .maps
                .get(*selected)
                .map(|m| m.label(lang))
                .unwrap_or_default(),
        )
        .show_ui(ui, |ui| {
            for (i, m) in shown.maps.iter().enumerate() {
                ui.selectable_value(selected, i, m.label(lang));
            }
        });
    let Some(m) = shown.maps.get(*selected) else {
        return;
    };
    let tp = report.config.tp;
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    egui::ScrollArea::both()
        .id_salt("verify-maps")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let width = ui.available_width();
            let tile_w = ((width - 2.0 * size) / (m.partials.len() as f32 + 0.5))
                .clamp(5.0 * size, 14.0 * size);
            let tile = |h: &Heatmap| {
                let [r, c] = h.shape;
                let aspect = r as f32 / c.max(1) as f32;
                egui::Vec2::new(tile_w, (tile_w * aspect).clamp(4.0 * size, tile_w))
            };
            ui.label(ta(
                if m.pass == tplab_engine::block::op::Pass::Backward {
                    "vf-before-backward"
                } else {
                    "vf-before"
                },
                &[
                    ("rows", m.result.shape[0].to_string()),
                    ("cols", m.result.shape[1].to_string()),
                ],
            ));
            ui.horizontal_wrapped(|ui| {
                for (r, h) in m.partials.iter().enumerate() {
                    // A picture that no longer fits the row starts the next (a phone).
                    crate::widgets::keep_on_one_row(ui, tile(h).x);
                    ui.vertical(|ui| {
                        ui.label(format!("GPU {r}"));
                        ui.image((h.texture.id(), tile(h)));
                    });
                }
                if tp > MAX_DRAWN_RANKS {
                    ui.label(ta(
                        "vf-more-gpus",
                        &[("count", (tp - MAX_DRAWN_RANKS).to_string())],
                    ));
                }
            });
            let big = |h: &Heatmap| tile(h) * 1.6;
            ui.horizontal_wrapped(|ui| {
                crate::widgets::keep_on_one_row(ui, big(&m.result).x);
                ui.vertical(|ui| {
                    ui.label(tr("vf-after"));
                    ui.image((m.result.texture.id(), big(&m.result)));
                });
                crate::widgets::keep_on_one_row(ui, big(&m.reference).x);
                ui.vertical(|ui| {
                    ui.label(tr("vf-reference"));
                    ui.image((m.reference.texture.id(), big(&m.reference)));
                });
                crate::widgets::keep_on_one_row(ui, big(&m.error).x.max(16.0 * size));
                ui.vertical(|ui| {
                    // Read as it is written (its own name): the errors, in numbers.
                    ui.label(ta(
                        "vf-error",
                        &[
                            ("abs", crate::i18n::sci(lang, m.max_abs_error, 3)),
                            ("rel", crate::i18n::sci(lang, m.max_rel_error, 3)),
                        ],
                    ));
                    let resp = ui.image((m.error.texture.id(), big(&m.error)));
                    a11y_label(&resp, &tr("vf-a11y-heatmap"));
                    ui.add(egui::Label::new(tr("vf-scale-caption")).wrap());
                    error_legend(ui, lang, m.allowed_abs);
                });
            });
        });
}

/// The run's stage (`tplab_engine::run::run_with_progress` names them `weights`, `reference`,
/// `sharded`, `verify`) in the learner's language; anything else as reported.
fn stage_text(lang: tplab_lessons::Lang, stage: &str) -> String {
    let id = match stage {
        "weights" => "vf-stage-weights",
        "reference" => "vf-stage-reference",
        "sharded" => "vf-stage-sharded",
        "verify" => "vf-stage-verify",
        other => return other.to_string(),
    };
    crate::i18n::t(lang, id)
}

#[cfg(test)]
mod tolerance_tests {
    use crate::widgets::verdict::tolerance_reason;
    use tplab_engine::block::verify::Tolerance;

    #[test]
    fn the_tolerance_reads_the_same_as_the_engine_in_english_and_exists_in_turkish() {
        let cfg = tplab_engine::config::Config::default();
        for dtype in [
            tplab_engine::dtype::DType::F64,
            tplab_engine::dtype::DType::F32,
        ] {
            let tol = Tolerance::for_run(&cfg, dtype, 3.5);
            assert_eq!(tolerance_reason(tplab_lessons::Lang::En, &tol), tol.reason);
            let tr = tolerance_reason(tplab_lessons::Lang::Tr, &tol);
            assert_ne!(tr, tol.reason);
            // Turkish numbers: a decimal comma.
            assert!(
                tr.contains("3,50") && tr.contains(&dtype.to_string()) && !tr.contains("3.50"),
                "{tr}"
            );
        }
    }
}
