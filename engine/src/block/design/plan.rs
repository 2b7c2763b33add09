//! A sharding plan as data: how each weight of the block is split, whether sequence parallelism
//! is on, and who places the collectives (the rules, or the learner).
//!
//! ```toml
//! # Megatron-LM's split, written out (the same as `base = "megatron"`):
//! qkv = "columns"          # replicate | columns | rows
//! out = "rows"
//! fc1 = "columns"
//! fc2 = "rows"
//! sequence_parallel = false
//! collectives = "auto"     # auto: the rules insert the cheapest; manual: the list below
//!
//! # With collectives = "manual", each entry changes the output of the op named in `after`:
//! [[collective]]
//! after = "attn.out"       # ln1, attn.qkv, attn.core, attn.out, attn.residual, ln2,
//! kind = "all-reduce"      # mlp.fc1, mlp.gelu, mlp.fc2 — all-reduce | reduce-scatter |
//!                          # all-gather | all-to-all
//! ```

use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// How one weight matrix (stored `[in, out]`) is split over the GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// Every GPU holds the whole matrix.
    Replicate,
    /// Each GPU holds a slice of the output features (`Shard(1)`); for QKV by whole heads.
    Columns,
    /// Each GPU holds a slice of the input features (`Shard(0)`).
    Rows,
}

impl Split {
    pub const ALL: [Split; 3] = [Split::Replicate, Split::Columns, Split::Rows];

    /// The spelling of the TOML file and the flags.
    pub fn name(self) -> &'static str {
        match self {
            Split::Replicate => "replicate",
            Split::Columns => "columns",
            Split::Rows => "rows",
        }
    }

    pub fn parse(s: &str) -> Result<Self, PlanError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "replicate" | "replicated" | "whole" => Ok(Split::Replicate),
            "columns" | "column" | "cols" => Ok(Split::Columns),
            "rows" | "row" => Ok(Split::Rows),
            _ => Err(PlanError::BadSplit(s.chars().take(40).collect())),
        }
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The four weight matrices a plan splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Weight {
    Qkv,
    Out,
    Fc1,
    Fc2,
}

impl Weight {
    pub const ALL: [Weight; 4] = [Weight::Qkv, Weight::Out, Weight::Fc1, Weight::Fc2];

    /// What a learner reads.
    pub fn label(self) -> &'static str {
        match self {
            Weight::Qkv => "QKV projection",
            Weight::Out => "output projection",
            Weight::Fc1 => "fc1",
            Weight::Fc2 => "fc2",
        }
    }

    /// The matrix's symbol in the lessons.
    pub fn symbol(self) -> &'static str {
        match self {
            Weight::Qkv => "W_qkv",
            Weight::Out => "W_out",
            Weight::Fc1 => "W1",
            Weight::Fc2 => "W2",
        }
    }
}

/// A collective kind a learner may place by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ManualKind {
    /// Partial sums → the whole sum on every GPU.
    AllReduce,
    /// Partial sums → each GPU's rows of the sum (its tokens).
    ReduceScatter,
    /// Each GPU's slice → the whole tensor on every GPU.
    AllGather,
    /// Each GPU's tokens ↔ each GPU's features.
    AllToAll,
}

impl ManualKind {
    pub fn name(self) -> &'static str {
        match self {
            ManualKind::AllReduce => "all-reduce",
            ManualKind::ReduceScatter => "reduce-scatter",
            ManualKind::AllGather => "all-gather",
            ManualKind::AllToAll => "all-to-all",
        }
    }

    pub fn parse(s: &str) -> Result<Self, PlanError> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "all-reduce" | "allreduce" => Ok(ManualKind::AllReduce),
            "reduce-scatter" | "reducescatter" => Ok(ManualKind::ReduceScatter),
            "all-gather" | "allgather" => Ok(ManualKind::AllGather),
            "all-to-all" | "alltoall" => Ok(ManualKind::AllToAll),
            _ => Err(PlanError::BadKind(s.chars().take(40).collect())),
        }
    }
}

/// Where a learner's collective sits: right after one forward op of the block, on its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Site {
    Ln1,
    Qkv,
    Attention,
    Out,
    AttnResidual,
    Ln2,
    Fc1,
    Gelu,
    Fc2,
}

