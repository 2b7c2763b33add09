//! Generated questions: fresh numbers from a seed, answers computed by the engine.
//!
//! An id `gen:<kind>:<seed>` names one question exactly, so a generated question can be saved,
//! re-asked and put in the exam. The right answer always comes from `tplab-engine` (the trace's
//! all-reduce model, the config's validation, the shard plan, the schedule, the memory model),
//! never from a number typed here. The words are Fluent messages (`gen-*` in
//! `lessons/i18n/<lang>/quiz.ftl`; a design-lab challenge's goal and reasons are the design view's
//! own `design-ch-*` messages), and numbers in each language are written that language's way
//! (`1.048.576`, `0,25` in Turkish) by the one formatter, [`tplab_lessons::i18n`], as the grader
//! reads them ([`crate::grade::parse_number`]).

use crate::bank::{Question, QuestionKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use tplab_engine::block::design::challenge;
use tplab_engine::block::design::{ShardingPlan, Split, Weight};
use tplab_engine::collectives::Algorithm;
use tplab_engine::memory::{kv_cache_bytes_per_token_per_gpu, layer_params_per_rank};
use tplab_engine::models::ModelSpec;
use tplab_engine::trace::{all_reduce_bytes_sent_per_rank, schedule, CollectiveKind, Pass};
use tplab_engine::{Config, ConfigError, DType, Overrides};
use tplab_lessons::i18n::{ablative, dative, msg, Arg};
use tplab_lessons::{Localized, ShowMe, View};

/// Bytes in a MiB, the unit generated memory questions use.
pub const MIB: f64 = 1024.0 * 1024.0;

/// The kinds of generated question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GenKind {
    /// Bytes one GPU sends in a ring all-reduce of an activation at TP=N.
    RingBytes,
    /// Whether a TP size is valid for a model, and which rule decides.
    TpValidity,
    /// Weight memory per GPU at TP=k.
    WeightMemory,
    /// All-reduces a forward+backward pass of L layers issues.
    AllReduceCount,
    /// Whether a TP size fits a grouped-query-attention model, and by which rule.
    GqaValidity,
    /// All-gathers or reduce-scatters L layers issue with sequence parallelism.
    SpCollectives,
    /// Which of several TP sizes can split a model (select all).
    ValidTpSizes,
    /// KV-cache bytes per token on one GPU when serving a grouped-query model at TP=k.
    KvCache,
    /// The exam's practical part: a design-lab challenge; the plans offered are run against the
    /// reference and graded by the engine.
    DesignSplit,
    /// The bubble of a pipeline schedule (GPipe, 1F1B, interleaved, ZB-H1) at P stages and M
    /// micro-batches, as the engine's run measures it.
    PipelineBubble,
}

impl GenKind {
    /// Every kind, in a fixed order (the exam and practice sets iterate over it).
    pub const ALL: [GenKind; 10] = [
        GenKind::RingBytes,
        GenKind::TpValidity,
        GenKind::WeightMemory,
        GenKind::AllReduceCount,
        GenKind::GqaValidity,
        GenKind::SpCollectives,
        GenKind::ValidTpSizes,
        GenKind::KvCache,
        GenKind::DesignSplit,
        GenKind::PipelineBubble,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GenKind::RingBytes => "ring-bytes",
            GenKind::TpValidity => "tp-validity",
            GenKind::WeightMemory => "weight-memory",
            GenKind::AllReduceCount => "all-reduce-count",
            GenKind::GqaValidity => "gqa-validity",
            GenKind::SpCollectives => "sp-collectives",
            GenKind::ValidTpSizes => "valid-tp-sizes",
            GenKind::KvCache => "kv-cache",
            GenKind::DesignSplit => "design-split",
            GenKind::PipelineBubble => "pipeline-bubble",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// A model shape the generator picks from (published sizes; embeddings are not part of the
/// engine's block and are left out of every question).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelShape {
    pub name: &'static str,
    pub hidden: usize,
    pub heads: usize,
    pub ffn: usize,
    pub layers: usize,
    /// LLaMA-style block: SwiGLU MLP (three h×ffn matrices), RMSNorm, no biases. Otherwise a
    /// GPT block: two MLP matrices, LayerNorm, biases.
    pub llama: bool,
    /// Key/value heads when fewer than the query heads (Falcon-7B: multi-query attention, one
    /// KV head); `None` for multi-head attention.
    pub kv_heads: Option<usize>,
}

/// GPT-2 (Radford et al. 2019), LLaMA-7B (Touvron et al. 2023: SwiGLU, RMSNorm, no biases),
/// Falcon-7B (71 query heads, multi-query attention: one KV head; Almazrouei et al. 2023),
/// GPT-3 175B (Brown et al. 2020), and one made-up shape whose FFN width
/// breaks some TP sizes.
pub const MODELS: [ModelShape; 6] = [
    ModelShape {
        name: "GPT-2 small",
        hidden: 768,
        heads: 12,
        ffn: 3072,
        layers: 12,
        llama: false,
        kv_heads: None,
    },
    ModelShape {
        name: "GPT-2 medium",
        hidden: 1024,
        heads: 16,
        ffn: 4096,
        layers: 24,
        llama: false,
        kv_heads: None,
    },
    ModelShape {
        name: "GPT-2 XL",
        hidden: 1600,
        heads: 25,
        ffn: 6400,
        layers: 48,
        llama: false,
        kv_heads: None,
    },
    ModelShape {
        name: "LLaMA-7B",
        hidden: 4096,
        heads: 32,
        ffn: 11008,
        layers: 32,
        llama: true,
        kv_heads: None,
    },
    ModelShape {
        name: "Falcon-7B",
        hidden: 4544,
        heads: 71,
        ffn: 18176,
        layers: 32,
        llama: false,
        kv_heads: Some(1),
    },
    ModelShape {
        name: "GPT-3 175B",
        hidden: 12288,
        heads: 96,
        ffn: 49152,
        layers: 96,
        llama: false,
        kv_heads: None,
    },
];

/// A made-up layer where heads and FFN width disagree on some TP sizes.
pub const ODD_MODEL: ModelShape = ModelShape {
    name: "a custom model",
    hidden: 1536,
    heads: 24,
    ffn: 5000,
    layers: 10,
    llama: false,
    kv_heads: None,
};

impl ModelShape {
    /// The engine config of this model at `tp` (one micro-batch of 1×1024 tokens). The
    /// divisibility rules it checks (heads, FFN width) are the same for GPT and LLaMA blocks.
    pub fn config(&self, tp: usize, dtype: DType) -> Config {
        Config {
            hidden: self.hidden,
            heads: self.heads,
            ffn: self.ffn,
            seq: 1024,
            batch: 1,
            layers: self.layers,
            kv_heads: self.kv_heads,
            dtype,
            tp,
            ..Config::default()
        }
    }

    /// The engine's model description (what its memory model counts): a GPT block or a
    /// LLaMA block with multi-head attention. Vocabulary and context are irrelevant to the
    /// block weights asked about.
    pub fn spec(&self) -> ModelSpec {
        if self.llama {
            ModelSpec::llama(
                self.name,
                self.layers,
                self.hidden,
                self.heads,
                self.heads,
                self.ffn,
                32000,
                2048,
            )
        } else {
            ModelSpec {
                ffn: self.ffn,
                kv_heads: self.kv_heads.unwrap_or(self.heads),
                ..ModelSpec::gpt(self.name, self.layers, self.hidden, self.heads, 50257, 1024)
            }
        }
    }

