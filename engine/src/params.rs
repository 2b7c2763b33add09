//! Parameters of the transformer stack, their names and their seeded initialisation.
//!
//! Names follow the export convention: `layers.{i}.ln1.weight`, `layers.{i}.attn.qkv.weight`, …
//! Every tensor is stored 2-D: a weight `W` is `[in, out]` (so `y = x·W + b`), a bias or a
//! LayerNorm vector is `[1, n]`. The packed QKV weight is `[h, 3h]`, laid out `[Q | K | V]` with
//! each head's `h/a` columns contiguous inside each part. With grouped-query attention it is
//! `[h, (a + 2·kv)·d]`: `a` query heads, then `kv` key heads, then `kv` value heads.

use crate::config::Config;
use crate::dtype::Element;
use ndarray::Array2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Which tensor of a block.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum ParamKind {
    Ln1Weight,
    Ln1Bias,
    QkvWeight,
    QkvBias,
    OutWeight,
    OutBias,
    Ln2Weight,
    Ln2Bias,
    Fc1Weight,
    Fc1Bias,
    Fc2Weight,
    Fc2Bias,
}

impl ParamKind {
    /// Every parameter of a block, in export order.
    pub const ALL: [ParamKind; 12] = [
        ParamKind::Ln1Weight,
        ParamKind::Ln1Bias,
        ParamKind::QkvWeight,
        ParamKind::QkvBias,
        ParamKind::OutWeight,
        ParamKind::OutBias,
        ParamKind::Ln2Weight,
        ParamKind::Ln2Bias,
        ParamKind::Fc1Weight,
        ParamKind::Fc1Bias,
        ParamKind::Fc2Weight,
        ParamKind::Fc2Bias,
    ];

    /// Name inside a block, e.g. `attn.qkv.weight`.
    pub fn suffix(self) -> &'static str {
        match self {
            ParamKind::Ln1Weight => "ln1.weight",
            ParamKind::Ln1Bias => "ln1.bias",
            ParamKind::QkvWeight => "attn.qkv.weight",
            ParamKind::QkvBias => "attn.qkv.bias",
            ParamKind::OutWeight => "attn.out.weight",
            ParamKind::OutBias => "attn.out.bias",
            ParamKind::Ln2Weight => "ln2.weight",
            ParamKind::Ln2Bias => "ln2.bias",
            ParamKind::Fc1Weight => "mlp.fc1.weight",
            ParamKind::Fc1Bias => "mlp.fc1.bias",
            ParamKind::Fc2Weight => "mlp.fc2.weight",
            ParamKind::Fc2Bias => "mlp.fc2.bias",
        }
    }

    /// Its gradient's name inside a block, e.g. `grad.attn.qkv.weight`.
    pub fn grad_name(self) -> &'static str {
        match self {
            ParamKind::Ln1Weight => "grad.ln1.weight",
            ParamKind::Ln1Bias => "grad.ln1.bias",
            ParamKind::QkvWeight => "grad.attn.qkv.weight",
            ParamKind::QkvBias => "grad.attn.qkv.bias",
            ParamKind::OutWeight => "grad.attn.out.weight",
            ParamKind::OutBias => "grad.attn.out.bias",
            ParamKind::Ln2Weight => "grad.ln2.weight",
            ParamKind::Ln2Bias => "grad.ln2.bias",
            ParamKind::Fc1Weight => "grad.mlp.fc1.weight",
            ParamKind::Fc1Bias => "grad.mlp.fc1.bias",
            ParamKind::Fc2Weight => "grad.mlp.fc2.weight",
            ParamKind::Fc2Bias => "grad.mlp.fc2.bias",
        }
    }

    /// The symbol a learner reads, as in Megatron-LM's paper: `W1` for `mlp.fc1.weight`.
    pub fn symbol(self) -> &'static str {
        match self {
            ParamKind::Ln1Weight => "LN1.w",
            ParamKind::Ln1Bias => "LN1.b",
            ParamKind::QkvWeight => "W_qkv",
            ParamKind::QkvBias => "b_qkv",
            ParamKind::OutWeight => "W_out",
            ParamKind::OutBias => "b_out",
            ParamKind::Ln2Weight => "LN2.w",
            ParamKind::Ln2Bias => "LN2.b",
            ParamKind::Fc1Weight => "W1",
            ParamKind::Fc1Bias => "b1",
            ParamKind::Fc2Weight => "W2",
            ParamKind::Fc2Bias => "b2",
        }
    }

    /// The parameter whose [`ParamKind::suffix`] is `suffix`.
    pub fn from_suffix(suffix: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.suffix() == suffix)
    }

    /// Full name in layer `layer`: `layers.{layer}.{suffix}`.
    pub fn name(self, layer: usize) -> String {
        format!("layers.{layer}.{}", self.suffix())
    }

    /// Full (unsharded) shape `[rows, cols]`.
    pub fn shape(self, cfg: &Config) -> [usize; 2] {
        let (h, f, q) = (cfg.hidden, cfg.ffn, cfg.qkv_width());
        match self {
            ParamKind::Ln1Weight
            | ParamKind::Ln1Bias
            | ParamKind::Ln2Weight
            | ParamKind::Ln2Bias
            | ParamKind::OutBias
            | ParamKind::Fc2Bias => [1, h],
            ParamKind::QkvWeight => [h, q],
            ParamKind::QkvBias => [1, q],
            ParamKind::OutWeight => [h, h],
            ParamKind::Fc1Weight => [h, f],
            ParamKind::Fc1Bias => [1, f],
            ParamKind::Fc2Weight => [f, h],
        }
    }
}

