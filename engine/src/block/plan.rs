//! The shard plan: which rank holds which slice of every parameter.
//!
//! Megatron-LM's split of a GPT block over `tp` ranks (rank `r`, `hp = heads/tp` heads each,
//! head size `d`, `hr = h/tp`, `fr = f/tp`):
//!
//! ```text
//!  W_qkv [h, 3h]   ColumnParallelLinear, by heads       W_out [h, h]   RowParallelLinear
//!  ┌──Q───┬──K───┬──V───┐                               ┌───────────┐ rows of rank 0's heads
//!  │r0│r1 │r0│r1 │r0│r1 │  rank r: Q, K and V columns    ├───────────┤ rows of rank 1's heads
//!  └──┴───┴──┴───┴──┴───┘  of heads r·hp .. (r+1)·hp     └───────────┘
//!
//!  W_1 [h, f]      ColumnParallelLinear                 W_2 [f, h]     RowParallelLinear
//!  ┌──┬──┬──┬──┐  rank r: columns r·fr .. (r+1)·fr      ┌─────┐ rank r: rows r·fr .. (r+1)·fr
//!  │r0│r1│r2│r3│  (GeLU then runs locally)              ├─────┤ (outputs are partial sums:
//!  └──┴──┴──┴──┘                                        └─────┘  g all-reduces them)
//! ```
//!
//! With grouped-query attention (`kv` KV heads) rank `r` holds its `a/tp` query heads and, when
//! `tp <= kv`, KV heads `r·kv/tp ..` (Megatron-LM: `kv % tp == 0`); when `tp > kv`, a copy of KV
//! head `r / (tp/kv)` (vLLM: `tp % kv == 0`), so `tp/kv` ranks hold the same K and V columns and
//! their gradients are all-reduced within that group ([`Config::kv_replica_groups`]).
//!
//! Column-parallel biases are split with their columns. Row-parallel biases (`attn.out.bias`,
//! `mlp.fc2.bias`) and LayerNorms are replicated; a row-parallel bias is added once, after the
//! all-reduce. PyTorch's `ColwiseParallel`/`RowwiseParallel` are the same splits.

use crate::block::op::Parallel;
use crate::block::placement::Placement;
use crate::config::Config;
use crate::dtype::Element;
use crate::params::{LayerParams, Model, ParamKind};
use ndarray::{s, Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// A rectangle of a full matrix: `rows × cols`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    pub rows: Range<usize>,
    pub cols: Range<usize>,
}

impl Block {
    pub fn elems(&self) -> usize {
        self.rows.len() * self.cols.len()
    }
}

/// How one parameter is split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParamShard {
    pub kind: ParamKind,
    /// Megatron-LM class that owns the tensor (`ColumnParallelLinear`, `RowParallelLinear`,
    /// `LayerNorm`).
    pub module: &'static str,
    pub parallel: Parallel,
    pub full_shape: [usize; 2],
    /// Per rank, the blocks of the full matrix it holds; a rank's shard is the blocks
    /// concatenated along the split axis (columns for column-parallel, rows for row-parallel).
    pub blocks: Vec<Vec<Block>>,
}

impl ParamShard {
    /// Shape of rank `r`'s shard.
    pub fn shard_shape(&self, r: usize) -> [usize; 2] {
        let bl = &self.blocks[r];
        match self.parallel {
            Parallel::Row => [bl.iter().map(|b| b.rows.len()).sum(), self.full_shape[1]],
            _ => [self.full_shape[0], bl.iter().map(|b| b.cols.len()).sum()],
        }
    }

    pub fn shard_elems(&self, r: usize) -> usize {
        self.blocks[r].iter().map(Block::elems).sum()
    }

    /// Cuts rank `r`'s shard out of the full tensor.
    pub fn extract<T: Element>(&self, full: ArrayView2<'_, T>, r: usize) -> Array2<T> {
        let axis = if self.parallel == Parallel::Row {
            Axis(0)
        } else {
            Axis(1)
        };
        let views: Vec<ArrayView2<'_, T>> = self.blocks[r]
            .iter()
            .map(|b| full.slice(s![b.rows.clone(), b.cols.clone()]))
            .collect();
        // Blocks of one shard share the other axis' extent, so concatenation cannot fail.
        ndarray::concatenate(axis, &views).unwrap_or_else(|_| Array2::zeros((0, 0)))
    }

    /// Writes rank `r`'s shard back into its place in `full` (used to assemble gradients).
    pub fn place<T: Element>(&self, full: &mut Array2<T>, shard: ArrayView2<'_, T>, r: usize) {
        let mut off = 0;
        for b in &self.blocks[r] {
            if self.parallel == Parallel::Row {
                let n = b.rows.len();
                full.slice_mut(s![b.rows.clone(), b.cols.clone()])
                    .assign(&shard.slice(s![off..off + n, ..]));
                off += n;
            } else {
                let n = b.cols.len();
                full.slice_mut(s![b.rows.clone(), b.cols.clone()])
                    .assign(&shard.slice(s![.., off..off + n]));
                off += n;
            }
        }
    }
}

