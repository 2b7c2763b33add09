//! Planner: a model on a cluster, the engine's ranked 3D layouts (TP, PP, DP) with the reason
//! the winner wins, and throughput against TP showing the drop once a TP group spans nodes.
//! The planner runs off the UI thread ([`crate::background::Background`]).

use super::{load_json, save_json, Shared, ShowMe, View};
use crate::background::{self, Background};
use egui_plot::{Legend, Line, Plot, PlotPoints, Points, VLine};
use serde::{Deserialize, Serialize};
use tplab_engine::capacity::stack::{self, Stack, WhatIf};
use tplab_engine::config::human_bytes;
use tplab_engine::cost::TrainSetup;
use tplab_engine::hardware::{Catalogue, Cluster};
use tplab_engine::models::ModelPreset;
use tplab_engine::planner::{self, PlanRequest, TpPoint};

/// Ranked layouts listed.
const SHOWN_LAYOUTS: usize = 8;

/// Planner inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlannerInputs {
    pub model: ModelPreset,
    pub gpu: String,
    pub gpus: usize,
    pub gpus_per_node: usize,
    pub inter_node: String,
    pub seq: usize,
    pub global_batch: usize,
    /// Plan under today's training stack (FlashAttention, fused kernels, overlap, distributed
    /// optimizer, uneven stages) instead of the 2021 Megatron-LM stack the lessons quote.
    pub todays_stack: bool,
}

impl Default for PlannerInputs {
    fn default() -> Self {
        Self {
            model: ModelPreset::Gpt3_175b,
            gpu: "a100".into(),
            gpus: 64,
            gpus_per_node: 8,
            inter_node: "ib-hdr-200".into(),
            seq: 2048,
            global_batch: 512,
            todays_stack: false,
        }
    }
}

/// What the planner answered.
pub struct PlannerResult {
    pub plan: planner::Plan,
    pub by_tp: Vec<TpPoint>,
    pub gpus_per_node: usize,
    /// Under today's stack: the winner's what-if table (each switch flipped).
    pub what_if: Vec<WhatIf>,
}

/// Planner state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Planner {
    pub inputs: PlannerInputs,
    #[serde(skip)]
    computed_for: Option<PlannerInputs>,
    #[serde(skip)]
    job: Option<Background<PlannerResult>>,
    #[serde(skip)]
    result: Option<Result<PlannerResult, String>>,
}

/// Builds the request and runs the planner (on a worker thread).
pub fn run_planner(inputs: &PlannerInputs) -> Result<PlannerResult, String> {
    let catalogue = Catalogue::default();
    let cluster = Cluster::new(
        &catalogue,
        &inputs.gpu,
        inputs.gpus,
        inputs.gpus_per_node,
        &inputs.inter_node,
    )
    .map_err(|e| e.to_string())?;
    let req = PlanRequest {
        model: inputs.model.spec(),
        setup: TrainSetup {
            seq: inputs.seq,
            global_batch: inputs.global_batch,
            overlap_dp: true,
        },
        cluster,
        micro_batch: None,
        sp: None,
        recompute: None,
        zero: 1,
    };
    if inputs.todays_stack {
        let st = Stack::current();
        let sp = planner::plan_with(&req, &st);
        let what_if = sp
            .ranked
            .first()
            .and_then(|w| {
                let s = planner::stack_for(&st, &req.model, &w.it.layout);
                stack::what_if(&req.model, &req.setup, &req.cluster, &w.it.layout, &s).ok()
            })
            .unwrap_or_default();
        let by_tp = planner::valid_tp_sizes(&req.model, &req.cluster)
            .into_iter()
            .map(|tp| {
                let best = sp
                    .ranked
                    .iter()
                    .find(|r| r.it.layout.tp == tp)
                    .map(|r| r.it.clone());
                TpPoint {
                    tp,
                    spans_nodes: req.cluster.group_spans_nodes(1, tp),
                    fits: best.is_some(),
                    best,
                }
            })
            .collect();
        return Ok(PlannerResult {
            plan: planner::Plan {
                ranked: sp.ranked.into_iter().map(|r| r.it).collect(),
                dropped: sp.dropped,
                explanations: sp.explanations,
                findings: sp.findings,
            },
            by_tp,
            gpus_per_node: inputs.gpus_per_node,
            what_if,
        });
    }
    Ok(PlannerResult {
        plan: planner::plan(&req),
        by_tp: planner::throughput_vs_tp(&req),
        gpus_per_node: inputs.gpus_per_node,
        what_if: Vec::new(),
    })
}