impl Site {
    pub const ALL: [Site; 9] = [
        Site::Ln1,
        Site::Qkv,
        Site::Attention,
        Site::Out,
        Site::AttnResidual,
        Site::Ln2,
        Site::Fc1,
        Site::Gelu,
        Site::Fc2,
    ];

    /// The dotted name of the op (the exports' vocabulary).
    pub fn name(self) -> &'static str {
        match self {
            Site::Ln1 => "ln1",
            Site::Qkv => "attn.qkv",
            Site::Attention => "attn.core",
            Site::Out => "attn.out",
            Site::AttnResidual => "attn.residual",
            Site::Ln2 => "ln2",
            Site::Fc1 => "mlp.fc1",
            Site::Gelu => "mlp.gelu",
            Site::Fc2 => "mlp.fc2",
        }
    }

    pub fn parse(s: &str) -> Result<Self, PlanError> {
        let s = s.trim();
        Site::ALL
            .into_iter()
            .find(|site| site.name() == s)
            .ok_or_else(|| PlanError::BadSite(s.chars().take(40).collect()))
    }
}

/// One collective a learner placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct ManualCollective {
    pub after: Site,
    pub kind: ManualKind,
}

/// A split of the block: one [`Split`] per weight, sequence parallelism, and the collectives
/// (`None`: the propagation rules insert the cheapest ones; `Some`: exactly the listed ones, in
/// the forward pass; the backward is always derived).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ShardingPlan {
    pub qkv: Split,
    pub out: Split,
    pub fc1: Split,
    pub fc2: Split,
    pub sequence_parallel: bool,
    pub manual: Option<Vec<ManualCollective>>,
}

impl Default for ShardingPlan {
    fn default() -> Self {
        NamedPlan::Megatron.plan()
    }
}

impl ShardingPlan {
    pub fn split(&self, w: Weight) -> Split {
        match w {
            Weight::Qkv => self.qkv,
            Weight::Out => self.out,
            Weight::Fc1 => self.fc1,
            Weight::Fc2 => self.fc2,
        }
    }

    pub fn set_split(&mut self, w: Weight, s: Split) {
        match w {
            Weight::Qkv => self.qkv = s,
            Weight::Out => self.out = s,
            Weight::Fc1 => self.fc1 = s,
            Weight::Fc2 => self.fc2 = s,
        }
    }

    /// Every assignment of {replicate, columns, rows} to the four weights (81 plans), auto
    /// collectives, sequence parallelism as given.
    pub fn all_assignments(sequence_parallel: bool) -> Vec<ShardingPlan> {
        let mut v = Vec::with_capacity(81);
        for qkv in Split::ALL {
            for out in Split::ALL {
                for fc1 in Split::ALL {
                    for fc2 in Split::ALL {
                        v.push(ShardingPlan {
                            qkv,
                            out,
                            fc1,
                            fc2,
                            sequence_parallel,
                            manual: None,
                        });
                    }
                }
            }
        }
        v
    }

    /// The named plan this is, if any (auto collectives only).
    pub fn named(&self) -> Option<NamedPlan> {
        NamedPlan::ALL.into_iter().find(|n| {
            let p = n.plan();
            self.manual.is_none()
                && (p.qkv, p.out, p.fc1, p.fc2) == (self.qkv, self.out, self.fc1, self.fc2)
        })
    }

