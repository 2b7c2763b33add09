//! The 3D-parallelism planner: enumerate layouts, drop what does not fit, rank the rest.
//!
//! For a model and a cluster, [`plan`] tries every `(TP, PP, DP)` with `t·p·d = gpus` that the
//! shape rules allow, every micro-batch size (or the one given), sequence parallelism on/off
//! and each recomputation strategy (or the ones given); predicts each with
//! [`cost::iteration_time`]; drops those whose memory per GPU exceeds the usable memory (and
//! says by how much); ranks the rest by tokens per second; and explains the winner against the
//! runners-up in one sentence each. [`throughput_vs_tp`] gives the best layout at each TP size,
//! for the app's chart of the drop once TP spans nodes.
//!
//! # For the app's views
//! - Planner: build a [`PlanRequest`] (model from [`crate::capacity::models::ModelPreset::spec`] or
//!   [`ModelSpec::from_hf_config`], cluster from [`Cluster::new`]), then [`plan`] for the ranked
//!   table and [`Plan::explanations`], and [`throughput_vs_tp`] for the chart (x = `tp`,
//!   y = `best.tokens_per_s`, mark `spans_nodes`). A 1024-GPU plan evaluates ~800 layouts in
//!   well under a second in release builds; run it off the UI thread.
//! - Memory: [`crate::capacity::memory::config_memory_by_tp`] gives weights, gradients, optimizer and
//!   activations per rank for the engine's own [`crate::config::Config`] at each valid TP, with
//!   the unsharded total; [`crate::capacity::memory::training_memory`] does the same for a model layout.
//! - Collectives and Timeline: [`crate::capacity::cost::apply_to_trace`] fills a trace with modeled times
//!   for a [`Cluster`] (use [`Cluster::covering`] so that TP > gpus_per_node spans nodes).

use crate::capacity::cost::{self, IterationTime, TrainSetup};
use crate::capacity::hardware::Cluster;
use crate::capacity::memory::{self, Layout, Recompute};
use crate::capacity::models::ModelSpec;
use crate::capacity::stack::{self, Stack, StackIteration};
use crate::config::human_bytes;
use serde::{Deserialize, Serialize};

/// Micro-batch sizes tried when none is given.
pub const MICRO_BATCH_CANDIDATES: [usize; 4] = [1, 2, 4, 8];

/// What to plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRequest {
    pub model: ModelSpec,
    pub setup: TrainSetup,
    pub cluster: Cluster,
    /// Fixed micro-batch size, or `None` to try [`MICRO_BATCH_CANDIDATES`].
    pub micro_batch: Option<usize>,
    /// Fixed sequence parallelism, or `None` to try both (SP only matters for TP > 1).
    pub sp: Option<bool>,
    /// Fixed recomputation, or `None` to try all three.
    pub recompute: Option<Recompute>,
    /// ZeRO stage for every layout.
    pub zero: u8,
}

impl PlanRequest {
    /// `model` trained with `setup` on `cluster`, every choice left to the planner (micro-batch,
    /// sequence parallelism, recomputation) and ZeRO-1, as the Planner view and the lessons ask.
    pub fn new(model: ModelSpec, setup: TrainSetup, cluster: Cluster) -> Self {
        PlanRequest {
            model,
            setup,
            cluster,
            micro_batch: None,
            sp: None,
            recompute: None,
            zero: 1,
        }
    }
}

/// A layout the planner set aside, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    pub layout: Layout,
    /// The interleaving depth it was priced at (1: none): the search drops the same layout at
    /// several depths, whose activations differ.
    #[serde(default = "one_stage")]
    pub virtual_stages: usize,
    /// Memory per GPU it would need (0 when dropped for a shape rule).
    pub needed_bytes: u64,
    pub reason: String,
    /// For a layout dropped for memory: the same reason as data (`reason` is its English).
    #[serde(default)]
    pub shortfall: Option<Shortfall>,
    /// For a layout dropped for a shape rule: that rule as data (`reason` is its English), for a
    /// view that words it in the learner's language. Not in `--json` (the reason is).
    #[serde(skip)]
    pub shape: Option<memory::LayoutError>,
}

fn one_stage() -> usize {
    1
}

/// Why a layout does not fit: what it needs per GPU, term by term, against what is usable.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Shortfall {
    pub needs_bytes: u64,
    pub weights_bytes: u64,
    pub gradients_bytes: u64,
    pub optimizer_bytes: u64,
    pub activations_bytes: u64,
    pub usable_bytes: u64,
}

impl Shortfall {
    fn of(it: &IterationTime) -> Self {
        Shortfall {
            needs_bytes: it.memory.total_bytes,
            weights_bytes: it.memory.weights_bytes,
            gradients_bytes: it.memory.gradients_bytes,
            optimizer_bytes: it.memory.optimizer_bytes,
            activations_bytes: it.memory.activations_bytes,
            usable_bytes: it.memory_limit_bytes,
        }
    }

    /// The dropped entry of a layout that does not fit at interleaving depth `virtual_stages`.
    fn dropped(layout: Layout, virtual_stages: usize, it: &IterationTime) -> Dropped {
        let s = Shortfall::of(it);
        Dropped {
            layout,
            virtual_stages,
            needed_bytes: s.needs_bytes,
            reason: s.to_string(),
            shortfall: Some(s),
            shape: None,
        }
    }
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "needs {} per GPU (weights {}, gradients {}, optimizer {}, activations {}) but {} is \
             usable",
            human_bytes(self.needs_bytes),
            human_bytes(self.weights_bytes),
            human_bytes(self.gradients_bytes),
            human_bytes(self.optimizer_bytes),
            human_bytes(self.activations_bytes),
            human_bytes(self.usable_bytes)
        )?;
        // Where both round to the same figure, the bytes say which is larger.
        if human_bytes(self.needs_bytes) == human_bytes(self.usable_bytes) {
            write!(
                f,
                " ({} bytes against {})",
                self.needs_bytes, self.usable_bytes
            )?;
        }
        Ok(())
    }
}

/// The planner's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Layouts that fit, fastest first.
    pub ranked: Vec<IterationTime>,
    /// Layouts that do not fit in memory or break a batch rule, with the reason.
    pub dropped: Vec<Dropped>,
    /// One sentence per runner-up: why the winner beats it. When nothing fits, one sentence
    /// saying what came closest.
    pub explanations: Vec<String>,
    /// The same, as data (`explanations[i]` is `findings[i]`'s English).
    pub findings: Vec<Finding>,
}

/// Every valid TP size for `model` on `cluster`: divides the GPUs, the heads, the KV heads and
/// the FFN width. These are the divisors of the common divisor of all four, found in
/// `O(√heads)` steps, never by scanning every GPU count.
pub fn valid_tp_sizes(model: &ModelSpec, cluster: &Cluster) -> Vec<usize> {
    memory::training_tp_sizes(model)
        .into_iter()
        .filter(|&t| cluster.gpus.is_multiple_of(t))
        .collect()
}

/// Pipeline sizes for `n` GPUs per TP group's complement: divisors of both `n` and the layer
/// count, in `O(√layers)` steps.
fn valid_pp_sizes(model: &ModelSpec, n: usize) -> Vec<usize> {
    crate::config::divisors(model.layers)
        .into_iter()
        .filter(|&p| n.is_multiple_of(p))
        .collect()
}

/// Every candidate layout (before memory and batch checks).
fn candidates(req: &PlanRequest) -> Vec<Layout> {
    let mut out = Vec::new();
    let n = req.cluster.gpus;
    for tp in valid_tp_sizes(&req.model, &req.cluster) {
        for pp in valid_pp_sizes(&req.model, n / tp) {
            out.extend(layouts_of(req, tp, pp, n / (tp * pp), false));
        }
    }
    out
}

