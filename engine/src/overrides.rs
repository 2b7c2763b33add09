//! Scenario overrides: a preset and the fields that differ from it. One type for the command
//! line's scenario flags (`#[command(flatten)]`, with the `clap` feature), the lessons' and the
//! quiz's "Show me" targets (flattened into their TOML) and the app's navigation.

use crate::collectives::Algorithm;
use crate::config::{Config, Preset};
use serde::{Deserialize, Serialize};

/// A preset and the fields set on top of it; `None` keeps the preset's value.
///
/// In TOML and JSON the fields sit flat beside their neighbours (`tp = 4`,
/// `sequence_parallel = true`); on the command line they are `--preset`, `--tp`,
/// `--sequence-parallel`, ….
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(default)]
pub struct Overrides {
    /// Starting point: gpt2-small or tiny (default gpt2-small).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<Preset>,
    /// Model width; the MLP width follows as 4 × hidden unless --ffn is given.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<usize>,
    /// Attention (query) heads.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heads: Option<usize>,
    /// Grouped-query attention: key/value heads, each shared by heads / kv-heads query heads
    /// (default: one per head). Beyond TP = kv-heads each KV head is replicated (vLLM's rule).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_heads: Option<usize>,
    /// MLP width (default: 4 × hidden when --hidden is given, else the preset's).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ffn: Option<usize>,
    /// Sequence length.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<usize>,
    /// Micro-batch size.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Transformer blocks.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<usize>,
    /// Tensor-parallel size (virtual GPUs).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tp: Option<usize>,
    /// Sequence parallelism (Korthikanti et al. 2022): LayerNorm, bias and residual on 1/TP of
    /// the tokens; each all-reduce becomes a reduce-scatter plus an all-gather. Needs
    /// seq % tp == 0. `--sequence-parallel` alone turns it on.
    #[cfg_attr(
        feature = "clap",
        arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")
    )]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence_parallel: Option<bool>,
    /// All-reduce algorithm: ring, recursive-halving-doubling, tree, direct (default ring).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<Algorithm>,
    /// Seed of the weights, input and upstream gradient.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl Overrides {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The preset the scenario starts from (GPT-2 small when none is named).
    pub fn preset(&self) -> Preset {
        self.preset.unwrap_or(Preset::Gpt2Small)
    }

    /// The scenario: the preset's configuration with exactly the fields set, nothing else.
    pub fn config(&self) -> Config {
        let mut c = self.preset().config();
        if let Some(h) = self.hidden {
            c.hidden = h;
            // Saturating: an absurd hidden size is refused by validation, naming the limit.
            c.ffn = h.saturating_mul(4);
        }
        let set = |dst: &mut usize, v: Option<usize>| {
            if let Some(v) = v {
                *dst = v;
            }
        };
        set(&mut c.heads, self.heads);
        set(&mut c.ffn, self.ffn);
        set(&mut c.seq, self.seq);
        set(&mut c.batch, self.batch);
        set(&mut c.layers, self.layers);
        set(&mut c.tp, self.tp);
        if self.kv_heads.is_some() {
            c.kv_heads = self.kv_heads;
        }
        if let Some(sp) = self.sequence_parallel {
            c.sequence_parallel = sp;
        }
        if let Some(a) = self.algorithm {
            c.algorithm = a;
        }
        if let Some(s) = self.seed {
            c.seed = s;
        }
        c
    }

    /// Where a "Show me" lands from `current`: [`Self::config`] when any field is set, so
    /// nothing left over from earlier (a tree algorithm, sequence parallelism, 5 layers)
    /// changes what it shows; `current` unchanged when none is.
    pub fn apply(&self, current: &Config) -> Config {
        if self.is_empty() {
            current.clone()
        } else {
            self.config()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_the_named_fields_on_the_preset() {
        let o = Overrides {
            preset: Some(Preset::Tiny),
            tp: Some(4),
            sequence_parallel: Some(true),
            ..Overrides::default()
        };
        let want = Config {
            tp: 4,
            sequence_parallel: true,
            ..Preset::Tiny.config()
        };
        assert_eq!(o.config(), want);
        // Nothing of the current scenario survives a target that names a field.
        let current = Config {
            algorithm: Algorithm::Tree,
            layers: 5,
            ..Preset::Gpt2Small.config()
        };
        assert_eq!(o.apply(&current), want);
        let tp_only = Overrides {
            tp: Some(2),
            ..Overrides::default()
        };
        assert_eq!(
            tp_only.apply(&current),
            Config {
                tp: 2,
                ..Preset::Gpt2Small.config()
            }
        );
        // A target that names none keeps it.
        assert_eq!(Overrides::default().apply(&current), current);
    }

    #[test]
    fn hidden_sets_the_mlp_width_unless_ffn_is_given() {
        let h = Overrides {
            hidden: Some(256),
            ..Overrides::default()
        };
        assert_eq!((h.config().hidden, h.config().ffn), (256, 1024));
        let hf = Overrides {
            ffn: Some(300),
            ..h
        };
        assert_eq!(hf.config().ffn, 300);
    }

    #[test]
    fn flat_in_json_with_only_the_set_fields() {
        let o = Overrides {
            preset: Some(Preset::Tiny),
            algorithm: Some(Algorithm::RecursiveHalvingDoubling),
            ..Overrides::default()
        };
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(
            json,
            r#"{"preset":"tiny","algorithm":"recursive-halving-doubling"}"#
        );
        assert_eq!(serde_json::from_str::<Overrides>(&json).unwrap(), o);
    }
}
