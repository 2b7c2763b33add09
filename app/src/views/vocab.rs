//! Vocabulary: the embedding split by vocabulary rows with Megatron's padding, and the
//! cross-entropy over vocabulary-sharded logits (max, sum-exp and target reductions, no gather of
//! the logits). Everything comes from the engine's [`vocab`] module; the check runs off the UI
//! thread.

use crate::background::{self, Background};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::errors::vocab_error_text;
use crate::widgets::gpu_color;
use egui::{Rect, Sense, Vec2};
use serde::{Deserialize, Serialize};
use tplab_engine::dtype::DType;
use tplab_engine::labs::vocab::{self, VocabConfig, VocabReport};

/// Vocabulary view state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Vocab {
    pub vocab: usize,
    pub granularity: usize,
    #[serde(skip)]
    job: Option<Background<VocabReport>>,
    #[serde(skip)]
    shown: Option<Result<VocabReport, String>>,
}

impl Default for Vocab {
    fn default() -> Self {
        Self {
            vocab: 50257,
            granularity: vocab::DEFAULT_GRANULARITY,
            job: None,
            shown: None,
        }
    }
}

impl Vocab {
    fn config(&self, shared: &Shared) -> VocabConfig {
        let s = shared.scenario.config();
        VocabConfig {
            vocab: self.vocab,
            hidden: s.hidden,
            tokens: s.tokens(),
            tp: s.tp,
            granularity: self.granularity,
            seed: s.seed,
            algorithm: s.algorithm,
        }
    }
}