/// The tensors of one block.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerParams<T> {
    pub ln1_w: Array2<T>,
    pub ln1_b: Array2<T>,
    pub qkv_w: Array2<T>,
    pub qkv_b: Array2<T>,
    pub out_w: Array2<T>,
    pub out_b: Array2<T>,
    pub ln2_w: Array2<T>,
    pub ln2_b: Array2<T>,
    pub fc1_w: Array2<T>,
    pub fc1_b: Array2<T>,
    pub fc2_w: Array2<T>,
    pub fc2_b: Array2<T>,
}

impl<T: Element> LayerParams<T> {
    /// Zeros shaped like `cfg`'s block (gradient accumulators).
    pub fn zeros(cfg: &Config) -> Self {
        Self::from_fn(|k| {
            let [r, c] = k.shape(cfg);
            Array2::zeros((r, c))
        })
    }

    /// Builds every tensor from `f(kind)`, stopping at the first error.
    pub fn try_from_fn<E>(mut f: impl FnMut(ParamKind) -> Result<Array2<T>, E>) -> Result<Self, E> {
        let mut err = None;
        // After an error the remaining tensors are not built (empty placeholders, dropped).
        let made = Self::from_fn(|k| match err {
            Some(_) => Array2::zeros((0, 0)),
            None => f(k).unwrap_or_else(|e| {
                err = Some(e);
                Array2::zeros((0, 0))
            }),
        });
        match err {
            Some(e) => Err(e),
            None => Ok(made),
        }
    }

    /// Builds every tensor from `f(kind)`.
    pub fn from_fn(mut f: impl FnMut(ParamKind) -> Array2<T>) -> Self {
        Self {
            ln1_w: f(ParamKind::Ln1Weight),
            ln1_b: f(ParamKind::Ln1Bias),
            qkv_w: f(ParamKind::QkvWeight),
            qkv_b: f(ParamKind::QkvBias),
            out_w: f(ParamKind::OutWeight),
            out_b: f(ParamKind::OutBias),
            ln2_w: f(ParamKind::Ln2Weight),
            ln2_b: f(ParamKind::Ln2Bias),
            fc1_w: f(ParamKind::Fc1Weight),
            fc1_b: f(ParamKind::Fc1Bias),
            fc2_w: f(ParamKind::Fc2Weight),
            fc2_b: f(ParamKind::Fc2Bias),
        }
    }

    /// Every tensor, in [`ParamKind::ALL`] order.
    pub fn tensors(&self) -> [&Array2<T>; 12] {
        ParamKind::ALL.map(|k| self.get(k))
    }

    /// Every tensor mutably, in [`ParamKind::ALL`] order.
    pub fn tensors_mut(&mut self) -> [&mut Array2<T>; 12] {
        let Self {
            ln1_w,
            ln1_b,
            qkv_w,
            qkv_b,
            out_w,
            out_b,
            ln2_w,
            ln2_b,
            fc1_w,
            fc1_b,
            fc2_w,
            fc2_b,
        } = self;
        [
            ln1_w, ln1_b, qkv_w, qkv_b, out_w, out_b, ln2_w, ln2_b, fc1_w, fc1_b, fc2_w, fc2_b,
        ]
    }

    pub fn get(&self, kind: ParamKind) -> &Array2<T> {
        match kind {
            ParamKind::Ln1Weight => &self.ln1_w,
            ParamKind::Ln1Bias => &self.ln1_b,
            ParamKind::QkvWeight => &self.qkv_w,
            ParamKind::QkvBias => &self.qkv_b,
            ParamKind::OutWeight => &self.out_w,
            ParamKind::OutBias => &self.out_b,
            ParamKind::Ln2Weight => &self.ln2_w,
            ParamKind::Ln2Bias => &self.ln2_b,
            ParamKind::Fc1Weight => &self.fc1_w,
            ParamKind::Fc1Bias => &self.fc1_b,
            ParamKind::Fc2Weight => &self.fc2_w,
            ParamKind::Fc2Bias => &self.fc2_b,
        }
    }