/// Expert-parallel sizes for a Mixture-of-Experts model whose data-parallel size is `dp`: the
/// common divisors of the expert count and `dp` (Megatron-Core draws the EP group from the
/// data-parallel ranks); `[1]` for a dense model.
pub fn valid_ep_sizes(model: &ModelSpec, dp: usize) -> Vec<usize> {
    if model.experts <= 1 {
        return vec![1];
    }
    crate::config::divisors(model.experts)
        .into_iter()
        .filter(|&e| dp.is_multiple_of(e))
        .collect()
}

/// The layouts of one `TP × PP × DP` split: every expert-parallel size (MoE models), micro-batch
/// size, sequence-parallel choice (only with TP > 1) and recomputation `req` leaves open, in
/// that nesting. `folded` adds, for an MoE model at TP > 1, the experts folded apart from
/// attention (today's stack; the 2021 planner keeps EP inside DP).
fn layouts_of(req: &PlanRequest, tp: usize, pp: usize, dp: usize, folded: bool) -> Vec<Layout> {
    let micro: Vec<usize> = match req.micro_batch {
        Some(b) => vec![b],
        None => MICRO_BATCH_CANDIDATES.to_vec(),
    };
    let recompute: Vec<Recompute> = match req.recompute {
        Some(r) => vec![r],
        None => Recompute::ALL.to_vec(),
    };
    let sps: Vec<bool> = match (req.sp, tp) {
        (_, 1) => vec![false],
        (Some(sp), _) => vec![sp],
        (None, _) => vec![false, true],
    };
    // Expert parallelism: EP inside DP with the experts split like TP, and for an MoE model at
    // TP > 1 also the folded grid (Megatron-Core's MoE parallel folding: ETP 1, EP up to TP·DP).
    let mut experts: Vec<(usize, usize)> = valid_ep_sizes(&req.model, dp)
        .into_iter()
        .map(|ep| (ep, 0))
        .collect();
    if folded && req.model.experts > 1 && tp > 1 {
        experts.extend(
            crate::config::divisors(req.model.experts)
                .into_iter()
                .filter(|&ep| ep > 1 && (tp * dp).is_multiple_of(ep))
                .map(|ep| (ep, 1)),
        );
    }
    let mut out = Vec::new();
    for (ep, etp) in experts {
        for &micro_batch in &micro {
            for &sp in &sps {
                for &rc in &recompute {
                    out.push(Layout {
                        tp,
                        pp,
                        dp,
                        micro_batch,
                        sp,
                        recompute: rc,
                        zero: req.zero,
                        ep,
                        etp,
                    });
                }
            }
        }
    }
    out
}

/// Predicts one given layout (the CLI's `--layout`).
pub fn evaluate(req: &PlanRequest, layout: &Layout) -> Result<IterationTime, memory::LayoutError> {
    cost::iteration_time(&req.model, &req.setup, &req.cluster, layout)
}

/// Evaluates every candidate; `Err` holds the dropped ones.
fn evaluate_all(req: &PlanRequest) -> (Vec<IterationTime>, Vec<IterationTime>, Vec<Dropped>) {
    let mut fit = Vec::new();
    let mut too_big = Vec::new();
    let mut dropped = Vec::new();
    for layout in candidates(req) {
        match evaluate(req, &layout) {
            Ok(it) if it.fits => fit.push(it),
            Ok(it) => {
                dropped.push(Shortfall::dropped(layout, 1, &it));
                too_big.push(it);
            }
            Err(e) => dropped.push(Dropped {
                layout,
                virtual_stages: 1,
                needed_bytes: 0,
                reason: e.to_string(),
                shortfall: None,
                shape: Some(e),
            }),
        }
    }
    let by_speed = |a: &IterationTime, b: &IterationTime| {
        a.iteration_time_s
            .total_cmp(&b.iteration_time_s)
            .then(a.memory.total_bytes.cmp(&b.memory.total_bytes))
    };
    fit.sort_by(by_speed);
    too_big.sort_by_key(|it| it.memory.total_bytes);
    (fit, too_big, dropped)
}

/// Plans `req`: ranked layouts that fit, dropped ones with reasons, and explanations.
pub fn plan(req: &PlanRequest) -> Plan {
    let (ranked, too_big, mut dropped) = evaluate_all(req);
    dropped.sort_by(|a, b| {
        (a.needed_bytes == 0)
            .cmp(&(b.needed_bytes == 0))
            .then(a.needed_bytes.cmp(&b.needed_bytes))
    });
    let findings: Vec<Finding> = match ranked.first() {
        Some(winner) => ranked
            .iter()
            .skip(1)
            .take(3)
            .map(|r| finding(winner, r, &req.cluster))
            .collect(),
        None => vec![match too_big.first() {
            Some(closest) => Finding::NoFit {
                usable_bytes: closest.memory_limit_bytes,
                closest: closest.layout.label(),
                needs_bytes: closest.memory.total_bytes,
            },
            None => Finding::NoShape,
        }],
    };
    Plan {
        ranked,
        dropped,
        explanations: findings.iter().map(Finding::to_string).collect(),
        findings,
    }
}

/// What the planner says about its answer, as data: the English sentence is its `Display` (the
/// CLI and `--json` print that); the app words the same fields in the learner's language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Finding {
    /// The winner against one runner-up.
    Beats {
        winner: String,
        other: String,
        /// How much longer the runner-up's iteration takes, in percent.
        percent: f64,
        reason: Reason,
        /// Where the winner loses time against the runner-up, when that gives back much of
        /// what `reason` gains (4.1 s against 10.1 s of all-reduces, yet 1.9% apart).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trade: Option<Trade>,
    },
    /// Nothing fits: the closest layout and what it needs.
    NoFit {
        usable_bytes: u64,
        closest: String,
        needs_bytes: u64,
    },
    /// No layout satisfies the shape rules at all.
    NoShape,
}

/// A time term of an iteration, as a finding names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Term {
    Compute,
    TpComm,
    Bubble,
    DpComm,
    PpSends,
    Optimizer,
}

impl Term {
    /// English, after "though more in".
    pub fn words(self) -> &'static str {
        match self {
            Term::Compute => "compute",
            Term::TpComm => "TP all-reduces",
            Term::Bubble => "the pipeline bubble",
            Term::DpComm => "data-parallel communication",
            Term::PpSends => "pipeline sends",
            Term::Optimizer => "the optimizer step",
        }
    }
}

/// The term where the winner spends more time than the runner-up (seconds per iteration).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trade {
    pub term: Term,
    pub winner_s: f64,
    pub other_s: f64,
}

impl std::fmt::Display for Trade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            ", though more in {} ({:.3} s vs {:.3} s)",
            self.term.words(),
            self.winner_s,
            self.other_s
        )
    }
}

