//! Generated questions: fresh numbers from a seed, answers computed by the engine.
//!
//! An id `gen:<kind>:<seed>` names one question exactly, so a generated question can be saved,
//! re-asked and put in the exam. The right answer always comes from `tplab-engine` (the trace's
//! all-reduce model, the config's validation, the shard plan, the schedule), never from a number
//! typed here.

use crate::bank::{Question, QuestionKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tplab_engine::collectives::Algorithm;
use tplab_engine::plan::ShardPlan;
use tplab_engine::trace::{all_reduce_bytes_sent_per_rank, schedule};
use tplab_engine::{Config, ConfigError, DType};
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
}

impl GenKind {
    pub const ALL: [GenKind; 5] = [
        GenKind::RingBytes,
        GenKind::TpValidity,
        GenKind::WeightMemory,
        GenKind::AllReduceCount,
        GenKind::GqaValidity,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GenKind::RingBytes => "ring-bytes",
            GenKind::TpValidity => "tp-validity",
            GenKind::WeightMemory => "weight-memory",
            GenKind::AllReduceCount => "all-reduce-count",
            GenKind::GqaValidity => "gqa-validity",
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
}

/// GPT-2 (Radford et al. 2019), LLaMA-7B (Touvron et al. 2023), Falcon-7B (71 heads), GPT-3
/// 175B (Brown et al. 2020), and one made-up shape whose FFN width breaks some TP sizes.
pub const MODELS: [ModelShape; 6] = [
    ModelShape {
        name: "GPT-2 small",
        hidden: 768,
        heads: 12,
        ffn: 3072,
        layers: 12,
    },
    ModelShape {
        name: "GPT-2 medium",
        hidden: 1024,
        heads: 16,
        ffn: 4096,
        layers: 24,
    },
    ModelShape {
        name: "GPT-2 XL",
        hidden: 1600,
        heads: 25,
        ffn: 6400,
        layers: 48,
    },
    ModelShape {
        name: "LLaMA-7B",
        hidden: 4096,
        heads: 32,
        ffn: 11008,
        layers: 32,
    },
    ModelShape {
        name: "Falcon-7B",
        hidden: 4544,
        heads: 71,
        ffn: 18176,
        layers: 32,
    },
    ModelShape {
        name: "GPT-3 175B",
        hidden: 12288,
        heads: 96,
        ffn: 49152,
        layers: 96,
    },
];

/// A made-up layer where heads and FFN width disagree on some TP sizes.
pub const ODD_MODEL: ModelShape = ModelShape {
    name: "a custom model",
    hidden: 1536,
    heads: 24,
    ffn: 5000,
    layers: 10,
};

impl ModelShape {
    /// The engine config of this model at `tp` (one micro-batch of 1×1024 tokens).
    pub fn config(&self, tp: usize, dtype: DType) -> Config {
        Config {
            hidden: self.hidden,
            heads: self.heads,
            ffn: self.ffn,
            seq: 1024,
            batch: 1,
            layers: self.layers,
            dtype,
            tp,
            ..Config::default()
        }
    }