    pub fn get_mut(&mut self, kind: ParamKind) -> &mut Array2<T> {
        match kind {
            ParamKind::Ln1Weight => &mut self.ln1_w,
            ParamKind::Ln1Bias => &mut self.ln1_b,
            ParamKind::QkvWeight => &mut self.qkv_w,
            ParamKind::QkvBias => &mut self.qkv_b,
            ParamKind::OutWeight => &mut self.out_w,
            ParamKind::OutBias => &mut self.out_b,
            ParamKind::Ln2Weight => &mut self.ln2_w,
            ParamKind::Ln2Bias => &mut self.ln2_b,
            ParamKind::Fc1Weight => &mut self.fc1_w,
            ParamKind::Fc1Bias => &mut self.fc1_b,
            ParamKind::Fc2Weight => &mut self.fc2_w,
            ParamKind::Fc2Bias => &mut self.fc2_b,
        }
    }

    /// Converts every tensor to another element type.
    pub fn cast<U: Element>(&self) -> LayerParams<U> {
        LayerParams::from_fn(|k| self.get(k).mapv(|v| U::from_f64(v.to_f64())))
    }
}

/// The input, every block's parameters and the upstream gradient of one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Model<T> {
    /// Input activations `[batch*seq, hidden]`.
    pub input: Array2<T>,
    pub layers: Vec<LayerParams<T>>,
    /// Upstream gradient `dL/dy` for the backward pass, `[batch*seq, hidden]`.
    pub grad_output: Array2<T>,
}

fn normal_matrix<T: Element>(
    rng: &mut ChaCha8Rng,
    r: usize,
    c: usize,
    mean: f64,
    std: f64,
) -> Array2<T> {
    Array2::from_shape_simple_fn((r, c), || {
        let z: f64 = StandardNormal.sample(rng);
        T::from_f64(mean + std * z)
    })
}

impl<T: Element> Model<T> {
    /// Seeded random weights (GPT-2-style: weights N(0, 0.02²·scale), small random biases,
    /// LayerNorm gains near 1), input N(0, 1) and upstream gradient N(0, 1). Biases and gains are
    /// random rather than 0/1 so that a wrong bias or gain path cannot hide. The same seed gives
    /// the same numbers in every dtype (drawn in f64, then rounded).
    pub fn random(cfg: &Config) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let t = cfg.tokens();
        let h = cfg.hidden;
        let input = normal_matrix(&mut rng, t, h, 0.0, 1.0);
        // Larger weights than GPT-2's 0.02 so that activations are O(1) for small test widths.
        let w_std = |fan_in: usize| 1.0 / (fan_in as f64).sqrt();
        let layers = (0..cfg.layers)
            .map(|_| {
                LayerParams::from_fn(|k| {
                    let [r, c] = k.shape(cfg);
                    match k {
                        ParamKind::Ln1Weight | ParamKind::Ln2Weight => {
                            normal_matrix(&mut rng, r, c, 1.0, 0.1)
                        }
                        ParamKind::QkvWeight
                        | ParamKind::OutWeight
                        | ParamKind::Fc1Weight
                        | ParamKind::Fc2Weight => normal_matrix(&mut rng, r, c, 0.0, w_std(r)),
                        _ => normal_matrix(&mut rng, r, c, 0.0, 0.1),
                    }
                })
            })
            .collect();
        let grad_output = normal_matrix(&mut rng, t, h, 0.0, 1.0);
        Self {
            input,
            layers,
            grad_output,
        }
    }

    /// Every parameter with its full name, in export order.
    pub fn named_params(&self) -> Vec<(String, &Array2<T>)> {
        self.layers
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                ParamKind::ALL
                    .into_iter()
                    .map(move |k| (k.name(i), p.get(k)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_from_fn_builds_every_tensor_or_stops_at_the_first_error() {
        let mut calls = 0;
        let ok: Result<LayerParams<f64>, String> = LayerParams::try_from_fn(|k| {
            calls += 1;
            Ok(Array2::from_elem((1, 1), param_ordinal(k) as f64))
        });
        let ok = ok.unwrap();
        assert_eq!(calls, ParamKind::ALL.len());
        for k in ParamKind::ALL {
            assert_eq!(ok.get(k)[[0, 0]], param_ordinal(k) as f64);
        }
        let mut calls = 0;
        let bad: Result<LayerParams<f64>, String> = LayerParams::try_from_fn(|k| {
            calls += 1;
            if k == ParamKind::OutWeight {
                Err(format!("no {k:?}"))
            } else {
                Ok(Array2::zeros((1, 1)))
            }
        });
        assert_eq!(bad.err().as_deref(), Some("no OutWeight"));
        assert_eq!(calls, 1 + param_ordinal(ParamKind::OutWeight));
    }

    fn param_ordinal(k: ParamKind) -> usize {
        ParamKind::ALL
            .iter()
            .position(|x| *x == k)
            .unwrap_or(usize::MAX)
    }
}