/// Why the winner is faster: the time term that differs most, with both sides' values
/// (seconds per iteration unless named otherwise).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Reason {
    /// Less than 1% apart.
    Tie,
    TpInsideNode {
        intra: String,
        other_tp: usize,
        inter: String,
        winner_s: f64,
        other_s: f64,
    },
    TpLess {
        winner_s: f64,
        other_s: f64,
        winner_tp: usize,
        other_tp: usize,
        /// The runner-up recomputes fully (repeating the forward all-reduces) and the winner not.
        other_full_recompute: bool,
    },
    Bubble {
        winner_fraction: f64,
        other_fraction: f64,
        winner_s: f64,
        other_s: f64,
    },
    DpInsideNode {
        winner_s: f64,
        other_s: f64,
    },
    DpHides {
        winner_micro_batch: usize,
        other_micro_batch: usize,
        winner_s: f64,
        other_s: f64,
    },
    DpCheaper {
        winner_s: f64,
        other_s: f64,
        winner_grad_bytes: u64,
        other_grad_bytes: u64,
        winner_dp: usize,
        other_dp: usize,
    },
    PipelineSends {
        winner_s: f64,
        other_s: f64,
    },
    Optimizer {
        winner_s: f64,
        other_s: f64,
    },
    Logits {
        winner_micro_batches: usize,
        other_micro_batches: usize,
        winner_s: f64,
        other_s: f64,
    },
    Recompute {
        winner: String,
        other: String,
        winner_s: f64,
        other_s: f64,
    },
    Gemm {
        winner_s: f64,
        other_s: f64,
        /// (winner, runner-up) micro-batch sizes when they differ.
        micro_batches: Option<(usize, usize)>,
    },
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::NoFit {
                usable_bytes,
                closest,
                needs_bytes,
            } => write!(
                f,
                "No layout fits in {} usable per GPU; the closest, {}, needs {}: add GPUs (more \
                 pipeline or ZeRO sharding), use GPUs with more memory, or recompute activations.",
                human_bytes(*usable_bytes),
                closest,
                human_bytes(*needs_bytes)
            ),
            Finding::NoShape => f.write_str(
                "No layout satisfies the shape rules for this model, cluster and batch; see the \
                 dropped list.",
            ),
            Finding::Beats {
                winner,
                other,
                percent,
                reason,
                trade,
            } => match reason {
                Reason::Tie => write!(
                    f,
                    "{winner} and {other} are within {:.1}% of each other: a tie within \
                         the model's accuracy; pick either.",
                    percent.abs()
                ),
                r => {
                    write!(f, "{winner} beats {other} by {percent:.1}%: {r}")?;
                    if let Some(t) = trade {
                        write!(f, "{t}")?;
                    }
                    f.write_str(".")
                }
            },
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Tie => f.write_str("a tie within the model's accuracy; pick either"),
            Reason::TpInsideNode {
                intra,
                other_tp,
                inter,
                winner_s,
                other_s,
            } => write!(
                f,
                "its TP group stays inside one {intra} node while TP={other_tp} spans nodes and \
                 all-reduces over {inter} (TP communication {winner_s:.3} s vs {other_s:.3} s per \
                 iteration)"
            ),
            Reason::TpLess {
                winner_s,
                other_s,
                winner_tp,
                other_tp,
                other_full_recompute,
            } => write!(
                f,
                "it spends less time in TP all-reduces ({winner_s:.3} s vs {other_s:.3} s per \
                 iteration; TP={winner_tp} vs {other_tp}{})",
                if *other_full_recompute {
                    ", and full recomputation repeats the forward all-reduces"
                } else {
                    ""
                }
            ),
            Reason::Bubble {
                winner_fraction,
                other_fraction,
                winner_s,
                other_s,
            } => write!(
                f,
                "its pipeline bubble is smaller ((p−1)/m = {winner_fraction:.3} vs \
                 {other_fraction:.3}; {winner_s:.3} s vs {other_s:.3} s idle)"
            ),
            Reason::DpInsideNode { winner_s, other_s } => write!(
                f,
                "its data-parallel gradient all-reduce stays inside a node ({winner_s:.3} s vs \
                 {other_s:.3} s exposed)"
            ),
            Reason::DpHides {
                winner_micro_batch,
                other_micro_batch,
                winner_s,
                other_s,
            } => write!(
                f,
                "more of its gradient all-reduce hides behind the last micro-batch's backward pass \
                 (micro-batch {winner_micro_batch} vs {other_micro_batch}: {winner_s:.3} s vs \
                 {other_s:.3} s exposed)"
            ),
            Reason::DpCheaper {
                winner_s,
                other_s,
                winner_grad_bytes,
                other_grad_bytes,
                winner_dp,
                other_dp,
            } => write!(
                f,
                "its data-parallel gradient all-reduce is cheaper ({winner_s:.3} s vs {other_s:.3} s \
                 exposed; {} vs {} of gradients per GPU over DP={winner_dp} vs {other_dp})",
                human_bytes(*winner_grad_bytes),
                human_bytes(*other_grad_bytes)
            ),
            Reason::PipelineSends { winner_s, other_s } => write!(
                f,
                "it sends fewer pipeline activations ({winner_s:.3} s vs {other_s:.3} s)"
            ),
            Reason::Optimizer { winner_s, other_s } => write!(
                f,
                "its optimizer step touches fewer parameters per GPU ({winner_s:.3} s vs \
                 {other_s:.3} s)"
            ),
            Reason::Logits {
                winner_micro_batches,
                other_micro_batches,
                winner_s,
                other_s,
            } => write!(
                f,
                "the last pipeline stage also computes the vocabulary logits once per \
                 micro-batch, {winner_micro_batches} times per iteration vs \
                 {other_micro_batches} (compute {winner_s:.3} s vs {other_s:.3} s)"
            ),
            Reason::Recompute {
                winner,
                other,
                winner_s,
                other_s,
            } => write!(
                f,
                "it recomputes less ({winner} vs {other} recomputation: compute {winner_s:.3} s vs \
                 {other_s:.3} s)"
            ),
            Reason::Gemm {
                winner_s,
                other_s,
                micro_batches,
            } => {
                write!(
                    f,
                    "its GEMMs run closer to peak (compute {winner_s:.3} s vs {other_s:.3} s"
                )?;
                if let Some((w, o)) = micro_batches {
                    write!(f, "; micro-batch {w} vs {o}")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// One sentence: why `winner` is faster than `other`, naming the time term that differs most.
pub fn explain(winner: &IterationTime, other: &IterationTime, cluster: &Cluster) -> String {
    finding(winner, other, cluster).to_string()
}

/// Why `winner` is faster than `other`, as data ([`explain`] is its English sentence).
pub fn finding(winner: &IterationTime, other: &IterationTime, cluster: &Cluster) -> Finding {
    let (w, o) = (&winner.layout, &other.layout);
    let percent = 100.0 * (other.iteration_time_s / winner.iteration_time_s - 1.0);
    // Each time term on both sides: the reason is the one the winner gains most on; what it
    // gives back elsewhere is named when that is a quarter of the gain or more.
    let terms = [
        (Term::Compute, winner.compute_s, other.compute_s),
        (Term::TpComm, winner.tp_comm_s, other.tp_comm_s),
        (
            Term::Bubble,
            winner.pipeline_bubble_s,
            other.pipeline_bubble_s,
        ),
        (Term::DpComm, winner.dp_comm_s, other.dp_comm_s),
        (Term::PpSends, winner.pp_comm_s, other.pp_comm_s),
        (Term::Optimizer, winner.optimizer_s, other.optimizer_s),
    ]
    .map(|(term, winner_s, other_s)| Trade {
        term,
        winner_s,
        other_s,
    });
    let gain = |t: &Trade| t.other_s - t.winner_s;
    let best = terms.iter().copied().fold(
        terms[0],
        |acc, t| if gain(&t) > gain(&acc) { t } else { acc },
    );
    let trade = terms
        .iter()
        .copied()
        .filter(|t| gain(t) < 0.0)
        .fold(None, |acc: Option<Trade>, t| match acc {
            Some(a) if gain(&a) <= gain(&t) => Some(a),
            _ => Some(t),
        })
        .filter(|t| -gain(t) >= 0.25 * gain(&best));
    let term = best.term;
    let beats = |reason, trade| Finding::Beats {
        winner: w.label(),
        other: o.label(),
        percent,
        reason,
        trade,
    };
    if percent < 1.0 {
        return beats(Reason::Tie, None);
    }
    let reason = match term {
        Term::TpComm if other.tp_spans_nodes && !winner.tp_spans_nodes => Reason::TpInsideNode {
            intra: cluster.intra_node.name.clone(),
            other_tp: o.tp,
            inter: cluster.inter_node.name.clone(),
            winner_s: winner.tp_comm_s,
            other_s: other.tp_comm_s,
        },
        Term::TpComm => Reason::TpLess {
            winner_s: winner.tp_comm_s,
            other_s: other.tp_comm_s,
            winner_tp: w.tp,
            other_tp: o.tp,
            other_full_recompute: o.recompute == Recompute::Full && w.recompute != Recompute::Full,
        },
        Term::Bubble => Reason::Bubble {
            winner_fraction: winner.bubble_fraction,
            other_fraction: other.bubble_fraction,
            winner_s: winner.pipeline_bubble_s,
            other_s: other.pipeline_bubble_s,
        },
        Term::DpComm if other.dp_spans_nodes && !winner.dp_spans_nodes => Reason::DpInsideNode {
            winner_s: winner.dp_comm_s,
            other_s: other.dp_comm_s,
        },
        Term::DpComm if (w.tp, w.pp, w.dp) == (o.tp, o.pp, o.dp) => Reason::DpHides {
            winner_micro_batch: w.micro_batch,
            other_micro_batch: o.micro_batch,
            winner_s: winner.dp_comm_s,
            other_s: other.dp_comm_s,
        },
        Term::DpComm => Reason::DpCheaper {
            winner_s: winner.dp_comm_s,
            other_s: other.dp_comm_s,
            winner_grad_bytes: winner.memory.params_per_gpu * 2,
            other_grad_bytes: other.memory.params_per_gpu * 2,
            winner_dp: w.dp,
            other_dp: o.dp,
        },
        Term::PpSends => Reason::PipelineSends {
            winner_s: winner.pp_comm_s,
            other_s: other.pp_comm_s,
        },
        Term::Optimizer => Reason::Optimizer {
            winner_s: winner.optimizer_s,
            other_s: other.optimizer_s,
        },
        _ if w.recompute == o.recompute
            && w.micro_batch == o.micro_batch
            && winner.micro_batches != other.micro_batches =>
        {
            Reason::Logits {
                winner_micro_batches: winner.micro_batches,
                other_micro_batches: other.micro_batches,
                winner_s: winner.compute_s,
                other_s: other.compute_s,
            }
        }
        _ if w.recompute != o.recompute => Reason::Recompute {
            winner: w.recompute.name().to_string(),
            other: o.recompute.name().to_string(),
            winner_s: winner.compute_s,
            other_s: other.compute_s,
        },
        _ => Reason::Gemm {
            winner_s: winner.compute_s,
            other_s: other.compute_s,
            micro_batches: (w.micro_batch != o.micro_batch)
                .then_some((w.micro_batch, o.micro_batch)),
        },
    };
    beats(reason, trade)
}

/// The planner's answer under a training stack ([`plan_with`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackPlan {
    pub stack: Stack,
    /// Layouts that fit, fastest first (near-ties: less recomputation, then smaller PP, then
    /// smaller TP, as practice prefers).
    pub ranked: Vec<StackIteration>,
    pub dropped: Vec<Dropped>,
    pub explanations: Vec<String>,
    /// The same, as data (`explanations[i]` is `findings[i]`'s English).
    pub findings: Vec<Finding>,
}

/// Candidate layouts under `stack`: as [`plan`]'s, with every PP up to the layer count that
/// divides the GPUs left when stages may be uneven (but at most 25% imbalance:
/// `⌈l/p⌉·p ≤ 1.25·l`), and DP absorbing context parallelism (`t·p·d·cp = GPUs`).
fn candidates_with(req: &PlanRequest, stack: &Stack) -> Vec<Layout> {
    let cp = stack.context_parallel.max(1);
    let n = req.cluster.gpus;
    if !n.is_multiple_of(cp) {
        return Vec::new();
    }
    let per_cp = n / cp;
    let l = req.model.layers;
    let mut out = Vec::new();
    for tp in valid_tp_sizes(&req.model, &req.cluster)
        .into_iter()
        .filter(|t| per_cp.is_multiple_of(*t))
    {
        let pps: Vec<usize> = crate::config::divisors(per_cp / tp)
            .into_iter()
            .filter(|&p| {
                l.is_multiple_of(p)
                    || (stack.uneven_stages
                        && p <= l
                        && (l.div_ceil(p) * p) as f64 <= 1.25 * l as f64)
            })
            .collect();
        for pp in pps {
            out.extend(layouts_of(req, tp, pp, per_cp / (tp * pp), true));
        }
    }
    out
}

/// The stack a layout runs under: `stack`, without interleaving where the layout has one
/// pipeline stage (or stages too short for `v` chunks).
pub fn stack_for(stack: &Stack, model: &ModelSpec, layout: &Layout) -> Stack {
    let v = stack.virtual_stages;
    if v > 1
        && (layout.pp == 1
            || stack::stage_layers(model.layers, layout.pp)
                .iter()
                .any(|&n| n < v))
    {
        Stack {
            virtual_stages: 1,
            ..*stack
        }
    } else {
        *stack
    }
}

/// Predicts one layout under a stack (the CLI's `--layout`).
pub fn evaluate_with(
    req: &PlanRequest,
    layout: &Layout,
    stack: &Stack,
) -> Result<StackIteration, memory::LayoutError> {
    stack::iteration_time(&req.model, &req.setup, &req.cluster, layout, stack)
}

fn practice_rank(it: &StackIteration) -> (u8, usize, usize, usize) {
    let rc = match it.it.layout.recompute {
        Recompute::None => 0,
        Recompute::Selective => 1,
        Recompute::Full => 2,
    };
    (
        rc,
        it.it.layout.pp,
        it.it.layout.tp,
        it.breakdown.virtual_stages,
    )
}

/// Interleaving depths (model chunks per GPU) [`plan_search`] tries when none is given: plain
/// 1F1B and 2 to 8 chunks, as far as the shortest pipeline stage has layers for (a chunk holds
/// at least one layer). Megatron-Core accepts any depth whose chunks hold whole layers; 8 is
/// where a 16-stage 405B pipeline (7–8 layers a stage) runs out.
pub const VIRTUAL_STAGE_CANDIDATES: [usize; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

/// [`plan`] under a training stack: today's stack ranks what Megatron-Core and NeMo recipes
/// run; [`Stack::megatron_2021`] gives [`plan`]'s answer. The interleaving depth is the
/// stack's (or 1 where a layout's stages are too short for it); [`plan_search`] searches it.
pub fn plan_with(req: &PlanRequest, stack: &Stack) -> StackPlan {
    let layouts = if stack.is_megatron_2021() {
        candidates(req)
    } else {
        candidates_with(req, stack)
    };
    let runs = layouts
        .into_iter()
        .map(|layout| (layout, stack_for(stack, &req.model, &layout)));
    rank_with(req, stack, runs)
}

/// [`plan_with`], searching the interleaving depth too: every candidate layout under each of
/// `depths` model chunks per GPU that its pipeline stages allow (a depth above 1 needs PP > 1
/// and at least that many layers on every stage; the rest are not tried, not refused), each
/// priced with its bubble `(p−1)/(v·m)`, its `v×` pipeline sends and the activations its
/// schedule holds in flight ([`stack::in_flight_chunks`]). Micro-batch size (and so the
/// micro-batch count `m = B/(b·d)`), sequence parallelism and recomputation (none, selective,
/// full: a second forward pass) are searched as in [`plan`], unless `req` fixes them.
pub fn plan_search(req: &PlanRequest, stack: &Stack, depths: &[usize]) -> StackPlan {
    if stack.is_megatron_2021() {
        return plan_with(req, stack);
    }
    let mut runs = Vec::new();
    for layout in candidates_with(req, stack) {
        let shortest = stack::stage_layers(req.model.layers, layout.pp)
            .into_iter()
            .min()
            .unwrap_or(0);
        for &v in depths {
            if v == 0 || (v > 1 && (layout.pp == 1 || shortest < v)) {
                continue;
            }
            runs.push((
                layout,
                Stack {
                    virtual_stages: v,
                    ..*stack
                },
            ));
        }
    }
    rank_with(req, stack, runs.into_iter())
}

/// Prices each `(layout, stack)` run and ranks those that fit (see [`plan_with`]).
fn rank_with(
    req: &PlanRequest,
    stack: &Stack,
    runs: impl Iterator<Item = (Layout, Stack)>,
) -> StackPlan {
    let mut fit = Vec::new();
    let mut too_big: Vec<StackIteration> = Vec::new();
    let mut dropped = Vec::new();
    for (layout, st) in runs {
        match evaluate_with(req, &layout, &st) {
            Ok(r) if r.it.fits => fit.push(r),
            Ok(r) => {
                dropped.push(Shortfall::dropped(layout, st.virtual_stages, &r.it));
                too_big.push(r);
            }
            Err(e) => dropped.push(Dropped {
                layout,
                virtual_stages: st.virtual_stages,
                needed_bytes: 0,
                reason: e.to_string(),
                shortfall: None,
                shape: Some(e),
            }),
        }
    }
    // Fastest first; then, within each run of layouts less than 0.5% slower than the run's
    // fastest (a tie within the model's accuracy), what practice prefers (a total order: a
    // sort by time, then stable sorts of disjoint groups).
    fit.sort_by(|a, b| a.it.iteration_time_s.total_cmp(&b.it.iteration_time_s));
    let mut start = 0;
    while start < fit.len() {
        let t0 = fit[start].it.iteration_time_s;
        let mut end = start + 1;
        while end < fit.len() && fit[end].it.iteration_time_s <= 1.005 * t0 {
            end += 1;
        }
        fit[start..end].sort_by_key(practice_rank);
        start = end;
    }
    too_big.sort_by_key(|r| r.it.memory.total_bytes);
    dropped.sort_by(|a, b| {
        (a.needed_bytes == 0)
            .cmp(&(b.needed_bytes == 0))
            .then(a.needed_bytes.cmp(&b.needed_bytes))
    });
    let findings: Vec<Finding> = match fit.first() {
        Some(w) => fit
            .iter()
            .skip(1)
            .take(3)
            .map(|r| {
                let mut f = finding(&w.it, &r.it, &req.cluster);
                // The search ranks a layout at several interleaving depths: the labels say
                // which (two "TP=8 PP=4 DP=2 …" read as one layout tied with itself).
                if let Finding::Beats { winner, other, .. } = &mut f {
                    *winner = label_at_depth(winner, w.breakdown.virtual_stages);
                    *other = label_at_depth(other, r.breakdown.virtual_stages);
                }
                f
            })
            .collect(),
        None => vec![match too_big.first() {
            Some(c) => Finding::NoFit {
                usable_bytes: c.it.memory_limit_bytes,
                closest: label_at_depth(&c.it.layout.label(), c.breakdown.virtual_stages),
                needs_bytes: c.it.memory.total_bytes,
            },
            None => Finding::NoShape,
        }],
    };
    StackPlan {
        stack: *stack,
        ranked: fit,
        dropped,
        explanations: findings.iter().map(Finding::to_string).collect(),
        findings,
    }
}

/// `label` with ` v=N` for an interleaving depth above 1 (the search ranks and drops a layout
/// at several depths: without it they read as one).
pub fn label_at_depth(label: &str, virtual_stages: usize) -> String {
    match virtual_stages {
        v if v > 1 => format!("{label} v={v}"),
        _ => label.to_string(),
    }
}

/// The axes of a plan sweep: every combination of their values is planned with
/// [`plan_search`]. An empty list keeps the request's value (GPUs, global batch, sequence
/// length) or leaves the choice to the search (interleaving depth, micro-batch size).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PlanSweep {
    pub gpus: Vec<usize>,
    pub global_batch: Vec<usize>,
    pub seq: Vec<usize>,
    pub virtual_stages: Vec<usize>,
    pub micro_batch: Vec<usize>,
}

/// One point of a plan sweep: its inputs and the fastest layout that fits (`None` when none
/// does), or the rule the inputs break.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub gpus: usize,
    pub global_batch: usize,
    pub seq: usize,
    /// The depth fixed by the sweep, or `None` where the search chose it.
    pub virtual_stages: Option<usize>,
    /// The micro-batch size fixed by the sweep, or `None` where the search chose it.
    pub micro_batch: Option<usize>,
    pub best: Option<StackIteration>,
    /// Layouts that fit at this point.
    pub fitting: usize,
    /// The rule the point breaks (the point is reported, the sweep goes on).
    pub invalid: Option<String>,
}

