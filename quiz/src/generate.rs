//! Generated questions: fresh numbers from a seed, answers computed by the engine.
//!
//! An id `gen:<kind>:<seed>` names one question exactly, so a generated question can be saved,
//! re-asked and put in the exam. The right answer always comes from `tplab-engine` (the trace's
//! all-reduce model, the config's validation, the shard plan, the schedule, the memory model),
//! never from a number typed here. Numbers in the Turkish text are written the Turkish way
//! (`1.048.576`, `0,25`), as the grader reads them ([`crate::grade::parse_number`]).

use crate::bank::{Question, QuestionKind};
use crate::grade::{format_fixed, format_number};
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
use tplab_lessons::{Lang, Localized, ShowMe, View};

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
}

impl GenKind {
    /// Every kind, in a fixed order (the exam and practice sets iterate over it).
    pub const ALL: [GenKind; 9] = [
        GenKind::RingBytes,
        GenKind::TpValidity,
        GenKind::WeightMemory,
        GenKind::AllReduceCount,
        GenKind::GqaValidity,
        GenKind::SpCollectives,
        GenKind::ValidTpSizes,
        GenKind::KvCache,
        GenKind::DesignSplit,
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
        let (block_en, block_tr) = if self.llama {
            (
                "; SwiGLU MLP, RMSNorm, no biases",
                "; SwiGLU MLP, RMSNorm, bias yok",
            )
        } else {
            ("", "")
        };
        let (heads_en, heads_tr) = match self.kv_heads {
            Some(1) => (
                format!(
                    "{} query heads sharing one KV head (multi-query attention)",
                    self.heads
                ),
                format!(
                    "tek bir KV kafasını paylaşan {} sorgu kafası (çoklu sorgu dikkati)",
                    self.heads
                ),
            ),
            Some(kv) => (
                format!("{} query heads, {kv} KV heads", self.heads),
                format!("{} sorgu kafası, {kv} KV kafası", self.heads),
            ),
            None => (
                format!("{} heads", self.heads),
                format!("{} kafa", self.heads),
            ),
        };
        Localized::new(
            format!(
                "{} (hidden {}, {heads_en}, FFN {}, {} layers{block_en})",
                self.name, self.hidden, self.ffn, self.layers
            ),
            format!(
                "{} (gizli boyut {}, {heads_tr}, FFN {}, {} katman{block_tr})",
                self.name, self.hidden, self.ffn, self.layers
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
        GenKind::SpCollectives => sp_collectives(&mut rng, seed),
        GenKind::ValidTpSizes => valid_tp_sizes(&mut rng, seed),
        GenKind::KvCache => kv_cache(&mut rng, seed),
        GenKind::DesignSplit => design_split(&mut rng, seed),
    }
}

/// A plan's splits of `weights`, in words.
fn plan_words(plan: &ShardingPlan, weights: &[Weight]) -> Localized {
    let en = |w: Weight| match w {
        Weight::Qkv => "QKV projection",
        Weight::Out => "output projection",
        Weight::Fc1 => "fc1",
        Weight::Fc2 => "fc2",
    };
    let tr = |w: Weight| match w {
        Weight::Qkv => "QKV projeksiyonu",
        Weight::Out => "çıkış projeksiyonu",
        Weight::Fc1 => "fc1",
        Weight::Fc2 => "fc2",
    };
    let split_en = |s: Split| match s {
        Split::Replicate => "whole on every GPU",
        Split::Columns => "by columns",
        Split::Rows => "by rows",
    };
    let split_tr = |s: Split| match s {
        Split::Replicate => "her GPU'da bölünmemiş",
        Split::Columns => "sütunlarına göre",
        Split::Rows => "satırlarına göre",
    };
    let join =
        |f: &dyn Fn(Weight) -> String| weights.iter().map(|w| f(*w)).collect::<Vec<_>>().join("; ");
    loc(
        join(&|w| format!("{} {}", en(w), split_en(plan.split(w)))),
        join(&|w| format!("{} {}", tr(w), split_tr(plan.split(w)))),
    )
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
    let (t_en, t_tr) = (c.config.tp, c.config.tp);
    let sp_en = if c.start.sequence_parallel {
        " Sequence parallelism is on."
    } else {
        ""
    };
    let sp_tr = if c.start.sequence_parallel {
        " Dizi paralelliği açık."
    } else {
        ""
    };
    Question {
        id: id(GenKind::DesignSplit, seed),
        prompt: loc(
            format!(
                "Design lab, challenge {stage} (on {t_en} GPUs): {}{sp_en} Which split does it? tplab runs each plan against the unsharded reference and counts its collectives.",
                c.goal_text
            ),
            format!(
                "Tasarım laboratuvarı, görev {stage} ({t_tr} GPU): {}{sp_tr} Hangi bölme bunu yapar? tplab her planı bölünmemiş referansa karşı çalıştırır ve kolektiflerini sayar.",
                design_goal_tr(stage)
            ),
        ),
        kind: QuestionKind::Single {
            choices,
            correct: right_at,
        },
        explanation: loc(c.why.to_string(), design_why_tr(stage).to_string()),
        lesson: Some(if matches!(stage, 2 | 7) { "attention-heads" } else { "mlp-split" }.into()),
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
    let tr = match m {
        M::Refused { .. } => "kurallar bu programı reddeder: bir işlem bir tensörü kullanamayacağı biçimde okur".to_string(),
        M::Differs => "sayıları referanstan farklıdır".to_string(),
        M::ForwardCollectives {
            all_reduce,
            others,
            want_all_reduce,
            want_others,
        } => format!(
            "ileri geçişinde {all_reduce} all-reduce ve {others} başka kolektif var; hedef {want_all_reduce} all-reduce ve {want_others} başka kolektif"
        ),
        M::TooCheap { have, want } => format!(
            "en iyi bölmenin yalnızca {} katı bayt gönderir; hedef en az {want:.0} katı",
            format_fixed(*have, 1, Lang::Tr)
        ),
        M::PlaceByHand => "kolektifler elle yerleştirilmelidir".to_string(),
        M::RefusedElsewhere { .. } => "program reddedilir ama hedefin istediği yerde değil".to_string(),
        M::NotRefused => "program geçerlidir: hiçbir işlem bir kısmi toplam okumaz".to_string(),
        M::SequenceParallelOff => "dizi paralelliği kapalı".to_string(),
        M::StillAllReduces(n) => format!("ileri geçişinde hâlâ {n} all-reduce var"),
        M::WholeWeight => "bir ağırlık her GPU'da bölünmemiş kalıyor: bu tensör paralelliği değildir".to_string(),
    };
    let mut en = m.to_string();
    if let Some(first) = en.get(..1) {
        en = first.to_uppercase() + &en[1..];
    }
    let mut tr_cap = tr.clone();
    if let Some(c) = tr.chars().next() {
        tr_cap = c.to_uppercase().collect::<String>() + &tr[c.len_utf8()..];
    }
    loc(format!("{en}."), format!("{tr_cap}."))
}

/// A challenge's goal in Turkish (the app's Fluent file words the same).
fn design_goal_tr(stage: usize) -> &'static str {
    match stage {
        1 => "fc1 ve fc2'yi, MLP'nin ileri geçişi tek bir all-reduce gerektirecek biçimde böl.",
        2 => "QKV ve çıkış projeksiyonlarını, dikkatin ileri geçişi tek bir all-reduce gerektirecek biçimde böl.",
        3 => "Dört ağırlığı da, katmanın ileri geçişi tam olarak iki all-reduce gerektirecek biçimde böl.",
        4 => "Referansla hâlâ eşit olan ama her GPU'ya en iyi MLP bölmesinin en az 3 katı bayt gönderten bir MLP bölmesi bul.",
        6 => "Dizi paralelliği açıkken katmanı, ileri geçişinde hiç all-reduce olmayacak biçimde böl.",
        _ => "8 sorgu kafası 2 KV kafasını paylaşıyor; katmanı 4 GPU'ya, ileri geçişte iki all-reduce olacak biçimde böl.",
    }
}

/// Why a challenge's best answer is best, in Turkish.
fn design_why_tr(stage: usize) -> &'static str {
    match stage {
        1 => "fc1 sütunlarına göre bölününce her GPU A'nın bazı sütunlarını tam olarak tutar, GeLU yerel çalışır; fc2 satırlarına göre bölününce tam o sütunları çarpar ve kısmi toplamlar bırakır, bunlar bir kez toplanır.",
        2 => "QKV sütunlarına göre bölününce her GPU kafaların tamamını tutar ve dikkat kafa kafa çalışır; çıkış projeksiyonu satırlarına göre bölününce kısmi toplamlar kalır, bunlar bir kez toplanır.",
        3 => "Bu Megatron-LM'in bölmesidir: her yarı sütun paralel bir katman, yerel bir işlem ve satır paralel bir katmandır, bu yüzden her yarı bir kez toplar (g).",
        4 => "fc1 satırlarına göre bölününce 4h genişliğindeki A'nın kısmi toplamları kalır ve GeLU tam değerlere ihtiyaç duyar: toplama dört kat geniş bir tensörü taşır. Sayılar aynı, baytlar yaklaşık 4,5 kat.",
        6 => "Megatron'un bölmesi ve token'lara göre bölünmüş artık akışla her g bir reduce-scatter, her f bir all-gather olur: iki all-reduce ile aynı bayt.",
        _ => "Her GPU 2 sorgu kafası ve onların okuduğu KV kafasının bir kopyasını tutar, böylece dikkat yerel kalır; geri geçişte kopyaların K ve V gradyanları toplanır.",
    }
}

fn pick<T: Copy>(rng: &mut ChaCha8Rng, xs: &[T]) -> T {
    xs[rng.random_range(0..xs.len())]
}

fn loc(en: String, tr: String) -> Localized {
    Localized::new(en, tr)
}

/// An integer in both languages' notation: `(589,824, 589.824)`.
fn int2(v: u64) -> (String, String) {
    (
        format_number(v as f64, Lang::En),
        format_number(v as f64, Lang::Tr),
    )
}

/// A value with `d` decimals in both languages' notation.
fn fixed2(v: f64, d: usize) -> (String, String) {
    (format_fixed(v, d, Lang::En), format_fixed(v, d, Lang::Tr))
}

/// The last word of `n` read aloud in Turkish, which decides its suffixes' vowels.
fn tr_last_word(n: u64) -> &'static str {
    const UNITS: [&str; 10] = [
        "sıfır", "bir", "iki", "üç", "dört", "beş", "altı", "yedi", "sekiz", "dokuz",
    ];
    const TENS: [&str; 10] = [
        "", "on", "yirmi", "otuz", "kırk", "elli", "altmış", "yetmiş", "seksen", "doksan",
    ];
    if n == 0 {
        UNITS[0]
    } else if !n.is_multiple_of(10) {
        UNITS[(n % 10) as usize]
    } else if !n.is_multiple_of(100) {
        TENS[((n / 10) % 10) as usize]
    } else if !n.is_multiple_of(1000) {
        "yüz"
    } else if !n.is_multiple_of(1_000_000) {
        "bin"
    } else {
        "milyon"
    }
}