/// The split of every parameter of a block (the same for every layer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardPlan {
    pub tp: usize,
    pub params: Vec<ParamShard>,
}

impl ShardPlan {
    /// Megatron's split of `cfg`'s block over `cfg.tp` ranks. The config must have passed
    /// [`Config::validate_shapes`].
    pub fn new(cfg: &Config) -> Self {
        let tp = cfg.tp.max(1);
        let (h, f, d) = (cfg.hidden, cfg.ffn, cfg.head_dim());
        let hr = h / tp;
        let fr = f / tp;
        let (kv, kvp) = (cfg.kv_heads(), cfg.kv_heads_per_rank());
        let params = ParamKind::ALL
            .into_iter()
            .map(|kind| {
                let full_shape = kind.shape(cfg);
                let [rows, cols] = full_shape;
                let (module, parallel) = match kind {
                    ParamKind::QkvWeight
                    | ParamKind::QkvBias
                    | ParamKind::Fc1Weight
                    | ParamKind::Fc1Bias => ("ColumnParallelLinear", Parallel::Column),
                    ParamKind::OutWeight | ParamKind::Fc2Weight => {
                        ("RowParallelLinear", Parallel::Row)
                    }
                    ParamKind::OutBias | ParamKind::Fc2Bias => {
                        ("RowParallelLinear", Parallel::Replicated)
                    }
                    _ => ("LayerNorm", Parallel::Replicated),
                };
                let blocks = (0..tp)
                    .map(|r| match kind {
                        // Q columns of heads r·hp..(r+1)·hp, then the K and V columns of the
                        // rank's KV heads: three blocks.
                        ParamKind::QkvWeight | ParamKind::QkvBias => {
                            let k0 = h + cfg.first_kv_head(r) * d;
                            let v0 = k0 + kv * d;
                            [r * hr..(r + 1) * hr, k0..k0 + kvp * d, v0..v0 + kvp * d]
                                .into_iter()
                                .map(|cols| Block {
                                    rows: 0..rows,
                                    cols,
                                })
                                .collect()
                        }
                        ParamKind::Fc1Weight | ParamKind::Fc1Bias => vec![Block {
                            rows: 0..rows,
                            cols: r * fr..(r + 1) * fr,
                        }],
                        ParamKind::OutWeight => vec![Block {
                            rows: r * hr..(r + 1) * hr,
                            cols: 0..cols,
                        }],
                        ParamKind::Fc2Weight => vec![Block {
                            rows: r * fr..(r + 1) * fr,
                            cols: 0..cols,
                        }],
                        _ => vec![Block {
                            rows: 0..rows,
                            cols: 0..cols,
                        }],
                    })
                    .collect();
                ParamShard {
                    kind,
                    module,
                    parallel,
                    full_shape,
                    blocks,
                }
            })
            .collect();
        Self { tp, params }
    }