/// Plans every point of `axes` around `req` under `stack` (the points in the order GPUs,
/// global batch, sequence, depth, micro-batch, the last varying fastest). A point whose
/// inputs break a rule is kept with the rule, and the sweep goes on.
pub fn sweep(req: &PlanRequest, stack: &Stack, axes: &PlanSweep) -> Vec<SweepPoint> {
    let or = |v: &Vec<usize>, d: usize| if v.is_empty() { vec![d] } else { v.clone() };
    let opt = |v: &Vec<usize>| -> Vec<Option<usize>> {
        if v.is_empty() {
            vec![None]
        } else {
            v.iter().copied().map(Some).collect()
        }
    };
    let mut out = Vec::new();
    for gpus in or(&axes.gpus, req.cluster.gpus) {
        for global_batch in or(&axes.global_batch, req.setup.global_batch) {
            for seq in or(&axes.seq, req.setup.seq) {
                for v in opt(&axes.virtual_stages) {
                    for b in opt(&axes.micro_batch) {
                        out.push(sweep_point(req, stack, gpus, global_batch, seq, v, b));
                    }
                }
            }
        }
    }
    out
}

fn sweep_point(
    req: &PlanRequest,
    stack: &Stack,
    gpus: usize,
    global_batch: usize,
    seq: usize,
    v: Option<usize>,
    b: Option<usize>,
) -> SweepPoint {
    let mut point = SweepPoint {
        gpus,
        global_batch,
        seq,
        virtual_stages: v,
        micro_batch: b,
        best: None,
        fitting: 0,
        invalid: None,
    };
    let setup = TrainSetup {
        seq,
        global_batch,
        ..req.setup
    };
    let checked = req
        .cluster
        .with_gpus(gpus)
        .map_err(|e| e.to_string())
        .and_then(|c| setup.validate().map(|()| c).map_err(|e| e.to_string()))
        .and_then(|c| match (v, b) {
            (Some(0), _) => Err("the interleaving depth must be at least 1".to_string()),
            (_, Some(0)) => Err("the micro-batch size must be at least 1".to_string()),
            _ => Ok(c),
        });
    let cluster = match checked {
        Ok(c) => c,
        Err(rule) => {
            point.invalid = Some(rule);
            return point;
        }
    };
    let at = PlanRequest {
        setup,
        cluster,
        micro_batch: b.or(req.micro_batch),
        ..req.clone()
    };
    let depths: Vec<usize> = match v {
        Some(v) => vec![v],
        None => VIRTUAL_STAGE_CANDIDATES.to_vec(),
    };
    let plan = plan_search(&at, stack, &depths);
    point.fitting = plan.ranked.len();
    point.best = plan.ranked.into_iter().next();
    if point.best.is_none() && point.fitting == 0 {
        if let Some(Finding::NoShape) = plan.findings.first() {
            point.invalid = plan.dropped.first().map(|d| d.reason.clone());
        }
    }
    point
}