    /// `qkv=columns out=rows fc1=columns fc2=rows`, plus sequence parallelism and manual
    /// collectives when set.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "qkv={} out={} fc1={} fc2={}",
            self.qkv, self.out, self.fc1, self.fc2
        );
        if self.sequence_parallel {
            s.push_str(" sequence-parallel");
        }
        if let Some(m) = &self.manual {
            s.push_str(" collectives:");
            if m.is_empty() {
                s.push_str(" none");
            }
            for c in m {
                s.push_str(&format!(" {}@{}", c.kind.name(), c.after.name()));
            }
        }
        s
    }

    /// The plan as a plan file (the TOML [`ShardingPlan::from_toml`] reads back to the same
    /// plan): what "Copy my plan" puts on the clipboard.
    pub fn to_toml(&self) -> String {
        let mut s = format!(
            "# tplab design --file PLAN.toml\nqkv = \"{}\"\nout = \"{}\"\nfc1 = \"{}\"\nfc2 = \"{}\"\nsequence_parallel = {}\n",
            self.qkv, self.out, self.fc1, self.fc2, self.sequence_parallel
        );
        match &self.manual {
            None => s.push_str("collectives = \"auto\"\n"),
            Some(list) => {
                s.push_str("collectives = \"manual\"\n");
                for c in list {
                    s.push_str(&format!(
                        "\n[[collective]]\nafter = \"{}\"\nkind = \"{}\"\n",
                        c.after.name(),
                        c.kind.name()
                    ));
                }
            }
        }
        s
    }

    /// The plan as `tplab design` flags (`--qkv columns --out rows --fc1 columns --fc2 rows`,
    /// and `--sequence-parallel`); `None` when collectives are placed by hand, which only a plan
    /// file can say.
    pub fn to_flags(&self) -> Option<String> {
        if self.manual.is_some() {
            return None;
        }
        let mut s = format!(
            "--qkv {} --out {} --fc1 {} --fc2 {}",
            self.qkv, self.out, self.fc1, self.fc2
        );
        if self.sequence_parallel {
            s.push_str(" --sequence-parallel");
        }
        Some(s)
    }

    /// A plan pasted as text: a plan file ([`ShardingPlan::from_toml`]) or `tplab design` flags
    /// (`--plan NAME`, `--qkv/--out/--fc1/--fc2 SPLIT`, `--sequence-parallel`; a leading
    /// `tplab design` is skipped). At most 64 KiB is read.
    pub fn from_text(text: &str) -> Result<Self, PlanError> {
        let text = &text[..text.floor_char_boundary(64 * 1024)];
        let text = text.trim();
        // A plan file's comments may quote flags ("# tplab design --file PLAN.toml", the first
        // line of a copied plan): whether it is flags is read without them.
        let body: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect();
        if !body.iter().any(|l| l.contains("--")) {
            return Self::from_toml(text);
        }
        let text = body.join("\n");
        let text = text.as_str();
        let mut plan = NamedPlan::Megatron.plan();
        let mut words = text.split_whitespace().peekable();
        let short: String = text.chars().take(60).collect();
        while let Some(w) = words.next() {
            let mut value = |w: &str| {
                words
                    .next()
                    .map(str::to_string)
                    .ok_or_else(|| PlanError::NotAPlan(format!("{w} without a value")))
            };
            match w {
                "tplab" | "design" => {}
                "--plan" => {
                    let p = NamedPlan::parse(&value(w)?)?.plan();
                    plan = ShardingPlan {
                        sequence_parallel: plan.sequence_parallel,
                        ..p
                    };
                }
                "--qkv" => plan.set_split(Weight::Qkv, Split::parse(&value(w)?)?),
                "--out" => plan.set_split(Weight::Out, Split::parse(&value(w)?)?),
                "--fc1" => plan.set_split(Weight::Fc1, Split::parse(&value(w)?)?),
                "--fc2" => plan.set_split(Weight::Fc2, Split::parse(&value(w)?)?),
                "--sequence-parallel" => plan.sequence_parallel = true,
                _ => return Err(PlanError::NotAPlan(short)),
            }
        }
        Ok(plan)
    }

    /// A plan from the TOML schema in this module's documentation. Unknown keys are refused (a
    /// misspelt key would otherwise silently mean "the default").
    pub fn from_toml(text: &str) -> Result<Self, PlanError> {
        let file: PlanFile = toml::from_str(text).map_err(|e| PlanError::Toml(e.to_string()))?;
        let mut plan = match &file.base {
            Some(name) => NamedPlan::parse(name)?.plan(),
            None => NamedPlan::Megatron.plan(),
        };
        for (w, s) in [
            (Weight::Qkv, &file.qkv),
            (Weight::Out, &file.out),
            (Weight::Fc1, &file.fc1),
            (Weight::Fc2, &file.fc2),
        ] {
            if let Some(s) = s {
                plan.set_split(w, Split::parse(s)?);
            }
        }
        if let Some(sp) = file.sequence_parallel {
            plan.sequence_parallel = sp;
        }
        let manual = match file.collectives.as_deref().map(str::trim) {
            None | Some("auto") => {
                if !file.collective.is_empty() {
                    return Err(PlanError::ListWithoutManual);
                }
                false
            }
            Some("manual") => true,
            Some(other) => return Err(PlanError::BadMode(other.chars().take(40).collect())),
        };
        if manual {
            let list = file
                .collective
                .iter()
                .map(|c| {
                    Ok(ManualCollective {
                        after: Site::parse(&c.after)?,
                        kind: ManualKind::parse(&c.kind)?,
                    })
                })
                .collect::<Result<Vec<_>, PlanError>>()?;
            if list.len() > MAX_MANUAL {
                return Err(PlanError::TooManyCollectives(list.len()));
            }
            plan.manual = Some(list);
        }
        Ok(plan)
    }
}