    fn describe(&self) -> Localized {
        let heads = match self.kv_heads {
            Some(1) => msg("gen-heads-mqa", &[("heads", self.heads.into())]),
            Some(kv) => msg(
                "gen-heads-gqa",
                &[("heads", self.heads.into()), ("kv", kv.into())],
            ),
            None => msg("gen-heads-mha", &[("heads", self.heads.into())]),
        };
        msg(
            if self.llama {
                "gen-model-llama"
            } else {
                "gen-model-gpt"
            },
            &[
                ("name", self.name.into()),
                ("hidden", self.hidden.into()),
                ("heads", heads.into()),
                ("ffn", self.ffn.into()),
                ("layers", self.layers.into()),
            ],
        )
    }
}

/// The id of a generated question.
pub fn id(kind: GenKind, seed: u64) -> String {
    format!("gen:{}:{seed}", kind.name())
}

/// The question a `gen:<kind>:<seed>` id names, or `None` if the id is not one.
pub fn from_id(id: &str) -> Option<Question> {
    let mut parts = id.splitn(3, ':');
    if parts.next()? != "gen" {
        return None;
    }
    let kind = GenKind::from_name(parts.next()?)?;
    let seed = parts.next()?.parse().ok()?;
    Some(generate(kind, seed))
}

/// One question of `kind`, reproducible from `seed`.
pub fn generate(kind: GenKind, seed: u64) -> Question {
    // Mix the kind into the stream so kinds with the same seed do not share numbers.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((kind as u64 + 1) << 56));
    match kind {
        GenKind::RingBytes => ring_bytes(&mut rng, seed),
        GenKind::TpValidity => tp_validity(&mut rng, seed),
        GenKind::WeightMemory => weight_memory(&mut rng, seed),
        GenKind::AllReduceCount => all_reduce_count(&mut rng, seed),
        GenKind::GqaValidity => gqa_validity(&mut rng, seed),
        GenKind::SpCollectives => sp_collectives(&mut rng, seed),
        GenKind::ValidTpSizes => valid_tp_sizes(&mut rng, seed),
        GenKind::KvCache => kv_cache(&mut rng, seed),
        GenKind::DesignSplit => design_split(&mut rng, seed),
        GenKind::PipelineBubble => pipeline_bubble(&mut rng, seed),
    }
}

/// A plan's splits of `weights`, in words.
fn plan_words(plan: &ShardingPlan, weights: &[Weight]) -> Localized {
    let weight = |w: Weight| match w {
        Weight::Qkv => "gen-weight-qkv",
        Weight::Out => "gen-weight-out",
        Weight::Fc1 => "gen-weight-fc1",
        Weight::Fc2 => "gen-weight-fc2",
    };
    let split = |s: Split| match s {
        Split::Replicate => "gen-split-replicate",
        Split::Columns => "gen-split-columns",
        Split::Rows => "gen-split-rows",
    };
    let parts: Vec<Localized> = weights
        .iter()
        .map(|&w| {
            msg(
                "gen-weight-split",
                &[
                    ("weight", Arg::msg(weight(w), &[])),
                    ("split", Arg::msg(split(plan.split(w)), &[])),
                ],
            )
        })
        .collect();
    join(&parts, "; ")
}

/// `parts` joined by `sep` in every language.
fn join(parts: &[Localized], sep: &str) -> Localized {
    let each =
        |f: fn(&Localized) -> &String| parts.iter().map(f).cloned().collect::<Vec<_>>().join(sep);
    Localized::new(each(|l| &l.en), each(|l| &l.tr))
}

/// The exam's practical part: one of the design lab's challenges that asks only for splits;
/// four plans of its free weights, of which the engine's grade (the plan run forward and
/// backward against the unsharded reference, its collectives counted and priced) solves exactly
/// one. The right one's place is drawn uniformly.
fn design_split(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    // Stages whose goal is met by splits alone (not by hand-placed collectives).
    let stage = pick(rng, &[1usize, 2, 3, 4, 6, 7]);
    let c = match challenge::stage(stage) {
        Ok(c) => c,
        Err(e) => unreachable!("stage {stage} is listed: {e}"),
    };

    // Every assignment of the free weights, in a drawn order.
    let mut candidates: Vec<ShardingPlan> = vec![c.start.clone()];
    for w in &c.free {
        candidates = candidates
            .into_iter()
            .flat_map(|p| {
                Split::ALL.into_iter().map(move |s| {
                    let mut q = p.clone();
                    q.set_split(*w, s);
                    q
                })
            })
            .collect();
    }
    for i in (1..candidates.len()).rev() {
        let j = rng.random_range(0..=i);
        candidates.swap(i, j);
    }
    let mut wrong: Vec<(ShardingPlan, challenge::Missing)> = Vec::new();
    for p in &candidates {
        if wrong.len() == 3 {
            break;
        }
        if *p != c.answer {
            if let Some(m) = grade_challenge(&c, p) {
                wrong.push((p.clone(), m));
            }
        }
    }
    let right_at = rng.random_range(0..=wrong.len());
    let mut plans: Vec<(ShardingPlan, Option<challenge::Missing>)> =
        wrong.into_iter().map(|(p, m)| (p, Some(m))).collect();
    plans.insert(right_at, (c.answer.clone(), None));
    let weights = c.free.clone();
    let choices: Vec<Localized> = plans.iter().map(|(p, _)| plan_words(p, &weights)).collect();
    // Each wrong plan's feedback is the engine's own grade of it.
    let choice_feedback: Vec<Option<Localized>> = plans
        .iter()
        .map(|(_, m)| m.as_ref().map(missing_words))
        .collect();
    // The challenge's goal and reasons are the design view's own messages (one copy).
    let text = |part: &str| Arg::msg(&format!("design-ch-{}-{part}", c.id), &[]);
    let prompt_id = if c.start.sequence_parallel {
        "gen-design-prompt-sp"
    } else {
        "gen-design-prompt"
    };
    Question {
        id: id(GenKind::DesignSplit, seed),
        prompt: msg(
            prompt_id,
            &[
                ("stage", stage.into()),
                ("tp", c.config.tp.into()),
                ("goal", text("goal")),
            ],
        ),
        kind: QuestionKind::Single {
            choices,
            correct: right_at,
        },
        explanation: msg(&format!("design-ch-{}-why", c.id), &[]),
        lesson: Some(
            if matches!(stage, 2 | 7) {
                "attention-heads"
            } else {
                "mlp-split"
            }
            .into(),
        ),
        show_me: Some(ShowMe {
            view: View::Design,
            // The challenge's own layer, so the scenario the button sets is the one the text
            // describes.
            scenario: Overrides {
                preset: Some(tplab_engine::Preset::Tiny),
                hidden: Some(c.config.hidden),
                heads: Some(c.config.heads),
                kv_heads: c.config.kv_heads,
                ffn: Some(c.config.ffn),
                seq: Some(c.config.seq),
                batch: Some(c.config.batch),
                layers: Some(c.config.layers),
                tp: Some(c.config.tp),
                sequence_parallel: Some(c.start.sequence_parallel),
                ..Default::default()
            },
            challenge: Some(stage),
            ..Default::default()
        }),
        choice_feedback,
    }
}

/// The engine's grade of `plan` for `c`: `None` when it solves it, else the first thing it
/// lacks. Remembered: a grade runs the plan forward and backward against the reference, and the
/// exam draws the same few plans again and again.
fn grade_challenge(c: &challenge::Challenge, plan: &ShardingPlan) -> Option<challenge::Missing> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Grades = HashMap<(usize, ShardingPlan), Option<challenge::Missing>>;
    static GRADES: OnceLock<Mutex<Grades>> = OnceLock::new();
    let grades = GRADES.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (c.stage, plan.clone());
    if let Some(known) = grades.lock().ok().as_ref().and_then(|g| g.get(&key)) {
        return known.clone();
    }
    let missing = match c.grade(plan, false) {
        Ok(g) if g.solved => None,
        Ok(g) => Some(
            g.missing
                .into_iter()
                .next()
                .unwrap_or(challenge::Missing::Differs),
        ),
        Err(e) => Some(challenge::Missing::Refused {
            rule: e.to_string(),
        }),
    };
    if let Ok(mut g) = grades.lock() {
        g.insert(key, missing.clone());
    }
    missing
}