    fn describe(&self) -> Localized {
        Localized::new(
            format!(
                "{} (hidden {}, {} heads, FFN {}, {} layers)",
                self.name, self.hidden, self.heads, self.ffn, self.layers
            ),
            format!(
                "{} (gizli boyut {}, {} kafa, FFN {}, {} katman)",
                self.name, self.hidden, self.heads, self.ffn, self.layers
            ),
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
    }
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, xs: &[T]) -> T {
    xs[rng.random_range(0..xs.len())]
}

fn loc(en: String, tr: String) -> Localized {
    Localized::new(en, tr)
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
    let payload_mib = payload_bytes as f64 / MIB;
    Question {
        id: id(GenKind::RingBytes, seed),
        prompt: loc(
            format!(
                "A ring all-reduce sums a [{tokens}, {hidden}] {dtype} activation (batch {batch} × sequence {seq} tokens, hidden {hidden}) over TP={tp} GPUs. How many MiB does each GPU send? (1 MiB = 1,048,576 bytes; two decimals are enough.)"
            ),
            format!(
                "Bir halka tümünü azaltma, [{tokens}, {hidden}] boyutunda {dtype} bir aktivasyonu (parti {batch} × dizi {seq} token, gizli boyut {hidden}) TP={tp} GPU üzerinde topluyor. Her GPU kaç MiB gönderir? (1 MiB = 1.048.576 bayt; iki ondalık yeterli.)"
            ),
        ),
        kind: QuestionKind::Numeric {
            answer,
            // The prompt asks for two decimals: rounding moves the answer by at most 0.005 MiB.
            tolerance: 0.01,
            unit: Some(loc("MiB".into(), "MiB".into())),
        },
        explanation: loc(
            format!(
                "The tensor is {tokens} × {hidden} × {} bytes = {payload_bytes} bytes ({payload_mib:.4} MiB). A ring all-reduce sends 2(N−1)/N of it from each GPU: 2·{}/{tp} × {payload_bytes} = {sent_bytes} bytes = {answer:.4} MiB ({} steps of reduce-scatter, then {} of all-gather).",
                dtype.size_bytes(), tp - 1, tp - 1, tp - 1
            ),
            format!(
                "Tensör {tokens} × {hidden} × {} bayt = {payload_bytes} bayttır ({payload_mib:.4} MiB). Halka tümünü azaltmada her GPU bunun 2(N−1)/N'ini gönderir: 2·{}/{tp} × {payload_bytes} = {sent_bytes} bayt = {answer:.4} MiB ({} reduce-scatter adımı, ardından {} all-gather adımı).",
                dtype.size_bytes(), tp - 1, tp - 1, tp - 1
            ),
        ),
        lesson: Some("all-reduce".into()),
        show_me: Some(ShowMe {
            view: View::Collectives,
            preset: tplab_engine::Preset::Tiny,
            tp: Some(if tp == 8 { 4 } else { tp }),
            layers: None,
            kv_heads: None,
            pass: None,
            event: None,
            label: None,
        }),
    }
}

/// The answer choices of a TP-validity question, in display order.
pub const VALIDITY_CHOICES: [(&str, &str); 3] = [
    (
        "Valid: every GPU gets whole heads and an equal share of the FFN",
        "Geçerli: her GPU tam kafalar ve FFN'den eşit pay alır",
    ),
    (
        "Invalid: the heads cannot be divided evenly over the GPUs (heads % TP ≠ 0)",
        "Geçersiz: kafalar GPU'lara eşit bölünemez (kafa % TP ≠ 0)",
    ),
    (
        "Invalid: the FFN width cannot be divided evenly (FFN % TP ≠ 0)",
        "Geçersiz: FFN genişliği eşit bölünemez (FFN % TP ≠ 0)",
    ),
];

fn tp_validity(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let model = if rng.random_bool(0.3) {
        ODD_MODEL
    } else {
        pick(rng, &MODELS)
    };
    let tp = rng.random_range(2..=16usize);
    let cfg = model.config(tp, DType::Bf16);
    let verdict = cfg.validate_shapes();
    let correct = match &verdict {
        Ok(()) => 0,
        Err(ConfigError::HeadsNotDivisible { .. }) => 1,
        Err(ConfigError::FfnNotDivisible { .. }) => 2,
        // The shapes in MODELS are valid at TP=1 and tp is in 2..=16, so only the two
        // divisibility rules can fail; anything else would be a bug in this generator.
        Err(_) => 0,
    };
    let valid: Vec<String> = cfg
        .valid_tp_sizes()
        .into_iter()
        .filter(|&t| t <= 16)
        .map(|t| t.to_string())
        .collect();
    let valid = valid.join(", ");
    let d = model.describe();
    let (why_en, why_tr) = match &verdict {
        Ok(()) => (
            format!(
                "{} % {tp} = 0 and {} % {tp} = 0: each GPU holds {} heads and {} FFN columns.",
                model.heads,
                model.ffn,
                model.heads / tp,
                model.ffn / tp
            ),
            format!(
                "{} % {tp} = 0 ve {} % {tp} = 0: her GPU {} kafa ve {} FFN sütunu tutar.",
                model.heads,
                model.ffn,
                model.heads / tp,
                model.ffn / tp
            ),
        ),
        Err(e) => (
            format!("The engine says: \"{e}\"."),
            format!(
                "Motorun kuralı: {}. (Motorun iletisi: \"{e}\")",
                if correct == 1 {
                    format!(
                        "{} kafa {tp} GPU'ya bölünemez, çünkü {} % {tp} = {}",
                        model.heads,
                        model.heads,
                        model.heads % tp
                    )
                } else {
                    format!(
                        "{} FFN sütunu {tp} GPU'ya bölünemez, çünkü {} % {tp} = {}",
                        model.ffn,
                        model.ffn,
                        model.ffn % tp
                    )
                }
            ),
        ),
    };
    Question {
        id: id(GenKind::TpValidity, seed),
        prompt: loc(
            format!("Can {} be split with tensor parallelism TP={tp}?", d.en),
            format!(
                "{} tensör paralelliği ile TP={tp} olarak bölünebilir mi?",
                d.tr
            ),
        ),
        kind: QuestionKind::Single {
            choices: VALIDITY_CHOICES
                .iter()
                .map(|(en, tr)| Localized::new(*en, *tr))
                .collect(),
            correct,
        },
        explanation: loc(
            format!("{why_en} Valid TP sizes up to 16 for this model: {valid}."),
            format!("{why_tr} Bu model için 16'ya kadar geçerli TP boyutları: {valid}."),
        ),
        lesson: Some("attention-heads".into()),
        show_me: None,
    }
}

/// Grouped-query-attention models: (name, hidden, query heads, KV heads, FFN width), from their
/// published configs (Llama 3 8B and 70B, Mistral 7B, Qwen2 7B).
pub const GQA_MODELS: [(&str, usize, usize, usize, usize); 4] = [
    ("Llama 3 8B", 4096, 32, 8, 14336),
    ("Llama 3 70B", 8192, 64, 8, 28672),
    ("Mistral 7B", 4096, 32, 8, 14336),
    ("Qwen2 7B", 3584, 28, 4, 18944),
];

/// The answer choices of a grouped-query validity question, in display order.
pub const GQA_CHOICES: [(&str, &str); 4] = [
    (
        "Valid: each GPU holds whole KV heads (kv_heads % TP == 0, Megatron-LM's rule)",
        "Geçerli: her GPU tam KV kafaları tutar (kv_heads % TP == 0, Megatron-LM kuralı)",
    ),
    (
        "Valid only by replicating each KV head on TP / kv_heads GPUs (TP % kv_heads == 0, vLLM's rule)",
        "Yalnızca her KV kafası TP / kv_heads GPU'ya kopyalanarak geçerli (TP % kv_heads == 0, vLLM kuralı)",
    ),
    (
        "Invalid: the query heads cannot be divided evenly (heads % TP ≠ 0)",
        "Geçersiz: sorgu kafaları eşit bölünemez (kafa % TP ≠ 0)",
    ),
    (
        "Invalid: the KV heads can be neither split nor evenly replicated",
        "Geçersiz: KV kafaları ne bölünebilir ne de eşit kopyalanabilir",
    ),
];

fn gqa_validity(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let (name, hidden, heads, kv, ffn) = pick(rng, &GQA_MODELS);
    let cfg_at = |tp: usize| Config {
        hidden,
        heads,
        kv_heads: Some(kv),
        ffn,
        seq: 1024,
        batch: 1,
        dtype: DType::Bf16,
        tp,
        ..Config::default()
    };
    // The FFN rule is another question's subject: redraw a TP that only the FFN rule refuses.
    let mut tp = 2;
    for _ in 0..64 {
        tp = rng.random_range(2..=16usize);
        if !matches!(
            cfg_at(tp).validate_shapes(),
            Err(ConfigError::FfnNotDivisible { .. })
        ) {
            break;
        }
    }
    let cfg = cfg_at(tp);
    let verdict = cfg.validate_shapes();
    let correct = match &verdict {
        Ok(()) if cfg.kv_replicas() > 1 => 1,
        Ok(()) => 0,
        Err(ConfigError::HeadsNotDivisible { .. }) => 2,
        _ => 3,
    };
    let valid = cfg
        .valid_tp_sizes()
        .into_iter()
        .filter(|&t| t <= 16)
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let (why_en, why_tr) = match (&verdict, correct) {
        (Ok(()), 0) => (
            format!(
                "{kv} % {tp} = 0: each GPU holds {} KV head(s) and the {} query heads that read them.",
                kv / tp,
                heads / tp
            ),
            format!(
                "{kv} % {tp} = 0: her GPU {} KV kafası ve onları okuyan {} sorgu kafasını tutar.",
                kv / tp,
                heads / tp
            ),
        ),
        (Ok(()), _) => (
            format!(
                "{tp} > {kv} KV heads but {tp} % {kv} = 0: each KV head is copied to {} GPUs, each \
                 copy beside the {} query heads of its GPU. Megatron-LM alone would refuse it.",
                tp / kv,
                heads / tp
            ),
            format!(
                "{tp} > {kv} KV kafası ama {tp} % {kv} = 0: her KV kafası {} GPU'ya kopyalanır, her \
                 kopya kendi GPU'sunun {} sorgu kafasının yanında durur. Yalnız Megatron-LM bunu reddederdi.",
                tp / kv,
                heads / tp
            ),
        ),
        (Err(e), _) => (
            format!("The engine says: \"{e}\"."),
            format!("Motorun iletisi: \"{e}\"."),
        ),
    };
    Question {
        id: id(GenKind::GqaValidity, seed),
        prompt: loc(
            format!(
                "{name} has {heads} query heads and {kv} KV heads (grouped-query attention). Can \
                 its attention be split with TP={tp}?"
            ),
            format!(
                "{name} modelinin {heads} sorgu kafası ve {kv} KV kafası var (gruplanmış sorgu \
                 dikkati). Dikkat katmanı TP={tp} ile bölünebilir mi?"
            ),
        ),
        kind: QuestionKind::Single {
            choices: GQA_CHOICES
                .iter()
                .map(|(en, tr)| Localized::new(*en, *tr))
                .collect(),
            correct,
        },
        explanation: loc(
            format!("{why_en} Valid TP sizes up to 16 for this model: {valid}."),
            format!("{why_tr} Bu model için 16'ya kadar geçerli TP boyutları: {valid}."),
        ),
        lesson: Some("attention-heads".into()),
        show_me: None,
    }
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
    let cfg = model.config(tp, DType::Bf16);
    let plan = ShardPlan::new(&cfg);
    let bytes = plan.weight_bytes_per_rank(&cfg, 0);
    let answer = bytes as f64 / MIB;
    let full_bytes = cfg.params_per_layer() * cfg.layers as u64 * 2;
    let full_mib = full_bytes as f64 / MIB;
    let (h, f) = (model.hidden as u64, model.ffn as u64);
    let replicated = 6 * h; // 2 LayerNorms (weight + bias) and 2 row-parallel biases
    let d = model.describe();
    Question {
        id: id(GenKind::WeightMemory, seed),
        prompt: loc(
            format!(
                "{} is split with TP={tp}, weights in bf16 (2 bytes). How many MiB of transformer-block weights does each GPU hold (embeddings excluded)?",
                d.en
            ),
            format!(
                "{} TP={tp} ile bölünüyor, ağırlıklar bf16 (2 bayt). Her GPU kaç MiB transformatör bloğu ağırlığı tutar (gömme katmanları hariç)?",
                d.tr
            ),
        ),
        kind: QuestionKind::Numeric {
            answer,
            // 1%: the replicated vectors are < 0.1% of the weights, so an answer that splits
            // every weight N ways still passes, while forgetting the split (×N) or the dtype (×2)
            // does not.
            tolerance: answer * 0.01,
            unit: Some(loc("MiB".into(), "MiB".into())),
        },
        explanation: loc(
            format!(
                "Per layer: QKV {h}·{} + {}, out-proj {h}·{h} + {h}, fc1 {h}·{f} + {f}, fc2 {f}·{h} + {h}, two LayerNorms {} = {} parameters; all {} layers in bf16: {full_mib:.1} MiB. QKV, out-proj, fc1, fc2 and fc1's bias are split {tp} ways; the LayerNorms and the two row-parallel biases ({replicated} values per layer) are replicated. Per GPU: {bytes} bytes = {answer:.1} MiB.",
                3 * h, 3 * h, 4 * h, cfg.params_per_layer(), model.layers
            ),
            format!(
                "Katman başına: QKV {h}·{} + {}, çıkış projeksiyonu {h}·{h} + {h}, fc1 {h}·{f} + {f}, fc2 {f}·{h} + {h}, iki LayerNorm {} = {} parametre; {} katmanın tamamı bf16'da: {full_mib:.1} MiB. QKV, çıkış projeksiyonu, fc1, fc2 ve fc1'in biası {tp}'e bölünür; LayerNorm'lar ve iki satır paralel bias (katman başına {replicated} değer) kopyalanır. GPU başına: {bytes} bayt = {answer:.1} MiB.",
                3 * h, 3 * h, 4 * h, cfg.params_per_layer(), model.layers
            ),
        ),
        lesson: Some("real-world".into()),
        show_me: Some(ShowMe {
            view: View::Memory,
            preset: tplab_engine::Preset::Gpt2Small,
            tp: Some(4),
            layers: None,
            kv_heads: None,
            pass: None,
            event: None,
            label: None,
        }),
    }
}

fn all_reduce_count(rng: &mut ChaCha8Rng, seed: u64) -> Question {
    let layers = rng.random_range(1..=48usize);
    let tp = pick(rng, &[2, 4, 8]);
    let cfg = Config {
        layers,
        tp,
        hidden: 512,
        heads: 8,
        ffn: 2048,
        seq: 16,
        batch: 1,
        ..Config::default()
    };
    let counts = schedule(&cfg).collective_counts(None);
    let total = counts.forward_all_reduce + counts.backward_all_reduce;
    Question {
        id: id(GenKind::AllReduceCount, seed),
        prompt: loc(
            format!(
                "A model of {layers} Megatron-style transformer layers runs at TP={tp}. How many all-reduces does one forward plus backward pass issue (no sequence parallelism)?"
            ),
            format!(
                "{layers} Megatron tarzı transformatör katmanlı bir model TP={tp} ile çalışıyor. Bir ileri artı geri geçiş kaç tümünü azaltma yapar (dizi paralelliği yok)?"
            ),
        ),
        kind: QuestionKind::Numeric {
            answer: total as f64,
            // A count: only the exact number is right.
            tolerance: 0.0,
            unit: None,
        },
        explanation: loc(
            format!(
                "Per layer: forward 2 (g after the attention out-proj, g after fc2), backward 2 (f before fc1, f before QKV). The engine's schedule for {layers} layers issues {} forward + {} backward = {total}. TP does not change the count, only the bytes.",
                counts.forward_all_reduce, counts.backward_all_reduce
            ),
            format!(
                "Katman başına: ileride 2 (dikkat çıkış projeksiyonundan sonra g, fc2'den sonra g), geride 2 (fc1'den önce f, QKV'den önce f). Motorun {layers} katman için çizelgesi ileride {} + geride {} = {total} tümünü azaltma yapar. TP sayıyı değil, yalnızca baytları değiştirir.",
                counts.forward_all_reduce, counts.backward_all_reduce
            ),
        ),
        lesson: Some("f-and-g".into()),
        show_me: Some(ShowMe {
            view: View::Step,
            preset: tplab_engine::Preset::Gpt2Small,
            tp: Some(4),
            layers: None,
            kv_heads: None,
            pass: Some(tplab_engine::trace::Pass::Backward),
            event: Some("attn.f.bwd".into()),
            label: None,
        }),
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
            let n = numbers_in(&en[en.find("TP=").unwrap()..])[0];
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
            let tp = numbers_in(&en[en.find("TP=").unwrap()..])[0] as usize;
            let want = if model.heads % tp != 0 {
                1
            } else if model.ffn % tp != 0 {
                2
            } else {
                0
            };
            let QuestionKind::Single { correct, .. } = q.kind else {
                panic!()
            };
            assert_eq!(correct, want, "{en}");
            seen[want] += 1;
        }
        assert!(
            seen.iter().all(|&c| c > 0),
            "every verdict occurs: {seen:?}"
        );
    }

