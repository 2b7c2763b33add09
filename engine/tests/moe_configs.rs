//! MoE `config.json` files read as their model cards count them (issue 39, item 4): Mixtral,
//! Qwen-MoE (shared experts), Qwen3-MoE (fine-grained experts), DeepSeek-V2/V3 (shared and
//! fine-grained experts, dense first layers, multi-head latent attention). The fixtures are in
//! `engine/tests/fixtures/hf-configs/` (their README names each model's repository).

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use tplab_engine::capacity::memory;
use tplab_engine::capacity::models::{ModelPreset, ModelSpec};

#[path = "common/hf_configs.rs"]
mod hf_configs;
use hf_configs::hf_config as fixture;

/// `got` within half a unit of the last digit the card shows (`unit`), in billions.
fn card(what: &str, got: u64, card_b: f64, unit_b: f64) {
    let b = got as f64 / 1e9;
    assert!(
        (b - card_b).abs() <= unit_b / 2.0,
        "{what}: {b:.3}B, card {card_b}B (±{})",
        unit_b / 2.0
    );
}

/// Total and active parameters against the model cards. DeepSeek's cards count activated
/// parameters without the input embedding (a lookup, not a matmul): V2-Lite 2.66B with it,
/// 2.451B without (card 2.4B, truncated); V3 37.55B with, 36.62B without (card 37B). Mixtral's and Qwen's
/// cards count it (Mixtral 12.88B, card 12.9B; Qwen3-30B-A3B 3.353B, card 3.3B, truncated).
#[test]
fn parameter_counts_match_the_model_cards() {
    for name in [
        "mixtral-8x7b-v0.1.json",
        "qwen1.5-moe-a2.7b-chat.json",
        "qwen3-30b-a3b.json",
        "qwen3-235b-a22b.json",
        "deepseek-v2-lite.json",
        "deepseek-v2.json",
        "deepseek-v3.json",
    ] {
        let m = fixture(name);
        eprintln!(
            "{name:<30} total {:>16}  active {:>15}  active w/o input embedding {:>15}",
            m.params(),
            m.active_params(),
            m.active_params() - m.embedding_params()
        );
    }
    let m = fixture("mixtral-8x7b-v0.1.json");
    assert_eq!(m.params(), ModelPreset::Mixtral8x7b.spec().params());
    card("Mixtral total", m.params(), 46.7, 0.1);
    card("Mixtral active", m.active_params(), 12.9, 0.1);

    let q = fixture("qwen1.5-moe-a2.7b-chat.json");
    assert_eq!((q.experts, q.experts_per_token, q.ffn), (60, 4, 1408));
    assert_eq!((q.shared_ffn, q.dense_layers), (5632, 0));
    card("Qwen1.5-MoE total", q.params(), 14.3, 0.1);
    card("Qwen1.5-MoE active", q.active_params(), 2.7, 0.1);

    let q3 = fixture("qwen3-30b-a3b.json");
    assert_eq!((q3.experts, q3.experts_per_token, q3.ffn), (128, 8, 768));
    assert_eq!((q3.shared_ffn, q3.dense_layers, q3.head_dim()), (0, 0, 128));
    card("Qwen3-30B-A3B total", q3.params(), 30.5, 0.1);
    // 3,353,020,416 by the config: the card's "3.3B activated" truncates it (rounded, 3.4B).
    let active = q3.active_params() as f64 / 1e9;
    assert!(
        (3.3..3.4).contains(&active),
        "Qwen3-30B-A3B active {active}"
    );

    let q235 = fixture("qwen3-235b-a22b.json");
    card("Qwen3-235B-A22B total", q235.params(), 235.0, 1.0);
    card("Qwen3-235B-A22B active", q235.active_params(), 22.0, 1.0);

    let lite = fixture("deepseek-v2-lite.json");
    assert_eq!(lite.mla.map(|m| m.q_lora_rank), Some(0));
    assert_eq!((lite.dense_layers, lite.dense_ffn), (1, 10944));
    assert_eq!(lite.shared_ffn, 2 * 1408);
    card("DeepSeek-V2-Lite total", lite.params(), 15.7, 0.1);
    // 2,451,… without the input embedding: the card's 2.4B truncates it, as Qwen's does.
    let active = (lite.active_params() - lite.embedding_params()) as f64 / 1e9;
    assert!(
        (2.4..2.5).contains(&active),
        "DeepSeek-V2-Lite active {active}"
    );

    let v2 = fixture("deepseek-v2.json");
    card("DeepSeek-V2 total", v2.params(), 236.0, 1.0);
    card(
        "DeepSeek-V2 active",
        v2.active_params() - v2.embedding_params(),
        21.0,
        1.0,
    );

    let v3 = fixture("deepseek-v3.json");
    assert_eq!(
        (v3.experts, v3.experts_per_token, v3.ffn, v3.shared_ffn),
        (256, 8, 2048, 2048)
    );
    assert_eq!(
        (v3.dense_layers, v3.dense_ffn, v3.moe_layers()),
        (3, 18432, 58)
    );
    card("DeepSeek-V3 total", v3.params(), 671.0, 1.0);
    card(
        "DeepSeek-V3 active",
        v3.active_params() - v3.embedding_params(),
        37.0,
        1.0,
    );
    // One MLA block's projections, by hand: q_a 7168·1536, q_b 1536·128·192, kv_a 7168·576,
    // kv_b 512·128·256, o 128·128·7168 (verl's flops counter has the same 187,105,280).
    assert_eq!(v3.attention_weight_params(), 187_105_280);
}