/// Why a plan misses a challenge, in both languages (the engine's grade, worded).
fn missing_words(m: &challenge::Missing) -> Localized {
    use challenge::Missing as M;
    match m {
        M::Refused { rule } => msg("gen-miss-refused", &[("rule", rule.as_str().into())]),
        M::Differs => msg("gen-miss-differs", &[]),
        M::ForwardCollectives {
            all_reduce,
            others,
            want_all_reduce,
            want_others,
        } => msg(
            "gen-miss-count",
            &[
                ("ar", (*all_reduce).into()),
                ("others", (*others).into()),
                ("goalar", (*want_all_reduce).into()),
                ("goalothers", (*want_others).into()),
            ],
        ),
        M::TooCheap { have, want } => msg(
            "gen-miss-cheap",
            &[
                ("have", Arg::fixed(*have, 1)),
                ("want", Arg::fixed(*want, 0)),
            ],
        ),
        M::PlaceByHand => msg("gen-miss-by-hand", &[]),
        M::RefusedElsewhere { op, rule } => msg(
            "gen-miss-elsewhere",
            &[("op", (*op).into()), ("rule", rule.as_str().into())],
        ),
        M::NotRefused => msg("gen-miss-not-refused", &[]),
        M::SequenceParallelOff => msg("gen-miss-sp", &[]),
        M::StillAllReduces(n) => msg("gen-miss-still", &[("n", (*n).into())]),
        M::WholeWeight => msg("gen-miss-whole", &[]),
    }
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, xs: &[T]) -> T {
    xs[rng.random_range(0..xs.len())]
}

/// Two sentences (or a sentence and nothing) in every language, a space between.
fn then(a: Localized, b: Option<Localized>) -> Localized {
    match b {
        Some(b) => Localized::new(format!("{} {}", a.en, b.en), format!("{} {}", a.tr, b.tr)),
        None => a,
    }
}

fn valid_list(cfg: &Config) -> String {
    cfg.valid_tp_sizes()
        .into_iter()
        .filter(|&t| t <= 16)
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn ring_bytes(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let hidden = pick(rng, &[768, 1024, 2048, 4096, 8192]);
    let seq = pick(rng, &[128, 256, 512, 1024, 2048]);
    let batch = pick(rng, &[1, 2, 4]);
    let dtype = pick(rng, &[DType::F32, DType::Bf16]);
    let tp = pick(rng, &[2, 4, 8]);
    let tokens = seq * batch;
    let payload_bytes = (tokens * hidden * dtype.size_bytes()) as u64;
    let sent_bytes = all_reduce_bytes_sent_per_rank(Algorithm::Ring, tp, payload_bytes);
    let answer = sent_bytes as f64 / MIB;
    Question {
        id: id(GenKind::RingBytes, seed),
        prompt: msg(
            "gen-ring-prompt",
            &[
                ("tokens", tokens.into()),
                ("hidden", hidden.into()),
                ("dtype", dtype.to_string().into()),
                ("batch", batch.into()),
                ("seq", seq.into()),
                ("tp", tp.into()),
            ],
        ),
        kind: QuestionKind::Numeric {
            answer,
            // The prompt asks for two decimals: rounding moves the answer by at most 0.005 MiB.
            tolerance: 0.01,
            unit: Some(msg("gen-unit-mib", &[])),
        },
        explanation: msg(
            "gen-ring-why",
            &[
                ("tokens", tokens.into()),
                ("hidden", hidden.into()),
                ("size", dtype.size_bytes().into()),
                ("payload", Arg::int(payload_bytes)),
                ("payloadmib", Arg::fixed(payload_bytes as f64 / MIB, 4)),
                ("steps", (tp - 1).into()),
                ("tp", tp.into()),
                ("sent", Arg::int(sent_bytes)),
                ("answer", Arg::fixed(answer, 4)),
            ],
        ),
        lesson: Some("all-reduce".into()),
        show_me: Some(target(View::Collectives, tplab_engine::Preset::Tiny, tp)),
        choice_feedback: Vec::new(),
    }
}

/// The answer choices of a TP-validity question, in authored order (shown shuffled): their
/// message ids.
pub const VALIDITY_CHOICES: [&str; 3] = ["gen-tp-valid", "gen-tp-heads-fail", "gen-tp-ffn-fail"];

/// A Show me target: `view` on `preset` at TP=`tp`, the TP size the question asks about. Where
/// the preset's heads do not divide over `tp` (GPT-2 small's 12 at TP=8), the layer gets `tp`
/// heads instead, so the button opens the TP size of the question.
fn target(view: View, preset: tplab_engine::Preset, tp: usize) -> ShowMe {
    let heads = preset.config().heads;
    ShowMe {
        view,
        scenario: Overrides {
            preset: Some(preset),
            tp: Some(tp),
            heads: (!heads.is_multiple_of(tp)).then_some(tp),
            ..Overrides::default()
        },
        ..ShowMe::default()
    }
}

/// A Show me target: the Walkthrough on GPT-2 small at TP=`tp`, at the backward pass's `event`.
fn gpt2_backward_at(event: &str, tp: usize) -> ShowMe {
    ShowMe {
        pass: Some(Pass::Backward),
        event: Some(event.into()),
        ..target(View::Step, tplab_engine::Preset::Gpt2Small, tp)
    }
}

/// `a % b = r` in both languages (the same notation).
fn modulo(a: usize, b: usize) -> String {
    format!("{a} % {b} = {}", a % b)
}

/// The choice of [`VALIDITY_CHOICES`] the engine's shape rules make right for `model` at `tp`
/// (`None` for a rule the question does not ask about).
fn tp_verdict(model: &ModelShape, tp: usize) -> Option<usize> {
    match model.config(tp, DType::Bf16).validate_shapes() {
        Ok(()) => Some(0),
        Err(ConfigError::HeadsNotDivisible { .. }) => Some(1),
        Err(ConfigError::FfnNotDivisible { .. }) => Some(2),
        Err(_) => None,
    }
}

/// Draws the verdict first, uniformly, then a model that can produce it and a TP size that
/// does: otherwise the verdicts come out as the models' divisors fall (about 70% "heads fail"),
/// and always picking the most common one would pass.
fn draw_verdict_then_case<M: Copy>(
    rng: &mut ChaCha8Rng,
    verdicts: usize,
    models: &[M],
    verdict_of: impl Fn(&M, usize) -> Option<usize>,
) -> (M, usize) {
    let want = rng.random_range(0..verdicts);
    let tps_for = |m: &M| -> Vec<usize> {
        (2..=16usize)
            .filter(|&tp| verdict_of(m, tp) == Some(want))
            .collect()
    };
    let able: Vec<M> = models
        .iter()
        .copied()
        .filter(|m| !tps_for(m).is_empty())
        .collect();
    // Every verdict has a model (a test checks it); were one missing, the first model and a
    // TP of 2 still make a well-formed question whose answer the engine decides.
    let Some(&model) = able.get(rng.random_range(0..able.len().max(1))) else {
        return (models[0], 2);
    };
    let tp = pick(rng, &tps_for(&model));
    (model, tp)
}

fn tp_validity(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let candidates: Vec<ModelShape> = MODELS
        .into_iter()
        .chain(std::iter::once(ODD_MODEL))
        .collect();
    let (model, tp) = draw_verdict_then_case(rng, VALIDITY_CHOICES.len(), &candidates, tp_verdict);
    let cfg = &model.config(tp, DType::Bf16);
    // The right answer is the engine's verdict for the drawn case (the draw only chose it).
    let correct = tp_verdict(&model, tp).unwrap_or(0);
    let (h, f) = (model.heads, model.ffn);
    let (hmod, fmod) = (modulo(h, tp), modulo(f, tp));
    let why = match correct {
        0 => msg(
            "gen-tp-why-valid",
            &[
                ("hmod", hmod.as_str().into()),
                ("fmod", fmod.as_str().into()),
                ("each", (h / tp).into()),
                ("columns", (f / tp).into()),
            ],
        ),
        1 => msg(
            "gen-tp-why-heads",
            &[
                ("hmod", hmod.as_str().into()),
                ("heads", h.into()),
                ("tp", tp.into()),
            ],
        ),
        _ => msg(
            "gen-tp-why-ffn",
            &[
                ("hmod", hmod.as_str().into()),
                ("fmod", fmod.as_str().into()),
                ("ffn", f.into()),
                ("tp", tp.into()),
            ],
        ),
    };
    // Why each wrong choice fails, from the same two remainders.
    let fb = |i: usize| -> Option<Localized> {
        if i == correct {
            return None;
        }
        let (id, m) = match i {
            0 if h % tp != 0 => ("gen-tp-fb-fraction", &hmod),
            0 => ("gen-tp-fb-ffn-unequal", &fmod),
            1 => ("gen-tp-fb-heads-divide", &hmod),
            _ if h % tp != 0 => ("gen-tp-fb-heads-already", &hmod),
            _ => ("gen-tp-fb-ffn-divides", &fmod),
        };
        Some(msg(id, &[("mod", m.as_str().into())]))
    };
    let prompt = msg(
        "gen-tp-prompt",
        &[("model", model.describe().into()), ("tp", tp.into())],
    );
    let answer = SplitAnswer { correct, why, cfg };
    split_question(
        GenKind::TpValidity,
        seed,
        prompt,
        &VALIDITY_CHOICES,
        answer,
        fb,
    )
}

/// The answer to a "can it be split at this TP" question: the right choice, why, and the
/// configuration asked about.
struct SplitAnswer<'a> {
    correct: usize,
    why: Localized,
    cfg: &'a Config,
}

