//! GPU: the devices and libraries the probe found, a Run button that executes the scenario's
//! shards on the GPU, the measured timeline beside the trace's own, per-op ratios and the error
//! against the CPU reference. With no GPU: what was looked for and what would be needed.

use crate::background::{self, Background, Reporter};
use crate::i18n::{num, t, t_args};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::gantt::gantt_plot;
use serde::{Deserialize, Serialize};
use tplab_engine::block::verify::Verification;
use tplab_engine::trace::{Event, Trace};
use tplab_engine::{config::Config, dtype::DType};
use tplab_kernels::summary::{op_table, OpRow};
use tplab_kernels::verify::LowPrecisionReason;
use tplab_kernels::{
    Advice, DeviceInfo, DeviceMode, GpuError, Library, Probe, Problem, RunOptions,
};
use tplab_lessons::Lang;

/// What a finished run shows.
struct RunView {
    /// The scenario run (shown in words).
    config: Config,
    /// The devices' names (the view runs on device 0, the ranks as CUDA streams).
    devices: String,
    tp: usize,
    /// The trace with `timing` replaced by the measured times (for the Gantt chart).
    measured: Trace,
    /// The trace's own times.
    predicted: Trace,
    ops: Vec<OpRow>,
    verification: Verification,
    /// Why a 16-bit run's tolerance is what it is (`None`: f32, the engine's bound).
    low_precision: Option<LowPrecisionReason>,
    iteration_ms: f64,
}

/// GPU view state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Gpu {
    /// f32 or bf16.
    pub dtype: DType,
    pub iters: usize,
    /// Run the design lab's plan (through the general launch list) instead of Megatron's split.
    pub design_plan: bool,
    #[serde(skip)]
    probe: Option<Probe>,
    /// Whether the GPU can lay out the design lab's plan (its words in the language of the
    /// check), kept for the plan, scenario and language it was worked out for.
    #[serde(skip)]
    plan_check: Option<PlanCheck>,
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
            design_plan: false,
            probe: None,
            plan_check: None,
            job: None,
            last: None,
        }
    }
}

/// A plan, its scenario and the language of the verdict, and whether the GPU can lay it out.
type PlanCheck = (
    tplab_engine::block::design::ShardingPlan,
    Config,
    Lang,
    Result<(), String>,
);

/// The last stage of a run (the executor's own stages come before it).
const STAGE_REFERENCE: &str = "computing the CPU reference";

/// A run's stage in the learner's language: the executor's stages (English identifiers) and
/// this view's own; anything else as reported.
fn stage_text(lang: Lang, stage: &str) -> String {
    let id = match stage {
        "compiling kernels and uploading shards" => "gpu-stage-compile",
        "warm-up done" => "gpu-stage-warm-up",
        "timed iteration" => "gpu-stage-timed",
        "done" => "gpu-stage-done",
        STAGE_REFERENCE => "gpu-stage-reference",
        other => return other.to_string(),
    };
    t(lang, id)
}

/// The GPU executor's error in the learner's language (English: its own sentence, what
/// `tplab gpu run` prints). The scenario's rule and a build without CUDA are worded; the
/// device's and libraries' own failures (driver, cuBLAS, NVRTC logs) stay as they report them.
fn gpu_error_text(lang: Lang, e: &GpuError) -> String {
    match e {
        GpuError::Config(c) => crate::widgets::config_error_text(lang, c),
        GpuError::NotCompiled => t(lang, "gpu-problem-not-compiled"),
        other => other.to_string(),
    }
}

/// Runs `cfg` on device 0, compares with the CPU reference; runs off the UI thread. A failure
/// is worded in `lang`, the language the run was started in.
fn execute(cfg: Config, iters: usize, lang: Lang, progress: &Reporter) -> Result<RunView, String> {
    let mut report = |stage: &str, f: f64| progress.report(f as f32, stage);
    let run = tplab_kernels::run(
        &cfg,
        &RunOptions {
            iters,
            mode: DeviceMode::SingleDevice(0),
        },
        &mut report,
    )
    .map_err(|e| gpu_error_text(lang, &e))?;
    report(STAGE_REFERENCE, 1.0);
    let model = tplab_kernels::run::device_model(&cfg);
    let reference = tplab_kernels::reference::reference(&cfg, &model);
    let v = tplab_kernels::verify::verify_run(&cfg, &run, &reference);
    Ok(run_view(
        cfg,
        run.devices.join(", "),
        run.trace,
        &run.iteration_ms,
        v,
    ))
}

