//! Train: a tiny character-level GPT trained on the guide at TP 1, 2 and 4 in lockstep, the loss
//! curves drawn on top of each other while it trains. The training is the engine's
//! ([`train::Lockstep`]), one step at every TP per background slice ([`TrainJob`]); this view
//! only draws the losses it reports.

use crate::background::{self, Background, Step, Stepped};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::gpu_color;
use egui_plot::{Legend, Line, Plot, PlotPoints};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tplab_engine::labs::train::{
    self, Corpus, Curves, Lockstep, Optimizer, TrainConfig, TrainError,
};
use tplab_engine::{dtype::DType, dtype::Element};
use tplab_lessons::Lang;

/// The TP sizes trained side by side (the model has 4 heads).
pub const TPS: [usize; 3] = [1, 2, 4];

/// Train view state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Train {
    pub config: TrainConfig,
    #[serde(skip)]
    job: Option<Background<Result<Curves, TrainError>>>,
    /// Whether the first show has started the training (once per run of the app).
    #[serde(skip)]
    autostarted: bool,
    #[serde(skip)]
    live: Arc<Mutex<Vec<Vec<f64>>>>,
    #[serde(skip)]
    stop: Arc<AtomicBool>,
    #[serde(skip)]
    result: Option<Result<Curves, Failure>>,
}

/// Why a run ended without curves.
enum Failure {
    /// The engine refused the configuration or the run diverged (worded in the language shown
    /// when it is drawn, so switching language rewords it).
    Train(TrainError),
    /// The background job's own failure (its worker stopped without a result).
    Job(String),
}

/// Training at [`TPS`] in lockstep, one optimizer step at every TP per [`Stepped::step`]: the
/// losses so far go to `live` (the plot), and `stop` ends the run early with the curves so far.
/// The engine's error ends the job as its result (typed, for the view to word), not as a
/// [`Step::Failed`] string.
pub struct TrainJob<T> {
    cfg: TrainConfig,
    run: Option<Lockstep<T>>,
    live: Arc<Mutex<Vec<Vec<f64>>>>,
    stop: Arc<AtomicBool>,
}

impl<T> TrainJob<T> {
    pub fn new(cfg: TrainConfig, live: Arc<Mutex<Vec<Vec<f64>>>>, stop: Arc<AtomicBool>) -> Self {
        Self {
            cfg,
            run: None,
            live,
            stop,
        }
    }
}

impl<T: Element> Stepped for TrainJob<T> {
    type Output = Result<Curves, TrainError>;

    fn step(&mut self) -> Step<Self::Output> {
        // The models are built in the first slice, not on the UI thread.
        let mut run = match self.run.take() {
            Some(run) => run,
            None => match Lockstep::new(&self.cfg, &Corpus::guide(), &TPS) {
                Ok(run) => run,
                Err(e) => return Step::Done(Err(e)),
            },
        };
        if run.finished() || self.stop.load(Ordering::SeqCst) {
            return Step::Done(Ok(run.into_curves()));
        }
        if let Err(e) = run.step() {
            return Step::Done(Err(e));
        }
        if let Ok(mut l) = self.live.lock() {
            l.resize(TPS.len(), Vec::new());
            for (shown, losses) in l.iter_mut().zip(run.losses()) {
                shown.extend_from_slice(&losses[shown.len().min(losses.len())..]);
            }
        }
        let done = run.steps_done();
        self.run = Some(run);
        Step::Progress(
            done as f32 / self.cfg.steps.max(1) as f32,
            format!("step {done}/{}", self.cfg.steps),
        )
    }
}

