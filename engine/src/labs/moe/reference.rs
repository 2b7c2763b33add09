//! The unsharded MoE reference: the oracle. Plain loops and ndarray's `dot`, the block
//! reference's own GeLU (`crate::block::reference::plain`), no code shared with the sharded executor's
//! routing, dispatch or kernels. One token at a time, one expert at a time, in the order the
//! module docs state.

use super::{Dropped, ExpertParams, Gate, MoeConfig, MoeGrads, MoeModel, RoutingSummary};
use crate::block::reference::plain;
use ndarray::{Array2, Axis};

/// The router's decisions for every token.
#[derive(Debug, Clone, PartialEq)]
pub struct Routing {
    /// `[T, E]` router logits.
    pub logits: Array2<f64>,
    /// `[T, E]` softmax of the logits.
    pub probs: Array2<f64>,
    /// `[T][k]`: chosen experts, best first.
    pub chosen: Vec<Vec<usize>>,
    /// `[T][k]`: their gates.
    pub gates: Vec<Vec<f64>>,
    /// `[T][k]`: whether the assignment fit in its expert's capacity.
    pub kept: Vec<Vec<bool>>,
}

/// Top-k by a stable sort on `(−logit, expert index)`: ties go to the lower index.
fn top_k(logits: &[f64], k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
    order.truncate(k);
    order
}

/// Router, top-k, gates and the capacity, token by token.
pub fn route(cfg: &MoeConfig, model: &MoeModel) -> Routing {
    let logits = model.x.dot(&model.router);
    let mut probs = logits.clone();
    for mut row in probs.rows_mut() {
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        row.mapv_inplace(|v| (v - m).exp());
        let sum = row.sum();
        row.mapv_inplace(|v| v / sum);
    }
    let cap = cfg.capacity();
    let mut taken = vec![0usize; cfg.experts];
    let (mut chosen, mut gates, mut kept) = (Vec::new(), Vec::new(), Vec::new());
    for t in 0..cfg.tokens {
        let row: Vec<f64> = logits.row(t).to_vec();
        let c = top_k(&row, cfg.top_k);
        let g: Vec<f64> = match cfg.gate {
            Gate::Softmax => c.iter().map(|&j| probs[[t, j]]).collect(),
            Gate::Renormalized => {
                let m = c.iter().map(|&j| row[j]).fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = c.iter().map(|&j| (row[j] - m).exp()).collect();
                let sum: f64 = e.iter().sum();
                e.iter().map(|v| v / sum).collect()
            }
        };
        let k: Vec<bool> = c
            .iter()
            .map(|&j| {
                let fits = taken[j] < cap;
                if fits {
                    taken[j] += 1;
                }
                fits
            })
            .collect();
        chosen.push(c);
        gates.push(g);
        kept.push(k);
    }
    Routing {
        logits,
        probs,
        chosen,
        gates,
        kept,
    }
}

/// What the reference computes.
#[derive(Debug, Clone)]
pub struct ReferenceMoe {
    pub routing: RoutingSummary,
    pub detail: Routing,
    /// `[T, h]`
    pub output: Array2<f64>,
    pub grads: MoeGrads,
}

impl Routing {
    /// Counts and the dropped list.
    pub fn summary(&self, experts: usize) -> RoutingSummary {
        let mut routed = vec![0; experts];
        let mut computed = vec![0; experts];
        let mut dropped = Vec::new();
        for (t, (c, k)) in self.chosen.iter().zip(&self.kept).enumerate() {
            for (choice, (&j, &kept)) in c.iter().zip(k).enumerate() {
                routed[j] += 1;
                if kept {
                    computed[j] += 1;
                } else {
                    dropped.push(Dropped {
                        token: t,
                        expert: j,
                        choice,
                    });
                }
            }
        }
        RoutingSummary {
            routed_per_expert: routed,
            tokens_per_expert: computed,
            dropped,
            chosen: self.chosen.clone(),
        }
    }
}

/// The forward output alone (for finite differences).
pub fn forward(cfg: &MoeConfig, model: &MoeModel) -> Array2<f64> {
    run(cfg, model).output
}