/// A CSV field: quoted, inner quotes doubled, where it holds a comma, quote or newline.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The header of [`sweep_csv`].
pub const SWEEP_CSV_HEADER: &str = "schema,tplab_version,model,gpu,gpus,global_batch,seq,\
     virtual_stages_asked,micro_batch_asked,tp,pp,dp,cp,micro_batch,sp,recompute,zero,\
     virtual_stages,iteration_s,mfu,tflops_per_gpu,tokens_per_s,bubble_fraction,\
     memory_per_gpu_bytes,layouts_fitting,invalid";

/// A sweep as CSV: [`SWEEP_CSV_HEADER`], then one row a point. A point with nothing that fits
/// has empty layout columns and 0 layouts fitting; a point that breaks a rule names it in the
/// last column. `schema` and `version` stamp every row (the JSON's schema number and tplab's
/// version).
pub fn sweep_csv(
    points: &[SweepPoint],
    model: &str,
    gpu: &str,
    schema: u32,
    version: &str,
) -> String {
    let mut out = String::from(SWEEP_CSV_HEADER);
    out.push('\n');
    let asked = |x: Option<usize>| x.map_or("search".to_string(), |v| v.to_string());
    for pt in points {
        let head = format!(
            "{schema},{version},{},{},{},{},{},{},{}",
            csv_field(model),
            csv_field(gpu),
            pt.gpus,
            pt.global_batch,
            pt.seq,
            asked(pt.virtual_stages),
            asked(pt.micro_batch)
        );
        let body = match &pt.best {
            Some(r) => {
                let (l, it) = (&r.it.layout, &r.it);
                format!(
                    "{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.3},{:.1},{:.6},{},{},",
                    l.tp,
                    l.pp,
                    l.dp,
                    r.breakdown.context_parallel,
                    l.micro_batch,
                    l.sp,
                    l.recompute.name(),
                    l.zero,
                    r.breakdown.virtual_stages,
                    it.iteration_time_s,
                    it.mfu,
                    it.tflops_per_gpu,
                    it.tokens_per_s,
                    it.bubble_fraction,
                    it.memory.total_bytes,
                    pt.fitting
                )
            }
            None => format!(
                ",,,,,,,,,,,,,,,{},{}",
                pt.fitting,
                pt.invalid.as_deref().map(csv_field).unwrap_or_default()
            ),
        };
        out.push_str(&head);
        out.push(',');
        out.push_str(&body);
        out.push('\n');
    }
    out
}