/// The engine's training error in the learner's language (English: the engine's sentence, what
/// `tplab train` prints).
pub fn train_error_text(lang: Lang, e: &TrainError) -> String {
    let n = |v: usize| v.to_string();
    // A number as the engine writes it (`-0.5`, `1e300`, `NaN`), with the language's decimal mark.
    let x = |s: String| crate::i18n::num_text(lang, &s);
    let a = |id: &str, args: &[(&str, String)]| crate::i18n::t_args(lang, id, args);
    match e {
        TrainError::Config(c) => crate::widgets::config_error_text(lang, c),
        TrainError::Vocab(v) => crate::widgets::errors::vocab_error_text(lang, v),
        TrainError::Collective(c) => crate::widgets::errors::collective_error_text(lang, c),
        TrainError::Exec(tplab_engine::block::exec::design::ExecError::Collective(c)) => {
            crate::widgets::errors::collective_error_text(lang, c)
        }
        // The walk's own errors mean the engine's program and shards disagree (a bug, not an
        // input a learner can fix): the engine's sentence as it is.
        TrainError::Exec(other) => other.to_string(),
        TrainError::NoSteps => a("tr-err-no-steps", &[]),
        TrainError::TooManySteps { steps, max } => a(
            "tr-err-too-many-steps",
            &[("steps", n(*steps)), ("max", n(*max))],
        ),
        TrainError::BadLearningRate { lr } => a("tr-err-lr", &[("lr", x(lr.to_string()))]),
        TrainError::TextTooShort { chars, seq } => a(
            "tr-err-text-short",
            &[("chars", n(*chars)), ("seq", n(*seq))],
        ),
        TrainError::Diverged {
            step,
            steps,
            tp,
            loss,
            lr,
        } => a(
            "tr-err-diverged",
            &[
                ("step", n(*step)),
                ("steps", n(*steps)),
                ("tp", n(*tp)),
                ("loss", x(loss.to_string())),
                ("lr", x(format!("{lr:e}"))),
            ],
        ),
    }
}

impl Train {
    fn start(&mut self, ctx: &egui::Context) {
        let cfg = self.config.clone();
        let live = Arc::clone(&self.live);
        let stop = Arc::clone(&self.stop);
        stop.store(false, Ordering::SeqCst);
        if let Ok(mut l) = live.lock() {
            l.clear();
        }
        self.result = None;
        self.job = Some(match cfg.dtype {
            DType::F64 => Background::spawn(ctx, TrainJob::<f64>::new(cfg, live, stop)),
            _ => Background::spawn(ctx, TrainJob::<f32>::new(cfg, live, stop)),
        });
    }
}

/// Characters in the guide's corpus, and how many different ones (the model's alphabet).
fn corpus_stats() -> (usize, usize) {
    static STATS: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
    *STATS.get_or_init(|| {
        let chars: std::collections::BTreeSet<char> = train::CORPUS.chars().collect();
        (train::CORPUS.chars().count(), chars.len())
    })
}