/// MLA's KV cache: the latent and the rope key, 512 + 64 = 576 elements a token and layer
/// (DeepSeek-V2, §2.1.2), not 2 · 128 heads · 192; every TP rank keeps it whole.
#[test]
fn mla_caches_the_latent() {
    let v3 = fixture("deepseek-v3.json");
    assert_eq!(v3.kv_cache_elems_per_token_layer(), 576);
    assert_eq!(v3.kv_cache_bytes_per_token(2), 61 * 576 * 2);
    for tp in [1, 8] {
        assert_eq!(
            memory::kv_cache_bytes_per_token_per_gpu(&v3, tp, 1, 2),
            61 * 576 * 2
        );
    }
    // A GQA model still caches K and V per KV head, split over TP.
    let q3 = fixture("qwen3-30b-a3b.json");
    assert_eq!(q3.kv_cache_elems_per_token_layer(), 2 * 4 * 128);
    assert_eq!(
        memory::kv_cache_bytes_per_token_per_gpu(&q3, 4, 1, 2),
        48 * 2 * 128 * 2
    );
}

/// The parameters the memory model places on the GPUs add up to the model: one GPU at TP 1,
/// PP 1 holds all of it; the expert share shrinks with EP and the rest does not.
#[test]
fn every_parameter_lands_on_a_gpu() {
    for name in [
        "qwen1.5-moe-a2.7b-chat.json",
        "qwen3-30b-a3b.json",
        "deepseek-v2-lite.json",
        "deepseek-v3.json",
    ] {
        let m = fixture(name);
        let one = memory::params_per_gpu(&m, 1, 1) as f64;
        // Per-layer means round down once per layer type: within a few parameters a layer.
        assert!(
            (one - m.params() as f64).abs() <= 8.0 * m.layers as f64,
            "{name}: {one} vs {}",
            m.params()
        );
        let ep = [8, 4, 2]
            .into_iter()
            .find(|e| m.experts.is_multiple_of(*e))
            .unwrap();
        let with_ep = memory::params_per_gpu_ep(&m, 1, 1, ep) as f64;
        let experts_all = m.layers as f64 * memory::expert_params_per_rank(&m, 1, 1) as f64;
        let moved = one - with_ep;
        let want = experts_all * (1.0 - 1.0 / ep as f64);
        assert!(
            (moved - want).abs() <= 8.0 * m.layers as f64 * ep as f64,
            "{name}: EP {ep} moves {moved}, want {want}"
        );
    }
}

/// Qwen-MoE's dense layers: `mlp_only_layers` and `decoder_sparse_step` (layer i is sparse when
/// `(i + 1) % step == 0`, transformers' `Qwen2MoeDecoderLayer`).
#[test]
fn qwen_dense_layers() {
    let base = std::fs::read_to_string(
        [
            env!("CARGO_MANIFEST_DIR"),
            "tests",
            "fixtures",
            "hf-configs",
            "qwen3-30b-a3b.json",
        ]
        .iter()
        .collect::<PathBuf>(),
    )
    .unwrap();
    let only = base.replace(
        "\"mlp_only_layers\": []",
        "\"mlp_only_layers\": [0, 47, 47]",
    );
    let m = ModelSpec::from_hf_config(&only).unwrap();
    assert_eq!((m.dense_layers, m.dense_ffn), (2, 6144));
    let step = base.replace("\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2");
    let m = ModelSpec::from_hf_config(&step).unwrap();
    assert_eq!(m.dense_layers, 24);
    let bad = base.replace("\"mlp_only_layers\": []", "\"mlp_only_layers\": \"all\"");
    assert!(ModelSpec::from_hf_config(&bad).is_err());
}