    pub fn param(&self, kind: ParamKind) -> &ParamShard {
        // `params` holds every ParamKind, in ParamKind::ALL order.
        &self.params[ParamKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)]
    }

    /// The index ranges rank `r` holds of parameter `kind` along its rows (`rows`) or columns.
    pub fn ranges(&self, kind: ParamKind, r: usize, rows: bool) -> Vec<[usize; 2]> {
        self.param(kind).blocks[r]
            .iter()
            .map(|b| {
                let rg = if rows { &b.rows } else { &b.cols };
                [rg.start, rg.end]
            })
            .collect()
    }

    /// What rank `r` holds of parameter `kind`: its columns (column-parallel), its rows
    /// (row-parallel) or the whole tensor.
    pub fn placement(&self, kind: ParamKind, r: usize) -> Placement {
        match self.param(kind).parallel {
            Parallel::Column => Placement::Shard {
                dim: 1,
                ranges: self.ranges(kind, r, false),
            },
            Parallel::Row => Placement::Shard {
                dim: 0,
                ranges: self.ranges(kind, r, true),
            },
            _ => Placement::Replicate,
        }
    }

    /// What rank `r` holds of an activation whose columns follow parameter `kind`'s split: a
    /// column-parallel weight's columns, or a row-parallel weight's rows (the attention context's
    /// columns are `W_out`'s rows).
    pub fn columns_of(&self, kind: ParamKind, r: usize) -> Placement {
        Placement::Shard {
            dim: 1,
            ranges: self.ranges(kind, r, self.param(kind).parallel == Parallel::Row),
        }
    }

    /// Rank `r`'s shards of one block's parameters.
    pub fn shard_layer<T: Element>(&self, full: &LayerParams<T>, r: usize) -> LayerParams<T> {
        LayerParams::from_fn(|k| self.param(k).extract(full.get(k).view(), r))
    }

    /// Every rank's shards of every layer: `[rank][layer]`.
    pub fn shard_model<T: Element>(&self, model: &Model<T>) -> Vec<Vec<LayerParams<T>>> {
        (0..self.tp)
            .map(|r| {
                model
                    .layers
                    .iter()
                    .map(|l| self.shard_layer(l, r))
                    .collect()
            })
            .collect()
    }

    /// Parameter elements rank `r` holds per layer.
    pub fn elems_per_rank_per_layer(&self, r: usize) -> usize {
        self.params.iter().map(|p| p.shard_elems(r)).sum()
    }

    /// Weight bytes per rank for `cfg` (all layers, `cfg.dtype`).
    pub fn weight_bytes_per_rank(&self, cfg: &Config, r: usize) -> u64 {
        (self.elems_per_rank_per_layer(r) * cfg.layers * cfg.dtype.size_bytes()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Preset;

    #[test]
    fn shards_tile_each_split_tensor_exactly_once() {
        let cfg = Config {
            tp: 4,
            heads: 4,
            ..Preset::Tiny.config()
        };
        let plan = ShardPlan::new(&cfg);
        for p in &plan.params {
            let mut hits = Array2::<u32>::zeros((p.full_shape[0], p.full_shape[1]));
            for r in 0..plan.tp {
                for b in &p.blocks[r] {
                    hits.slice_mut(s![b.rows.clone(), b.cols.clone()])
                        .mapv_inplace(|v| v + 1);
                }
            }
            let want = if p.parallel == Parallel::Replicated {
                4
            } else {
                1
            };
            assert!(hits.iter().all(|&v| v == want), "{:?}", p.kind);
        }
    }

    /// Grouped-query attention: Megatron's split when `tp <= kv`, vLLM's replication beyond.
    #[test]
    fn gqa_kv_heads_split_then_replicated() {
        // h=32, 8 query heads of size 4, 2 KV heads: Q is columns 0..32, K 32..40, V 40..48.
        let base = Config {
            hidden: 32,
            heads: 8,
            kv_heads: Some(2),
            ffn: 64,
            ..Preset::Tiny.config()
        };
        let cols = |tp: usize, r: usize| -> Vec<Range<usize>> {
            let cfg = Config { tp, ..base.clone() };
            ShardPlan::new(&cfg).param(ParamKind::QkvWeight).blocks[r]
                .iter()
                .map(|b| b.cols.clone())
                .collect()
        };
        // TP=2: one KV head each.
        assert_eq!(cols(2, 1), vec![16..32, 36..40, 44..48]);
        // TP=8: four ranks share each KV head; rank 5 holds a copy of KV head 1.
        assert_eq!(cols(8, 5), vec![20..24, 36..40, 44..48]);
        assert_eq!(cols(8, 3), vec![12..16, 32..36, 40..44]);
        let cfg = Config { tp: 8, ..base };
        assert_eq!(
            cfg.kv_replica_groups(),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        // Each K/V column is held by exactly tp/kv = 4 ranks, each Q column by one.
        let p = ShardPlan::new(&cfg);
        let p = p.param(ParamKind::QkvWeight);
        let mut hits = vec![0; cfg.qkv_width()];
        for r in 0..8 {
            for b in &p.blocks[r] {
                b.cols.clone().for_each(|c| hits[c] += 1);
            }
        }
        assert!(hits[..32].iter().all(|&n| n == 1));
        assert!(hits[32..].iter().all(|&n| n == 4));
    }

    #[test]
    fn extract_then_place_round_trips() {
        let cfg = Preset::Tiny.config();
        let model = Model::<f64>::random(&cfg);
        let plan = ShardPlan::new(&cfg);
        let full = &model.layers[0];
        for k in ParamKind::ALL {
            let p = plan.param(k);
            let mut back = Array2::<f64>::zeros(full.get(k).dim());
            for r in 0..plan.tp {
                let sh = p.extract(full.get(k).view(), r);
                assert_eq!(sh.shape(), p.shard_shape(r));
                p.place(&mut back, sh.view(), r);
            }
            assert_eq!(&back, full.get(k));
        }
    }

    #[test]
    fn qkv_rank_holds_its_heads_q_k_v() {
        let cfg = Preset::Tiny.config(); // h=16, 4 heads, tp=2: 8 columns of each of Q, K, V
        let plan = ShardPlan::new(&cfg);
        let cols: Vec<_> = plan.param(ParamKind::QkvWeight).blocks[1]
            .iter()
            .map(|b| b.cols.clone())
            .collect();
        assert_eq!(cols, vec![8..16, 24..32, 40..48]);
    }
}
