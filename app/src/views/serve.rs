//! Serve: the tiny model answers a prompt at TP 1, 2 and 4 side by side, token by token, on
//! virtual GPUs (the engine's [`serve::Decoder`], on a worker thread); each token's measured
//! time split into compute and collectives, the KV cache per GPU growing, and the check against
//! the unsharded reference at the end. Below, the guide's 70B TP=4 serving scenario from the
//! serving cost model ([`serve_cost`]), a published measurement of tensor-parallel inference
//! the learner picks beside tplab's prediction of it ([`serve_published`]), and the scenario's
//! time per token against TP.

use crate::background::{self, Background};
use crate::i18n::{current_lang, t, t_args};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::gantt::{plot_key, KeyMark};
use crate::widgets::gpu_color;
use egui_plot::{Bar, BarChart, Line, Plot, PlotPoints, Points};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::models::Scenario;
use tplab_engine::labs::serve::{
    self, compare, reference_generate, sample, Decoder, Generation, Phase, Sampling, StepRecord,
    TinyModel,
};
use tplab_engine::labs::serve_cost::{self, DecodeTime, TpSweep};
use tplab_engine::labs::serve_published::{self, Measure, Published, Source, Split};
use tplab_engine::{collectives::Algorithm, dtype::DType};

/// The TP sizes decoded side by side (the tiny model has 4 heads).
pub const TPS: [usize; 3] = [1, 2, 4];
/// The TP sizes of the 70B curve.
pub const CURVE_TPS: [usize; 5] = [1, 2, 4, 8, 16];
/// Most tokens one request may ask for (the tiny model's context is 64 characters).
pub const MAX_TOKENS: usize = 48;
/// Most training steps before serving.
pub const MAX_TRAIN_STEPS: usize = 2000;
/// Highest sampling temperature (0: greedy).
pub const MAX_TEMPERATURE: f64 = 2.0;
/// The seed of the sampled decode: the same draws at every TP and in the reference.
const SAMPLING_SEED: u64 = 1;

/// One published figure and tplab's prediction of it: (predicted ms, its modeled decode step).
struct PublishedRow {
    figure: Published,
    predicted: Result<(f64, Option<DecodeTime>), String>,
}

/// Every published figure with its prediction.
fn published_rows() -> Vec<PublishedRow> {
    serve_published::published()
        .into_iter()
        .map(|figure| {
            let predicted = figure
                .predict_ms()
                .and_then(|ms| Ok((ms, figure.decode_step()?)))
                .map_err(|e| e.to_string());
            PublishedRow { figure, predicted }
        })
        .collect()
}

/// The published figure nearest to the guide's scenario (a 70B model at TP 4).
fn nearest_to_scenario() -> usize {
    serve_published::published()
        .iter()
        .position(|p| p.model == "llama2-70b" && p.tp == 4 && p.pp == 1 && p.prompt >= 2048)
        .unwrap_or(0)
}

/// One TP size's column, filled while it decodes.
#[derive(Clone, Default)]
struct Column {
    tp: usize,
    text: String,
    /// Measured (compute, collectives) milliseconds per step.
    times: Vec<(f64, f64)>,
    kv_bytes_per_gpu: u64,
    kv_tokens: usize,
}

#[derive(Clone, Default)]
struct Live {
    training: bool,
    columns: Vec<Column>,
}

/// The finished run: each TP's comparison with the reference.
#[derive(Clone)]
struct Done {
    sampling: Sampling,
    reference: String,
    /// (tp, same text, max logits error, passed)
    checks: Vec<(usize, bool, f64, bool)>,
    tolerance: f64,
    context: usize,
}

/// Serve view state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Serve {
    pub prompt: String,
    pub tokens: usize,
    /// Training steps of the tiny model before it serves (0: seeded random weights).
    pub train_steps: usize,
    /// Grouped-query attention (2 KV heads: TP=4 replicates them).
    pub gqa: bool,
    /// Serve the model tplab ships (multi-head attention) instead of training one.
    pub shipped: bool,
    /// Sampling temperature; 0 decodes greedily.
    pub temperature: f64,
    /// The published figure shown beside its prediction (index into the published table).
    pub published: usize,
    #[serde(skip)]
    published_rows: Option<Vec<PublishedRow>>,
    #[serde(skip)]
    job: Option<Background<Done>>,
    #[serde(skip)]
    live: Arc<Mutex<Live>>,
    #[serde(skip)]
    result: Option<Result<Done, String>>,
    #[serde(skip)]
    sweep: Option<Arc<Result<ScenarioSweeps, String>>>,
}