/// When nothing fits: the smallest cluster of the same nodes (doubling the node count, up to
/// 64×) on which some layout fits, with its fastest layout. `None` if none does.
pub fn smallest_fitting_cluster(req: &PlanRequest) -> Option<(usize, IterationTime)> {
    let per_node = req.cluster.gpus_per_node.min(req.cluster.gpus).max(1);
    let mut gpus = req.cluster.gpus.max(per_node);
    for _ in 0..6 {
        gpus = gpus.checked_mul(2)?;
        if gpus > crate::capacity::hardware::MAX_GPUS {
            return None;
        }
        let bigger = PlanRequest {
            cluster: Cluster {
                gpus,
                ..req.cluster.clone()
            },
            ..req.clone()
        };
        if let Some(best) = plan(&bigger).ranked.into_iter().next() {
            return Some((gpus, best));
        }
    }
    None
}

/// The best layout at one TP size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpPoint {
    pub tp: usize,
    /// Whether a TP group of this size spans nodes (and so pays the inter-node link).
    pub spans_nodes: bool,
    /// The fastest layout with this TP that fits, or (when none fits) the one needing the
    /// least memory; `None` when no layout with this TP satisfies the batch rules.
    pub best: Option<IterationTime>,
    /// Whether `best` fits in memory.
    pub fits: bool,
}