/// `(back vowel?, ends in a vowel?, ends in a voiceless consonant?)` of a Turkish word.
fn tr_sounds(word: &str) -> (bool, bool, bool) {
    let back = word
        .chars()
        .rev()
        .find(|c| "aıoueiöü".contains(*c))
        .is_some_and(|c| "aıou".contains(c));
    let last = word.chars().last().unwrap_or('a');
    (back, "aıoueiöü".contains(last), "çfhkpsşt".contains(last))
}

/// `n` with the Turkish dative suffix: `6'ya`, `3'e`, `2'ye`, `10'a`.
fn tr_dative(n: u64) -> String {
    let (back, vowel, _) = tr_sounds(tr_last_word(n));
    let y = if vowel { "y" } else { "" };
    format!("{n}'{y}{}", if back { "a" } else { "e" })
}

/// `n` with the Turkish ablative suffix: `8'den`, `4'ten`, `6'dan`, `3'ten`.
fn tr_ablative(n: u64) -> String {
    let (back, _, hard) = tr_sounds(tr_last_word(n));
    format!(
        "{n}'{}{}n",
        if hard { "t" } else { "d" },
        if back { "a" } else { "e" }
    )
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
    let payload_mib = fixed2(payload_bytes as f64 / MIB, 4);
    let (pay_en, pay_tr) = int2(payload_bytes);
    let (sent_en, sent_tr) = int2(sent_bytes);
    let ans = fixed2(answer, 4);
    let size = dtype.size_bytes();
    Question {
        id: id(GenKind::RingBytes, seed),
        prompt: loc(
            format!(
                "A ring all-reduce sums a [{tokens}, {hidden}] {dtype} activation (batch {batch} × sequence {seq} tokens, hidden {hidden}) over TP={tp} GPUs. How many MiB does each GPU send? (1 MiB = 1,048,576 bytes; two decimals are enough, with a decimal point.)"
            ),
            format!(
                "Bir halka all-reduce, [{tokens}, {hidden}] boyutunda {dtype} bir aktivasyonu (parti {batch} × dizi {seq} token, gizli boyut {hidden}) TP={tp} GPU üzerinde topluyor. Her GPU kaç MiB gönderir? (1 MiB = 1.048.576 bayt; iki ondalık yeterli, ondalık işareti virgül.)"
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
                "The tensor is {tokens} × {hidden} × {size} bytes = {pay_en} bytes ({} MiB). A ring all-reduce sends 2(N−1)/N of it from each GPU: 2·{}/{tp} × {pay_en} = {sent_en} bytes = {} MiB ({} steps of reduce-scatter, then {} of all-gather).",
                payload_mib.0, tp - 1, ans.0, tp - 1, tp - 1
            ),
            format!(
                "Tensör {tokens} × {hidden} × {size} bayt = {pay_tr} bayttır ({} MiB). Halka all-reduce'ta her GPU bunun 2(N−1)/N'ini gönderir: 2·{}/{tp} × {pay_tr} = {sent_tr} bayt = {} MiB ({} reduce-scatter adımı, ardından {} all-gather adımı).",
                payload_mib.1, tp - 1, ans.1, tp - 1, tp - 1
            ),
        ),
        lesson: Some("all-reduce".into()),
        show_me: Some(target(View::Collectives, tplab_engine::Preset::Tiny, tp)),
        choice_feedback: Vec::new(),
    }
}