/// More hand-placed collectives than a block has places for is a mistake, not a plan.
pub const MAX_MANUAL: usize = 64;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    base: Option<String>,
    qkv: Option<String>,
    out: Option<String>,
    fc1: Option<String>,
    fc2: Option<String>,
    sequence_parallel: Option<bool>,
    collectives: Option<String>,
    #[serde(default)]
    collective: Vec<CollectiveEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CollectiveEntry {
    after: String,
    kind: String,
}

/// Plans a lesson can cite by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NamedPlan {
    /// Megatron-LM: QKV and fc1 by columns, out-projection and fc2 by rows.
    Megatron,
    /// Nothing split: every GPU computes the whole block.
    Replicated,
    /// The wrong way round: QKV and fc1 by rows, out-projection and fc2 by columns.
    RowsThenColumns,
    /// Every weight by columns.
    ColumnsColumns,
}

impl NamedPlan {
    pub const ALL: [NamedPlan; 4] = [
        NamedPlan::Megatron,
        NamedPlan::Replicated,
        NamedPlan::RowsThenColumns,
        NamedPlan::ColumnsColumns,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NamedPlan::Megatron => "megatron",
            NamedPlan::Replicated => "replicated",
            NamedPlan::RowsThenColumns => "rows-then-columns",
            NamedPlan::ColumnsColumns => "columns-columns",
        }
    }

    pub fn parse(s: &str) -> Result<Self, PlanError> {
        let s = s.trim();
        NamedPlan::ALL
            .into_iter()
            .find(|n| n.name() == s)
            .ok_or_else(|| PlanError::BadName(s.chars().take(40).collect()))
    }

    pub fn plan(self) -> ShardingPlan {
        use Split::*;
        let (qkv, out, fc1, fc2) = match self {
            NamedPlan::Megatron => (Columns, Rows, Columns, Rows),
            NamedPlan::Replicated => (Replicate, Replicate, Replicate, Replicate),
            NamedPlan::RowsThenColumns => (Rows, Columns, Rows, Columns),
            NamedPlan::ColumnsColumns => (Columns, Columns, Columns, Columns),
        };
        ShardingPlan {
            qkv,
            out,
            fc1,
            fc2,
            sequence_parallel: false,
            manual: None,
        }
    }
}