impl Default for Serve {
    fn default() -> Self {
        Self {
            prompt: "Tensor paralelliği".into(),
            tokens: 24,
            train_steps: 300,
            gqa: false,
            shipped: true,
            temperature: 0.0,
            published: nearest_to_scenario(),
            published_rows: None,
            job: None,
            live: Arc::default(),
            result: None,
            sweep: None,
        }
    }
}

/// Runs the whole request: training, lockstep decode at every TP, the reference, the checks.
fn serve_job(
    prompt: String,
    tokens: usize,
    train_steps: Option<usize>,
    gqa: bool,
    sampling: Sampling,
    live: &Mutex<Live>,
    repaint: &egui::Context,
) -> Result<Done, String> {
    let err = |e: serve::ServeError| e.to_string();
    let cfg = tplab_engine::labs::train::TrainConfig {
        steps: train_steps.unwrap_or(1).max(1),
        ..serve::tiny_serving_config(gqa.then_some(2), DType::F64)
    };
    let model = match train_steps {
        None => TinyModel::<f64>::shipped().map_err(err)?,
        Some(0) => TinyModel::<f64>::random(&cfg),
        Some(_) => TinyModel::<f64>::train(&cfg).map_err(err)?,
    };
    let ids = model.encode(&prompt).map_err(err)?;
    if ids.len() + tokens > model.context() {
        return Err(err(serve::ServeError::ContextTooLong {
            prompt: ids.len(),
            tokens,
            context: model.context(),
            room: model.context().saturating_sub(ids.len()),
        }));
    }
    let mut decoders = TPS
        .iter()
        .map(|&tp| Decoder::new(&model, tp, Algorithm::Ring))
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    if let Ok(mut l) = live.lock() {
        l.training = false;
    }
    let mut records: Vec<Vec<StepRecord>> = vec![Vec::new(); TPS.len()];
    let mut next: Vec<Vec<usize>> = vec![ids.clone(); TPS.len()];
    for i in 0..tokens {
        for (k, dec) in decoders.iter_mut().enumerate() {
            let position = dec.len();
            let so = dec.step(&next[k]).map_err(err)?;
            let token = sample(&so.logits, sampling, i);
            let kv = dec.kv_cache_bytes_per_rank();
            if let Ok(mut l) = live.lock() {
                let c = &mut l.columns[k];
                c.text.push_str(&model.decode(&[token]));
                c.times.push((so.compute_s * 1e3, so.collective_s * 1e3));
                c.kv_bytes_per_gpu = kv.first().copied().unwrap_or(0);
                c.kv_tokens = dec.len();
            }
            records[k].push(StepRecord {
                phase: if i == 0 {
                    Phase::Prefill
                } else {
                    Phase::Decode
                },
                position,
                new_tokens: next[k].len(),
                logits: so.logits,
                token,
                compute_s: so.compute_s,
                collective_s: so.collective_s,
                kv_cache_bytes_per_rank: kv,
            });
            next[k] = vec![token];
        }
        repaint.request_repaint();
    }
    let reference = reference_generate(&model, &prompt, tokens, sampling).map_err(err)?;
    let tol = serve::logits_tolerance(&model, DType::F64);
    let checks = TPS
        .iter()
        .zip(records)
        .map(|(&tp, steps)| {
            let g = Generation {
                tp,
                prompt: ids.clone(),
                tokens: steps.iter().map(|s| s.token).collect(),
                text: String::new(),
                steps,
            };
            let c = compare(&g, &reference, &tol);
            (tp, c.same_text, c.max_logits_error, c.passed)
        })
        .collect();
    Ok(Done {
        sampling,
        reference: reference.text,
        checks,
        tolerance: tol.relative,
        context: model.context(),
    })
}

/// The guide's scenario and its decode sweeps with NCCL and with a custom all-reduce.
type ScenarioSweeps = (Scenario, TpSweep, TpSweep);

/// The guide's 70B TP=4 serving scenario over [`CURVE_TPS`] (nodes of 8 GPUs), CUDA graphs,
/// with NCCL's all-reduces and with vLLM's custom one-shot all-reduce.
fn scenario_sweep() -> Result<ScenarioSweeps, String> {
    let s = Scenario::by_id("70b-serve-tp4").map_err(|e| e.to_string())?;
    let widest = CURVE_TPS.iter().copied().max().unwrap_or(1);
    let cluster = Cluster::covering(
        &Catalogue::default(),
        s.gpu,
        widest,
        s.gpus_per_node,
        s.inter_node,
    )
    .map_err(|e| e.to_string())?;
    let sweep = |all_reduce| {
        serve_cost::sweep_tp(
            &s.model.spec(),
            &cluster,
            &CURVE_TPS,
            serve_cost::ServeSetup {
                tp: 1,
                pp: 1,
                batch: 1,
                context: s.seq,
                all_reduce,
                launch: serve_cost::Launch::Graphs,
                weights: serve_cost::WeightFormat::Bf16,
                kv_cache: serve_cost::KvCacheFormat::Bf16,
            },
        )
        .map_err(|e| e.to_string())
    };
    let nccl = sweep(serve_cost::AllReduceImpl::Nccl)?;
    let custom = sweep(serve_cost::AllReduceImpl::Custom)?;
    Ok((s, nccl, custom))
}