/// Forward and backward (with `model.grad_output` as `dL/dy`).
pub fn run(cfg: &MoeConfig, model: &MoeModel) -> ReferenceMoe {
    let (tokens, h) = (cfg.tokens, cfg.hidden);
    let r = route(cfg, model);
    let mut output = Array2::<f64>::zeros((tokens, h));
    let mut grads = MoeGrads {
        input: Array2::zeros((tokens, h)),
        router: Array2::zeros((h, cfg.experts)),
        experts: (0..cfg.experts)
            .map(|_| ExpertParams::zeros(h, cfg.ffn))
            .collect(),
    };
    // dL/d gate, per token and choice (zero for a dropped assignment: its term is absent).
    let mut d_gate: Vec<Vec<f64>> = r.chosen.iter().map(|c| vec![0.0; c.len()]).collect();
    let dy = &model.grad_output;
    for (j, p) in model.experts.iter().enumerate() {
        // This expert's kept assignments, in token order.
        let rows: Vec<(usize, usize)> = (0..tokens)
            .filter_map(|t| {
                let s = r.chosen[t].iter().position(|&c| c == j)?;
                r.kept[t][s].then_some((t, s))
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let xe = model
            .x
            .select(Axis(0), &rows.iter().map(|r| r.0).collect::<Vec<_>>());
        let a = xe.dot(&p.w1) + &p.b1;
        let act = plain::gelu(a.view());
        let ye = act.dot(&p.w2) + &p.b2;
        // Combine, and the gate and expert-output gradients.
        let mut dye = Array2::<f64>::zeros(ye.dim());
        for (i, &(t, s)) in rows.iter().enumerate() {
            let g = r.gates[t][s];
            for c in 0..h {
                output[[t, c]] += g * ye[[i, c]];
                dye[[i, c]] = g * dy[[t, c]];
            }
            d_gate[t][s] = (0..h).map(|c| dy[[t, c]] * ye[[i, c]]).sum();
        }
        // The expert's backward.
        let ge = &mut grads.experts[j];
        ge.b2 = plain::col_sum(dye.view());
        ge.w2 = act.t().dot(&dye);
        let d_act = dye.dot(&p.w2.t());
        let da = plain::gelu_backward(a.view(), d_act.view());
        ge.w1 = xe.t().dot(&da);
        ge.b1 = plain::col_sum(da.view());
        let dxe = da.dot(&p.w1.t());
        for (i, &(t, _)) in rows.iter().enumerate() {
            let mut row = grads.input.row_mut(t);
            row += &dxe.row(i);
        }
    }
    // The gates' backward to the logits.
    let mut d_logits = Array2::<f64>::zeros((tokens, cfg.experts));
    for t in 0..tokens {
        let c = &r.chosen[t];
        match cfg.gate {
            Gate::Softmax => {
                // g_j = p_j: dlogit_i = p_i (dp_i − Σ_j p_j dp_j), dp nonzero on the chosen only.
                let dot: f64 = c
                    .iter()
                    .zip(&d_gate[t])
                    .map(|(&j, d)| r.probs[[t, j]] * d)
                    .sum();
                for i in 0..cfg.experts {
                    let dp = c.iter().position(|&j| j == i).map_or(0.0, |s| d_gate[t][s]);
                    d_logits[[t, i]] = r.probs[[t, i]] * (dp - dot);
                }
            }
            Gate::Renormalized => {
                // g = softmax over the chosen logits: dlogit_j = g_j (dg_j − Σ_i g_i dg_i).
                let dot: f64 = r.gates[t].iter().zip(&d_gate[t]).map(|(g, d)| g * d).sum();
                for (s, &j) in c.iter().enumerate() {
                    d_logits[[t, j]] = r.gates[t][s] * (d_gate[t][s] - dot);
                }
            }
        }
    }
    grads.router = model.x.t().dot(&d_logits);
    grads.input += &d_logits.dot(&model.router.t());
    ReferenceMoe {
        routing: r.summary(cfg.experts),
        detail: r,
        output,
        grads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(gate: Gate, top_k: usize, capacity_factor: Option<f64>) -> MoeConfig {
        MoeConfig {
            tokens: 6,
            hidden: 5,
            ffn: 7,
            experts: 4,
            top_k,
            ep: 1,
            etp: 1,
            capacity_factor,
            gate,
            seed: 3,
            ..MoeConfig::default()
        }
    }

    /// `L = Σ dy ⊙ y` so `dL/dθ` is what the reference's backward returns; central differences
    /// with step 1e-5 have truncation error ~step²·|f'''| ≈ 1e-10 and rounding ~ε·|L|/step ≈
    /// 1e-10, so 1e-6 relative (to max(|analytic|, 1)) separates them from any wrong formula,
    /// which is off by O(1). Routing is piecewise constant: a step this small crosses no tie on
    /// seeded normal data (the closest two logits of these seeds are far more than 1e-5 apart,
    /// checked below), so the finite difference sees the same top-k and drops.
    fn check(cfg: MoeConfig) {
        let model = MoeModel::random(&cfg);
        let run = run(&cfg, &model);
        let loss = |m: &MoeModel| (forward(&cfg, m) * &m.grad_output).sum();
        // The step must not move any logit across a tie or the k-th boundary.
        for t in 0..cfg.tokens {
            let mut row: Vec<f64> = run.detail.logits.row(t).to_vec();
            row.sort_by(|a, b| b.total_cmp(a));
            for w in row.windows(2) {
                assert!(w[0] - w[1] > 1e-3, "seed has a near tie: {row:?}");
            }
        }
        let step = 1e-5;
        let mut worst = 0.0f64;
        let mut probe = |name: &str,
                         analytic: &Array2<f64>,
                         get: &dyn Fn(&mut MoeModel) -> &mut Array2<f64>| {
            let (rows, cols) = analytic.dim();
            for i in 0..rows {
                for j in 0..cols {
                    let mut plus = model.clone();
                    get(&mut plus)[[i, j]] += step;
                    let mut minus = model.clone();
                    get(&mut minus)[[i, j]] -= step;
                    let fd = (loss(&plus) - loss(&minus)) / (2.0 * step);
                    let err = (fd - analytic[[i, j]]).abs() / analytic[[i, j]].abs().max(1.0);
                    assert!(
                        err < 1e-6,
                        "{name}[{i},{j}]: finite difference {fd}, backward {}",
                        analytic[[i, j]]
                    );
                    worst = worst.max(err);
                }
            }
        };
        probe("input", &run.grads.input, &|m| &mut m.x);
        probe("router", &run.grads.router, &|m| &mut m.router);
        for e in 0..cfg.experts {
            let g = &run.grads.experts[e];
            probe("w1", &g.w1, &move |m| &mut m.experts[e].w1);
            probe("b1", &g.b1, &move |m| &mut m.experts[e].b1);
            probe("w2", &g.w2, &move |m| &mut m.experts[e].w2);
            probe("b2", &g.b2, &move |m| &mut m.experts[e].b2);
        }
        assert!(worst < 1e-6);
        // The router gradient is not trivially zero (it is for renormalised top-1).
        if !(cfg.gate == Gate::Renormalized && cfg.top_k == 1) {
            assert!(run.grads.router.iter().any(|v| v.abs() > 1e-3));
        }
    }

    #[test]
    fn backward_matches_finite_differences_top2_renormalized_with_drops() {
        let c = cfg(Gate::Renormalized, 2, Some(0.7));
        assert!(!route(&c, &MoeModel::random(&c))
            .kept
            .iter()
            .flatten()
            .all(|&k| k));
        check(c);
    }

    #[test]
    fn backward_matches_finite_differences_top1_softmax() {
        check(cfg(Gate::Softmax, 1, None));
    }

    #[test]
    fn backward_matches_finite_differences_top2_softmax_with_drops() {
        check(cfg(Gate::Softmax, 2, Some(1.0)));
    }

    #[test]
    fn ties_go_to_the_lower_expert_and_capacity_drops_in_token_order() {
        // Logits [1, 3, 3, 0]: experts 1 and 2 tie; 1 wins, 2 second.
        assert_eq!(top_k(&[1.0, 3.0, 3.0, 0.0], 2), vec![1, 2]);
        assert_eq!(top_k(&[0.0, 0.0, 0.0], 3), vec![0, 1, 2]);
        // Every token the same: all pick experts 0 then 1 (the tie at 0 logits).
        let c = MoeConfig {
            tokens: 5,
            hidden: 2,
            ffn: 2,
            experts: 4,
            top_k: 2,
            ep: 1,
            etp: 1,
            capacity_factor: Some(1.0),
            ..MoeConfig::default()
        };
        let mut m = MoeModel::random(&c);
        m.router.fill(0.0);
        let r = route(&c, &m);
        // capacity ceil(1·2·5/4) = 3: tokens 0, 1, 2 fill experts 0 and 1; 3 and 4 are dropped.
        assert_eq!(c.capacity(), 3);
        let s = r.summary(4);
        assert_eq!(s.routed_per_expert, vec![5, 5, 0, 0]);
        assert_eq!(s.tokens_per_expert, vec![3, 3, 0, 0]);
        let dropped: Vec<(usize, usize)> = s.dropped.iter().map(|d| (d.token, d.expert)).collect();
        assert_eq!(dropped, vec![(3, 0), (3, 1), (4, 0), (4, 1)]);
        // A fully dropped token's output is zero (the residual carries it).
        let out = forward(&c, &m);
        assert!(out.row(4).iter().all(|&v| v == 0.0));
        assert!(out.row(0).iter().any(|&v| v != 0.0));
    }
}