/// What a finished run shows: the trace drawn twice (measured, predicted), the per-op table,
/// the median iteration and the verdict.
fn run_view(
    cfg: Config,
    devices: String,
    trace: Trace,
    iteration_ms: &[f64],
    verification: Verification,
) -> RunView {
    let mut measured = trace.clone();
    for e in &mut measured.events {
        if let Some(m) = e.measured {
            e.timing = m;
        }
    }
    let mut its = iteration_ms.to_vec();
    its.sort_by(f64::total_cmp);
    RunView {
        devices,
        tp: cfg.tp,
        ops: op_table(&trace),
        predicted: trace,
        measured,
        verification,
        low_precision: tplab_kernels::verify::low_precision_reason(&cfg),
        iteration_ms: its.get(its.len() / 2).copied().unwrap_or(0.0),
        config: cfg,
    }
}

/// Runs a learner's `plan` on `cfg` (its launch list on device 0) and compares every tensor with
/// the CPU reference; runs off the UI thread.
fn execute_plan(
    cfg: Config,
    plan: tplab_engine::block::design::ShardingPlan,
    iters: usize,
    lang: Lang,
    progress: &Reporter,
) -> Result<RunView, String> {
    let mut report = |stage: &str, f: f64| progress.report(f as f32, stage);
    let run = tplab_kernels::run_plan(
        &cfg,
        &plan,
        &RunOptions {
            iters,
            mode: DeviceMode::SingleDevice(0),
        },
        &mut report,
    )
    .map_err(|e| gpu_error_text(lang, &e))?;
    let v = Verification {
        tolerance: run.tolerance,
        checks: run.checks,
    };
    Ok(run_view(
        cfg,
        run.devices.join(", "),
        run.trace,
        &run.iteration_ms,
        v,
    ))
}

/// A library's name in the learner's language (only the driver's is a word, the rest are names).
fn library_name(lang: Lang, l: Library) -> String {
    match l {
        Library::Driver => t(lang, "gpu-lib-driver"),
        other => other.name().to_string(),
    }
}

/// What the executor needs a library for ([`Library::needed_for`] in English).
fn needed_for_text(lang: Lang, l: Library) -> String {
    t(
        lang,
        match l {
            Library::Driver => "gpu-need-driver",
            Library::Nvrtc => "gpu-need-nvrtc",
            Library::Cublas => "gpu-need-cublas",
            Library::Nccl => "gpu-need-nccl",
        },
    )
}

/// How to get a library ([`Library::how_to_get`] in English).
fn how_to_get_text(lang: Lang, l: Library) -> String {
    t(
        lang,
        match l {
            Library::Driver => "gpu-get-driver",
            Library::Nvrtc => "gpu-get-nvrtc",
            Library::Cublas => "gpu-get-cublas",
            Library::Nccl => "gpu-get-nccl",
        },
    )
}

/// The probe's advice in the learner's language (English: its `Display`, what `tplab gpu info`
/// prints).
fn advice_text(lang: Lang, a: &Advice) -> String {
    match a {
        Advice::NotFound { library } => t_args(
            lang,
            "gpu-advice-not-found",
            &[("how", how_to_get_text(lang, *library))],
        ),
        Advice::OnlyVersioned {
            found,
            looked_for,
            symlink,
        } => t_args(
            lang,
            "gpu-advice-versioned",
            &[
                ("found", found.join(", ")),
                ("looked", looked_for.clone()),
                ("symlink", symlink.clone()),
            ],
        ),
        Advice::LacksSymbol {
            library,
            file,
            symbol,
        } => t_args(
            lang,
            "gpu-advice-lacks",
            &[
                ("file", file.clone()),
                ("symbol", symbol.clone()),
                ("library", library_name(lang, *library)),
            ],
        ),
        Advice::DoesNotWork { error } => {
            t_args(lang, "gpu-advice-fails", &[("error", error.clone())])
        }
    }
}