/// Why a plan could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanError {
    #[error("unknown split {0:?}: a weight is split as `replicate`, `columns` or `rows`")]
    BadSplit(String),
    #[error(
        "unknown collective {0:?}: use `all-reduce`, `reduce-scatter`, `all-gather` or `all-to-all`"
    )]
    BadKind(String),
    #[error(
        "unknown op {0:?} in `after`: use one of ln1, attn.qkv, attn.core, attn.out, attn.residual, \
         ln2, mlp.fc1, mlp.gelu, mlp.fc2"
    )]
    BadSite(String),
    #[error(
        "unknown plan {0:?}: the named plans are megatron, replicated, rows-then-columns, \
         columns-columns"
    )]
    BadName(String),
    #[error("unknown `collectives = {0:?}`: use \"auto\" or \"manual\"")]
    BadMode(String),
    #[error(
        "the plan lists [[collective]] entries but `collectives` is not \"manual\": add \
         `collectives = \"manual\"` to place them yourself, or remove the list"
    )]
    ListWithoutManual,
    #[error("{0} hand-placed collectives: at most {MAX_MANUAL} (a block has 9 places for one)")]
    TooManyCollectives(usize),
    #[error("the plan file is not valid: {0}")]
    Toml(String),
    #[error(
        "{0:?} is not a plan: paste a plan file (qkv = \"columns\" …) or tplab design flags \
         (--qkv columns --out rows --fc1 columns --fc2 rows, --plan megatron, --sequence-parallel)"
    )]
    NotAPlan(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copied plan reads back as the same plan, every split, with and without sequence
    /// parallelism and hand-placed collectives; its flags exist only without the latter.
    #[test]
    fn a_copied_plan_reads_back_the_same() {
        for sp in [false, true] {
            for mut p in ShardingPlan::all_assignments(sp) {
                assert_eq!(ShardingPlan::from_toml(&p.to_toml()).ok(), Some(p.clone()));
                // Pasted as the app pastes it (the file's first line quotes a flag).
                assert_eq!(ShardingPlan::from_text(&p.to_toml()).ok(), Some(p.clone()));
                assert!(p.to_flags().is_some_and(|f| f.contains("--fc2")));
                p.manual = Some(vec![
                    ManualCollective {
                        after: Site::Out,
                        kind: ManualKind::AllReduce,
                    },
                    ManualCollective {
                        after: Site::Fc2,
                        kind: ManualKind::ReduceScatter,
                    },
                ]);
                assert_eq!(ShardingPlan::from_toml(&p.to_toml()).ok(), Some(p.clone()));
                assert_eq!(ShardingPlan::from_text(&p.to_toml()).ok(), Some(p.clone()));
                assert_eq!(p.to_flags(), None);
            }
        }
    }

    #[test]
    fn flags_and_files_paste_as_plans_and_anything_else_is_refused_by_name() {
        let p = ShardingPlan::from_text(
            "tplab design --qkv rows --out columns --fc1 rows --fc2 columns",
        )
        .unwrap_or_default();
        assert_eq!(p.named(), Some(NamedPlan::RowsThenColumns));
        let p =
            ShardingPlan::from_text("--plan replicated --sequence-parallel").unwrap_or_default();
        assert!(p.sequence_parallel && p.named() == Some(NamedPlan::Replicated));
        for p in ShardingPlan::all_assignments(true) {
            let flags = p.to_flags().unwrap_or_default();
            assert_eq!(ShardingPlan::from_text(&flags).ok(), Some(p));
        }
        // Anything at all is refused by name, never a panic: 64 KiB of Turkish text cut in the
        // middle of a letter included.
        let long = format!("x{}", "ş".repeat(40_000));
        assert!(ShardingPlan::from_text(&long).is_err());
        for bad in ["--qkv", "--qkv diagonal", "hello world", "--gpus 8"] {
            let e = ShardingPlan::from_text(bad).err().map(|e| e.to_string());
            assert!(e.is_some(), "{bad} is refused");
        }
    }

    #[test]
    fn toml_round_trips_the_schema() {
        let p = ShardingPlan::from_toml(
            "qkv = \"rows\"\nout = \"columns\"\nfc1 = \"rows\"\nfc2 = \"columns\"\n",
        )
        .unwrap_or_default();
        assert_eq!(p.named(), Some(NamedPlan::RowsThenColumns));
        let m = ShardingPlan::from_toml(
            "base = \"megatron\"\ncollectives = \"manual\"\n[[collective]]\nafter = \"attn.out\"\nkind = \"all-reduce\"\n",
        );
        let m = m.unwrap_or_default();
        assert_eq!(
            m.manual,
            Some(vec![ManualCollective {
                after: Site::Out,
                kind: ManualKind::AllReduce
            }])
        );
        assert_eq!(NamedPlan::Megatron.plan(), ShardingPlan::default());
    }

    #[test]
    fn bad_files_name_the_rule() {
        let e = |t: &str| ShardingPlan::from_toml(t).err().map(|e| e.to_string());
        assert!(e("qkv = \"diagonal\"").is_some_and(|s| s.contains("columns")));
        assert!(e("qkvv = \"rows\"").is_some_and(|s| s.contains("not valid")));
        assert!(e("[[collective]]\nafter = \"ln1\"\nkind = \"all-reduce\"")
            .is_some_and(|s| s.contains("manual")));
        assert!(e(
            "collectives = \"manual\"\n[[collective]]\nafter = \"mlp.fc3\"\nkind = \"all-reduce\""
        )
        .is_some_and(|s| s.contains("mlp.fc2")));
        assert!(e("base = \"zero\"").is_some_and(|s| s.contains("megatron")));
    }

    #[test]
    fn eighty_one_assignments() {
        let all = ShardingPlan::all_assignments(false);
        assert_eq!(all.len(), 81);
        let named: Vec<_> = all.iter().filter_map(ShardingPlan::named).collect();
        assert_eq!(named.len(), NamedPlan::ALL.len());
    }
}