/// Throughput against TP for the app's Planner chart: for each valid TP size, the best layout
/// over PP, DP, micro-batch, SP and recomputation. Read `best.tokens_per_s` or
/// `best.tflops_per_gpu`; the drop once `spans_nodes` turns true is the guide's point.
pub fn throughput_vs_tp(req: &PlanRequest) -> Vec<TpPoint> {
    let (fit, too_big, _) = evaluate_all(req);
    valid_tp_sizes(&req.model, &req.cluster)
        .into_iter()
        .map(|tp| {
            let best_fit = fit.iter().find(|it| it.layout.tp == tp).cloned();
            let fits = best_fit.is_some();
            let best = best_fit.or_else(|| too_big.iter().find(|it| it.layout.tp == tp).cloned());
            TpPoint {
                tp,
                spans_nodes: req.cluster.group_spans_nodes(1, tp),
                best,
                fits,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::hardware::Catalogue;
    use crate::capacity::models::ModelPreset;

    fn request(model: ModelPreset, gpu: &str, gpus: usize, batch: usize) -> PlanRequest {
        let cluster = Cluster::new(&Catalogue::default(), gpu, gpus, 8, "ib200").unwrap();
        PlanRequest::new(model.spec(), TrainSetup::new(2048, batch), cluster)
    }

    /// Today's stack also tries the experts folded apart from attention (ETP 1, EP up to
    /// TP·DP) for an MoE model at TP > 1; the 2021 planner and dense models do not.
    #[test]
    fn today_s_planner_folds_the_experts() {
        let moe = request(ModelPreset::Mixtral8x7b, "h100", 64, 64);
        let st = Stack::current();
        let folded: Vec<Layout> = candidates_with(&moe, &st)
            .into_iter()
            .filter(|l| l.etp == 1)
            .collect();
        assert!(!folded.is_empty());
        for l in &folded {
            assert!(
                l.tp > 1 && (l.tp * l.dp).is_multiple_of(l.ep * l.etp),
                "{}",
                l.label()
            );
        }
        // EP 8 at TP 8, DP 1: only with the experts folded.
        assert!(folded.iter().any(|l| l.tp == 8 && l.dp == 1 && l.ep == 8));
        assert!(candidates(&moe).iter().all(|l| l.etp == 0));
        let dense = request(ModelPreset::Llama3_8b, "h100", 64, 64);
        assert!(candidates_with(&dense, &st)
            .iter()
            .all(|l| l.ep == 1 && l.etp == 0));
    }

    #[test]
    fn the_planner_tries_expert_parallelism_for_moe_models_only() {
        let moe = request(ModelPreset::Mixtral8x7b, "h100", 64, 64);
        let eps: std::collections::BTreeSet<(usize, usize)> =
            candidates(&moe).iter().map(|l| (l.dp, l.ep)).collect();
        // Every EP that divides both the 8 experts and DP, and no other.
        for &(dp, ep) in &eps {
            assert!(
                dp.is_multiple_of(ep) && 8usize.is_multiple_of(ep),
                "DP={dp} EP={ep}"
            );
        }
        assert!(eps.contains(&(64, 8)) && eps.contains(&(8, 8)) && eps.contains(&(2, 2)));
        assert!(!eps.contains(&(2, 4)));
        let dense = request(ModelPreset::Llama3_8b, "h100", 64, 64);
        assert!(candidates(&dense).iter().all(|l| l.ep == 1));
        // Mixtral on 64 H100s: pure data parallelism (TP 1, PP 1) fits only with the experts
        // split (EP 1 holds all 46.7B parameters' weights and gradients, 187 GB, per GPU).
        let p = plan(&moe);
        let pure_dp = |ep: usize| {
            p.ranked
                .iter()
                .any(|it| it.layout.tp == 1 && it.layout.pp == 1 && it.layout.ep == ep)
        };
        assert!(pure_dp(8) && !pure_dp(1));
        assert!(p
            .ranked
            .iter()
            .filter(|it| it.layout.ep > 1)
            .all(|it| it.ep_comm_s > 0.0));
        let lay = |ep| Layout {
            zero: 1,
            ep,
            ..Layout::new(1, 1, 64)
        };
        let ep1 = evaluate(&moe, &lay(1)).unwrap();
        let ep8 = evaluate(&moe, &lay(8)).unwrap();
        assert!(ep8.memory.total_bytes < ep1.memory.total_bytes);
        assert_eq!(ep1.ep_comm_s, 0.0);
    }

    #[test]
    fn gpt3_on_one_node_does_not_fit_and_says_why() {
        let p = plan(&request(ModelPreset::Gpt3_175b, "a100", 8, 64));
        assert!(p.ranked.is_empty());
        assert!(
            p.explanations[0].contains("No layout fits"),
            "{:?}",
            p.explanations
        );
        assert!(p.dropped.iter().any(|d| d.reason.contains("usable")));
        // What pipeline parallelism across nodes adds: a few nodes make it fit, with TP
        // still inside one node.
        let (gpus, best) =
            smallest_fitting_cluster(&request(ModelPreset::Gpt3_175b, "a100", 8, 64)).unwrap();
        assert!((16..=64).contains(&gpus), "{gpus}");
        assert!(best.fits && best.layout.tp <= 8 && best.layout.pp > 1);
    }

    #[test]
    fn gpt3_on_64_gpus_keeps_tp_inside_the_node() {
        let req = request(ModelPreset::Gpt3_175b, "a100", 64, 64);
        let p = plan(&req);
        let winner = &p.ranked[0];
        assert!(winner.layout.tp <= 8, "{}", winner.layout.label());
        assert!(winner.fits);
        assert!(!p.explanations.is_empty());
        // The ranking is sorted by predicted iteration time.
        for w in p.ranked.windows(2) {
            assert!(w[0].iteration_time_s <= w[1].iteration_time_s);
        }
        // Throughput drops once TP spans nodes.
        let pts = throughput_vs_tp(&req);
        let speed = |tp: usize| {
            pts.iter()
                .find(|x| x.tp == tp)
                .and_then(|x| x.best.as_ref())
                .map(|b| b.tokens_per_s)
                .unwrap()
        };
        assert!(pts.iter().any(|x| x.spans_nodes));
        // Across nodes the ring runs at the nodes' 8 HDR NICs (188 GB/s against NVLink's
        // 240) and pays the network's latency: slower, though not the 3× of a one-NIC model.
        assert!(speed(16) < 0.95 * speed(8), "{} vs {}", speed(16), speed(8));
    }

    #[test]
    fn todays_stack_plans_405b_on_16_uneven_stages_and_keeps_tp_in_the_node() {
        let cluster = Cluster::new(&Catalogue::default(), "h100", 2048, 8, "ib400").unwrap();
        let req = PlanRequest {
            micro_batch: Some(1),
            sp: Some(true),
            ..PlanRequest::new(
                ModelPreset::Llama31_405b.spec(),
                TrainSetup::new(8192, 2048),
                cluster,
            )
        };
        let stack = Stack {
            virtual_stages: 4,
            ..Stack::current()
        };
        let p = plan_with(&req, &stack);
        assert!(!p.ranked.is_empty(), "{:?}", p.explanations);
        let w = &p.ranked[0].it.layout;
        assert!(w.tp <= 8, "{}", w.label());
        assert!(p.ranked.iter().any(|r| r.it.layout.pp == 16));
        // The 1T scenario (3072 GPUs, hundreds of near-ties): the ranking is a total order
        // (a comparator that mixed a tolerance with the time panicked in the sort).
        let one_t = crate::capacity::models::Scenario::by_id("1t-3d").unwrap();
        let req_1t = PlanRequest::new(
            one_t.model.spec(),
            TrainSetup::new(one_t.seq, one_t.global_batch),
            Cluster::new(&Catalogue::default(), "a100", 3072, 8, "ib200").unwrap(),
        );
        let p1 = plan_with(&req_1t, &Stack::current());
        assert!(!p1.ranked.is_empty());
        let t0 = p1.ranked[0].it.iteration_time_s;
        assert!(p1
            .ranked
            .iter()
            .all(|r| r.it.iteration_time_s >= t0 / 1.005));
        // The 2021 stack's planner is plan() exactly.
        let req_a100 = request(ModelPreset::Gpt3_175b, "a100", 64, 64);
        let old = plan(&req_a100);
        let same = plan_with(&req_a100, &Stack::megatron_2021());
        assert_eq!(old.ranked.len(), same.ranked.len());
        assert_eq!(old.ranked[0], same.ranked[0].it);
    }

    #[test]
    fn explanation_names_the_node_boundary() {
        let req = request(ModelPreset::Gpt3_175b, "a100", 64, 64);
        let lay = |tp, pp| Layout {
            sp: true,
            recompute: Recompute::Selective,
            zero: 1,
            ..Layout::new(tp, pp, 64 / (tp * pp))
        };
        let inside = evaluate(&req, &lay(8, 8)).unwrap();
        let across = evaluate(&req, &lay(16, 4)).unwrap();
        assert!(inside.iteration_time_s < across.iteration_time_s);
        let text = explain(&inside, &across, &req.cluster);
        assert!(text.contains("inside one nvlink3 node"), "{text}");
        assert!(text.contains("ib-hdr-200"), "{text}");
    }

    /// Llama 3.1 405B at 8K tokens on 16,384 H100s (2,048 nodes of 8, NDR 400), 16M tokens a
    /// batch: the Llama 3 paper's pre-training setting (Dubey et al. 2024, Table 4: TP 8, CP 1,
    /// PP 16, DP 128, 41% BF16 MFU; 43% at 8,192 GPUs with DP 64).
    fn llama_405b_16k() -> PlanRequest {
        let cluster = Cluster::new(&Catalogue::default(), "h100", 16384, 8, "ib400").unwrap();
        PlanRequest::new(
            ModelPreset::Llama31_405b.spec(),
            TrainSetup::new(8192, 2048),
            cluster,
        )
    }

    /// Meta's reported BF16 MFU at 16,384 GPUs and 8K tokens (Dubey et al. 2024, Table 4).
    const META_405B_16K_MFU: f64 = 0.41;

    #[test]
    fn the_search_over_interleaving_lands_meta_s_405b_mfu() {
        let req = llama_405b_16k();
        let searched = plan_search(&req, &Stack::current(), &VIRTUAL_STAGE_CANDIDATES);
        let plain = plan_with(&req, &Stack::current());
        let (best, plain_best) = (&searched.ranked[0], &plain.ranked[0]);
        // Within 15% of Meta's MFU (the bar); plain 1F1B alone is not (its 16 stages
        // and 16 micro-batches leave a (p−1)/m = 94% bubble, or deep pipelines of 1–2 layers).
        let off = best.it.mfu / META_405B_16K_MFU - 1.0;
        assert!(
            off.abs() <= 0.15,
            "{} at {:.1}%",
            best.it.layout.label(),
            100.0 * best.it.mfu
        );
        assert!(plain_best.it.mfu / META_405B_16K_MFU - 1.0 < -0.15);
        // The winner interleaves, keeps TP in the node, and its bubble is (p−1)/(v·m).
        let (l, v) = (&best.it.layout, best.breakdown.virtual_stages);
        assert!(v > 1 && l.pp > 1 && l.tp <= 8, "{} v={v}", l.label());
        let m = best.it.micro_batches as f64;
        assert!((best.it.bubble_fraction - (l.pp - 1) as f64 / (v as f64 * m)).abs() < 1e-12);
        // Every depth the search tried fits its stages: at least one layer a chunk.
        for r in &searched.ranked {
            let v = r.breakdown.virtual_stages;
            let shortest = stack::stage_layers(req.model.layers, r.it.layout.pp)
                .into_iter()
                .min()
                .unwrap_or(0);
            assert!(v == 1 || (r.it.layout.pp > 1 && shortest >= v), "v={v}");
        }
        // It searched recomputation and micro-batch sizes too, and priced them: full
        // recomputation runs one more forward (hardware FLOPs 4/3 of the model's).
        let has = |f: &dyn Fn(&StackIteration) -> bool| searched.ranked.iter().any(f);
        assert!(has(&|r| r.it.layout.recompute == Recompute::Full));
        assert!(has(&|r| r.it.layout.micro_batch > 1));
        for r in searched
            .ranked
            .iter()
            .filter(|r| r.it.layout.recompute == Recompute::Full)
        {
            assert!((r.it.hardware_flops / r.it.model_flops - 4.0 / 3.0).abs() < 0.01);
        }
    }

    /// Meta's three published 405B layouts (Dubey et al. 2024, Table 4), as they ran them:
    /// TP 8, PP 16 with one layer fewer on the first and last stages, no activation
    /// checkpointing, and FSDP that "shards the optimizer states and gradients, but for model
    /// shards we do not reshard after forward computation" (§3.3.2): ZeRO-2. Each fits an
    /// 80 GB H100; with gradients unsharded (ZeRO-1) the 8K layouts do not.
    #[test]
    fn meta_s_own_405b_layouts_fit() {
        let m = ModelPreset::Llama31_405b.spec();
        for (gpus, dp, cp, seq, batch, mfu) in [
            (8192, 64, 1, 8192, 2048, 0.43),
            (16384, 128, 1, 8192, 2048, 0.41),
            (16384, 8, 16, 131072, 128, 0.38),
        ] {
            let cluster = Cluster::new(&Catalogue::default(), "h100", gpus, 8, "ib400").unwrap();
            let req = PlanRequest::new(m.clone(), TrainSetup::new(seq, batch), cluster);
            let st = Stack {
                context_parallel: cp,
                ..Stack::current()
            };
            let at = |zero: u8| {
                let lay = Layout {
                    sp: true,
                    zero,
                    ..Layout::new(8, 16, dp)
                };
                evaluate_with(&req, &lay, &st).unwrap()
            };
            let (z2, z1) = (at(2), at(1));
            let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
            eprintln!(
                "{gpus} GPUs, CP {cp}, s {seq}: ZeRO-2 {:.1} GiB (ZeRO-1 {:.1}) of {:.1}, MFU {:.1}% (Meta {:.0}%)",
                gib(z2.it.memory.total_bytes),
                gib(z1.it.memory.total_bytes),
                gib(z2.it.memory_limit_bytes),
                100.0 * z2.it.mfu,
                100.0 * mfu
            );
            assert!(
                z2.it.fits,
                "Meta ran TP 8 PP 16 DP {dp} CP {cp} on 80 GB H100s"
            );
            assert_eq!(z2.breakdown.stage_layers[0], 7);
            // ZeRO-2 reduce-scatters every micro-batch's gradients: m times ZeRO-1's.
            let m = z2.it.micro_batches as f64;
            let (t1, t2) = (z1.breakdown.dp_comm_total_s, z2.breakdown.dp_comm_total_s);
            assert!(
                m > 1.0 && t2 > 1.5 * t1,
                "{t2} vs {t1} over {m} micro-batches"
            );
            eprintln!(
                "  DP traffic {t1:.2} s (ZeRO-1) / {t2:.2} s (ZeRO-2), exposed {:.3} / {:.3} s",
                z1.it.dp_comm_s, z2.it.dp_comm_s
            );
            if cp == 1 {
                assert!(!z1.it.fits, "unsharded gradients take 6 GB more");
            }
        }
    }

    #[test]
    fn interleaving_buys_its_bubble_with_activation_memory() {
        let req = llama_405b_16k();
        let meta = Layout {
            sp: true,
            zero: 1,
            ..Layout::new(8, 16, 128)
        };
        let at = |v: usize| {
            let st = Stack {
                virtual_stages: v,
                ..Stack::current()
            };
            evaluate_with(&req, &meta, &st).unwrap()
        };
        let (v1, v2, v4) = (at(1), at(2), at(4));
        // m = 2048 / 128 = 16 micro-batches on 16 stages: the bubble halves with each doubling
        // of v, and the MFU rises with it.
        assert_eq!(v1.it.micro_batches, 16);
        assert!((v1.it.bubble_fraction - 15.0 / 16.0).abs() < 1e-12);
        assert!((v2.it.bubble_fraction - 15.0 / 32.0).abs() < 1e-12);
        assert!(v1.it.mfu < v2.it.mfu && v2.it.mfu < v4.it.mfu);
        // With m = p the interleaved warm-up is every chunk forward (2(p−1) + (v−1)p + 1 ≥ m·v):
        // an 8-layer stage holds 16 micro-batches of its layers, where plain 1F1B's second stage
        // holds 15.
        assert!(v2.it.memory.activations_bytes > v1.it.memory.activations_bytes);
        assert_eq!(
            v2.it.memory.activations_bytes,
            v4.it.memory.activations_bytes
        );
    }

    /// Korthikanti et al. 2022, §4.2.3: with `m ≥ p` micro-batches the first stage of an
    /// interleaved pipeline holds `1 + (p−1)/(p·v)` times plain 1F1B's activations.
    #[test]
    fn in_flight_chunks_follow_megatron_s_warm_up() {
        // Plain 1F1B: p − stage micro-batches (at most m).
        assert_eq!(stack::in_flight_chunks(16, 0, 16, 1), 16);
        assert_eq!(stack::in_flight_chunks(16, 15, 16, 1), 1);
        assert_eq!(stack::in_flight_chunks(16, 0, 4, 1), 4);
        for (p, v) in [(4usize, 2usize), (8, 2), (8, 4), (16, 3)] {
            let m = 4 * p;
            let chunks = stack::in_flight_chunks(p, 0, m, v) as f64;
            // In units of one stage's activations for one micro-batch: chunks / v.
            let ratio = chunks / v as f64 / p as f64;
            let want = 1.0 + (p - 1) as f64 / (p * v) as f64;
            assert!(
                (ratio - want).abs() < 1e-12,
                "p={p} v={v}: {ratio} vs {want}"
            );
        }
        // Never more than every chunk forward of the iteration.
        assert_eq!(stack::in_flight_chunks(16, 0, 2, 4), 8);
    }

    /// Splits one CSV line into fields, honouring quotes (enough for the sweep's rows).
    fn csv_fields(line: &str) -> Vec<String> {
        let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => out.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        out.push(cur);
        out
    }

    #[test]
    fn a_sweep_over_three_axes_writes_every_point_as_csv() {
        let req = llama_405b_16k();
        let axes = PlanSweep {
            gpus: vec![8192, 16384, 8100],
            global_batch: vec![1024, 2048],
            virtual_stages: vec![1, 2],
            ..PlanSweep::default()
        };
        let points = sweep(&req, &Stack::current(), &axes);
        assert_eq!(points.len(), 3 * 2 * 2);
        // 8,100 GPUs is not a whole number of 8-GPU nodes: reported, and the sweep goes on.
        for p in &points {
            assert_eq!(p.invalid.is_some(), p.gpus == 8100, "{p:?}");
            if let Some(rule) = &p.invalid {
                assert!(rule.contains("8100") && rule.contains('8'), "{rule}");
            }
        }
        // A searched depth is never slower than a fixed one at the same inputs.
        let searched = sweep(
            &req,
            &Stack::current(),
            &PlanSweep {
                gpus: vec![16384],
                global_batch: vec![2048],
                ..PlanSweep::default()
            },
        );
        let best = |pts: &[SweepPoint], v: Option<usize>| {
            pts.iter()
                .find(|p| p.gpus == 16384 && p.global_batch == 2048 && p.virtual_stages == v)
                .and_then(|p| p.best.as_ref())
                .map(|r| r.it.iteration_time_s)
                .unwrap()
        };
        let (s, v1, v2) = (
            best(&searched, None),
            best(&points, Some(1)),
            best(&points, Some(2)),
        );
        assert!(s <= v1 && s <= v2, "{s} {v1} {v2}");
        assert!(v2 < v1);
        // The CSV: a header and one row a point, every row as many fields as the header.
        let csv = sweep_csv(&points, "llama3.1-405b", "h100-sxm", 1, "0.1.0");
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 1 + points.len());
        let header = csv_fields(lines[0]);
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        for (line, p) in lines[1..].iter().zip(&points) {
            let f = csv_fields(line);
            assert_eq!(f.len(), header.len(), "{line}");
            assert_eq!(f[col("gpus")], p.gpus.to_string());
            assert_eq!(
                f[col("virtual_stages_asked")],
                p.virtual_stages.unwrap().to_string()
            );
            match &p.best {
                Some(r) => {
                    assert_eq!(f[col("virtual_stages")], f[col("virtual_stages_asked")]);
                    let mfu: f64 = f[col("mfu")].parse().unwrap();
                    assert!((mfu - r.it.mfu).abs() < 1e-6);
                    assert!(f[col("invalid")].is_empty());
                }
                None => assert_eq!(f[col("invalid")], p.invalid.clone().unwrap_or_default()),
            }
        }
    }
}