/// A "can it be split at this TP" question: the choices (message ids), the answer, and why each
/// wrong choice fails; the explanation ends with the model's valid TP sizes.
fn split_question(
    kind: GenKind,
    seed: u64,
    prompt: Localized,
    choices: &[&str],
    SplitAnswer { correct, why, cfg }: SplitAnswer,
    fb: impl Fn(usize) -> Option<Localized>,
) -> Question {
    Question {
        id: id(kind, seed),
        prompt,
        kind: QuestionKind::Single {
            choices: choices.iter().map(|id| msg(id, &[])).collect(),
            correct,
        },
        explanation: msg(
            "gen-split-why",
            &[("why", why.into()), ("valid", valid_list(cfg).into())],
        ),
        lesson: Some("attention-heads".into()),
        show_me: None,
        choice_feedback: (0..choices.len()).map(fb).collect(),
    }
}

/// A grouped-query model: (name, hidden, query heads, KV heads, FFN width, layers).
pub type GqaModel = (&'static str, usize, usize, usize, usize, usize);

/// Grouped-query-attention models, from their published configs (Hugging Face `config.json`:
/// Llama 3 8B and 70B, Mistral 7B, Qwen2 7B and 1.5B, Phi-3 medium). Their head counts give
/// every verdict of [`GQA_CHOICES`] some TP size in 2..=16. Checked against the configs
/// (hidden_size, num_attention_heads, num_key_value_heads, intermediate_size,
/// num_hidden_layers): `Qwen/Qwen2-1.5B` 1536, 12, 2, 8960, 28;
/// `microsoft/Phi-3-medium-4k-instruct` 5120, 40, 10, 17920, 40; `Qwen/Qwen2-7B-Instruct` 3584,
/// 28, 4, 18944, 28.
pub const GQA_MODELS: [GqaModel; 6] = [
    ("Llama 3 8B", 4096, 32, 8, 14336, 32),
    ("Llama 3 70B", 8192, 64, 8, 28672, 80),
    ("Mistral 7B", 4096, 32, 8, 14336, 32),
    ("Qwen2 7B", 3584, 28, 4, 18944, 28),
    ("Qwen2 1.5B", 1536, 12, 2, 8960, 28),
    ("Phi-3 medium", 5120, 40, 10, 17920, 40),
];

/// The answer choices of a grouped-query validity question, in authored order (shown
/// shuffled): their message ids.
pub const GQA_CHOICES: [&str; 4] = [
    "gen-gqa-own",
    "gen-gqa-share",
    "gen-gqa-heads-fail",
    "gen-gqa-kv-fail",
];

/// One layer of a grouped-query model at `tp` (bf16, 1024 tokens), for the GQA questions.
fn gqa_config(hidden: usize, heads: usize, kv: usize, ffn: usize, tp: usize) -> Config {
    Config {
        hidden,
        heads,
        kv_heads: Some(kv),
        ffn,
        seq: 1024,
        batch: 1,
        dtype: DType::Bf16,
        tp,
        ..Config::default()
    }
}

/// The choice of [`GQA_CHOICES`] the engine's shape rules make right for a grouped-query model
/// at `tp`; `None` when only the FFN rule refuses it (another question's subject).
fn gqa_verdict(m: &GqaModel, tp: usize) -> Option<usize> {
    let &(_, hidden, heads, kv, ffn, _) = m;
    let cfg = gqa_config(hidden, heads, kv, ffn, tp);
    match cfg.validate_shapes() {
        Ok(()) if cfg.kv_replicas() > 1 => Some(1),
        Ok(()) => Some(0),
        Err(ConfigError::HeadsNotDivisible { .. }) => Some(2),
        Err(ConfigError::KvHeadsNotSplittable { .. }) => Some(3),
        Err(_) => None,
    }
}

fn gqa_validity(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let (model, tp) = draw_verdict_then_case(rng, GQA_CHOICES.len(), &GQA_MODELS, gqa_verdict);
    let (name, hidden, heads, kv, ffn, _) = model;
    let cfg = &gqa_config(hidden, heads, kv, ffn, tp);
    let correct = gqa_verdict(&model, tp).unwrap_or(0);
    let (hmod, kvmod, tpmod) = (modulo(heads, tp), modulo(kv, tp), modulo(tp, kv));
    let why = match correct {
        0 => msg(
            "gen-gqa-why-own",
            &[
                ("kvmod", kvmod.as_str().into()),
                ("kvper", (kv / tp).into()),
                ("qper", (heads / tp).into()),
            ],
        ),
        // How the frameworks handle TP > kv_heads, dated (the rules change between releases).
        1 => msg(
            "gen-gqa-why-share",
            &[
                ("tp", tp.into()),
                ("kv", kv.into()),
                ("tpmod", tpmod.as_str().into()),
                ("groups", (tp / kv).into()),
                ("mechanisms", Arg::msg("gen-gqa-mechanisms", &[])),
            ],
        ),
        2 => msg(
            "gen-gqa-why-heads",
            &[
                ("hmod", hmod.as_str().into()),
                ("heads", heads.into()),
                ("tp", tp.into()),
            ],
        ),
        _ => msg(
            "gen-gqa-why-kv",
            &[
                ("kvmod", kvmod.as_str().into()),
                ("tpmod", tpmod.as_str().into()),
                ("kv", kv.into()),
                ("tp", tp.into()),
            ],
        ),
    };
    let heads_ok = heads.is_multiple_of(tp);
    let fb = |i: usize| -> Option<Localized> {
        if i == correct {
            return None;
        }
        let id = match i {
            0 | 1 if !heads_ok => "gen-gqa-fb-heads-already",
            0 => "gen-gqa-fb-not-whole",
            1 if kv.is_multiple_of(tp) => "gen-gqa-fb-no-sharing",
            1 => "gen-gqa-fb-no-groups",
            2 => "gen-gqa-fb-heads-divide",
            _ if !heads_ok => "gen-gqa-fb-heads-fail-here",
            _ => "gen-gqa-fb-one-rule",
        };
        Some(msg(
            id,
            &[
                ("hmod", hmod.as_str().into()),
                ("kvmod", kvmod.as_str().into()),
                ("tpmod", tpmod.as_str().into()),
                ("tp", tp.into()),
            ],
        ))
    };
    let prompt = msg(
        "gen-gqa-prompt",
        &[
            ("name", name.into()),
            ("heads", heads.into()),
            ("kv", kv.into()),
            ("tp", tp.into()),
        ],
    );
    let answer = SplitAnswer { correct, why, cfg };
    split_question(GenKind::GqaValidity, seed, prompt, &GQA_CHOICES, answer, fb)
}

fn weight_memory(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    // Falcon-7B's 71 heads allow only TP=1 (and 71): leave it out of memory questions.
    let candidates: Vec<ModelShape> = MODELS.into_iter().filter(|m| m.heads != 71).collect();
    let model = pick(rng, &candidates);
    let valid: Vec<usize> = model
        .config(1, DType::Bf16)
        .valid_tp_sizes()
        .into_iter()
        .filter(|&t| (2..=8).contains(&t))
        .collect();
    let tp = pick(rng, &valid);
    let spec = model.spec();
    // The engine's memory model: parameters of one block on one TP rank, × layers × 2 bytes.
    let per_layer = layer_params_per_rank(&spec, tp);
    let bytes = per_layer * model.layers as u64 * 2;
    let answer = bytes as f64 / MIB;
    let full_params = spec.params_per_layer();
    let (h, f) = (model.hidden as u64, model.ffn as u64);
    let shape: [(&str, Arg); 5] = [
        ("h", h.into()),
        ("h3", (3 * h).into()),
        ("h4", (4 * h).into()),
        ("f", f.into()),
        ("full", Arg::int(full_params)),
    ];
    let (count, split) = if model.llama {
        (
            msg("gen-mem-count-llama", &shape),
            msg(
                "gen-mem-split-llama",
                &[("ways", dative(tp as u64)), ("norms", (2 * h).into())],
            ),
        )
    } else {
        (
            msg("gen-mem-count-gpt", &shape),
            msg(
                "gen-mem-split-gpt",
                &[("ways", dative(tp as u64)), ("values", Arg::int(6 * h))],
            ),
        )
    };
    Question {
        id: id(GenKind::WeightMemory, seed),
        prompt: msg(
            "gen-mem-prompt",
            &[("model", model.describe().into()), ("tp", tp.into())],
        ),
        kind: QuestionKind::Numeric {
            answer,
            // 1%: the replicated vectors are < 0.1% of the weights, so an answer that splits
            // every weight N ways still passes, while forgetting the split (×N), the dtype (×2)
            // or the third SwiGLU matrix (LLaMA: −22%) does not.
            tolerance: answer * 0.01,
            unit: Some(msg("gen-unit-mib", &[])),
        },
        explanation: msg(
            "gen-mem-why",
            &[
                ("count", count.into()),
                ("layers", model.layers.into()),
                (
                    "fullmib",
                    Arg::fixed((full_params * model.layers as u64 * 2) as f64 / MIB, 1),
                ),
                ("split", split.into()),
                ("bytes", Arg::int(bytes)),
                ("answer", Arg::fixed(answer, 1)),
            ],
        ),
        lesson: Some("real-world".into()),
        show_me: memory_target(&model, tp),
        choice_feedback: Vec::new(),
    }
}

/// The Memory view on `model`'s own layer shape at `tp`, for a GPT block (the engine's block);
/// none for a LLaMA block, whose SwiGLU MLP the view does not draw. The view counts in the
/// scenario's f32, which its label says.
fn memory_target(model: &ModelShape, tp: usize) -> Option<ShowMe> {
    if model.llama {
        return None;
    }
    Some(ShowMe {
        view: View::Memory,
        scenario: Overrides {
            preset: Some(tplab_engine::Preset::Gpt2Small),
            hidden: Some(model.hidden),
            heads: Some(model.heads),
            ffn: Some(model.ffn),
            layers: Some(model.layers),
            tp: Some(tp),
            ..Overrides::default()
        },
        label: Some(msg(
            "gen-mem-show-me",
            &[("name", model.name.into()), ("tp", tp.into())],
        )),
        ..ShowMe::default()
    })
}

/// A small model of `layers` layers at `tp` (hidden 512, 8 heads, FFN 2048, 16 tokens): for the
/// questions that count collectives, which its size does not change.
fn counting_config(layers: usize, tp: usize) -> Config {
    Config {
        layers,
        tp,
        hidden: 512,
        heads: 8,
        ffn: 2048,
        seq: 16,
        batch: 1,
        ..Config::default()
    }
}

/// A count as a numeric answer: only the exact number is right.
fn count_answer(count: usize) -> QuestionKind {
    QuestionKind::Numeric {
        answer: count as f64,
        tolerance: 0.0,
        unit: None,
    }
}

fn all_reduce_count(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let layers = rng.random_range(1..=48usize);
    let tp = pick(rng, &[2, 4, 8]);
    let cfg = counting_config(layers, tp);
    let counts = schedule(&cfg).collective_counts(None);
    let total = counts.forward_all_reduce + counts.backward_all_reduce;
    Question {
        id: id(GenKind::AllReduceCount, seed),
        prompt: msg(
            "gen-ar-prompt",
            &[("layers", layers.into()), ("tp", tp.into())],
        ),
        kind: count_answer(total),
        explanation: msg(
            "gen-ar-why",
            &[
                ("layers", layers.into()),
                ("forward", counts.forward_all_reduce.into()),
                ("backward", counts.backward_all_reduce.into()),
                ("total", total.into()),
            ],
        ),
        lesson: Some("f-and-g".into()),
        show_me: Some(gpt2_backward_at("attn.f.bwd", tp)),
        choice_feedback: Vec::new(),
    }
}

/// Event names of layer 0 of `trace`'s collectives of `kind` in `pass`, in trace order.
fn collective_names(
    trace: &tplab_engine::trace::Trace,
    kind: CollectiveKind,
    pass: Pass,
) -> Vec<String> {
    trace
        .events
        .iter()
        .filter(|e| e.layer == 0 && e.pass == pass && e.collective_kind() == Some(kind))
        .map(|e| e.name().to_string())
        .collect()
}

fn sp_collectives(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let layers = rng.random_range(1..=32usize);
    let tp = pick(rng, &[2, 4, 8]);
    let kind = pick(
        rng,
        &[CollectiveKind::AllGather, CollectiveKind::ReduceScatter],
    );
    let cfg = Config {
        sequence_parallel: true,
        ..counting_config(layers, tp)
    };
    let trace = schedule(&cfg);
    let total = trace
        .events
        .iter()
        .filter(|e| e.collective_kind() == Some(kind))
        .count();
    let fwd = collective_names(&trace, kind, Pass::Forward);
    let bwd = collective_names(&trace, kind, Pass::Backward);
    let (what, note) = match kind {
        CollectiveKind::AllGather => ("gen-sp-what-ag", "gen-sp-note-ag"),
        _ => ("gen-sp-what-rs", "gen-sp-note-rs"),
    };
    let per_layer = fwd.len() + bwd.len();
    let mut show_me = gpt2_backward_at("mlp.f.bwd.gather", tp);
    show_me.scenario.sequence_parallel = Some(true);
    Question {
        id: id(GenKind::SpCollectives, seed),
        prompt: msg(
            "gen-sp-prompt",
            &[
                ("layers", layers.into()),
                ("tp", tp.into()),
                ("what", Arg::msg(what, &[])),
            ],
        ),
        kind: count_answer(total),
        explanation: msg(
            "gen-sp-why",
            &[
                ("nforward", fwd.len().into()),
                ("forward", fwd.join(", ").into()),
                ("nbackward", bwd.len().into()),
                ("backward", bwd.join(", ").into()),
                ("perlayer", per_layer.into()),
                ("layers", layers.into()),
                ("total", total.into()),
                ("note", Arg::msg(note, &[])),
            ],
        ),
        lesson: Some("sequence-parallel".into()),
        show_me: Some(show_me),
        choice_feedback: Vec::new(),
    }
}

fn valid_tp_sizes(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    // Models with at least one valid and one invalid TP size in 2..=16 (not Falcon-7B's 71).
    let candidates: Vec<ModelShape> = MODELS
        .into_iter()
        .chain(std::iter::once(ODD_MODEL))
        .filter(|m| m.heads != 71)
        .collect();
    let model = pick(rng, &candidates);
    let ok = |t: usize| model.config(t, DType::Bf16).validate_shapes().is_ok();
    let (good, bad): (Vec<usize>, Vec<usize>) = (2..=16usize).partition(|&t| ok(t));
    // One valid and one invalid size for sure, then three more of any kind.
    let mut shown = BTreeSet::new();
    shown.insert(pick(rng, &good));
    shown.insert(pick(rng, &bad));
    while shown.len() < 5 {
        shown.insert(rng.random_range(2..=16usize));
    }
    let shown: Vec<usize> = shown.into_iter().collect();
    let correct: BTreeSet<usize> = (0..shown.len()).filter(|&i| ok(shown[i])).collect();
    let (h, f) = (model.heads, model.ffn);
    let reason = |t: usize| -> Localized {
        let id = if ok(t) {
            "gen-vt-works"
        } else if !h.is_multiple_of(t) {
            "gen-vt-heads"
        } else {
            "gen-vt-ffn"
        };
        msg(
            id,
            &[
                ("tp", t.into()),
                ("hmod", modulo(h, t).into()),
                ("fmod", modulo(f, t).into()),
            ],
        )
    };
    let cfg = model.config(1, DType::Bf16);
    Question {
        id: id(GenKind::ValidTpSizes, seed),
        prompt: msg("gen-vt-prompt", &[("model", model.describe().into())]),
        kind: QuestionKind::Multiple {
            choices: shown
                .iter()
                .map(|&t| msg("gen-vt-choice", &[("tp", t.into())]))
                .collect(),
            correct,
        },
        explanation: msg(
            "gen-vt-why",
            &[
                ("heads", h.into()),
                ("ffn", f.into()),
                ("valid", valid_list(&cfg).into()),
            ],
        ),
        lesson: Some("attention-heads".into()),
        show_me: None,
        choice_feedback: shown.iter().map(|&t| Some(reason(t))).collect(),
    }
}

fn kv_cache(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let (name, hidden, heads, kv, ffn, layers) = pick(rng, &GQA_MODELS);
    let cfg_at = |tp: usize| gqa_config(hidden, heads, kv, ffn, tp);
    let valid: Vec<usize> = [1, 2, 4, 8, 16]
        .into_iter()
        .filter(|&t| cfg_at(t).validate_shapes().is_ok())
        .collect();
    let tp = pick(rng, &valid);
    let spec = ModelSpec::llama(name, layers, hidden, heads, kv, ffn, 32000, 4096);
    let bytes = kv_cache_bytes_per_token_per_gpu(&spec, tp, 1, 2);
    let answer = bytes as f64 / 1024.0;
    let hd = spec.head_dim();
    let per_gpu = (kv / tp).max(1);
    let replicated = (tp > kv).then(|| {
        msg(
            "gen-kv-replicated",
            &[
                ("tp", tp.into()),
                ("kv", kv.into()),
                ("kvfrom", ablative(kv as u64)),
            ],
        )
    });
    Question {
        id: id(GenKind::KvCache, seed),
        prompt: msg(
            "gen-kv-prompt",
            &[
                ("name", name.into()),
                ("layers", layers.into()),
                ("kv", kv.into()),
                ("hd", hd.into()),
                ("tp", tp.into()),
            ],
        ),
        kind: QuestionKind::Numeric {
            answer,
            // head_dim is 128 for every model here, so the answer is a whole number of KiB;
            // ±0.5 accepts exactly that integer.
            tolerance: 0.5,
            unit: Some(msg("gen-unit-kib", &[])),
        },
        explanation: then(
            msg(
                "gen-kv-why",
                &[
                    ("layers", layers.into()),
                    ("pergpu", per_gpu.into()),
                    ("hd", hd.into()),
                    ("bytes", Arg::int(bytes)),
                    ("answer", Arg::number(answer)),
                ],
            ),
            replicated,
        ),
        lesson: Some("real-world".into()),
        // The Serve view decodes Llama 3 70B at TP 1, 2 and 4; no view draws the other models'
        // KV caches, and a button that opens another model would contradict the question.
        show_me: (name == "Llama 3 70B" && tp <= 4).then(|| ShowMe {
            view: View::Serve,
            ..ShowMe::default()
        }),
        choice_feedback: Vec::new(),
    }
}

/// The bubble of a schedule drawn at random, in percent: the engine builds the schedule, runs it
/// with unit costs (forward 1, backward 2, or 1 + 1 where ZB-H1 splits it) and measures the idle
/// share; the explanation gives the closed form it equals.
fn pipeline_bubble(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    use tplab_engine::pipeline::{run, PipelineConfig, Schedule};
    let schedule = pick(rng, &Schedule::ALL);
    let stages = pick(rng, &[2, 4, 8]);
    let (microbatches, virtual_stages) = if schedule == Schedule::Interleaved {
        // Megatron-LM's rule: M a multiple of P.
        (stages * pick(rng, &[1, 2, 4]), pick(rng, &[2, 4]))
    } else {
        (pick(rng, &[4, 8, 12, 16, 32]), 1)
    };
    let cfg = PipelineConfig {
        virtual_stages,
        ..PipelineConfig::new(schedule, stages, microbatches)
    };
    // Every draw above is within the engine's limits (P ≤ 8, M ≤ 32, V ≤ 4, M a multiple of P
    // for the interleaved schedule); the test `pipeline_bubble_is_the_engine_s_run` runs them all.
    let (answer, fraction, expression) = match run(&cfg) {
        Ok(r) => (
            100.0 * r.bubble_fraction,
            r.bubble.to_string(),
            r.formula.map(|f| f.expression).unwrap_or_default(),
        ),
        Err(e) => unreachable!("a drawn pipeline is valid: {e}"),
    };
    let name = msg(&format!("gen-bubble-{}", schedule.name()), &[]);
    let prompt_id = if virtual_stages > 1 {
        "gen-bubble-prompt-virtual"
    } else {
        "gen-bubble-prompt"
    };
    Question {
        id: id(GenKind::PipelineBubble, seed),
        prompt: msg(
            prompt_id,
            &[
                ("schedule", name.into()),
                ("stages", stages.into()),
                ("microbatches", microbatches.into()),
                ("virtual", virtual_stages.into()),
            ],
        ),
        kind: QuestionKind::Numeric {
            answer,
            // The prompt asks for one decimal: rounding moves the answer by at most 0.05.
            tolerance: 0.1,
            unit: Some(msg("gen-unit-percent", &[])),
        },
        explanation: msg(
            "gen-bubble-why",
            &[
                ("expression", expression.into()),
                ("fraction", fraction.into()),
                ("answer", Arg::fixed(answer, 1)),
            ],
        ),
        lesson: Some("pipeline-and-experts".into()),
        show_me: Some(ShowMe {
            view: View::Pipeline,
            schedule: Some(schedule.name().into()),
            stages: Some(stages),
            microbatches: Some(microbatches),
            virtual_stages: (virtual_stages > 1).then_some(virtual_stages),
            ..ShowMe::default()
        }),
        choice_feedback: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_lessons::Lang;

    fn numeric(q: &Question) -> (f64, f64) {
        match q.kind {
            QuestionKind::Numeric {
                answer, tolerance, ..
            } => (answer, tolerance),
            _ => panic!("{} is not numeric", q.id),
        }
    }

    /// The TP size a prompt asks about: the number after "TP=".
    fn tp_asked(en: &str) -> usize {
        numbers_in(&en[en.find("TP=").unwrap()..])[0] as usize
    }

    /// The right choice of a single-choice question.
    fn single_correct(q: &Question) -> usize {
        match q.kind {
            QuestionKind::Single { correct, .. } => correct,
            _ => panic!("{} is not single-choice", q.id),
        }
    }

    /// `seen` counts the questions of each verdict: every one must have come up.
    fn assert_every_verdict_occurs(seen: &[usize]) {
        assert!(
            seen.iter().all(|&c| c > 0),
            "every verdict occurs: {seen:?}"
        );
    }

    fn numbers_in(s: &str) -> Vec<u64> {
        s.split(|c: char| !c.is_ascii_digit())
            .filter_map(|t| t.parse().ok())
            .collect()
    }

    #[test]
    fn reproducible_and_addressable_by_id() {
        for kind in GenKind::ALL {
            for seed in 0..10 {
                let q = generate(kind, seed);
                assert_eq!(generate(kind, seed), q);
                assert_eq!(from_id(&q.id), Some(q.clone()));
                assert!(q.prompt.missing().is_empty() && q.explanation.missing().is_empty());
                if let Some(t) = &q.show_me {
                    t.validate().unwrap();
                }
            }
        }
        assert_ne!(
            generate(GenKind::RingBytes, 1),
            generate(GenKind::RingBytes, 2)
        );
        assert_eq!(from_id("gen:nope:1"), None);
        assert_eq!(from_id("faq-what-is-tp"), None);
    }

    #[test]
    fn ring_bytes_match_two_n_minus_one_over_n() {
        for seed in 0..50 {
            let q = generate(GenKind::RingBytes, seed);
            // Read the shape back from the prompt: [tokens, hidden] dtype ... TP=n.
            let en = q.prompt.get(Lang::En);
            let nums = numbers_in(en);
            let (tokens, hidden) = (nums[0], nums[1]);
            let bytes_per_elem = if en.contains("f32") { 4 } else { 2 };
            let n = tp_asked(en) as u64;
            let s = tokens * hidden * bytes_per_elem;
            let want_mib = (2 * (n - 1) * s / n) as f64 / MIB; // S is a multiple of n here
            let (answer, tol) = numeric(&q);
            assert!(
                (answer - want_mib).abs() < 1e-12,
                "{en}: {answer} vs {want_mib}"
            );
            assert_eq!(tol, 0.01);
        }
    }

    #[test]
    fn validity_matches_divisibility() {
        let mut seen = [0usize; 3];
        for seed in 0..200 {
            let q = generate(GenKind::TpValidity, seed);
            let en = q.prompt.get(Lang::En).to_string();
            let model = MODELS
                .iter()
                .chain(std::iter::once(&ODD_MODEL))
                .find(|m| en.starts_with(&format!("Can {} (", m.name)))
                .unwrap();
            let tp = tp_asked(&en);
            let want = if model.heads % tp != 0 {
                1
            } else if model.ffn % tp != 0 {
                2
            } else {
                0
            };
            let correct = single_correct(&q);
            assert_eq!(correct, want, "{en}");
            seen[want] += 1;
        }
        assert_every_verdict_occurs(&seen);
    }

    /// The GQA verdict by hand: heads % tp first, then Megatron's kv % tp, then vLLM's tp % kv.
    #[test]
    fn gqa_validity_matches_the_two_rules() {
        let mut seen = [0usize; 4];
        for seed in 0..300 {
            let q = generate(GenKind::GqaValidity, seed);
            let en = q.prompt.get(Lang::En).to_string();
            let &(_, _, heads, kv, ffn, _) =
                GQA_MODELS.iter().find(|m| en.starts_with(m.0)).unwrap();
            let tp = tp_asked(&en);
            let kv_ok = kv.is_multiple_of(tp) || tp.is_multiple_of(kv);
            if heads % tp == 0 && kv_ok {
                assert_eq!(ffn % tp, 0, "{en}");
            }
            let want = if heads % tp != 0 {
                2
            } else if kv.is_multiple_of(tp) {
                0
            } else if tp.is_multiple_of(kv) {
                1
            } else {
                3
            };
            let correct = single_correct(&q);
            assert_eq!(correct, want, "{en}");
            if want == 1 {
                // TP > kv: the dated contrast of the two mechanisms, in both languages.
                for lang in [Lang::En, Lang::Tr] {
                    let x = q.explanation.get(lang);
                    for needle in ["2025", "num_kv_head_replicas", "Megatron-Core", "QKV"] {
                        assert!(x.contains(needle), "{needle} missing: {x}");
                    }
                }
            }
            for i in 0..GQA_CHOICES.len() {
                assert_eq!(
                    q.choice_feedback(i, Lang::Tr).is_none(),
                    i == correct,
                    "{en}"
                );
            }
            seen[want] += 1;
        }
        assert_every_verdict_occurs(&seen);
    }

    #[test]
    fn weight_memory_matches_hand_count() {
        let mut llama_seen = false;
        for seed in 0..60 {
            let q = generate(GenKind::WeightMemory, seed);
            let en = q.prompt.get(Lang::En);
            let m = MODELS.iter().find(|m| en.starts_with(m.name)).unwrap();
            let tp = tp_asked(en) as u64;
            let (h, f, l) = (m.hidden as u64, m.ffn as u64, m.layers as u64);
            let per_rank_elems = if m.llama {
                // LLaMA: QKV and out-proj (4h², no biases), SwiGLU gate/up/down (3·h·f), all
                // split; two RMSNorms (h each) replicated.
                llama_seen = true;
                (4 * h * h + 3 * h * f) / tp + 2 * h
            } else {
                // GPT split: QKV weight+bias, out weight, fc1 weight+bias, fc2 weight.
                // Replicated: out bias, fc2 bias, LN1 and LN2 weight+bias.
                let split = 3 * h * h + 3 * h + h * h + h * f + f + f * h;
                split / tp + h + h + 4 * h
            };
            let want = (per_rank_elems * l * 2) as f64 / MIB;
            let (answer, tol) = numeric(&q);
            assert!((answer - want).abs() < 1e-9, "{en}: {answer} vs {want}");
            assert!((tol - want * 0.01).abs() < 1e-9);
            if !m.llama {
                // The GPT block is the one the executor shards: its shard plan agrees.
                let cfg = m.config(tp as usize, DType::Bf16);
                let plan = tplab_engine::plan::ShardPlan::new(&cfg);
                assert_eq!(
                    plan.weight_bytes_per_rank(&cfg, 0) as f64 / MIB,
                    answer,
                    "{en}"
                );
            }
        }
        assert!(llama_seen, "LLaMA-7B is asked");
        // LLaMA-7B: ~202M parameters per layer (Touvron et al. 2023: 6.7B in 32 layers plus
        // 2·32000·4096 embedding and head parameters).
        let llama = MODELS.iter().find(|m| m.llama).unwrap().spec();
        assert_eq!(llama.params_per_layer(), 202_383_360);
        let total = llama.params();
        assert!((6.7e9..6.8e9).contains(&(total as f64)), "{total}");
    }

    #[test]
    fn sp_collectives_count_gathers_and_scatters() {
        let mut kinds = BTreeSet::new();
        for seed in 0..30 {
            let q = generate(GenKind::SpCollectives, seed);
            let en = q.prompt.get(Lang::En);
            let layers = numbers_in(en)[0];
            // Per layer: forward f (2 all-gathers) and g (2 reduce-scatters); backward g's
            // conjugate (2 all-gathers), the weight-gradient re-gathers (2 all-gathers), f's
            // conjugate (2 reduce-scatters).
            let per_layer = if en.contains("all-gathers") { 6 } else { 4 };
            kinds.insert(per_layer);
            assert_eq!(numeric(&q), ((per_layer * layers) as f64, 0.0), "{en}");
            assert!(
                q.explanation.get(Lang::Tr).contains(".bwd"),
                "{}",
                q.explanation.get(Lang::Tr)
            );
        }
        assert_eq!(kinds.len(), 2, "both collectives are asked");
    }

    #[test]
    fn valid_tp_sizes_are_the_divisors_of_heads_and_ffn() {
        for seed in 0..60 {
            let q = generate(GenKind::ValidTpSizes, seed);
            let en = q.prompt.get(Lang::En).to_string();
            let m = MODELS
                .iter()
                .chain(std::iter::once(&ODD_MODEL))
                .find(|m| en.contains(&format!("split {} (", m.name)))
                .unwrap();
            let QuestionKind::Multiple { choices, correct } = &q.kind else {
                panic!("{en}")
            };
            assert_eq!(choices.len(), 5);
            assert!(
                !correct.is_empty() && correct.len() < 5,
                "{en}: {correct:?}"
            );
            for (i, c) in choices.iter().enumerate() {
                let t = numbers_in(c.get(Lang::En))[0] as usize;
                let want = m.heads % t == 0 && m.ffn % t == 0;
                assert_eq!(correct.contains(&i), want, "{en}: TP={t}");
                assert!(q.choice_feedback(i, Lang::Tr).is_some());
            }
        }
    }

    #[test]
    fn kv_cache_matches_the_70b_worked_example() {
        let mut seen_70b_tp4 = false;
        for seed in 0..80 {
            let q = generate(GenKind::KvCache, seed);
            let en = q.prompt.get(Lang::En);
            let &(name, hidden, heads, kv, _, layers) =
                GQA_MODELS.iter().find(|m| en.starts_with(m.0)).unwrap();
            let tp = tp_asked(en);
            let hd = hidden / heads;
            let want = (2 * layers * (kv / tp).max(1) * hd * 2) as f64 / 1024.0;
            assert_eq!(numeric(&q), (want, 0.5), "{en}");
            if name == "Llama 3 70B" && tp == 4 {
                // 80 layers × 8 KV heads × 128 × 2 × 2 bytes = 320 KiB per token; 80 KiB at TP=4.
                assert_eq!(want, 80.0);
                seen_70b_tp4 = true;
            }
        }
        assert!(
            seen_70b_tp4,
            "the lesson's worked example is among the questions"
        );
    }

    /// Turkish text of generated questions is Turkish: no English engine message inside, and
    /// Turkish numbers are written the Turkish way.
    #[test]
    fn turkish_text_is_turkish() {
        for kind in GenKind::ALL {
            for seed in 0..40 {
                let q = generate(kind, seed);
                let tr = format!("{} {}", q.prompt.get(Lang::Tr), q.explanation.get(Lang::Tr));
                for english in [
                    "The engine says",
                    "cannot be",
                    "valid TP sizes:",
                    "tümünü azaltma",
                    "ileride",
                    "geride",
                    "transformatör",
                ] {
                    assert!(!tr.contains(english), "{}: {english:?} in {tr}", q.id);
                }
                // A grouped number like 1,048,576 is English notation.
                if let QuestionKind::Numeric { answer, .. } = q.kind {
                    if answer >= 10_000.0 && answer.fract() == 0.0 {
                        let en = tplab_lessons::i18n::number(Lang::En, answer);
                        assert!(!tr.contains(&en), "{}: English {en} in {tr}", q.id);
                    }
                }
            }
        }
    }

    /// No generated kind can be passed by always giving the same answer. Single choice: the
    /// verdict is drawn first, so over N seeded draws each right choice comes up 1/k of the time,
    /// give or take sampling noise σ = √(p(1−p)/N); 5σ bounds it (a fair draw lands outside with
    /// probability below 10⁻⁶, and the seeds are fixed, so the test does not flake). With
    /// N = 1200 and three choices 5σ is 0.068: the old generator's "heads fail" in about 70% of
    /// tp-validity questions is 27σ out. Multiple choice: the
    /// simple rules a guesser might use (select all, select the powers of two, select the even
    /// sizes) are right on at most half the questions. Numeric: the answers vary.
    /// The bubble question's answer is the engine's run of the schedule it names (not its
    /// formula typed here), and the closed form agrees with the measurement; the Show me opens
    /// that schedule, and every schedule comes up.
    #[test]
    fn pipeline_bubble_is_the_engine_s_run() {
        use tplab_engine::pipeline::{formula, run, PipelineConfig, Schedule};
        let mut seen = BTreeSet::new();
        for seed in 0..300 {
            let q = generate(GenKind::PipelineBubble, seed);
            let t = q.show_me.clone().expect("a Pipeline Show me");
            assert_eq!(t.view, View::Pipeline);
            assert_eq!(t.validate(), Ok(()), "{}", q.id);
            let schedule: Schedule = t.schedule.as_deref().unwrap().parse().unwrap();
            let cfg = PipelineConfig {
                virtual_stages: t.virtual_stages.unwrap_or(1),
                ..PipelineConfig::new(schedule, t.stages.unwrap(), t.microbatches.unwrap())
            };
            let r = run(&cfg).unwrap();
            let (answer, _) = numeric(&q);
            assert_eq!(answer, 100.0 * r.bubble_fraction, "{}", q.id);
            assert_eq!(formula(&cfg).unwrap().fraction, r.bubble, "{}", q.id);
            let en = q.prompt.get(Lang::En);
            assert!(
                en.contains(&format!("{} stages", cfg.stages))
                    && en.contains(&format!("{} micro-batches", cfg.microbatches)),
                "{en}"
            );
            seen.insert(schedule.name());
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        // 1F1B at P = 4, M = 8: (P−1)/(M+P−1) = 3/11.
        let r = run(&PipelineConfig::new(Schedule::OneFOneB, 4, 8)).unwrap();
        assert_eq!(r.bubble.to_string(), "3/11");
    }

    #[test]
    fn right_answers_are_spread_for_every_generated_kind() {
        const N: u64 = 1200;
        for kind in GenKind::ALL {
            // Numeric kinds only need to vary: fewer draws.
            let n = match generate(kind, 0).kind {
                QuestionKind::Numeric { .. } => 100,
                _ => N,
            };
            let qs: Vec<Question> = (0..n).map(|seed| generate(kind, seed)).collect();
            match &qs[0].kind {
                QuestionKind::Single { choices, .. } => {
                    let k = choices.len();
                    let mut counts = vec![0usize; k];
                    for q in &qs {
                        counts[single_correct(q)] += 1;
                    }
                    let p = 1.0 / k as f64;
                    let sigma = (p * (1.0 - p) / N as f64).sqrt();
                    for (i, &c) in counts.iter().enumerate() {
                        let f = c as f64 / N as f64;
                        assert!(
                            (f - p).abs() <= 5.0 * sigma,
                            "{}: choice {i} right in {f:.3} of {N} questions, want {p:.3} ± {:.3}: {counts:?}",
                            kind.name(),
                            5.0 * sigma
                        );
                    }
                }
                QuestionKind::Multiple { .. } => {
                    type Rule = (&'static str, fn(usize) -> bool);
                    let rules: [Rule; 3] = [
                        ("all", |_| true),
                        ("powers of two", |t: usize| t.is_power_of_two()),
                        ("even", |t: usize| t.is_multiple_of(2)),
                    ];
                    for (rule, pick) in rules {
                        let right = qs
                            .iter()
                            .filter(|q| {
                                let QuestionKind::Multiple { choices, correct } = &q.kind else {
                                    return false;
                                };
                                let chosen: BTreeSet<usize> = (0..choices.len())
                                    .filter(|&i| {
                                        pick(numbers_in(choices[i].get(Lang::En))[0] as usize)
                                    })
                                    .collect();
                                &chosen == correct
                            })
                            .count();
                        assert!(
                            right * 2 <= N as usize,
                            "{}: selecting {rule} is right in {right} of {N}",
                            kind.name()
                        );
                    }
                }
                QuestionKind::Numeric { .. } => {
                    let answers: BTreeSet<u64> =
                        qs.iter().map(|q| numeric(q).0.to_bits()).collect();
                    assert!(
                        answers.len() >= 10,
                        "{}: {} answers",
                        kind.name(),
                        answers.len()
                    );
                }
                QuestionKind::Ordering { .. } => panic!("{}: no generated ordering", kind.name()),
            }
        }
    }

    /// The uniform verdict needs a case for each: every verdict has a model and a TP size.
    #[test]
    fn every_verdict_has_a_case() {
        let models: Vec<ModelShape> = MODELS
            .into_iter()
            .chain(std::iter::once(ODD_MODEL))
            .collect();
        for v in 0..VALIDITY_CHOICES.len() {
            assert!(
                models
                    .iter()
                    .any(|m| (2..=16).any(|tp| tp_verdict(m, tp) == Some(v))),
                "tp-validity verdict {v}"
            );
        }
        for v in 0..GQA_CHOICES.len() {
            assert!(
                GQA_MODELS
                    .iter()
                    .any(|m| (2..=16).any(|tp| gqa_verdict(m, tp) == Some(v))),
                "gqa-validity verdict {v}"
            );
        }
    }

    #[test]
    fn all_reduce_count_is_four_per_layer() {
        for seed in 0..20 {
            let q = generate(GenKind::AllReduceCount, seed);
            let layers = numbers_in(q.prompt.get(Lang::En))[0];
            assert_eq!(numeric(&q), ((4 * layers) as f64, 0.0));
        }
    }
}