/// The answer choices of a TP-validity question, in authored order (shown shuffled).
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
        "Invalid only because of the FFN: the heads divide, but FFN % TP ≠ 0",
        "Yalnızca FFN yüzünden geçersiz: kafalar bölünür ama FFN % TP ≠ 0",
    ),
];

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
    let d = model.describe();
    let why = match correct {
        0 => (
            format!(
                "{} and {}: each GPU holds {} heads and {} FFN columns.",
                modulo(h, tp),
                modulo(f, tp),
                h / tp,
                f / tp
            ),
            format!(
                "{} ve {}: her GPU {} kafa ve {} FFN sütunu tutar.",
                modulo(h, tp),
                modulo(f, tp),
                h / tp,
                f / tp
            ),
        ),
        1 => (
            format!(
                "{}: {h} heads cannot be split over {tp} GPUs, and a head cannot be cut (its softmax needs all of its columns).",
                modulo(h, tp)
            ),
            format!(
                "{}: {h} kafa {tp} GPU'ya bölünemez ve bir kafa parçalanamaz (softmax'ı kafanın tüm sütunlarına ihtiyaç duyar).",
                modulo(h, tp)
            ),
        ),
        _ => (
            format!(
                "{} divides, but {}: fc1's {f} columns cannot be shared equally over {tp} GPUs.",
                modulo(h, tp),
                modulo(f, tp)
            ),
            format!(
                "{} bölünür ama {}: fc1'in {f} sütunu {tp} GPU'ya eşit paylaştırılamaz.",
                modulo(h, tp),
                modulo(f, tp)
            ),
        ),
    };
    // Why each wrong choice fails, from the same two remainders.
    let fb = |i: usize| -> Option<Localized> {
        if i == correct {
            return None;
        }
        Some(match i {
            0 if h % tp != 0 => loc(
                format!(
                    "{}: some GPU would get a fraction of a head.",
                    modulo(h, tp)
                ),
                format!("{}: bir GPU'ya kafanın bir kesri düşerdi.", modulo(h, tp)),
            ),
            0 => loc(
                format!(
                    "{}: the FFN columns do not share out equally.",
                    modulo(f, tp)
                ),
                format!("{}: FFN sütunları eşit paylaşılamaz.", modulo(f, tp)),
            ),
            1 => loc(
                format!("{}: the heads divide evenly.", modulo(h, tp)),
                format!("{}: kafalar eşit bölünür.", modulo(h, tp)),
            ),
            _ if h % tp != 0 => loc(
                format!(
                    "{}: the heads already fail, so the FFN is not the only reason.",
                    modulo(h, tp)
                ),
                format!(
                    "{}: kafalar zaten bölünmüyor, yani tek sebep FFN değil.",
                    modulo(h, tp)
                ),
            ),
            _ => loc(
                format!("{}: the FFN width divides evenly.", modulo(f, tp)),
                format!("{}: FFN genişliği eşit bölünür.", modulo(f, tp)),
            ),
        })
    };
    let prompt = loc(
        format!("Can {} be split with tensor parallelism TP={tp}?", d.en),
        format!(
            "{} tensör paralelliği ile TP={tp} olarak bölünebilir mi?",
            d.tr
        ),
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

/// The answer to a "can it be split at this TP" question: the right choice, why (English,
/// Turkish), and the configuration asked about.
struct SplitAnswer<'a> {
    correct: usize,
    why: (String, String),
    cfg: &'a Config,
}