impl View for Planner {
    fn id(&self) -> &'static str {
        "planner"
    }

    fn title(&self) -> &'static str {
        "Planner"
    }

    fn logic(&mut self, ctx: &egui::Context, _shared: &mut Shared) {
        if let Some(r) = background::finished(&mut self.job, ctx) {
            self.result = Some(r);
        }
        // One job at a time: while the learner drags a value, only the latest inputs run next.
        if self.job.is_none() && self.computed_for.as_ref() != Some(&self.inputs) {
            let inputs = self.inputs.clone();
            self.job = Some(Background::once(ctx, move |_| run_planner(&inputs)));
            self.computed_for = Some(self.inputs.clone());
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, _shared: &mut Shared) {
        ui.heading(crate::i18n::t(super::lang(ui), "pl-title"));
        inputs_ui(ui, &mut self.inputs);
        if let Some(job) = &self.job {
            ui.horizontal(|ui| {
                ui.spinner();
                let secs = format!("{:.1}", job.elapsed_s());
                ui.label(crate::i18n::t_args(
                    super::lang(ui),
                    "pl-planning",
                    &[("seconds", secs)],
                ));
            });
        }
        match &self.result {
            None => {}
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            Some(Ok(r)) => result_ui(ui, r),
        }
    }

    /// A lesson's planner target: the default inputs with the target's model and cluster
    /// (so the lesson's numbers do not depend on what the learner changed before).
    fn show_me(&mut self, target: &ShowMe, _shared: &Shared) {
        let has_fields = target.model.is_some()
            || target.gpu.is_some()
            || target.gpus.is_some()
            || target.gpus_per_node.is_some();
        if !has_fields {
            return;
        }
        let mut inputs = PlannerInputs::default();
        if let Some(m) = target.model.as_deref().and_then(|m| m.parse().ok()) {
            inputs.model = m;
        }
        if let Some(g) = target.gpu.as_deref() {
            if let Ok(spec) = Catalogue::default().gpu(g) {
                inputs.gpu = spec.name;
            }
        }
        inputs.gpus = target.gpus.unwrap_or(inputs.gpus);
        inputs.gpus_per_node = target.gpus_per_node.unwrap_or(inputs.gpus_per_node);
        self.inputs = inputs;
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

fn inputs_ui(ui: &mut egui::Ui, inputs: &mut PlannerInputs) {
    let catalogue = Catalogue::default();
    let lang = super::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    ui.horizontal_wrapped(|ui| {
        egui::ComboBox::from_label(tr("pl-model"))
            .selected_text(inputs.model.name())
            .show_ui(ui, |ui| {
                for m in ModelPreset::ALL {
                    ui.selectable_value(&mut inputs.model, m, m.name());
                }
            });
        egui::ComboBox::from_label(tr("pl-gpu"))
            .selected_text(inputs.gpu.as_str())
            .show_ui(ui, |ui| {
                for g in &catalogue.gpus {
                    ui.selectable_value(&mut inputs.gpu, g.name.clone(), g.name.as_str());
                }
            });
        for (label, v, max) in [
            ("pl-gpus", &mut inputs.gpus, 65536),
            ("pl-per-node", &mut inputs.gpus_per_node, 64),
        ] {
            let l = ui.label(tr(label));
            ui.add(egui::DragValue::new(v).range(1..=max))
                .labelled_by(l.id);
        }
        egui::ComboBox::from_label(tr("pl-between-nodes"))
            .selected_text(inputs.inter_node.as_str())
            .show_ui(ui, |ui| {
                for l in &catalogue.links {
                    ui.selectable_value(&mut inputs.inter_node, l.name.clone(), l.name.as_str());
                }
            });
        for (label, v, max) in [
            ("pl-seq", &mut inputs.seq, 1 << 20),
            ("pl-global-batch", &mut inputs.global_batch, 1 << 20),
        ] {
            let l = ui.label(tr(label));
            ui.add(egui::DragValue::new(v).range(1..=max))
                .labelled_by(l.id);
        }
        ui.checkbox(
            &mut inputs.todays_stack,
            crate::i18n::t(lang, "cap-todays-stack"),
        )
        .on_hover_text(crate::i18n::t(lang, "cap-todays-stack-hover"));
    });
}

/// The winner's what-if table: the iteration time with each switch of today's stack flipped.
fn what_if_ui(ui: &mut egui::Ui, rows: &[WhatIf]) {
    if rows.is_empty() {
        return;
    }
    let lang = super::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    ui.strong(tr("cap-what-if-title"));
    egui::Grid::new("what-if").striped(true).show(ui, |ui| {
        for h in [
            "cap-what-if-switch",
            "cap-what-if-flip",
            "cap-what-if-change",
        ] {
            ui.strong(tr(h));
        }
        ui.end_row();
        for w in rows {
            ui.label(tr(&format!(
                "cap-switch-{}",
                w.switch.key().replace('_', "-")
            )));
            ui.label(tr(if w.on {
                "cap-what-if-off"
            } else {
                "cap-what-if-on"
            }));
            match (w.change, w.flipped_fits) {
                (Some(c), Some(true)) => ui.label(format!("{:+.1}%", 100.0 * c)),
                (Some(c), _) => {
                    ui.label(format!("{:+.1}% ({})", 100.0 * c, tr("cap-what-if-no-fit")))
                }
                _ => ui.label(tr("cap-what-if-invalid")),
            };
            ui.end_row();
        }
    });
}

fn result_ui(ui: &mut egui::Ui, r: &PlannerResult) {
    let plan = &r.plan;
    let lang = super::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    ui.columns(2, |cols| {
        let ui = &mut cols[0];
        ui.strong(tr("pl-plot-title"));
        let pts = |fits: bool, spans: bool| -> Vec<[f64; 2]> {
            r.by_tp
                .iter()
                .filter(|p| p.fits == fits && p.spans_nodes == spans)
                .filter_map(|p| p.best.as_ref().map(|b| [p.tp as f64, b.tokens_per_s]))
                .collect()
        };
        let line: Vec<[f64; 2]> = r
            .by_tp
            .iter()
            .filter(|p| p.fits)
            .filter_map(|p| p.best.as_ref().map(|b| [p.tp as f64, b.tokens_per_s]))
            .collect();
        let node = r.gpus_per_node as f64;
        Plot::new("tp-throughput")
            .legend(Legend::default())
            .height(260.0)
            .x_axis_label(tr("pl-plot-x"))
            .y_axis_label(tr("pl-plot-y"))
            .allow_scroll(false)
            .show(ui, |plot| {
                plot.line(Line::new(tr("pl-plot-fits"), PlotPoints::from(line)));
                plot.points(
                    Points::new(tr("pl-plot-inside"), PlotPoints::from(pts(true, false)))
                        .radius(5.0)
                        .color(egui::Color32::from_rgb(0x00, 0x9E, 0x73)),
                );
                plot.points(
                    Points::new(tr("pl-plot-spans"), PlotPoints::from(pts(true, true)))
                        .radius(5.0)
                        .color(egui::Color32::from_rgb(0xD5, 0x5E, 0x00)),
                );
                plot.vline(VLine::new(tr("pl-plot-node"), node));
            });
        let ui = &mut cols[1];
        ui.strong(tr("pl-why"));
        for f in &plan.findings {
            ui.label(format!("• {}", finding_text(lang, f)));
        }
        ui.label(crate::i18n::t_args(
            lang,
            "pl-fit-count",
            &[
                ("fit", plan.ranked.len().to_string()),
                ("dropped", plan.dropped.len().to_string()),
            ],
        ));
        for d in plan.dropped.iter().take(3) {
            let reason = d
                .shortfall
                .map_or_else(|| d.reason.clone(), |s| shortfall_text(lang, &s));
            ui.small(format!("{}: {}", d.layout.label(), reason));
        }
    });
    ui.separator();
    // Both ways: at projector sizes the ranked table is wider than the window.
    egui::ScrollArea::both().show(ui, |ui| {
        what_if_ui(ui, &r.what_if);
        egui::Grid::new("ranked").striped(true).show(ui, |ui| {
            ui.strong("#");
            for h in [
                "pl-col-layout",
                "pl-col-iteration",
                "pl-col-compute",
                "pl-col-tp",
                "pl-col-bubble",
                "pl-col-dp",
                "pl-col-tokens",
                "pl-col-tflops",
                "pl-col-mfu",
                "pl-col-memory",
            ] {
                ui.strong(tr(h));
            }
            ui.end_row();
            for (i, it) in plan.ranked.iter().take(SHOWN_LAYOUTS).enumerate() {
                ui.label((i + 1).to_string());
                let mut label = it.layout.label();
                if it.tp_spans_nodes {
                    label.push(' ');
                    label.push_str(&tr("pl-spans-nodes"));
                }
                ui.label(label);
                ui.label(format!("{:.3}", it.iteration_time_s));
                for s in [
                    it.compute_s,
                    it.tp_comm_s,
                    it.pipeline_bubble_s,
                    it.dp_comm_s,
                ] {
                    ui.label(format!(
                        "{:.0}%",
                        100.0 * s / it.iteration_time_s.max(1e-12)
                    ));
                }
                ui.label(format!("{:.0}", it.tokens_per_s));
                ui.label(format!("{:.0}", it.tflops_per_gpu));
                ui.label(format!("{:.0}%", 100.0 * it.mfu));
                ui.label(human_bytes(it.memory.total_bytes));
                ui.end_row();
            }
        });
    });
}

/// Why a layout does not fit, in the learner's language (English: the engine's sentence).
fn shortfall_text(lang: tplab_lessons::Lang, s: &planner::Shortfall) -> String {
    crate::i18n::t_args(
        lang,
        "pl-shortfall",
        &[
            ("needs", human_bytes(s.needs_bytes)),
            ("weights", human_bytes(s.weights_bytes)),
            ("gradients", human_bytes(s.gradients_bytes)),
            ("optimizer", human_bytes(s.optimizer_bytes)),
            ("activations", human_bytes(s.activations_bytes)),
            ("usable", human_bytes(s.usable_bytes)),
        ],
    )
}

/// The planner's finding in the learner's language (English: the same words as the engine's
/// sentence, which `tplab plan` prints).
fn finding_text(lang: tplab_lessons::Lang, f: &planner::Finding) -> String {
    use planner::{Finding, Reason};
    let s3 = |x: f64| format!("{x:.3}");
    let t = |id: &str, args: &[(&str, String)]| crate::i18n::t_args(lang, id, args);
    match f {
        Finding::NoFit {
            usable_bytes,
            closest,
            needs_bytes,
        } => t(
            "pl-f-nofit",
            &[
                ("usable", human_bytes(*usable_bytes)),
                ("closest", closest.clone()),
                ("needs", human_bytes(*needs_bytes)),
            ],
        ),
        Finding::NoShape => t("pl-f-noshape", &[]),
        Finding::Beats {
            winner,
            other,
            percent,
            reason,
        } => {
            let two = |w: f64, o: f64| vec![("w", s3(w)), ("o", s3(o))];
            let reason = match reason {
                Reason::Tie => t("pl-r-tie", &[]),
                Reason::TpInsideNode {
                    intra,
                    other_tp,
                    inter,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("intra", intra.clone()),
                        ("other_tp", other_tp.to_string()),
                        ("inter", inter.clone()),
                    ]);
                    t("pl-r-tp-inside", &a)
                }
                Reason::TpLess {
                    winner_s,
                    other_s,
                    winner_tp,
                    other_tp,
                    other_full_recompute,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("wtp", winner_tp.to_string()),
                        ("otp", other_tp.to_string()),
                    ]);
                    let id = if *other_full_recompute {
                        "pl-r-tp-less-full"
                    } else {
                        "pl-r-tp-less"
                    };
                    t(id, &a)
                }
                Reason::Bubble {
                    winner_fraction,
                    other_fraction,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([("wf", s3(*winner_fraction)), ("of", s3(*other_fraction))]);
                    t("pl-r-bubble", &a)
                }
                Reason::DpInsideNode { winner_s, other_s } => {
                    t("pl-r-dp-inside", &two(*winner_s, *other_s))
                }
                Reason::DpHides {
                    winner_micro_batch,
                    other_micro_batch,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("wmb", winner_micro_batch.to_string()),
                        ("omb", other_micro_batch.to_string()),
                    ]);
                    t("pl-r-dp-hides", &a)
                }
                Reason::DpCheaper {
                    winner_s,
                    other_s,
                    winner_grad_bytes,
                    other_grad_bytes,
                    winner_dp,
                    other_dp,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("wb", human_bytes(*winner_grad_bytes)),
                        ("ob", human_bytes(*other_grad_bytes)),
                        ("wdp", winner_dp.to_string()),
                        ("odp", other_dp.to_string()),
                    ]);
                    t("pl-r-dp-cheaper", &a)
                }
                Reason::PipelineSends { winner_s, other_s } => {
                    t("pl-r-pp", &two(*winner_s, *other_s))
                }
                Reason::Optimizer { winner_s, other_s } => {
                    t("pl-r-optimizer", &two(*winner_s, *other_s))
                }
                Reason::Logits {
                    winner_micro_batches,
                    other_micro_batches,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("wm", winner_micro_batches.to_string()),
                        ("om", other_micro_batches.to_string()),
                    ]);
                    t("pl-r-logits", &a)
                }
                Reason::Recompute {
                    winner,
                    other,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([("wr", winner.clone()), ("or", other.clone())]);
                    t("pl-r-recompute", &a)
                }
                Reason::Gemm {
                    winner_s,
                    other_s,
                    micro_batches,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    match micro_batches {
                        Some((w, o)) => {
                            a.extend([("wmb", w.to_string()), ("omb", o.to_string())]);
                            t("pl-r-gemm-mb", &a)
                        }
                        None => t("pl-r-gemm", &a),
                    }
                }
            };
            t(
                "pl-f-beats",
                &[
                    ("winner", winner.clone()),
                    ("other", other.clone()),
                    ("percent", format!("{percent:.1}")),
                    ("reason", reason),
                ],
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use planner::{Finding, Reason};

    /// One finding of every kind, with distinct values so a swapped argument shows.
    fn every_finding() -> Vec<Finding> {
        let (w, o) = (1.25, 2.5);
        let reasons = vec![
            Reason::Tie,
            Reason::TpInsideNode {
                intra: "nvlink4".into(),
                other_tp: 16,
                inter: "ib400".into(),
                winner_s: w,
                other_s: o,
            },
            Reason::TpLess {
                winner_s: w,
                other_s: o,
                winner_tp: 4,
                other_tp: 8,
                other_full_recompute: false,
            },
            Reason::TpLess {
                winner_s: w,
                other_s: o,
                winner_tp: 4,
                other_tp: 8,
                other_full_recompute: true,
            },
            Reason::Bubble {
                winner_fraction: 0.125,
                other_fraction: 0.375,
                winner_s: w,
                other_s: o,
            },
            Reason::DpInsideNode {
                winner_s: w,
                other_s: o,
            },
            Reason::DpHides {
                winner_micro_batch: 1,
                other_micro_batch: 2,
                winner_s: w,
                other_s: o,
            },
            Reason::DpCheaper {
                winner_s: w,
                other_s: o,
                winner_grad_bytes: 3 << 30,
                other_grad_bytes: 6 << 30,
                winner_dp: 2,
                other_dp: 4,
            },
            Reason::PipelineSends {
                winner_s: w,
                other_s: o,
            },
            Reason::Optimizer {
                winner_s: w,
                other_s: o,
            },
            Reason::Logits {
                winner_micro_batches: 16,
                other_micro_batches: 32,
                winner_s: w,
                other_s: o,
            },
            Reason::Recompute {
                winner: "selective".into(),
                other: "full".into(),
                winner_s: w,
                other_s: o,
            },
            Reason::Gemm {
                winner_s: w,
                other_s: o,
                micro_batches: None,
            },
            Reason::Gemm {
                winner_s: w,
                other_s: o,
                micro_batches: Some((1, 2)),
            },
        ];
        let mut all: Vec<Finding> = reasons
            .into_iter()
            .map(|reason| Finding::Beats {
                winner: "TP=4 PP=2 DP=1".into(),
                other: "TP=8 PP=1 DP=1".into(),
                percent: 12.34,
                reason,
            })
            .collect();
        all.push(Finding::NoFit {
            usable_bytes: 67 << 30,
            closest: "TP=8 PP=1 DP=1".into(),
            needs_bytes: 90 << 30,
        });
        all.push(Finding::NoShape);
        all
    }

    #[test]
    fn a_shortfall_reads_the_same_in_the_app_and_the_cli_and_exists_in_turkish() {
        let s = planner::Shortfall {
            needs_bytes: 90 << 30,
            weights_bytes: 10 << 30,
            gradients_bytes: 20 << 30,
            optimizer_bytes: 40 << 30,
            activations_bytes: 20 << 30,
            usable_bytes: 67 << 30,
        };
        assert_eq!(shortfall_text(tplab_lessons::Lang::En, &s), s.to_string());
        let tr = shortfall_text(tplab_lessons::Lang::Tr, &s);
        assert!(tr.starts_with("GPU başına 90.0 GiB"), "{tr}");
        assert!(tr.contains("67.0 GiB"), "{tr}");
    }

    /// The view's English is the engine's sentence word for word (what `tplab plan` prints), for
    /// every kind of finding; the Turkish differs from it and names the same numbers.
    #[test]
    fn findings_read_the_same_in_the_app_and_the_cli_and_exist_in_turkish() {
        for f in every_finding() {
            assert_eq!(finding_text(tplab_lessons::Lang::En, &f), f.to_string());
            let tr = finding_text(tplab_lessons::Lang::Tr, &f);
            assert_ne!(tr, f.to_string());
            assert!(!tr.contains("pl-"), "{tr}");
            if let Finding::Beats { .. } = f {
                for n in ["12.3", "TP=4 PP=2 DP=1", "TP=8 PP=1 DP=1"] {
                    assert!(tr.contains(n), "{tr} lacks {n}");
                }
            }
        }
    }
}