    /// The GQA verdict by hand: heads % tp first, then Megatron's kv % tp, then vLLM's tp % kv.
    #[test]
    fn gqa_validity_matches_the_two_rules() {
        let mut seen = [0usize; 4];
        for seed in 0..300 {
            let q = generate(GenKind::GqaValidity, seed);
            let en = q.prompt.get(Lang::En).to_string();
            let &(_, _, heads, kv, ffn) = GQA_MODELS.iter().find(|m| en.starts_with(m.0)).unwrap();
            let tp = numbers_in(&en[en.find("TP=").unwrap()..])[0] as usize;
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
            let QuestionKind::Single { correct, .. } = q.kind else {
                panic!()
            };
            assert_eq!(correct, want, "{en}");
            seen[want] += 1;
        }
        assert!(
            seen.iter().all(|&c| c > 0),
            "every verdict occurs: {seen:?}"
        );
    }

    #[test]
    fn weight_memory_matches_hand_count() {
        for seed in 0..40 {
            let q = generate(GenKind::WeightMemory, seed);
            let en = q.prompt.get(Lang::En);
            let m = MODELS.iter().find(|m| en.starts_with(m.name)).unwrap();
            let tp = numbers_in(&en[en.find("TP=").unwrap()..])[0];
            let (h, f, l) = (m.hidden as u64, m.ffn as u64, m.layers as u64);
            // Split: QKV weight+bias, out weight, fc1 weight+bias, fc2 weight. Replicated:
            // out bias, fc2 bias, LN1 and LN2 weight+bias.
            let split = 3 * h * h + 3 * h + h * h + h * f + f + f * h;
            let per_rank_elems = split / tp + h + h + 4 * h;
            let want = (per_rank_elems * l * 2) as f64 / MIB;
            let (answer, tol) = numeric(&q);
            assert!((answer - want).abs() < 1e-9, "{en}: {answer} vs {want}");
            assert!((tol - want * 0.01).abs() < 1e-9);
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