/// A problem the probe found, in the learner's language (English: its `Display`).
fn problem_text(lang: Lang, p: &Problem) -> String {
    match p {
        Problem::NotCompiled => t(lang, "gpu-problem-not-compiled"),
        Problem::Missing { library, file } => t_args(
            lang,
            "gpu-problem-missing",
            &[
                ("library", library_name(lang, *library)),
                ("file", file.clone()),
            ],
        ),
        Problem::Broken {
            library,
            file,
            symbol,
        } => t_args(
            lang,
            "gpu-problem-broken",
            &[
                ("library", library_name(lang, *library)),
                ("file", file.clone()),
                ("symbol", symbol.clone()),
            ],
        ),
        Problem::Failing { library, error } => t_args(
            lang,
            "gpu-problem-failing",
            &[
                ("library", library_name(lang, *library)),
                ("error", error.clone()),
            ],
        ),
        Problem::DevicesUnlisted { error } => {
            t_args(lang, "gpu-problem-unlisted", &[("error", error.clone())])
        }
        Problem::NoDevice => t(lang, "gpu-problem-no-device"),
    }
}

/// [`Probe::headline`] in the learner's language.
fn headline_text(lang: Lang, p: &Probe) -> String {
    if p.usable() {
        let names: Vec<&str> = p.devices.iter().map(|d| d.name.as_str()).collect();
        t_args(
            lang,
            "gpu-ready",
            &[
                ("count", names.len().to_string()),
                ("names", names.join(", ")),
            ],
        )
    } else {
        let problem = match p.problems.first() {
            Some(first) => problem_text(lang, first),
            None => t(lang, "gpu-unknown-reason"),
        };
        t_args(lang, "gpu-unavailable", &[("problem", problem)])
    }
}

/// A device's line (its `Display` in English), memory in the language's numbers.
fn device_text(lang: Lang, d: &DeviceInfo) -> String {
    t_args(
        lang,
        "gpu-device",
        &[
            ("ordinal", d.ordinal.to_string()),
            ("name", d.name.clone()),
            (
                "cc",
                format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
            ),
            ("total", num(lang, d.total_gib(), 1)),
            ("free", num(lang, d.free_gib(), 1)),
        ],
    )
}

/// The theme's warning colour, darkened (light theme) or lightened (dark theme) until it reads
/// as text on the panel (4.5:1): egui's orange on off-white is about 3:1.
fn warning_ink(ui: &egui::Ui) -> egui::Color32 {
    let v = ui.visuals();
    let toward = if v.dark_mode {
        egui::Color32::WHITE
    } else {
        egui::Color32::BLACK
    };
    (0..=20)
        .map(|i| v.warn_fg_color.lerp_to_gamma(toward, i as f32 / 20.0))
        .find(|c| crate::widgets::contrast(*c, v.panel_fill) >= 4.5)
        .unwrap_or(toward)
}

/// A missing library's one-line fix: how to get it, or what is wrong with the file found.
fn fix_text(lang: Lang, l: Library, a: &Advice) -> String {
    match a {
        Advice::NotFound { .. } => how_to_get_text(lang, l),
        other => advice_text(lang, other),
    }
}