impl Serve {
    fn start(&mut self, ctx: &egui::Context) {
        // The shipped model has one KV head per head; grouped-query attention trains its own.
        let steps = (!self.shipped || self.gqa).then_some(self.train_steps);
        let (prompt, tokens, gqa) = (self.prompt.clone(), self.tokens, self.gqa);
        let sampling = if self.temperature > 0.0 {
            Sampling::Seeded {
                seed: SAMPLING_SEED,
                temperature: self.temperature,
            }
        } else {
            Sampling::Greedy
        };
        if let Ok(mut l) = self.live.lock() {
            *l = Live {
                training: steps.is_some_and(|s| s > 0),
                columns: TPS
                    .iter()
                    .map(|&tp| Column {
                        tp,
                        ..Column::default()
                    })
                    .collect(),
            };
        }
        let live = Arc::clone(&self.live);
        let repaint = ctx.clone();
        self.result = None;
        self.job = Some(Background::once(ctx, move |_| {
            serve_job(prompt, tokens, steps, gqa, sampling, &live, &repaint)
        }));
    }

    /// Whether a request is running (for tests).
    pub fn running(&self) -> bool {
        self.job.is_some()
    }

    /// One TP's column; `y_max`: the largest token time of all columns (ms), so that the three
    /// charts share one y range and compare at a glance.
    fn column_ui(
        ui: &mut egui::Ui,
        c: &Column,
        k: usize,
        prompt: &str,
        done: Option<&Done>,
        y_max: f64,
    ) {
        let lang = current_lang(ui.ctx());
        let dark = ui.visuals().dark_mode;
        ui.colored_label(
            gpu_color(k, dark),
            egui::RichText::new(t_args(lang, "serve-column", &[("tp", c.tp.to_string())])).strong(),
        );
        ui.label(
            egui::RichText::new(format!("{prompt}{}", c.text))
                .monospace()
                .background_color(ui.visuals().extreme_bg_color),
        );
        let decode: Vec<&(f64, f64)> = c.times.iter().skip(1).collect();
        let n = decode.len().max(1) as f64;
        let comp = decode.iter().map(|t| t.0).sum::<f64>() / n;
        let coll = decode.iter().map(|t| t.1).sum::<f64>() / n;
        ui.label(t_args(
            lang,
            "serve-token-time",
            &[
                ("compute", crate::i18n::num(lang, comp, 3)),
                ("collective", crate::i18n::num(lang, coll, 3)),
            ],
        ));
        let context = done.map_or(64, |d| d.context);
        let capacity = if c.kv_tokens > 0 {
            c.kv_bytes_per_gpu / c.kv_tokens as u64 * context as u64
        } else {
            0
        };
        let frac = if capacity > 0 {
            c.kv_bytes_per_gpu as f32 / capacity as f32
        } else {
            0.0
        };
        // The words above the bar, not inside it: a narrow column (presenter mode) clips them.
        ui.add(
            egui::Label::new(t_args(
                lang,
                "serve-kv",
                &[
                    ("bytes", crate::i18n::bytes(lang, c.kv_bytes_per_gpu)),
                    ("tokens", c.kv_tokens.to_string()),
                    ("context", context.to_string()),
                ],
            ))
            .wrap(),
        );
        ui.add(egui::ProgressBar::new(frac).desired_height(0.5 * ui.spacing().interact_size.y));
        let compute: Vec<Bar> = c
            .times
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, t)| Bar::new(i as f64, t.0).width(0.8))
            .collect();
        let comm: Vec<Bar> = c
            .times
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, t)| Bar::new(i as f64, t.1).width(0.8))
            .collect();
        // Grey, as communication is everywhere (the Timeline): TP=2's compute is orange, the
        // theme's warning colour too.
        let (compute_color, comm_color) =
            (gpu_color(k, dark), crate::widgets::gantt::comm_color(dark));
        let compute = BarChart::new(t(lang, "serve-compute"), compute).color(compute_color);
        let comm = BarChart::new(t(lang, "serve-collectives"), comm)
            .color(comm_color)
            .stack_on(&[&compute]);
        // The key above the chart: a legend inside it hid the bars.
        plot_key(
            ui,
            &[
                (KeyMark::Dot, compute_color, t(lang, "serve-compute")),
                (KeyMark::Dot, comm_color, t(lang, "serve-collectives")),
            ],
        );
        Plot::new(("serve-token-times", c.tp))
            .height(150.0)
            .include_y(0.0)
            .include_y(y_max)
            .y_grid_spacer(crate::widgets::nice_grid(30.0))
            .x_grid_spacer(crate::widgets::nice_grid(40.0))
            // The token axis named at every step of 1-2-5 at least 24 points apart (the
            // default spacing left a lone "10", or "0", on a projector's narrow columns).
            .custom_x_axes(vec![egui_plot::AxisHints::new_x()
                .label(t(lang, "serve-axis-token"))
                .label_spacing(24.0..=24.0)
                .formatter(crate::widgets::axis_numbers(lang))])
            .y_axis_label(t(lang, "serve-axis-ms"))
            .y_axis_formatter(crate::widgets::axis_numbers(lang))
            .label_formatter(crate::widgets::hover_numbers(
                lang,
                t(lang, "serve-axis-token"),
                t(lang, "serve-axis-ms"),
            ))
            .allow_scroll(false)
            .allow_drag(false)
            .allow_zoom(false)
            .show(ui, |plot| {
                plot.bar_chart(compute);
                plot.bar_chart(comm);
            });
        // The bars as numbers (what a screen reader reads, what a learner copies).
        egui::CollapsingHeader::new(t(lang, "serve-token-table"))
            .id_salt(("serve-token-table", c.tp))
            .show(ui, |ui| {
                egui::ScrollArea::vertical()
                    .id_salt(("serve-token-table-scroll", c.tp))
                    .max_height(200.0)
                    .show(ui, |ui| {
                        egui::Grid::new(("serve-token-grid", c.tp))
                            .striped(true)
                            .show(ui, |ui| {
                                ui.strong(t(lang, "serve-axis-token"));
                                ui.strong(t(lang, "serve-compute"));
                                ui.strong(t(lang, "serve-collectives"));
                                ui.end_row();
                                for (i, (compute, comm)) in c.times.iter().enumerate().skip(1) {
                                    ui.label(i.to_string());
                                    ui.label(crate::i18n::num(lang, *compute, 3));
                                    ui.label(crate::i18n::num(lang, *comm, 3));
                                    ui.end_row();
                                }
                            });
                    });
            });
        if let Some(d) = done {
            if let Some(&(_, same, err, passed)) = d.checks.iter().find(|ch| ch.0 == c.tp) {
                let (color, key) = if passed {
                    (
                        egui::Color32::from_rgb(0x00, 0x9E, 0x73),
                        "serve-check-pass",
                    )
                } else {
                    (ui.visuals().error_fg_color, "serve-check-fail")
                };
                ui.colored_label(
                    color,
                    t_args(
                        lang,
                        key,
                        &[
                            ("same", t(lang, if same { "serve-yes" } else { "serve-no" })),
                            ("error", crate::i18n::sci(lang, err, 1)),
                            ("tolerance", crate::i18n::sci(lang, d.tolerance, 1)),
                        ],
                    ),
                );
            }
        }
    }

    fn scenario_ui(&mut self, ui: &mut egui::Ui) {
        let lang = current_lang(ui.ctx());
        let sweep = Arc::clone(self.sweep.get_or_insert_with(|| Arc::new(scenario_sweep())));
        let (s, sw, custom) = match &*sweep {
            Ok(v) => (&v.0, &v.1, &v.2),
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e.as_str());
                return;
            }
        };
        ui.heading(t(lang, "serve-scenario-title"));
        let tp4 = sw.rows.iter().find(|r| r.setup.tp == 4);
        let tp4_custom = custom.rows.iter().find(|r| r.setup.tp == 4);
        if let (Some(r), Some(c)) = (tp4, tp4_custom) {
            let ms = |v: f64| crate::i18n::num(lang, v * 1e3, 1);
            ui.label(t_args(
                lang,
                "serve-scenario-tp4",
                &[
                    ("gpu", crate::widgets::gpu_name(s.gpu)),
                    ("context", s.seq.to_string()),
                    ("ms", ms(r.step_s)),
                    ("tps", crate::i18n::num(lang, r.tokens_per_s, 0)),
                    ("ms_custom", ms(c.step_s)),
                    ("weights", ms(r.weights_s)),
                    ("kv", ms(r.kv_s)),
                    ("allreduce", ms(r.collective_s)),
                    ("one", crate::i18n::num(lang, r.all_reduce_s * 1e6, 0)),
                    ("allreduce_custom", ms(c.collective_s)),
                    ("fixed", ms(r.fixed_s)),
                    ("count", (r.all_reduces + 1).to_string()),
                    ("memory", crate::i18n::bytes(lang, r.memory_per_gpu_bytes)),
                ],
            ));
        }
        if let Some(d) = sw.diminishing_from {
            ui.label(t_args(
                lang,
                "serve-scenario-knee",
                &[("tp", d.to_string())],
            ));
        }
        self.published_ui(ui);
        let dark = ui.visuals().dark_mode;
        let pts: Vec<[f64; 2]> = sw
            .rows
            .iter()
            .map(|r| [r.setup.tp as f64, r.step_s * 1e3])
            .collect();
        let weights: Vec<[f64; 2]> = sw
            .rows
            .iter()
            .map(|r| [r.setup.tp as f64, r.compute_s * 1e3])
            .collect();
        let custom_pts: Vec<[f64; 2]> = custom
            .rows
            .iter()
            .map(|r| [r.setup.tp as f64, r.step_s * 1e3])
            .collect();
        let missing: Vec<[f64; 2]> = sw
            .rows
            .iter()
            .filter(|r| !r.fits)
            .map(|r| [r.setup.tp as f64, r.step_s * 1e3])
            .collect();
        let nofit_color = ui.visuals().error_fg_color;
        // The key above the plot: a legend inside it covered the TP=16 point.
        plot_key(
            ui,
            &[
                (
                    KeyMark::Dash,
                    gpu_color(0, dark),
                    t(lang, "serve-curve-total"),
                ),
                (
                    KeyMark::Dash,
                    gpu_color(2, dark),
                    t(lang, "serve-curve-custom"),
                ),
                (
                    KeyMark::Dash,
                    gpu_color(1, dark),
                    t(lang, "serve-curve-reads"),
                ),
                (KeyMark::Dot, nofit_color, t(lang, "serve-curve-nofit")),
            ],
        );
        // At least as tall as its rotated y-axis label (the page scrolls); the line of its
        // table's header stays on screen below it.
        let header = ui.spacing().interact_size.y + ui.spacing().item_spacing.y;
        Plot::new("serve-70b-curve")
            .height((ui.available_height() - 10.0 - header).max(SCENARIO_PLOT_MIN_HEIGHT))
            .x_axis_label(t(lang, "serve-axis-tp"))
            .y_axis_label(t(lang, "serve-axis-ms-token"))
            .x_axis_formatter(crate::widgets::axis_numbers(lang))
            .y_axis_formatter(crate::widgets::axis_numbers(lang))
            .label_formatter(crate::widgets::hover_numbers(
                lang,
                t(lang, "serve-axis-tp"),
                t(lang, "serve-axis-ms-token"),
            ))
            .allow_scroll(false)
            .show(ui, |plot| {
                plot.line(
                    Line::new(t(lang, "serve-curve-total"), PlotPoints::from(pts.clone()))
                        .color(gpu_color(0, dark))
                        .width(2.5),
                );
                plot.points(
                    Points::new(t(lang, "serve-curve-total"), PlotPoints::from(pts))
                        .color(gpu_color(0, dark))
                        .radius(4.0),
                );
                plot.line(
                    Line::new(t(lang, "serve-curve-custom"), PlotPoints::from(custom_pts))
                        .color(gpu_color(2, dark))
                        .width(2.0),
                );
                plot.line(
                    Line::new(t(lang, "serve-curve-reads"), PlotPoints::from(weights))
                        .color(gpu_color(1, dark))
                        .width(2.0),
                );
                plot.points(
                    Points::new(t(lang, "serve-curve-nofit"), PlotPoints::from(missing))
                        .color(nofit_color)
                        .radius(6.0),
                );
            });
        // The curves as numbers: per TP, the three times and whether it fits.
        egui::CollapsingHeader::new(t(lang, "serve-curve-table"))
            .id_salt("serve-curve-table")
            .show(ui, |ui| {
                egui::Grid::new("serve-curve-grid")
                    .striped(true)
                    .show(ui, |ui| {
                        for head in [
                            "serve-axis-tp",
                            "serve-curve-total",
                            "serve-curve-custom",
                            "serve-curve-reads",
                            "serve-curve-fits",
                        ] {
                            ui.strong(t(lang, head));
                        }
                        ui.end_row();
                        for (r, custom) in sw.rows.iter().zip(&custom.rows) {
                            ui.label(r.setup.tp.to_string());
                            ui.label(crate::i18n::num(lang, r.step_s * 1e3, 2));
                            ui.label(crate::i18n::num(lang, custom.step_s * 1e3, 2));
                            ui.label(crate::i18n::num(lang, r.compute_s * 1e3, 2));
                            ui.label(t(lang, if r.fits { "serve-yes" } else { "serve-no" }));
                            ui.end_row();
                        }
                    });
            });
    }
}