impl View for Train {
    fn id(&self) -> &'static str {
        "train"
    }

    fn title(&self) -> &'static str {
        "Train"
    }

    fn logic(&mut self, ctx: &egui::Context, _shared: &mut Shared) {
        if let Some(r) = background::finished(&mut self.job, ctx) {
            self.result = Some(match r {
                Ok(Ok(c)) => Ok(c),
                Ok(Err(e)) => Err(Failure::Train(e)),
                Err(e) => Err(Failure::Job(e)),
            });
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        // First shown: the training starts by itself (its curves grow while the learner reads).
        if shared.autostart_jobs && !self.autostarted {
            self.autostarted = true;
            if self.job.is_none() && self.result.is_none() {
                self.start(ui.ctx());
            }
        }
        let _shared = shared;
        // The page scrolls: at 1280x720 in presenter mode its lower half ran below the window.
        crate::widgets::scrolling_page(ui, "train-page", |ui| self.page(ui, _shared));
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

impl Train {
    /// The view's page, inside [`View::ui`]'s scroll area.
    fn page(&mut self, ui: &mut egui::Ui, _shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| crate::i18n::t(lang, id);
        crate::widgets::links::view_heading(ui, tr("tr-title"));
        let (corpus_len, alphabet) = corpus_stats();
        ui.label(crate::i18n::t_args(
            lang,
            "tr-intro",
            &[
                ("layers", self.config.layers.to_string()),
                ("hidden", self.config.hidden.to_string()),
                ("heads", self.config.heads.to_string()),
                ("chars", corpus_len.to_string()),
            ],
        ));
        let running = self.job.is_some();
        ui.add_enabled_ui(!running, |ui| {
            ui.horizontal_wrapped(|ui| {
                let l = ui.label(tr("tr-steps"));
                ui.add(egui::DragValue::new(&mut self.config.steps).range(1..=5000))
                    .labelled_by(l.id);
                let l = ui.label(tr("tr-lr"));
                ui.add(
                    egui::DragValue::new(&mut self.config.lr)
                        .range(1e-5..=1.0)
                        .speed(1e-4)
                        .custom_formatter(crate::widgets::widget_number(lang))
                        .custom_parser(crate::widgets::parse_number),
                )
                .on_hover_text(tr("tr-lr-range"))
                .labelled_by(l.id);
                ui.selectable_value(&mut self.config.optimizer, Optimizer::Adam, "Adam");
                ui.selectable_value(&mut self.config.optimizer, Optimizer::Sgd, "SGD");
                ui.selectable_value(&mut self.config.dtype, DType::F32, "f32");
                ui.selectable_value(&mut self.config.dtype, DType::F64, "f64");
                let mut gqa = self.config.kv_heads.is_some();
                if ui
                    .checkbox(&mut gqa, tr("tr-gqa"))
                    .on_hover_text(tr("tr-gqa-hint"))
                    .changed()
                {
                    self.config.kv_heads = gqa.then_some(2);
                }
            });
        });
        ui.horizontal_wrapped(|ui| {
            if running {
                if ui.button(tr("tr-stop")).clicked() {
                    self.stop.store(true, Ordering::SeqCst);
                }
            } else if ui.button(tr("tr-start")).clicked() {
                self.start(ui.ctx());
            }
            let done = self
                .live
                .lock()
                .map(|l| l.first().map_or(0, Vec::len))
                .unwrap_or(0);
            let frac = done as f32 / self.config.steps.max(1) as f32;
            ui.add(
                egui::ProgressBar::new(frac)
                    .desired_width(260.0)
                    .text(crate::i18n::t_args(
                        lang,
                        "tr-progress",
                        &[
                            ("done", done.to_string()),
                            ("steps", self.config.steps.to_string()),
                        ],
                    )),
            );
        });
        if let Some(Err(e)) = &self.result {
            let error = match e {
                Failure::Train(e) => train_error_text(lang, e),
                Failure::Job(e) => e.clone(),
            };
            ui.colored_label(
                ui.visuals().error_fg_color,
                crate::i18n::t_args(lang, "tr-failed", &[("error", error)]),
            );
        }
        // Points straight from the shared losses (no intermediate copy of the curves).
        let curves: Vec<Vec<[f64; 2]>> = self
            .live
            .lock()
            .map(|l| {
                l.iter()
                    .map(|c| {
                        c.iter()
                            .enumerate()
                            .map(|(s, &v)| [(s + 1) as f64, v])
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Ok(c)) = &self.result {
            let gaps = c.max_rel_gap();
            ui.label(crate::i18n::t_args(
                lang,
                "tr-finished",
                &[
                    (
                        "first",
                        crate::i18n::num(lang, c.losses[0].first().copied().unwrap_or(f64::NAN), 4),
                    ),
                    (
                        "last",
                        crate::i18n::num(lang, c.losses[0].last().copied().unwrap_or(f64::NAN), 4),
                    ),
                    (
                        "gap2",
                        crate::i18n::sci(lang, gaps.get(1).copied().unwrap_or(0.0), 1),
                    ),
                    (
                        "gap4",
                        crate::i18n::sci(lang, gaps.get(2).copied().unwrap_or(0.0), 1),
                    ),
                ],
            ));
        }
        let dark = ui.visuals().dark_mode;
        let has_curves = curves.iter().filter(|c| !c.is_empty()).count() > 1;
        // Room under the plot for the note on why one curve shows, and the numbers' table.
        let note_h = 3.0 * egui::TextStyle::Body.resolve(ui.style()).size * 1.4
            + ui.spacing().interact_size.y
            + ui.spacing().item_spacing.y;
        let table = curves.clone();
        Plot::new("train-curves")
            .legend(Legend::default().follow_insertion_order(true))
            .height((ui.available_height() - 10.0 - note_h).max(320.0))
            .x_axis_label(tr("tr-axis-step"))
            .y_axis_label(tr("tr-axis-loss"))
            .x_axis_formatter(crate::widgets::axis_numbers(lang))
            .y_axis_formatter(crate::widgets::axis_numbers(lang))
            .label_formatter(crate::widgets::hover_numbers(
                lang,
                tr("tr-axis-step"),
                tr("tr-axis-loss"),
            ))
            // From step 1 to the last step and from 0 to the loss of a uniform guess over the
            // corpus's characters (where training starts): no empty negative axes before a run.
            .include_x(1.0)
            .include_x(self.config.steps.max(2) as f64)
            .include_y(0.0)
            .include_y((alphabet.max(2) as f64).ln())
            .allow_scroll(false)
            .show(ui, |plot| {
                for (i, pts) in curves.into_iter().enumerate() {
                    // Thinner lines for larger TP, dashed after TP=1, so the ones underneath
                    // stay visible where the curves coincide.
                    let style = match i {
                        0 => egui_plot::LineStyle::Solid,
                        1 => egui_plot::LineStyle::dashed_loose(),
                        _ => egui_plot::LineStyle::dotted_dense(),
                    };
                    plot.line(
                        Line::new(format!("TP={}", TPS[i]), PlotPoints::from(pts))
                            .color(gpu_color(i, dark))
                            .width(3.0 - i as f32)
                            .style(style),
                    );
                }
            });
        if has_curves {
            // What the picture shows, said of the curves on screen: they coincide, or (a
            // learning rate too high) the loss rose and the TP sizes' rounding grew apart.
            let note = match curves_apart(&table) {
                None => tr("tr-coincide"),
                Some(apart) => crate::i18n::t_args(
                    lang,
                    if apart.rose { "tr-rose" } else { "tr-apart" },
                    &[
                        ("first", crate::i18n::num(lang, apart.first, 2)),
                        ("last", crate::i18n::num(lang, apart.last, 2)),
                        ("gap", crate::i18n::sci(lang, apart.gap, 1)),
                        (
                            "lr",
                            crate::i18n::num_text(lang, &self.config.lr.to_string()),
                        ),
                    ],
                ),
            };
            ui.add(egui::Label::new(note).wrap());
        }
        curves_table(ui, lang, &table);
    }
}

/// How far the plotted curves are apart where they do not coincide on screen.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Apart {
    /// TP=1's loss at the first and the last step plotted.
    first: f64,
    last: f64,
    /// The largest relative gap of any curve to TP=1's at a step both reached.
    gap: f64,
    /// The loss ended above where it started (the run diverged).
    rose: bool,
}

/// `None` where every curve stays within half a percent of TP=1's (under a line's width on the
/// plot) and the loss did not rise; else how far apart they are.
fn curves_apart(curves: &[Vec<[f64; 2]>]) -> Option<Apart> {
    let base = curves.first()?;
    let (first, last) = (base.first()?[1], base.last()?[1]);
    let gap = curves[1..]
        .iter()
        .flat_map(|c| c.iter().zip(base))
        .map(|(a, b)| ((a[1] - b[1]) / b[1]).abs())
        .fold(
            0.0_f64,
            |m, g| if g.is_nan() { f64::INFINITY } else { m.max(g) },
        );
    let rose = last > first || last.is_nan();
    (rose || gap > 5e-3).then_some(Apart {
        first,
        last,
        gap,
        rose,
    })
}

/// The curves as numbers (what a screen reader reads, and what a learner copies): the loss
/// at every step for each TP, at most 20 rows (every k-th step and the last).
fn curves_table(ui: &mut egui::Ui, lang: tplab_lessons::Lang, curves: &[Vec<[f64; 2]>]) {
    let steps = curves.iter().map(Vec::len).max().unwrap_or(0);
    if steps == 0 {
        return;
    }
    egui::CollapsingHeader::new(crate::i18n::t(lang, "tr-table"))
        .id_salt("train-table")
        .show(ui, |ui| {
            egui::ScrollArea::vertical()
                .id_salt("train-table-scroll")
                .max_height(240.0)
                .show(ui, |ui| {
                    egui::Grid::new("train-table-grid")
                        .striped(true)
                        .show(ui, |ui| {
                            ui.strong(crate::i18n::t(lang, "tr-axis-step"));
                            for (i, c) in curves.iter().enumerate() {
                                if !c.is_empty() {
                                    ui.strong(format!("TP={}", TPS[i]));
                                }
                            }
                            ui.end_row();
                            let every = steps.div_ceil(20).max(1);
                            let rows = (0..steps).filter(|s| s % every == 0 || s + 1 == steps);
                            for s in rows {
                                ui.label((s + 1).to_string());
                                for c in curves.iter().filter(|c| !c.is_empty()) {
                                    match c.get(s) {
                                        Some([_, v]) => ui.label(crate::i18n::num(lang, *v, 4)),
                                        None => ui.label("—"),
                                    };
                                }
                                ui.end_row();
                            }
                        });
                });
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caption_says_coincide_only_where_the_curves_do() {
        let curve = |f: fn(f64) -> f64| {
            (1..=50)
                .map(|s| [s as f64, f(s as f64)])
                .collect::<Vec<_>>()
        };
        let trained = curve(|s| 4.7 - 2.0 * (s / 50.0));
        let same = vec![trained.clone(), trained.clone(), trained.clone()];
        assert_eq!(curves_apart(&same), None);
        // A learning rate too high: the loss climbs and the TP sizes part.
        let up = curve(|s| 4.7 + s * s);
        let up2 = curve(|s| (4.7 + s * s) * (1.0 + 0.1 * s / 50.0));
        let a = curves_apart(&[up.clone(), up2, up]).expect("apart");
        assert!(a.rose && a.gap > 0.09, "{a:?}");
        // Falling, but apart by 2%: not "coincide" either.
        let off = curve(|s| (4.7 - 2.0 * (s / 50.0)) * 1.02);
        let b = curves_apart(&[trained.clone(), off, trained]).expect("apart");
        assert!(!b.rose && (b.gap - 0.02).abs() < 1e-9, "{b:?}");
    }
    use std::time::Duration;

    fn small() -> TrainConfig {
        TrainConfig {
            steps: 6,
            hidden: 16,
            ffn: 32,
            seq: 8,
            batch: 2,
            layers: 1,
            ..TrainConfig::default()
        }
    }

    fn wait(
        bg: &mut Background<Result<Curves, TrainError>>,
    ) -> Result<Result<Curves, TrainError>, String> {
        for _ in 0..20_000 {
            if let Some(r) = bg.poll(None) {
                return r;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("training did not finish");
    }

    #[test]
    fn the_job_in_steps_gives_the_one_shot_curves_and_fills_the_plot() {
        let cfg = small();
        let one_shot =
            train::train_curves::<f64>(&cfg, &Corpus::guide(), &TPS, &mut |_, _| true).unwrap();
        let live = Arc::new(Mutex::new(Vec::new()));
        let job = TrainJob::<f64>::new(cfg.clone(), Arc::clone(&live), Arc::default());
        // A zero budget: one slice (one step at every TP) per frame.
        let mut bg = Background::in_frames(job, Duration::ZERO);
        let stepped = wait(&mut bg).unwrap().unwrap();
        assert_eq!(stepped, one_shot);
        assert_eq!(*live.lock().unwrap(), one_shot.losses);
        assert_eq!(bg.progress(), (1.0, "step 6/6"));
        let mut on_thread = Background::on_thread(
            None,
            TrainJob::<f64>::new(cfg, Arc::default(), Arc::default()),
        );
        assert_eq!(wait(&mut on_thread).unwrap().unwrap(), one_shot);
    }

    #[test]
    fn stop_ends_with_the_curves_so_far_and_a_bad_config_fails() {
        let stop = Arc::new(AtomicBool::new(false));
        let job = TrainJob::<f32>::new(small(), Arc::default(), Arc::clone(&stop));
        let mut bg = Background::in_frames(job, Duration::ZERO);
        for _ in 0..3 {
            assert!(bg.poll(None).is_none());
        }
        stop.store(true, Ordering::SeqCst);
        let c = wait(&mut bg).unwrap().unwrap();
        // The first slice builds the models and runs step 1; two more slices, two more steps.
        assert_eq!(
            c.losses.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3; 3]
        );
        let bad = TrainConfig {
            heads: 3,
            ..small()
        };
        let mut bg = Background::in_frames(
            TrainJob::<f64>::new(bad, Arc::default(), Arc::default()),
            Duration::ZERO,
        );
        // The engine's error, typed (the view words it in the learner's language).
        assert!(
            matches!(wait(&mut bg), Ok(Err(TrainError::Config(_)))),
            "heads 3 must be refused"
        );
    }

    /// Numbers in a sentence, in order of appearance.
    fn numbers(s: &str) -> Vec<String> {
        s.split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The view's English is the engine's sentence (what `tplab train` prints) for every kind
    /// of training error; the Turkish differs and names the same numbers.
    #[test]
    fn training_errors_read_as_the_engine_in_english_and_exist_in_turkish() {
        use tplab_engine::collectives::CollectiveError;
        use tplab_engine::config::ConfigError;
        use tplab_engine::labs::vocab::VocabError;
        let errors = [
            TrainError::Config(ConfigError::Zero { field: "seq" }),
            TrainError::Vocab(VocabError::TpOutOfRange { tp: 9, max: 8 }),
            TrainError::Collective(CollectiveError::LengthMismatch {
                rank: 2,
                expected: 64,
                found: 48,
            }),
            TrainError::NoSteps,
            TrainError::TooManySteps {
                steps: 2_000_000,
                max: train::MAX_STEPS,
            },
            TrainError::BadLearningRate { lr: -0.5 },
            TrainError::BadLearningRate { lr: f64::NAN },
            TrainError::TextTooShort { chars: 7, seq: 64 },
            TrainError::Diverged {
                step: 12,
                steps: 50,
                tp: 2,
                loss: f64::INFINITY,
                lr: 1e300,
            },
            TrainError::Diverged {
                step: 3,
                steps: 20,
                tp: 4,
                loss: f64::NAN,
                lr: 2.5,
            },
        ];
        for e in errors {
            let display = e.to_string();
            assert_eq!(train_error_text(Lang::En, &e), display);
            let tr = train_error_text(Lang::Tr, &e);
            assert_ne!(tr, display);
            assert!(!tr.contains("tr-err") && !tr.contains('['), "{tr}");
            assert_eq!(numbers(&tr), numbers(&display), "{tr} vs {display}");
        }
        // A decimal in Turkish takes a comma.
        let lr = train_error_text(Lang::Tr, &TrainError::BadLearningRate { lr: -0.5 });
        assert!(lr.contains("-0,5") && !lr.contains("0.5"), "{lr}");
    }
}