fn probe_ui(ui: &mut egui::Ui, p: &Probe) {
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| t(lang, id);
    let text = ui.visuals().text_color();
    let warn = warning_ink(ui);
    ui.label(t_args(
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
    crate::widgets::sideways(ui, "gpu-libs-scroll", |ui| {
        egui::Grid::new("gpu-libs").striped(true).show(ui, |ui| {
            ui.strong(tr("gpu-col-library"));
            ui.strong(tr("gpu-col-state"));
            ui.strong(tr("gpu-col-version"));
            ui.strong(tr("gpu-col-needed"));
            ui.end_row();
            for l in &p.libraries {
                ui.label(library_name(lang, l.library));
                if l.found {
                    ui.label(tr("gpu-found"));
                } else {
                    ui.colored_label(warn, tr("gpu-missing"));
                }
                ui.label(l.version.as_deref().unwrap_or("-"));
                ui.label(needed_for_text(lang, l.library));
                ui.end_row();
            }
        });
    });
    // One line per missing library: what to do. What was looked for where, below, closed.
    let missing: Vec<(&tplab_kernels::LibraryStatus, &Advice)> = p
        .libraries
        .iter()
        .filter(|l| !l.found)
        .filter_map(|l| l.advice.as_ref().map(|a| (l, a)))
        .collect();
    for (l, a) in &missing {
        let line = t_args(
            lang,
            "gpu-lib-fix",
            &[
                ("library", library_name(lang, l.library)),
                ("fix", fix_text(lang, l.library, a)),
            ],
        );
        crate::widgets::code_label(ui, &line, text);
    }
    if !missing.is_empty() {
        egui::CollapsingHeader::new(tr("gpu-details"))
            .id_salt("gpu-lib-details")
            .default_open(false)
            .show(ui, |ui| {
                for (l, a) in &missing {
                    let line = t_args(
                        lang,
                        "gpu-lib-advice",
                        &[
                            ("library", library_name(lang, l.library)),
                            ("looked", l.looked_for.clone()),
                            ("advice", advice_text(lang, a)),
                        ],
                    );
                    crate::widgets::code_label(ui, &line, text);
                }
            });
    }
    for d in &p.devices {
        ui.label(device_text(lang, d));
    }
    if p.usable() {
        ui.label(headline_text(lang, p));
        return;
    }
    // One summary: the libraries the table marks missing, all of them, or else the first
    // problem; then the problems the table does not show (no build support, no device).
    let names: Vec<String> = missing
        .iter()
        .map(|(l, _)| library_name(lang, l.library))
        .collect();
    let summary = if names.is_empty() {
        headline_text(lang, p)
    } else {
        t_args(
            lang,
            "gpu-unavailable-missing",
            &[("missing", names.join(", "))],
        )
    };
    crate::widgets::code_label(ui, &summary, warn);
    let per_library = |pr: &&Problem| {
        matches!(
            pr,
            Problem::Missing { .. } | Problem::Broken { .. } | Problem::Failing { .. }
        )
    };
    let skip = usize::from(names.is_empty());
    for pr in p.problems.iter().filter(|pr| !per_library(pr)).skip(skip) {
        crate::widgets::code_label(ui, &problem_text(lang, pr), text);
    }
    ui.label(tr("gpu-without"));
}

fn gantt(ui: &mut egui::Ui, id: &str, trace: &Trace, height: f32) {
    let events: Vec<&Event> = trace.events.iter().collect();
    gantt_plot(
        ui,
        crate::widgets::lang(ui),
        id,
        trace,
        &events,
        Some(height),
        None,
    );
}

/// Why a 16-bit run's tolerance is `4e-2·√layers`, in the learner's language (English: the
/// kernels' sentence, the tolerance's `reason`).
fn low_precision_text(lang: Lang, p: &LowPrecisionReason) -> String {
    t_args(lang, "gpu-tol-16bit", &[("dtype", p.dtype.to_string())])
}

fn result_ui(ui: &mut egui::Ui, r: &RunView) {
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| t(lang, id);
    ui.label(t_args(
        lang,
        "gpu-on",
        &[
            ("label", crate::widgets::scenario_words(lang, &r.config)),
            (
                "devices",
                t_args(
                    lang,
                    "gpu-mode-streams",
                    &[("devices", r.devices.clone()), ("ranks", r.tp.to_string())],
                ),
            ),
        ],
    ));
    ui.label(t_args(
        lang,
        "gpu-iteration",
        &[("ms", num(lang, r.iteration_ms, 3))],
    ));
    let reason = r.low_precision.map(|p| low_precision_text(lang, &p));
    crate::widgets::verdict::verdict_ui(
        ui,
        &r.verification,
        &crate::widgets::scenario_words(lang, &r.config),
        reason,
    );
    crate::widgets::columns(ui, 2, |cols| {
        cols[0].strong(tr("gpu-measured"));
        gantt(&mut cols[0], "gpu-measured", &r.measured, 220.0);
        cols[1].strong(tr("gpu-predicted"));
        cols[1].label(crate::widgets::gantt::time_source_text(
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
            let or_dash =
                |v: Option<f64>, d: usize| v.map_or_else(|| "-".into(), |v| num(lang, v, d));
            for o in &r.ops {
                ui.label(crate::widgets::pass_name(lang, o.pass));
                ui.label(crate::widgets::op_label(lang, o.op));
                ui.label(or_dash(o.measured_ms, 4));
                ui.label(num(lang, o.predicted_ms, 4));
                ui.label(or_dash(o.share_ratio, 2));
                ui.end_row();
            }
        });
    });
}

impl Gpu {
    /// The view with its saved `state` showing `probe` instead of probing this machine (tests,
    /// snapshots: what a machine without CUDA, or with a broken library, looks like, whatever
    /// this one has).
    pub fn with_probe(probe: Probe, state: Option<&str>) -> Self {
        let mut gpu = Self::default();
        if let Some(json) = state {
            gpu.load(json);
        }
        gpu.probe = Some(probe);
        gpu
    }
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
        // The probe's advice is long: at a projector's 1280×720 the Run button would be below
        // the window.
        crate::widgets::scrolling_page(ui, "gpu-view", |ui| self.body(ui, shared));
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

impl Gpu {
    fn body(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        crate::widgets::links::view_heading(ui, tr("gpu-title"));
        let probe = self.probe.get_or_insert_with(tplab_kernels::probe);
        probe_ui(ui, probe);
        if ui.button(tr("gpu-look-again")).clicked() {
            self.probe = Some(tplab_kernels::probe());
        }
        let usable = self.probe.as_ref().is_some_and(Probe::usable);
        ui.separator();
        // Which split runs: Megatron's (fused kernels, the scenario's config) or the design
        // lab's plan on the lab's scenario (the general launch list).
        let lab = Some((shared.design.plan(), shared.design.config()));
        ui.horizontal_wrapped(|ui| {
            ui.label(tr("gpu-split"));
            ui.radio_value(&mut self.design_plan, false, tr("gpu-split-megatron"));
            let r = ui.add_enabled(
                lab.is_some(),
                egui::RadioButton::new(self.design_plan && lab.is_some(), tr("gpu-split-lab")),
            );
            if r.clicked() {
                self.design_plan = true;
            }
            r.on_disabled_hover_text(tr("gpu-split-lab-none"));
        });
        let plan = lab.filter(|_| self.design_plan);
        let cfg = match &plan {
            Some((_, lab_cfg)) => Config {
                dtype: self.dtype,
                ..lab_cfg.clone()
            },
            None => Config {
                dtype: self.dtype,
                ..shared.scenario.config().clone()
            },
        };
        if let Some((p, _)) = &plan {
            ui.label(crate::i18n::t_args(
                lang,
                "gpu-split-lab-is",
                &[
                    ("splits", crate::widgets::plan::plan_words(lang, p)),
                    ("tp", cfg.tp.to_string()),
                ],
            ));
        }
        let check = tplab_kernels::run::check_config(&cfg).map_err(|e| gpu_error_text(lang, &e));
        let check = match (&check, &plan) {
            // A plan the GPU cannot lay out is named before the button is pressed (worked out
            // once per plan, not every frame).
            (Ok(()), Some((p, _))) => {
                let fresh = !matches!(&self.plan_check,
                    Some((q, c, l, _)) if q == p && *c == cfg && *l == lang);
                if fresh {
                    let program = tplab_engine::block::design::program::propagate(&cfg, p);
                    let verdict = tplab_kernels::program::lower(&cfg, &program)
                        .map(|_| ())
                        .map_err(|e| gpu_error_text(lang, &e));
                    self.plan_check = Some((p.clone(), cfg.clone(), lang, verdict));
                }
                match &self.plan_check {
                    Some((_, _, _, verdict)) => verdict.clone(),
                    None => Ok(()),
                }
            }
            _ => check,
        };
        if let Err(e) = &check {
            ui.colored_label(ui.visuals().error_fg_color, e);
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
            let run_plan = plan.map(|(p, _)| p);
            self.job = Some(Background::once(ui.ctx(), move |progress| match run_plan {
                Some(p) => execute_plan(run_cfg, p, iters, lang, progress),
                None => execute(run_cfg, iters, lang, progress),
            }));
        }
        if let Some(job) = &self.job {
            let (f, stage) = job.progress();
            ui.add(egui::ProgressBar::new(f).text(format!(
                "{} ({} s)",
                stage_text(lang, stage),
                num(lang, job.elapsed_s(), 1)
            )));
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_kernels::LibraryStatus;

    /// One advice of every kind, with distinct values so a swapped argument shows.
    fn every_advice() -> Vec<Advice> {
        let mut all: Vec<Advice> = Library::ALL
            .into_iter()
            .map(|library| Advice::NotFound { library })
            .collect();
        all.extend([
            Advice::OnlyVersioned {
                found: vec![
                    "/opt/nccl/lib/libnccl.so.2".into(),
                    "/usr/lib/libnccl.so.2.21".into(),
                ],
                looked_for: "libnccl.so".into(),
                symlink: "libnccl.so".into(),
            },
            Advice::LacksSymbol {
                library: Library::Driver,
                file: "libcuda.so.1".into(),
                symbol: "cuInit".into(),
            },
            Advice::DoesNotWork {
                error: "CUDA_ERROR_NO_DEVICE 100".into(),
            },
        ]);
        all
    }

    fn every_problem() -> Vec<Problem> {
        let mut all = vec![Problem::NotCompiled, Problem::NoDevice];
        for library in Library::ALL {
            all.extend([
                Problem::Missing {
                    library,
                    file: format!("lib{}.so", library.stem()),
                },
                Problem::Broken {
                    library,
                    file: format!("lib{}.so.13", library.stem()),
                    symbol: "cuInit".into(),
                },
                Problem::Failing {
                    library,
                    error: "error 999".into(),
                },
            ]);
        }
        all.push(Problem::DevicesUnlisted {
            error: "CUDA_ERROR_UNKNOWN 999".into(),
        });
        all
    }

    /// The paths, files, variables and numbers a sentence names: its words with a `/`, `.`, `_`
    /// or a digit, such as `/usr/lib/libnccl.so.2.21`, `LD_LIBRARY_PATH`, `999`, `13.0`.
    fn named(s: &str) -> Vec<String> {
        s.split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')' || c == ':')
            .filter(|w| w.contains(['/', '.', '_']) || w.chars().any(|c| c.is_ascii_digit()))
            .map(|w| w.trim_end_matches(['.', ';', '`']).to_string())
            .filter(|w| w.chars().any(|c| c.is_ascii_alphanumeric()) && w != "e.g")
            .collect()
    }

    fn check(en: String, tr: String, display: String) {
        assert_eq!(en, display);
        assert_ne!(tr, display);
        assert!(!tr.contains("gpu-"), "{tr}");
        if display.contains("cuInit") {
            assert!(tr.contains("cuInit"), "{tr}");
        }
        for n in named(&display) {
            let n = n.trim_start_matches('`');
            // "CUDA 13.0" stays "13.0" in Turkish: a version, not a decimal.
            assert!(tr.contains(n), "{tr}\nlacks {n} (from: {display})");
        }
    }

    /// The view's English is the probe's own sentence (what `tplab gpu info` prints) for every
    /// kind of advice and problem, the headline and a device; the Turkish differs and names the
    /// same files, paths, symbols and numbers.
    #[test]
    fn probe_findings_read_the_same_in_the_app_and_the_cli_and_exist_in_turkish() {
        for a in every_advice() {
            check(
                advice_text(Lang::En, &a),
                advice_text(Lang::Tr, &a),
                a.to_string(),
            );
        }
        for p in every_problem() {
            check(
                problem_text(Lang::En, &p),
                problem_text(Lang::Tr, &p),
                p.to_string(),
            );
        }
        for l in Library::ALL {
            assert_eq!(needed_for_text(Lang::En, l), l.needed_for());
            assert_ne!(needed_for_text(Lang::Tr, l), l.needed_for());
            assert_eq!(library_name(Lang::En, l), l.name());
        }
        let device = DeviceInfo {
            ordinal: 3,
            name: "NVIDIA H200".into(),
            total_memory_bytes: 150_119_858_176,
            free_memory_bytes: 149_458_403_328,
            compute_capability: (9, 0),
        };
        assert_eq!(device_text(Lang::En, &device), device.to_string());
        let tr = device_text(Lang::Tr, &device);
        for n in ["GPU 3", "NVIDIA H200", "9.0", "139,8", "139,2"] {
            assert!(tr.contains(n), "{tr} lacks {n}");
        }
        let mut probe = Probe {
            compiled_with_cuda: true,
            libraries: Vec::new(),
            devices: vec![device.clone()],
            problems: every_problem(),
        };
        assert_eq!(headline_text(Lang::En, &probe), probe.headline());
        probe.problems.clear();
        assert_eq!(headline_text(Lang::En, &probe), probe.headline());
        probe.libraries = Library::ALL
            .into_iter()
            .map(|library| LibraryStatus::found(library, "", "13.0"))
            .collect();
        assert!(probe.usable());
        assert_eq!(headline_text(Lang::En, &probe), probe.headline());
        assert!(headline_text(Lang::Tr, &probe).starts_with("hazır: 1 cihaz"));
    }

    /// `tplab gpu info --json` keeps its shape: library names and sentences, not variants.
    /// A 16-bit run's tolerance reason: English is the kernels' sentence (the tolerance's
    /// `reason`, what `tplab gpu run` prints); Turkish differs and names the same dtype and numbers.
    #[test]
    fn a_16_bit_tolerance_reads_as_the_kernels_in_english_and_exists_in_turkish() {
        for dtype in [DType::Bf16, DType::F16] {
            let cfg = Config {
                dtype,
                ..Config::default()
            };
            let p = tplab_kernels::verify::low_precision_reason(&cfg).expect("16-bit");
            let display = tplab_kernels::verify::tolerance(&cfg, 1.0).reason;
            assert_eq!(low_precision_text(Lang::En, &p), display);
            let tr = low_precision_text(Lang::Tr, &p);
            assert_ne!(tr, display);
            assert!(tr.starts_with(&format!("{dtype}: ")), "{tr}");
            for n in ["12", "8", "2^-9", "f32", "LayerNorm", "softmax"] {
                assert!(tr.contains(n) && display.contains(n), "{tr} lacks {n}");
            }
        }
    }

    /// The executor's errors the view words: English is the executor's sentence; Turkish differs
    /// and names the same numbers.
    #[test]
    fn gpu_errors_read_as_the_executor_in_english_and_exist_in_turkish() {
        let errors = [
            GpuError::NotCompiled,
            GpuError::Config(tplab_engine::config::ConfigError::TpOutOfRange { tp: 9, max: 8 }),
        ];
        for e in errors {
            let display = e.to_string();
            assert_eq!(gpu_error_text(Lang::En, &e), display);
            let tr = gpu_error_text(Lang::Tr, &e);
            assert_ne!(tr, display);
            let digits = |s: &str| s.chars().filter(char::is_ascii_digit).count();
            assert_eq!(digits(&tr), digits(&display), "{tr}");
        }
    }

    #[test]
    fn the_probe_as_json_names_libraries_and_says_sentences() {
        let p = Probe {
            compiled_with_cuda: true,
            libraries: vec![LibraryStatus::missing(
                Library::Cublas,
                "libcublas.so, libcublas.so.13",
                Advice::NotFound {
                    library: Library::Cublas,
                },
            )],
            devices: Vec::new(),
            problems: vec![Problem::Missing {
                library: Library::Cublas,
                file: "libcublas.so".into(),
            }],
        };
        let v = serde_json::to_value(&p).expect("serialises");
        assert_eq!(v["libraries"][0]["name"], "cuBLAS");
        assert_eq!(v["libraries"][0]["needed_for"], "the matrix products");
        assert!(v["libraries"][0]["advice"]
            .as_str()
            .is_some_and(|a| a.starts_with("not found on the loader path")));
        assert_eq!(v["problems"][0], "cuBLAS (libcublas.so) is missing");
    }
}