/// A signed percentage in the learner's numbers (`+0.3`, `−5.5`).
fn signed_percent(lang: tplab_lessons::Lang, fraction: f64) -> String {
    let v = fraction * 100.0;
    let digits = crate::i18n::num(lang, v.abs(), 1);
    if v >= 0.05 {
        format!("+{digits}")
    } else if v <= -0.05 {
        format!("−{digits}")
    } else {
        digits
    }
}

/// The published figure's one-line name in the picker.
fn published_label(lang: tplab_lessons::Lang, p: &Published) -> String {
    let layout = if p.pp > 1 {
        t_args(
            lang,
            "serve-pub-layout-pp",
            &[("tp", p.tp.to_string()), ("pp", p.pp.to_string())],
        )
    } else {
        t_args(lang, "serve-pub-layout-tp", &[("tp", p.tp.to_string())])
    };
    let tokens = match p.measure {
        Measure::FirstToken => t_args(
            lang,
            "serve-pub-tokens-first",
            &[("prompt", p.prompt.to_string())],
        ),
        Measure::Step => t_args(
            lang,
            "serve-pub-tokens-step",
            &[
                ("prompt", p.prompt.to_string()),
                ("output", p.output.to_string()),
            ],
        ),
        Measure::Request { .. } => t_args(
            lang,
            "serve-pub-tokens-request",
            &[
                ("prompt", p.prompt.to_string()),
                ("output", p.output.to_string()),
            ],
        ),
    };
    t_args(
        lang,
        "serve-pub-row",
        &[
            ("model", serve_published::model_title(p.model).to_string()),
            ("gpus", (p.tp * p.pp).to_string()),
            ("gpu", crate::widgets::gpu_name(p.gpu)),
            ("layout", layout),
            ("batch", p.batch.to_string()),
            ("tokens", tokens),
        ],
    )
}