/// A "can it be split at this TP" question: the choices, the answer, and why each wrong choice
/// fails; the explanation ends with the model's valid TP sizes.
fn split_question(
    kind: GenKind,
    seed: u64,
    prompt: Localized,
    choices: &[(&str, &str)],
    SplitAnswer {
        correct,
        why: (why_en, why_tr),
        cfg,
    }: SplitAnswer,
    fb: impl Fn(usize) -> Option<Localized>,
) -> Question {
    let valid = valid_list(cfg);
    Question {
        id: id(kind, seed),
        prompt,
        kind: QuestionKind::Single {
            choices: choices
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
        choice_feedback: (0..choices.len()).map(fb).collect(),
    }
}

/// A grouped-query model: (name, hidden, query heads, KV heads, FFN width, layers).
pub type GqaModel = (&'static str, usize, usize, usize, usize, usize);

/// Grouped-query-attention models, from their published configs (Hugging Face `config.json`:
/// Llama 3 8B and 70B, Mistral 7B, Qwen2 7B and 1.5B, Phi-3 medium). Their head counts give
/// every verdict of [`GQA_CHOICES`] some TP size in 2..=16.
pub const GQA_MODELS: [GqaModel; 6] = [
    ("Llama 3 8B", 4096, 32, 8, 14336, 32),
    ("Llama 3 70B", 8192, 64, 8, 28672, 80),
    ("Mistral 7B", 4096, 32, 8, 14336, 32),
    ("Qwen2 7B", 3584, 28, 4, 18944, 28),
    ("Qwen2 1.5B", 1536, 12, 2, 8960, 28),
    ("Phi-3 medium", 5120, 40, 10, 17920, 40),
];

/// The answer choices of a grouped-query validity question, in authored order (shown
/// shuffled).
pub const GQA_CHOICES: [(&str, &str); 4] = [
    (
        "Valid: each GPU holds whole KV heads of its own (kv_heads % TP == 0)",
        "Geçerli: her GPU kendine ait tam KV kafaları tutar (kv_heads % TP == 0)",
    ),
    (
        "Valid only by sharing each KV head among TP / kv_heads GPUs (TP % kv_heads == 0)",
        "Yalnızca her KV kafası TP / kv_heads GPU arasında paylaşılarak geçerli (TP % kv_heads == 0)",
    ),
    (
        "Invalid: the query heads cannot be divided evenly (heads % TP ≠ 0)",
        "Geçersiz: sorgu kafaları eşit bölünemez (kafa % TP ≠ 0)",
    ),
    (
        "Invalid: the KV heads can be neither split nor evenly shared",
        "Geçersiz: KV kafaları ne bölünebilir ne de eşit paylaşılabilir",
    ),
];

/// How the frameworks handle TP > kv_heads, dated (the rules change between releases).
const GQA_MECHANISMS_EN: &str = "Both frameworks accept it today (2025): vLLM replicates the KV \
    weights on each group of GPUs (num_kv_head_replicas), as tplab does; current Megatron-Core \
    keeps the KV weights split and all-gathers the QKV activations instead. Earlier Megatron-LM \
    releases required kv_heads % TP == 0 and refused it.";
const GQA_MECHANISMS_TR: &str = "İki çerçeve de bugün (2025) bunu kabul eder: vLLM, tplab gibi KV \
    ağırlıklarını her GPU grubunda kopyalar (num_kv_head_replicas); güncel Megatron-Core ise KV \
    ağırlıklarını bölünmüş tutar ve bunun yerine QKV aktivasyonlarını all-gather ile toplar. \
    Daha eski Megatron-LM sürümleri kv_heads % TP == 0 şartını arar ve bunu reddederdi.";

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
    let why = match correct {
        0 => (
            format!(
                "{}: each GPU holds {} KV head(s) and the {} query heads that read them.",
                modulo(kv, tp),
                kv / tp,
                heads / tp
            ),
            format!(
                "{}: her GPU {} KV kafası ve onları okuyan {} sorgu kafasını tutar.",
                modulo(kv, tp),
                kv / tp,
                heads / tp
            ),
        ),
        1 => (
            format!(
                "{tp} > {kv} KV heads but {}: each KV head serves the query heads of {} GPUs. {GQA_MECHANISMS_EN}",
                modulo(tp, kv),
                tp / kv
            ),
            format!(
                "{tp} > {kv} KV kafası ama {}: her KV kafası {} GPU'nun sorgu kafalarına hizmet eder. {GQA_MECHANISMS_TR}",
                modulo(tp, kv),
                tp / kv
            ),
        ),
        2 => (
            format!(
                "{}: the {heads} query heads cannot be split over {tp} GPUs, whatever the KV heads.",
                modulo(heads, tp)
            ),
            format!(
                "{}: KV kafaları ne olursa olsun {heads} sorgu kafası {tp} GPU'ya bölünemez.",
                modulo(heads, tp)
            ),
        ),
        _ => (
            format!(
                "{} and {}: the {kv} KV heads can be neither split over {tp} GPUs nor shared by equal groups of them.",
                modulo(kv, tp),
                modulo(tp, kv)
            ),
            format!(
                "{} ve {}: {kv} KV kafası ne {tp} GPU'ya bölünebilir ne de eşit GPU gruplarınca paylaşılabilir.",
                modulo(kv, tp),
                modulo(tp, kv)
            ),
        ),
    };
    let heads_ok = heads.is_multiple_of(tp);
    let fb = |i: usize| -> Option<Localized> {
        if i == correct {
            return None;
        }
        Some(match i {
            0 | 1 if !heads_ok => loc(
                format!("{}: the query heads already fail.", modulo(heads, tp)),
                format!("{}: sorgu kafaları zaten bölünmüyor.", modulo(heads, tp)),
            ),
            0 => loc(
                format!(
                    "{}: {tp} GPUs cannot each hold whole KV heads.",
                    modulo(kv, tp)
                ),
                format!(
                    "{}: {tp} GPU'nun her biri tam KV kafası tutamaz.",
                    modulo(kv, tp)
                ),
            ),
            1 if kv.is_multiple_of(tp) => loc(
                format!(
                    "{}: no sharing is needed, every GPU has whole KV heads.",
                    modulo(kv, tp)
                ),
                format!(
                    "{}: paylaşmaya gerek yok, her GPU'da tam KV kafaları var.",
                    modulo(kv, tp)
                ),
            ),
            1 => loc(
                format!(
                    "{}: equal groups of GPUs cannot share the KV heads.",
                    modulo(tp, kv)
                ),
                format!(
                    "{}: eşit GPU grupları KV kafalarını paylaşamaz.",
                    modulo(tp, kv)
                ),
            ),
            2 => loc(
                format!("{}: the query heads divide evenly.", modulo(heads, tp)),
                format!("{}: sorgu kafaları eşit bölünür.", modulo(heads, tp)),
            ),
            _ if !heads_ok => loc(
                format!(
                    "{}: it is the query heads that fail here.",
                    modulo(heads, tp)
                ),
                format!(
                    "{}: burada bölünmeyen sorgu kafalarıdır.",
                    modulo(heads, tp)
                ),
            ),
            _ => loc(
                format!("One rule holds: {} or {}.", modulo(kv, tp), modulo(tp, kv)),
                format!(
                    "Kurallardan biri sağlanır: {} ya da {}.",
                    modulo(kv, tp),
                    modulo(tp, kv)
                ),
            ),
        })
    };
    let prompt = loc(
        format!(
            "{name} has {heads} query heads and {kv} KV heads (grouped-query attention). Can \
             its attention be split with TP={tp}?"
        ),
        format!(
            "{name} modelinin {heads} sorgu kafası ve {kv} KV kafası var (gruplanmış sorgu \
             dikkati). Dikkat katmanı TP={tp} ile bölünebilir mi?"
        ),
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
    let full_mib = fixed2((full_params * model.layers as u64 * 2) as f64 / MIB, 1);
    let (h, f) = (model.hidden as u64, model.ffn as u64);
    let (bytes_en, bytes_tr) = int2(bytes);
    let (full_en, full_tr) = int2(full_params);
    let ans = fixed2(answer, 1);
    let d = model.describe();
    let (count_en, count_tr, split_en, split_tr) = if model.llama {
        (
            format!(
                "QKV {h}·{} and out-proj {h}·{h} (no biases), the SwiGLU MLP's gate and up {h}·{f} each and down {f}·{h}, two RMSNorms {h} each = {full_en} parameters",
                3 * h
            ),
            format!(
                "QKV {h}·{} ve çıkış projeksiyonu {h}·{h} (bias yok), SwiGLU MLP'nin gate ve up matrisleri (her biri {h}·{f}) ve down {f}·{h}, iki RMSNorm (her biri {h}) = {full_tr} parametre",
                3 * h
            ),
            format!("All matrices are split {tp} ways; only the two RMSNorms ({} values per layer) are replicated.", 2 * h),
            format!("Tüm matrisler {} bölünür; yalnızca iki RMSNorm (katman başına {} değer) kopyalanır.", tr_dative(tp as u64), 2 * h),
        )
    } else {
        (
            format!(
                "QKV {h}·{} + {}, out-proj {h}·{h} + {h}, fc1 {h}·{f} + {f}, fc2 {f}·{h} + {h}, two LayerNorms {} = {full_en} parameters",
                3 * h,
                3 * h,
                4 * h
            ),
            format!(
                "QKV {h}·{} + {}, çıkış projeksiyonu {h}·{h} + {h}, fc1 {h}·{f} + {f}, fc2 {f}·{h} + {h}, iki LayerNorm {} = {full_tr} parametre",
                3 * h,
                3 * h,
                4 * h
            ),
            format!("QKV, out-proj, fc1, fc2 and the QKV and fc1 biases are split {tp} ways; the LayerNorms and the two row-parallel biases ({} values per layer) are replicated.", int2(6 * h).0),
            format!("QKV, çıkış projeksiyonu, fc1, fc2 ile QKV ve fc1 bias'ları {} bölünür; LayerNorm'lar ve iki satır paralel bias (katman başına {} değer) kopyalanır.", tr_dative(tp as u64), int2(6 * h).1),
        )
    };
    Question {
        id: id(GenKind::WeightMemory, seed),
        prompt: loc(
            format!(
                "{} is split with TP={tp}, weights in bf16 (2 bytes). How many MiB of Transformer-block weights does each GPU hold (embeddings excluded)?",
                d.en
            ),
            format!(
                "{} TP={tp} ile bölünüyor, ağırlıklar bf16 (2 bayt). Her GPU kaç MiB Transformer bloğu ağırlığı tutar (gömme katmanları hariç)?",
                d.tr
            ),
        ),
        kind: QuestionKind::Numeric {
            answer,
            // 1%: the replicated vectors are < 0.1% of the weights, so an answer that splits
            // every weight N ways still passes, while forgetting the split (×N), the dtype (×2)
            // or the third SwiGLU matrix (LLaMA: −22%) does not.
            tolerance: answer * 0.01,
            unit: Some(loc("MiB".into(), "MiB".into())),
        },
        explanation: loc(
            format!(
                "Per layer: {count_en}; all {} layers in bf16: {} MiB. {split_en} Per GPU: {bytes_en} bytes = {} MiB.",
                model.layers, full_mib.0, ans.0
            ),
            format!(
                "Katman başına: {count_tr}; {} katmanın tamamı bf16'da: {} MiB. {split_tr} GPU başına: {bytes_tr} bayt = {} MiB.",
                model.layers, full_mib.1, ans.1
            ),
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
        label: Some(loc(
            format!(
                "{}'s blocks at TP={tp} in the Memory view (it counts f32: twice the bf16 bytes)",
                model.name
            ),
            format!(
                "Bellek görünümünde TP={tp} ile {} blokları (görünüm f32 sayar: bf16 baytlarının iki katı)",
                model.name
            ),
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
        prompt: loc(
            format!(
                "A model of {layers} Megatron-style Transformer layers runs at TP={tp}. How many all-reduces do its layers issue in one forward plus backward pass (no sequence parallelism, no activation recomputation, embeddings excluded)?"
            ),
            format!(
                "{layers} Megatron tarzı Transformer katmanlı bir model TP={tp} ile çalışıyor. Katmanları bir ileri artı geri geçişte kaç all-reduce yapar (dizi paralelliği yok, aktivasyonlar yeniden hesaplanmıyor, gömme katmanları hariç)?"
            ),
        ),
        kind: count_answer(total),
        explanation: loc(
            format!(
                "Per layer: forward 2 (g after the attention out-proj, g after fc2), backward 2 (f before fc1, f before QKV). The engine's schedule for {layers} layers issues {} forward + {} backward = {total}. TP does not change the count, only the bytes. (Full recomputation would re-run the two forward all-reduces, 6 per layer; a vocabulary-parallel embedding and loss add their own.)",
                counts.forward_all_reduce, counts.backward_all_reduce
            ),
            format!(
                "Katman başına: ileri geçişte 2 (dikkat çıkış projeksiyonundan sonra g, fc2'den sonra g), geri geçişte 2 (fc1'den önce f, QKV'den önce f). Motorun {layers} katman için çizelgesi ileri geçişte {} + geri geçişte {} = {total} all-reduce yapar. TP sayıyı değil, yalnızca baytları değiştirir. (Tam yeniden hesaplama iki ileri geçiş all-reduce'unu yeniden çalıştırır, katman başına 6 olur; sözlük paralel gömme ve kayıp kendi all-reduce'larını ekler.)",
                counts.forward_all_reduce, counts.backward_all_reduce
            ),
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
    let (what_en, what_tr) = match kind {
        CollectiveKind::AllGather => ("all-gathers", "all-gather"),
        _ => ("reduce-scatters", "reduce-scatter"),
    };
    let (note_en, note_tr) = match kind {
        CollectiveKind::AllGather => (
            "Forward: f before each column-parallel layer gathers the sequence shards. Backward: g's conjugate gathers the output gradient, and each column-parallel layer gathers its input again for the weight gradient, because only the shard was kept (Megatron overlaps this with the input-gradient product).",
            "İleri geçişte: her sütun paralel katmandan önce f dizi parçalarını bir araya getirir. Geri geçişte: g'nin eşleniği çıkış gradyanını toplar ve her sütun paralel katman ağırlık gradyanı için girişini yeniden toplar, çünkü yalnızca parçası saklanmıştı (Megatron bunu giriş gradyanı çarpımıyla örtüştürür).",
        ),
        _ => (
            "Forward: g after each row-parallel layer sums the partial outputs and leaves each GPU its 1/N of the tokens. Backward: f's conjugate does the same to the input gradient.",
            "İleri geçişte: her satır paralel katmandan sonra g kısmi çıktıları toplar ve her GPU'ya token'ların 1/N'ini bırakır. Geri geçişte: f'nin eşleniği aynısını giriş gradyanına yapar.",
        ),
    };
    let per_layer = fwd.len() + bwd.len();
    let mut show_me = gpt2_backward_at("mlp.f.bwd.gather", tp);
    show_me.scenario.sequence_parallel = Some(true);
    Question {
        id: id(GenKind::SpCollectives, seed),
        prompt: loc(
            format!(
                "A model of {layers} Megatron-style Transformer layers runs at TP={tp} with sequence parallelism. How many {what_en} do its layers issue in one forward plus backward pass?"
            ),
            format!(
                "{layers} Megatron tarzı Transformer katmanlı bir model TP={tp} ile, dizi paralelliği açık olarak çalışıyor. Katmanları bir ileri artı geri geçişte kaç {what_tr} yapar?"
            ),
        ),
        kind: count_answer(total),
        explanation: loc(
            format!(
                "Per layer the engine's trace has {} forward ({}) and {} backward ({}), {per_layer} in all; × {layers} layers = {total}. {note_en}",
                fwd.len(),
                fwd.join(", "),
                bwd.len(),
                bwd.join(", ")
            ),
            format!(
                "Motorun izinde katman başına ileri geçişte {} ({}) ve geri geçişte {} ({}) tane, toplam {per_layer}; × {layers} katman = {total}. {note_tr}",
                fwd.len(),
                fwd.join(", "),
                bwd.len(),
                bwd.join(", ")
            ),
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
        if ok(t) {
            loc(
                format!("TP={t} works: {} and {}.", modulo(h, t), modulo(f, t)),
                format!("TP={t} olur: {} ve {}.", modulo(h, t), modulo(f, t)),
            )
        } else if !h.is_multiple_of(t) {
            loc(
                format!("TP={t} fails: {}, heads cannot be cut.", modulo(h, t)),
                format!("TP={t} olmaz: {}, kafalar parçalanamaz.", modulo(h, t)),
            )
        } else {
            loc(
                format!(
                    "TP={t} fails: {}, the FFN does not share out.",
                    modulo(f, t)
                ),
                format!("TP={t} olmaz: {}, FFN eşit paylaşılamaz.", modulo(f, t)),
            )
        }
    };
    let d = model.describe();
    let cfg = model.config(1, DType::Bf16);
    Question {
        id: id(GenKind::ValidTpSizes, seed),
        prompt: loc(
            format!(
                "Which tensor-parallel sizes can split {}? (Select all that apply.)",
                d.en
            ),
            format!(
                "{} hangi tensör paralel boyutlarıyla bölünebilir? (Uygun olanların hepsini seçin.)",
                d.tr
            ),
        ),
        kind: QuestionKind::Multiple {
            choices: shown
                .iter()
                .map(|t| loc(format!("TP={t}"), format!("TP={t}")))
                .collect(),
            correct,
        },
        explanation: loc(
            format!(
                "A TP size must divide the heads ({h}) and the FFN width ({f}). Valid sizes up to 16: {}.",
                valid_list(&cfg)
            ),
            format!(
                "Bir TP boyutu kafa sayısını ({h}) ve FFN genişliğini ({f}) bölmelidir. 16'ya kadar geçerli boyutlar: {}.",
                valid_list(&cfg)
            ),
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
    let (bytes_en, bytes_tr) = int2(bytes);
    let (ans_en, ans_tr) = (
        format_number(answer, Lang::En),
        format_number(answer, Lang::Tr),
    );
    let (rep_en, rep_tr) = if tp > kv {
        (
            format!(
                " TP={tp} > {kv} KV heads: each GPU keeps a copy of one KV head's cache, so beyond TP={kv} the cache per GPU stops shrinking."
            ),
            format!(
                " TP={tp} > {kv} KV kafası: her GPU bir KV kafasının önbelleğinin kopyasını tutar, bu yüzden TP={} sonra GPU başına önbellek küçülmez.", tr_ablative(kv as u64)
            ),
        )
    } else {
        (String::new(), String::new())
    };
    Question {
        id: id(GenKind::KvCache, seed),
        prompt: loc(
            format!(
                "{name} ({layers} layers, {kv} KV heads of size {hd}) is served in bf16 with TP={tp}. How many KiB of KV cache does each GPU hold per token of context, over all layers? (1 KiB = 1024 bytes)"
            ),
            format!(
                "{name} ({layers} katman, {hd} boyutlu {kv} KV kafası) bf16 ile TP={tp} olarak çıkarımda çalıştırılıyor. Bağlamdaki her token için her GPU, tüm katmanlarda kaç KiB KV önbelleği tutar? (1 KiB = 1024 bayt)"
            ),
        ),
        kind: QuestionKind::Numeric {
            answer,
            // head_dim is 128 for every model here, so the answer is a whole number of KiB;
            // ±0.5 accepts exactly that integer.
            tolerance: 0.5,
            unit: Some(loc("KiB".into(), "KiB".into())),
        },
        explanation: loc(
            format!(
                "K and V, per layer, per KV head on the GPU: 2 × {layers} layers × {per_gpu} KV head(s) × {hd} × 2 bytes = {bytes_en} bytes = {ans_en} KiB.{rep_en}"
            ),
            format!(
                "K ve V, katman başına, GPU'daki KV kafası başına: 2 × {layers} katman × {per_gpu} KV kafası × {hd} × 2 bayt = {bytes_tr} bayt = {ans_tr} KiB.{rep_tr}"
            ),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn turkish_number_suffixes_follow_vowel_harmony() {
        let dat: Vec<String> = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 40, 100, 1000]
            .into_iter()
            .map(tr_dative)
            .collect();
        assert_eq!(
            dat,
            [
                "1'e", "2'ye", "3'e", "4'e", "5'e", "6'ya", "7'ye", "8'e", "9'a", "10'a", "12'ye",
                "16'ya", "20'ye", "40'a", "100'e", "1000'e"
            ]
        );
        let abl: Vec<String> = [1, 2, 3, 4, 5, 6, 8, 9, 10, 16]
            .into_iter()
            .map(tr_ablative)
            .collect();
        assert_eq!(
            abl,
            [
                "1'den", "2'den", "3'ten", "4'ten", "5'ten", "6'dan", "8'den", "9'dan", "10'dan",
                "16'dan"
            ]
        );
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
                        let en = crate::grade::format_number(answer, Lang::En);
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