impl View for Vocab {
    fn id(&self) -> &'static str {
        "vocab"
    }

    fn title(&self) -> &'static str {
        "Vocabulary"
    }

    fn logic(&mut self, ctx: &egui::Context, _shared: &mut Shared) {
        if let Some(r) = background::finished(&mut self.job, ctx) {
            self.shown = Some(r);
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        // The page scrolls: at 1280x720 in presenter mode its lower half ran below the window.
        crate::widgets::scrolling_page(ui, "vocab-page", |ui| self.page(ui, shared));
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

/// The padded vocabulary as one bar: each GPU's rows in its colour, padding in grey.
fn split_bar(ui: &mut egui::Ui, cfg: &VocabConfig) {
    let dark = ui.visuals().dark_mode;
    let lang = crate::widgets::lang(ui);
    let width = ui.available_width().min(900.0);
    let padded = cfg.padded_vocab() as f32;
    // Each GPU's rows under the bar, inclusive, at the text's size (presenter mode scales both);
    // on two staggered lines when a label is wider than its GPU's part of the bar.
    let font = egui::TextStyle::Body.resolve(ui.style());
    let text = ui.visuals().text_color();
    let labels: Vec<(usize, std::sync::Arc<egui::Galley>)> = (0..cfg.tp)
        .filter(|_| cfg.tp <= 16)
        .map(|r| (r, cfg.rank_range(r)))
        .filter(|(_, range)| !range.is_empty())
        .map(|(r, range)| {
            let words = crate::i18n::t_args(
                lang,
                "vo-rank-rows",
                &[
                    ("rank", r.to_string()),
                    ("first", range.start.to_string()),
                    ("last", (range.end - 1).to_string()),
                ],
            );
            (r, ui.painter().layout_no_wrap(words, font.clone(), text))
        })
        .collect();
    let line_h = font.size * 1.4;
    // Each label starts under its GPU's part of the bar (the last ends at the bar's right edge
    // rather than past it) and goes on the first line where it clears the label before it.
    let x0 = |id: usize| width * id as f32 / padded;
    let mut line_ends: Vec<f32> = Vec::new();
    let placed: Vec<(f32, usize, std::sync::Arc<egui::Galley>)> = labels
        .into_iter()
        .map(|(r, galley)| {
            let left = (x0(cfg.rank_range(r).start) + 2.0)
                .min(width - galley.size().x)
                .max(0.0);
            let line = match line_ends.iter().position(|&end| end + 6.0 <= left) {
                Some(i) => i,
                None => {
                    line_ends.push(0.0);
                    line_ends.len() - 1
                }
            };
            line_ends[line] = left + galley.size().x;
            (left, line, galley)
        })
        .collect();
    let lines = line_ends.len().max(1) as f32;
    let (resp, painter) =
        ui.allocate_painter(Vec2::new(width, 30.0 + line_h * lines), Sense::hover());
    let x = |id: usize| resp.rect.left() + x0(id);
    let top = resp.rect.top() + 2.0;
    for r in 0..cfg.tp {
        let range = cfg.rank_range(r);
        let real = cfg.real_range(r);
        let bar = |a: usize, b: usize| {
            Rect::from_min_max(
                egui::pos2(x(a), top),
                egui::pos2(x(b).max(x(a) + 1.0), top + 24.0),
            )
        };
        painter.rect_filled(bar(range.start, range.end), 0.0, gpu_color(r, dark));
        if real.end < range.end {
            painter.rect_filled(
                bar(real.end.max(range.start), range.end),
                0.0,
                ui.visuals().widgets.inactive.bg_fill,
            );
        }
    }
    for (left, line, galley) in placed {
        let pos = egui::pos2(resp.rect.left() + left, top + 26.0 + line as f32 * line_h);
        painter.galley(pos, galley, text);
    }
    crate::widgets::a11y_label(
        &resp,
        &crate::i18n::t_args(
            crate::widgets::lang(ui),
            "vo-split-a11y",
            &[
                ("rows", cfg.rows_per_rank().to_string()),
                ("padding", (cfg.padded_vocab() - cfg.vocab).to_string()),
            ],
        ),
    );
}

impl Vocab {
    /// The view's page, inside [`View::ui`]'s scroll area.
    fn page(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| crate::i18n::t(lang, id);
        let ta = |id: &str, args: &[(&str, String)]| crate::i18n::t_args(lang, id, args);
        crate::widgets::links::view_heading(ui, tr("vo-title"));
        ui.horizontal_wrapped(|ui| {
            let l = ui.label(tr("vo-vocab"));
            ui.add(egui::DragValue::new(&mut self.vocab).range(1..=1_000_000))
                .labelled_by(l.id);
            let l = ui.label(tr("vo-pad"));
            ui.add(egui::DragValue::new(&mut self.granularity).range(1..=4096))
                .labelled_by(l.id);
            ui.label("× TP");
        });
        let cfg = self.config(shared);
        if let Err(e) = cfg.validate() {
            ui.colored_label(
                ui.visuals().error_fg_color,
                ta("invalid-choice", &[("error", vocab_error_text(lang, &e))]),
            );
            return;
        }
        let dtype = match shared.scenario.config().dtype {
            DType::F64 => DType::F64,
            _ => DType::F32,
        };
        let padded = cfg.padded_vocab();
        ui.label(ta(
            "vo-intro",
            &[
                ("vocab", cfg.vocab.to_string()),
                ("padded", padded.to_string()),
                ("padding", (padded - cfg.vocab).to_string()),
                ("rows", cfg.rows_per_rank().to_string()),
                ("tp", cfg.tp.to_string()),
                ("hidden", cfg.hidden.to_string()),
                ("tokens", cfg.tokens.to_string()),
            ],
        ));
        split_bar(ui, &cfg);
        let (ce, gather) = vocab::ce_bytes_sent_per_rank(&cfg, dtype);
        ui.label(ta(
            "vo-ce",
            &[
                ("ce", crate::i18n::bytes(lang, ce)),
                ("tokens", cfg.tokens.to_string()),
                ("padded", padded.to_string()),
                ("gather", crate::i18n::bytes(lang, gather)),
                (
                    "ratio",
                    crate::i18n::num(lang, gather as f64 / ce.max(1) as f64, 0),
                ),
            ],
        ));
        egui::ScrollArea::horizontal()
            .id_salt("vocab-table")
            .show(ui, |ui| {
                egui::Grid::new("vocab-events")
                    .striped(true)
                    .show(ui, |ui| {
                        for h in [
                            "vo-col-pass",
                            "vo-col-event",
                            "vo-col-what",
                            "vo-col-shape",
                            "vo-col-sends",
                        ] {
                            ui.strong(tr(h));
                        }
                        ui.end_row();
                        for e in vocab::events(&cfg, dtype)
                            .iter()
                            .filter(|e| e.ranks.len() > 1 || e.ranks[0] == 0)
                        {
                            ui.label(crate::widgets::pass_name(lang, e.pass));
                            ui.label(crate::widgets::op_label(lang, e.op));
                            ui.label(match e.collective_kind() {
                                Some(k) => k.name().to_string(),
                                None => tr("vo-compute"),
                            });
                            ui.label(format!("[{}, {}]", e.output[0], e.output[1]));
                            ui.label(if e.is_collective() {
                                crate::i18n::bytes(lang, e.bytes_sent_per_rank)
                            } else {
                                "-".into()
                            });
                            ui.end_row();
                        }
                    });
            });
        ui.add_space(6.0);
        ui.horizontal(|ui| {
            if let Some(job) = &self.job {
                ui.spinner();
                ui.label(ta(
                    "vo-checking",
                    &[("seconds", crate::i18n::num(lang, job.elapsed_s(), 1))],
                ));
            } else if ui.button(tr("vo-check")).clicked() {
                let run_cfg = cfg.clone();
                self.job = Some(Background::once(ui.ctx(), move |_| {
                    let r = match dtype {
                        DType::F64 => vocab::run::<f64>(&run_cfg),
                        _ => vocab::run::<f32>(&run_cfg),
                    };
                    r.map_err(|e| e.to_string())
                }));
            }
        });
        match &self.shown {
            None => {}
            Some(Err(e)) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    ta("vo-check-failed", &[("error", e.clone())]),
                );
            }
            Some(Ok(r)) => {
                let failed = r.checks.iter().filter(|c| !c.passed).count();
                let worst = r
                    .checks
                    .iter()
                    .map(|c| c.max_rel_error)
                    .fold(0.0f64, f64::max);
                let text = ta(
                    "vo-result",
                    &[
                        (
                            "verdict",
                            tr(if failed == 0 {
                                "vo-passed"
                            } else {
                                "vo-failed"
                            }),
                        ),
                        ("loss", crate::i18n::num(lang, r.loss, 6)),
                        ("reference", crate::i18n::num(lang, r.reference_loss, 6)),
                        ("vocab", r.config.vocab.to_string()),
                        ("tp", r.config.tp.to_string()),
                        ("dtype", r.dtype.to_string()),
                        ("checks", r.checks.len().to_string()),
                        ("worst", crate::i18n::sci(lang, worst, 2)),
                        ("tolerance", crate::i18n::sci(lang, r.tolerance.relative, 2)),
                    ],
                );
                if failed == 0 {
                    ui.colored_label(egui::Color32::from_rgb(0x00, 0x9E, 0x73), text);
                } else {
                    ui.colored_label(ui.visuals().error_fg_color, text);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_lessons::Lang;
    use vocab::VocabError;

    /// The view's English is the engine's sentence for every kind of vocabulary error; the
    /// Turkish differs and names the same numbers and fields.
    #[test]
    fn vocabulary_errors_read_as_the_engine_in_english_and_exist_in_turkish() {
        let errors = [
            VocabError::Zero { field: "vocab" },
            VocabError::TpOutOfRange { tp: 9, max: 8 },
            VocabError::OverLimit {
                field: "granularity",
                value: 5000,
                max: 4096,
            },
            VocabError::TooLarge {
                elements: 123_456_789,
                padded: 160_768,
                hidden: 768,
                limit: 100_000_000,
            },
            VocabError::PaddingOverflow {
                vocab: 77,
                granularity: 4000,
                tp: 8,
                max_granularity: 3999,
            },
            VocabError::TooMuchMemory {
                needed_bytes: 3 << 30,
                limit_bytes: 2 << 30,
                tokens: 4096,
                padded: 50_304,
            },
        ];
        for e in errors {
            let display = e.to_string();
            assert_eq!(vocab_error_text(Lang::En, &e), display);
            let tr = vocab_error_text(Lang::Tr, &e);
            assert_ne!(tr, display);
            assert!(!tr.contains("vo-err") && !tr.contains("err-"), "{tr}");
            for word in display.split(|c: char| !c.is_ascii_alphanumeric()) {
                let number = word.chars().all(|c| c.is_ascii_digit()) && !word.is_empty();
                // Numbers carry over; the code words (`vocab`, `granularity`) are said in
                // Turkish words (issue 24: no English identifiers in Turkish text).
                if number {
                    assert!(tr.contains(word), "{tr} lacks {word}");
                }
            }
        }
    }
}