impl Serve {
    /// A published measurement the learner picks, beside tplab's prediction of it.
    fn published_ui(&mut self, ui: &mut egui::Ui) {
        let lang = current_lang(ui.ctx());
        let rows = self.published_rows.get_or_insert_with(published_rows);
        if rows.is_empty() {
            return;
        }
        self.published = self.published.min(rows.len() - 1);
        ui.add_space(6.0);
        ui.strong(t(lang, "serve-pub-title"));
        ui.add(egui::Label::new(t(lang, "serve-pub-intro")).wrap());
        ui.horizontal_wrapped(|ui| {
            let l = ui.label(t(lang, "serve-pub-pick"));
            egui::ComboBox::from_id_salt("serve-published")
                .selected_text(published_label(lang, &rows[self.published].figure))
                // Its frame is a little wider than `width`: kept inside the page.
                .width((ui.available_width() - 8.0).min(560.0))
                .height(420.0)
                .show_ui(ui, |ui| {
                    for (i, r) in rows.iter().enumerate() {
                        ui.selectable_value(
                            &mut self.published,
                            i,
                            published_label(lang, &r.figure),
                        );
                    }
                })
                .response
                .labelled_by(l.id);
            if self.published != nearest_to_scenario()
                && ui.button(t(lang, "serve-pub-nearest")).clicked()
            {
                self.published = nearest_to_scenario();
            }
        });
        let r = &rows[self.published.min(rows.len() - 1)];
        let p = &r.figure;
        ui.add(
            egui::Label::new(t(
                lang,
                match p.source_kind() {
                    Source::FasterTransformer => "serve-pub-source-ft",
                    Source::NeMo => "serve-pub-source-nemo",
                    Source::TensorRtLlm => "serve-pub-source-trt",
                    // The FP8 rows (NIM, GPUStack) and SGLang's CUDA-graph rows are not in
                    // this list (`serve_published::published_fp8`, `published_graphs`); their
                    // source is their address.
                    Source::Nim | Source::GpuStack | Source::SgLang => "serve-pub-source-url",
                },
            ))
            .wrap(),
        );
        ui.label(match p.measure {
            Measure::FirstToken => t_args(
                lang,
                "serve-pub-measure-first",
                &[("prompt", p.prompt.to_string())],
            ),
            Measure::Step => t_args(
                lang,
                "serve-pub-measure-step",
                &[("context", (p.prompt + p.output / 2).to_string())],
            ),
            Measure::Request { decode_steps } => t_args(
                lang,
                "serve-pub-measure-request",
                &[
                    ("prompt", p.prompt.to_string()),
                    ("steps", decode_steps.to_string()),
                ],
            ),
        });
        let (predicted, step) = match &r.predicted {
            Ok(v) => v,
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e.as_str());
                return;
            }
        };
        let error = (predicted - p.published_ms) / p.published_ms;
        let ms = |v: f64| crate::i18n::num(lang, v, 1);
        egui::Grid::new("serve-published-grid")
            .num_columns(3)
            .spacing([28.0, 4.0])
            .show(ui, |ui| {
                ui.strong(t(lang, "serve-pub-measured"));
                ui.strong(t(lang, "serve-pub-predicted"));
                ui.strong(t(lang, "serve-pub-error"));
                ui.end_row();
                let size = ui
                    .style()
                    .text_styles
                    .get(&egui::TextStyle::Heading)
                    .map_or(20.0, |f| f.size);
                let big = move |v: String| egui::RichText::new(v).size(size);
                ui.label(big(t_args(
                    lang,
                    "serve-pub-ms",
                    &[("ms", ms(p.published_ms))],
                )));
                ui.label(big(t_args(lang, "serve-pub-ms", &[("ms", ms(*predicted))])));
                let within = error.abs() <= 0.25;
                let color = if within {
                    ui.visuals().text_color()
                } else {
                    ui.visuals().warn_fg_color
                };
                ui.colored_label(
                    color,
                    big(t_args(
                        lang,
                        "serve-pub-percent",
                        &[("error", signed_percent(lang, error))],
                    )),
                );
                ui.end_row();
            });
        if let Some(d) = step {
            let key = if d.setup.pp > 1 {
                "serve-pub-split-pp"
            } else {
                "serve-pub-split"
            };
            ui.add(
                egui::Label::new(t_args(
                    lang,
                    key,
                    &[
                        ("step", crate::i18n::num(lang, d.step_s * 1e3, 2)),
                        ("weights", crate::i18n::num(lang, d.weights_s * 1e3, 2)),
                        ("kv", crate::i18n::num(lang, d.kv_s * 1e3, 2)),
                        ("allreduce", crate::i18n::num(lang, d.collective_s * 1e3, 2)),
                        ("fixed", crate::i18n::num(lang, d.fixed_s * 1e3, 2)),
                        ("sends", crate::i18n::num(lang, d.pipeline_send_s * 1e3, 2)),
                        ("pp", d.setup.pp.to_string()),
                    ],
                ))
                .wrap(),
            );
        }
        ui.add(
            egui::Label::new(t(
                lang,
                if p.split == Split::Fit {
                    "serve-pub-fitted"
                } else {
                    "serve-pub-held-out"
                },
            ))
            .wrap(),
        );
        let held: Vec<f64> = rows
            .iter()
            .filter(|r| r.figure.split == Split::HeldOut)
            .filter_map(|r| {
                r.predicted
                    .as_ref()
                    .ok()
                    .map(|(ms, _)| (ms - r.figure.published_ms) / r.figure.published_ms)
            })
            .collect();
        if !held.is_empty() {
            let within = held.iter().filter(|e| e.abs() <= 0.25).count();
            let mae = held.iter().map(|e| e.abs()).sum::<f64>() / held.len() as f64;
            ui.label(t_args(
                lang,
                "serve-pub-summary",
                &[
                    ("n", held.len().to_string()),
                    ("within", within.to_string()),
                    ("mae", crate::i18n::num(lang, mae * 100.0, 1)),
                ],
            ));
        }
        ui.add_space(6.0);
    }
}

/// The scenario plot's least height in points: taller than its rotated y-axis label in either
/// language, with room for several ticks.
const SCENARIO_PLOT_MIN_HEIGHT: f32 = 260.0;

impl View for Serve {
    fn id(&self) -> &'static str {
        "serve"
    }

    fn title(&self) -> &'static str {
        "Serve"
    }

    fn logic(&mut self, ctx: &egui::Context, _shared: &mut Shared) {
        if let Some(r) = background::finished(&mut self.job, ctx) {
            self.result = Some(r);
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, _shared: &mut Shared) {
        let lang = current_lang(ui.ctx());
        crate::widgets::scrolling_page(ui, "serve-page", |ui| {
            crate::widgets::links::view_heading(ui, t(lang, "serve-title"));
            ui.label(t(lang, "serve-intro"));
            let running = self.job.is_some();
            ui.add_enabled_ui(!running, |ui| {
                ui.horizontal_wrapped(|ui| {
                    let l = ui.label(t(lang, "serve-prompt"));
                    ui.add(
                        egui::TextEdit::singleline(&mut self.prompt)
                            .desired_width(260.0)
                            .char_limit(40),
                    )
                    .labelled_by(l.id);
                    let l = ui.label(t(lang, "serve-tokens"));
                    ui.add(egui::DragValue::new(&mut self.tokens).range(1..=MAX_TOKENS))
                        .labelled_by(l.id);
                    ui.checkbox(&mut self.gqa, t(lang, "serve-gqa"))
                        .on_hover_text(t(lang, "serve-gqa-hint"));
                    ui.checkbox(&mut self.shipped, t(lang, "serve-shipped"))
                        .on_hover_text(t(lang, "serve-shipped-hint"));
                });
            });
            // The second row wraps on a phone, but a label stays beside its number.
            ui.horizontal_wrapped(|ui| {
                ui.add_enabled_ui(!running && (!self.shipped || self.gqa), |ui| {
                    ui.horizontal(|ui| {
                        let l = ui.label(t(lang, "serve-train-steps"));
                        ui.add(
                            egui::DragValue::new(&mut self.train_steps).range(0..=MAX_TRAIN_STEPS),
                        )
                        .labelled_by(l.id);
                    });
                });
                ui.add_space(12.0);
                ui.add_enabled_ui(!running, |ui| {
                    ui.horizontal(|ui| {
                        let l = ui.label(t(lang, "serve-temperature"));
                        ui.add(
                            egui::DragValue::new(&mut self.temperature)
                                .range(0.0..=MAX_TEMPERATURE)
                                .speed(0.05)
                                .fixed_decimals(2)
                                .custom_formatter(|v, _| crate::i18n::num(lang, v, 2))
                                .custom_parser(crate::widgets::parse_number),
                        )
                        .labelled_by(l.id)
                        .on_hover_text(t(lang, "serve-temperature-hint"));
                    });
                });
                if !running && ui.button(t(lang, "serve-generate")).clicked() {
                    self.start(ui.ctx());
                }
                if running {
                    ui.spinner();
                    let training = self.live.lock().map(|l| l.training).unwrap_or(false);
                    ui.label(t(
                        lang,
                        if training {
                            "serve-training"
                        } else {
                            "serve-decoding"
                        },
                    ));
                }
            });
            if let Some(Err(e)) = &self.result {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    t_args(lang, "serve-failed", &[("error", e.clone())]),
                );
            }
            let columns = self
                .live
                .lock()
                .map(|l| l.columns.clone())
                .unwrap_or_default();
            let done = match &self.result {
                Some(Ok(d)) => Some(d.clone()),
                _ => None,
            };
            if !columns.is_empty() {
                if let Some(d) = &done {
                    ui.label(t_args(
                        lang,
                        "serve-reference",
                        &[("text", format!("{}{}", self.prompt, d.reference))],
                    ));
                }
                let prompt = self.prompt.clone();
                let y_max = columns
                    .iter()
                    .flat_map(|c| c.times.iter().skip(1))
                    .map(|t| t.0 + t.1)
                    .fold(0.0f64, f64::max);
                crate::widgets::columns(ui, columns.len(), |cols| {
                    for (k, (col, c)) in cols.iter_mut().zip(&columns).enumerate() {
                        // Plain top-down layout: the columns' default justification
                        // would stretch the wrapped labels' letter spacing.
                        col.with_layout(egui::Layout::top_down(egui::Align::Min), |col| {
                            Self::column_ui(col, c, k, &prompt, done.as_ref(), y_max);
                        });
                    }
                });
                let sampling = done.as_ref().map(|d| d.sampling);
                ui.add(
                    egui::Label::new(match sampling {
                        Some(Sampling::Seeded { temperature, .. }) => t_args(
                            lang,
                            "serve-sampled-note",
                            &[("temperature", crate::i18n::num(lang, temperature, 2))],
                        ),
                        _ => t(lang, "serve-greedy-note"),
                    })
                    .wrap(),
                );
                ui.label(t(lang, "serve-measured-note"));
            }
            ui.separator();
            self.scenario_ui(ui);
        });
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
        // A saved file is user data: keep its numbers inside the controls' ranges.
        self.tokens = self.tokens.clamp(1, MAX_TOKENS);
        self.train_steps = self.train_steps.min(MAX_TRAIN_STEPS);
        self.temperature = if self.temperature.is_finite() {
            self.temperature.clamp(0.0, MAX_TEMPERATURE)
        } else {
            0.0
        };
        let rows = serve_published::published().len();
        if self.published >= rows {
            self.published = nearest_to_scenario();
        }
        if self.prompt.chars().count() > 40 {
            self.prompt = self.prompt.chars().take(40).collect();
        }
    }
}
