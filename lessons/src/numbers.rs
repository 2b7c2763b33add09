//! The numbers the lessons quote, recomputed from the engine: if the engine's model changes,
//! these tests name the lesson and the line to update. (Test-only module.)

use crate::i18n::{grouped, num, percent};
use crate::{Catalog, Lang};
use tplab_engine::block::program::schedule;
use tplab_engine::capacity::cost;
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::memory::Layout;
use tplab_engine::capacity::models::ModelPreset;
use tplab_engine::config::Preset;
use tplab_engine::labs::vocab::VocabConfig;

fn body(slug: &str, lang: Lang) -> String {
    let cat = match Catalog::embedded() {
        Ok(c) => c,
        Err(d) => panic!("shipped lessons have problems:\n{d}"),
    };
    match cat.get(slug) {
        Some(l) => l.body.get(lang).to_string(),
        None => panic!("no lesson '{slug}'"),
    }
}

fn assert_quotes(slug: &str, lang: Lang, want: &str) {
    let text = body(slug, lang);
    assert!(
        text.contains(want),
        "lesson '{slug}' ({lang}) must quote the engine's number: {want:?}; update the lesson"
    );
}

/// The timeline view's modeled times: GPT-2 small at `tp` on H100s (nodes of 8, NDR 400).
fn gpt2_layer_us(tp: usize) -> (f64, f64) {
    let cfg = tplab_engine::config::Config {
        tp,
        ..Preset::Gpt2Small.config()
    };
    let mut trace = schedule(&cfg).expect("Megatron's plan propagates");
    let cluster = match Cluster::new(&Catalogue::default(), "h100", tp, 8, "ib-ndr-400") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    cost::apply_to_trace(&mut trace, &cluster);
    let comm: f64 = trace
        .events
        .iter()
        .filter(|e| e.is_collective())
        .map(|e| e.timing.duration_s)
        .sum();
    (trace.makespan_s() * 1e6, comm * 1e6)
}

/// One GPT-3 175B layer (s = 2048, micro-batch 1, bf16) at `tp` on H100 nodes of 8 joined by
/// InfiniBand NDR 400: (compute ms, TP communication ms, spans nodes).
fn gpt3_layer_ms(tp: usize) -> (f64, f64, bool) {
    let gpus = tp.div_ceil(8) * 8;
    let cluster = match Cluster::new(&Catalogue::default(), "h100", gpus.max(8), 8, "ib-ndr-400") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let layout = Layout::new(tp, 1, 1);
    let t = cost::layer_time(&ModelPreset::Gpt3_175b.spec(), 2048, &layout, &cluster);
    (
        (t.forward_compute_s + t.backward_compute_s) * 1e3,
        t.tp_comm_s * 1e3,
        cluster.group_spans_nodes(1, tp),
    )
}

#[test]
fn lesson_1_quotes_the_timeline_of_tp_1_2_4() {
    for tp in [1, 2, 4] {
        let (step, comm) = gpt2_layer_us(tp);
        for lang in Lang::ALL {
            let row = format!(
                "| {tp} | {} µs | {} µs |",
                num(lang, step, 1),
                num(lang, comm, 1)
            );
            assert_quotes("what-is-tp", lang, &row);
        }
    }
    // Its comparison with a GPT-3 175B layer (lesson 8's table), rounded.
    let (c1, _, _) = gpt3_layer_ms(1);
    let (c8, m8, _) = gpt3_layer_ms(8);
    for lang in Lang::ALL {
        assert_quotes("what-is-tp", lang, &format!("{c1:.0} ms"));
        assert_quotes("what-is-tp", lang, &format!("{} ms", num(lang, c8 + m8, 1)));
    }
    // The lesson's point: TP = 2 beats TP = 1, and TP = 4 loses to TP = 2 at this size.
    assert!(gpt2_layer_us(2).0 < gpt2_layer_us(1).0);
    assert!(gpt2_layer_us(4).0 > gpt2_layer_us(2).0);
}

#[test]
fn lesson_8_table_is_the_cost_model_s() {
    let (one_gpu, _, _) = gpt3_layer_ms(1);
    for tp in [1, 2, 4, 8, 16, 32] {
        let (compute, comm, spans) = gpt3_layer_ms(tp);
        assert_eq!(spans, tp > 8, "TP {tp}");
        let efficiency = 100.0 * one_gpu / (tp as f64 * (compute + comm));
        for lang in Lang::ALL {
            let row = format!(
                "| {} ms | {} ms | {} | {} ms | {} |",
                num(lang, compute, 2),
                num(lang, comm, 2),
                percent(lang, 100.0 * comm / compute, 0),
                num(lang, compute + comm, 2),
                percent(lang, efficiency, 0)
            );
            assert_quotes("inside-a-node", lang, &format!("| {tp} | "));
            assert_quotes("inside-a-node", lang, &row);
        }
    }
    let (c8, m8, _) = gpt3_layer_ms(8);
    let (c16, m16, _) = gpt3_layer_ms(16);
    let (t8, t16) = (c8 + m8, c16 + m16);
    // The lesson's claim, as the corrected model has it: TP = 16 across two nodes runs a layer
    // faster than TP = 8 inside one, but by less than the GPUs it adds, so two TP = 8 groups
    // (DP = 2) on the same 16 GPUs get more layers through per second.
    assert!(t16 < t8, "TP 16 {t16} ms, TP 8 {t8} ms");
    let speedup = t8 / t16;
    let two_groups = 2.0 * t16 / t8;
    assert!(speedup < 1.5 && two_groups > 1.3, "{speedup} {two_groups}");
    for lang in Lang::ALL {
        assert_quotes("inside-a-node", lang, &times(lang, speedup));
        assert_quotes("inside-a-node", lang, &times(lang, two_groups));
    }
    // Across the boundary: the ring's bandwidth holds and the latency grows. The two-node
    // ring's bus bandwidth is the node's NICs together (rail-optimised, one per GPU) or the
    // NVLink hops' share, whichever is smaller; TP 16's extra time is mostly 2(N−1) steps at
    // the network's latency.
    let h100 =
        |gpus: usize| match Cluster::new(&Catalogue::default(), "h100", gpus, 8, "ib-ndr-400") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        };
    let eff = cost::LINK_EFFICIENCY;
    let gbs =
        |l: &tplab_engine::capacity::hardware::LinkSpec| l.bandwidth_bytes_per_s() * eff / 1e9;
    let two_nodes = h100(16);
    let ring16 = gbs(&two_nodes.group_ring_link(1, 16));
    let inside = gbs(&two_nodes.group_ring_link(1, 8));
    let nics =
        8.0 * two_nodes.inter_node.bandwidth_gbs * tplab_engine::capacity::hardware::NET_EFFICIENCY;
    let nvlink_share = two_nodes.intra_node.bandwidth_gbs * eff * 8.0 / 7.0;
    assert!(
        (ring16 - nics.min(nvlink_share)).abs() < 1e-6,
        "{ring16} vs {nics}, {nvlink_share}"
    );
    let four_nics = match h100(16).with_nics(4) {
        Ok(c) => gbs(&c.group_ring_link(1, 16)),
        Err(e) => panic!("{e}"),
    };
    let latency_ms = |tp: usize, link: &tplab_engine::capacity::hardware::LinkSpec| {
        4.0 * 2.0 * (tp - 1) as f64 * link.latency_us / 1e3
    };
    let (lat16, lat8) = (
        latency_ms(16, &two_nodes.inter_node),
        latency_ms(8, &two_nodes.intra_node),
    );
    // The latency is the larger part of what TP 16 adds to TP 8's communication.
    assert!(
        lat16 - lat8 > 0.5 * (m16 - m8),
        "{lat16} - {lat8} of {m16} - {m8}"
    );
    for lang in Lang::ALL {
        for want in [
            format!("= {} GB/s", num(lang, nics, 0)),
            format!("8/7 = {} GB/s", num(lang, nvlink_share, 0)),
            format!("({} GB/s, ", num(lang, inside, 0)),
            format!("{} GB/s", num(lang, four_nics, 0)),
            format!("{} ms", num(lang, lat16, 2)),
            format!("{} ms", num(lang, lat8, 2)),
            format!("{} µs", num(lang, two_nodes.inter_node.latency_us, 0)),
        ] {
            assert_quotes("inside-a-node", lang, &want);
        }
    }
    // Lesson 15's overlap table: the same rows, and overlapped at best = the longer of the two.
    for tp in [8, 16] {
        let (compute, comm, _) = gpt3_layer_ms(tp);
        for lang in Lang::ALL {
            let row = format!(
                "| {} ms | {} ms | {} ms | {} ms |",
                num(lang, compute, 2),
                num(lang, comm, 2),
                num(lang, compute + comm, 2),
                num(lang, compute.max(comm), 2)
            );
            assert_quotes("overlap", lang, &row);
        }
    }
    // Even overlapped perfectly, TP = 16 costs more GPU time per layer than TP = 8 overlapped
    // the same way; at TP = 32 communication outlasts compute.
    let gpu_ms = |tp: usize| {
        let (c, m, _) = gpt3_layer_ms(tp);
        tp as f64 * c.max(m)
    };
    assert!(gpu_ms(16) > gpu_ms(8), "{} vs {}", gpu_ms(16), gpu_ms(8));
    let (c32, m32, _) = gpt3_layer_ms(32);
    assert!(m32 > c32 && m16 < c16);
    for lang in Lang::ALL {
        for want in [
            format!(
                "16 × {} = {} GPU·ms",
                num(lang, c16, 2),
                num(lang, gpu_ms(16), 1)
            ),
            format!(
                "8 × {} = {} GPU·ms",
                num(lang, c8, 2),
                num(lang, gpu_ms(8), 1)
            ),
            format!("({} ms)", num(lang, m32, 2)),
            format!("({} ms)", num(lang, c32, 2)),
        ] {
            assert_quotes("overlap", lang, &want);
        }
    }
}

/// A ratio as the lessons write it: "1.38×" in English, "1,38 kat" in Turkish.
fn times(lang: Lang, ratio: f64) -> String {
    match lang {
        Lang::En => format!("{}×", num(lang, ratio, 2)),
        Lang::Tr => format!("{} kat", num(lang, ratio, 2)),
    }
}

/// Lesson 8 sends the learner to lesson 1's GPT-2-small timeline at TP = 4 and quotes its
/// communication share.
#[test]
fn lesson_8_quotes_gpt2_small_s_communication_share() {
    let (step, comm) = gpt2_layer_us(4);
    for lang in Lang::ALL {
        let share = percent(lang, 100.0 * comm / step, 0);
        assert_quotes("inside-a-node", lang, &share);
    }
}

#[test]
fn lesson_8_quotes_the_planner_at_tp_4_to_32() {
    use tplab_engine::capacity::cost::TrainSetup;
    use tplab_engine::capacity::planner::{self, PlanRequest};
    // The planner target of lesson 8: GPT-3 175B on 64 A100s, the planner view's other inputs.
    let cluster = match Cluster::new(&Catalogue::default(), "a100", 64, 8, "ib-hdr-200") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let req = PlanRequest::new(
        ModelPreset::Gpt3_175b.spec(),
        TrainSetup::new(2048, 512),
        cluster,
    );
    let by_tp = planner::throughput_vs_tp(&req);
    let tokens = |tp: usize| {
        by_tp
            .iter()
            .find(|p| p.tp == tp && p.fits)
            .and_then(|p| p.best.as_ref())
            .map_or(0.0, |b| b.tokens_per_s)
    };
    for tp in [4, 8, 16, 32] {
        let hundreds = (tokens(tp) / 100.0).round() as u64 * 100;
        for lang in Lang::ALL {
            assert_quotes("inside-a-node", lang, &grouped(lang, hundreds));
        }
    }
    // The peak is inside the node (TP 4 and 8 within 1% of each other, the lesson's "peaks at
    // TP = 4 and at TP = 8"), and each step across nodes loses throughput.
    let best = by_tp
        .iter()
        .filter(|p| p.fits)
        .filter_map(|p| p.best.as_ref().map(|b| (p.tp, b.tokens_per_s)))
        .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    assert!(best.0 <= 8, "best TP {}", best.0);
    assert!((tokens(4) - tokens(8)).abs() < 0.01 * best.1);
    assert!(tokens(16) < 0.9 * tokens(8) && tokens(32) < tokens(16));
}

#[test]
fn lesson_12_kv_cache_is_the_engine_s() {
    let per_token = ModelPreset::Llama3_70b.spec().kv_cache_bytes_per_token(2);
    assert_eq!(per_token, 80 * 8 * 128 * 2 * 2);
    assert_quotes(
        "real-world",
        Lang::En,
        &format!("{} bytes", grouped(Lang::En, per_token)),
    );
    assert_quotes(
        "real-world",
        Lang::Tr,
        &format!("{} bayt", grouped(Lang::Tr, per_token)),
    );
    for lang in Lang::ALL {
        assert_quotes("real-world", lang, &format!("{} KiB", per_token / 1024));
        assert_quotes("real-world", lang, &format!("{} KiB", per_token / 4 / 1024));
    }
}

#[test]
fn lesson_10_padding_and_bytes_are_the_engine_s() {
    for tp in [1, 4, 8] {
        let v = VocabConfig {
            tp,
            ..VocabConfig::default()
        };
        let (m, p) = (128 * tp, v.padded_vocab());
        let row = format!(
            "| {tp} | {m} | {} · {m} = {p} | {} | {} |",
            p / m,
            v.rows_per_rank(),
            p - v.vocab
        );
        for lang in Lang::ALL {
            assert_quotes("vocab-parallel", lang, &row);
        }
    }
    let v = VocabConfig::default();
    let (ce, gather) =
        tplab_engine::labs::vocab::ce_bytes_sent_per_rank(&v, tplab_engine::dtype::DType::F32);
    for lang in Lang::ALL {
        assert_quotes("vocab-parallel", lang, &format!("= {ce} "));
        assert_quotes("vocab-parallel", lang, &format!("{}", gather / ce));
    }
}

#[test]
fn lesson_9_sequence_parallel_sends_a_quarter_more() {
    let sent = |sp: bool| -> u64 {
        let cfg = tplab_engine::config::Config {
            sequence_parallel: sp,
            ..Preset::Gpt2Small.config()
        };
        schedule(&cfg)
            .expect("Megatron's plan propagates")
            .events
            .iter()
            .filter(|e| e.is_collective() && e.op != tplab_engine::block::Op::SpGrads)
            .filter(|e| e.ranks.first() == Some(&0))
            .map(|e| e.bytes_sent_per_rank)
            .sum()
    };
    let (plain, sp) = (sent(false), sent(true));
    assert!(plain > 0);
    assert_eq!(
        sp * 4,
        plain * 5,
        "SP {sp} vs {plain}: the lesson says 10/8"
    );
}

/// Lesson 8's closed form, `comm / compute = 2(N−1)·F / (9·h·BW)`: its table uses the hardware
/// presets' peaks, and the formula is the engine's ring bytes (4 all-reduces of `[s·b, h]` bf16)
/// over `72·s·b·h²` FLOPs, whatever `s·b`.
#[test]
fn lesson_8_closed_form_uses_the_presets_and_the_ring() {
    use tplab_engine::collectives::Algorithm;
    use tplab_engine::trace::all_reduce_bytes_sent_per_rank;
    let cat = Catalogue::default();
    let h = 12288.0;
    let closed = |n: f64, f: f64, bw: f64| 2.0 * (n - 1.0) * f / (9.0 * h * bw);
    for (gpu, link) in [
        ("h100", "nvlink4"),
        ("h100", "ib-ndr-400"),
        ("a100", "nvlink3"),
        ("a100", "ib-hdr-200"),
    ] {
        let (g, l) = match (cat.gpu(gpu), cat.link(link)) {
            (Ok(g), Ok(l)) => (g, l),
            (g, l) => panic!("{gpu}: {:?}, {link}: {:?}", g.err(), l.err()),
        };
        let f = g.peak_bf16_tflops * 1e12;
        let bw = l.bandwidth_bytes_per_s();
        // The derivation, checked against the engine's ring for two token counts: s·b cancels.
        for tokens in [2048u64, 8 * 4096] {
            for n in [2usize, 8, 16] {
                let bytes =
                    4 * all_reduce_bytes_sent_per_rank(Algorithm::Ring, n, tokens * 12288 * 2);
                let comm = bytes as f64 / bw;
                let compute = 72.0 * tokens as f64 * h * h / (n as f64 * f);
                let want = closed(n as f64, f, bw);
                assert!(
                    (comm / compute - want).abs() < 1e-9 * want,
                    "{gpu}/{link} N={n}: {} vs {want}",
                    comm / compute
                );
            }
        }
        for lang in Lang::ALL {
            let row = format!(
                "| {:.0} | {} | {} |",
                f / bw,
                percent(lang, 100.0 * closed(8.0, f, bw), 0),
                percent(lang, 100.0 * closed(16.0, f, bw), 0)
            );
            assert_quotes("inside-a-node", lang, &row);
        }
    }
    // "N − 1 ≤ 9·h·BW / (4·F)" for H100s over NVLink 4: communication at most half of compute.
    let (g, l) = match (cat.gpu("h100"), cat.link("nvlink4")) {
        (Ok(g), Ok(l)) => (g, l),
        _ => panic!("h100 / nvlink4 presets"),
    };
    let bound = 9.0 * h * l.bandwidth_bytes_per_s() / (4.0 * g.peak_bf16_tflops * 1e12);
    for lang in Lang::ALL {
        assert_quotes("inside-a-node", lang, &format!("≈ {}", num(lang, bound, 1)));
    }
}

/// Lesson 16's table: each schedule at P = 4, M = 8 (V = 2 interleaved) run by the engine, its
/// measured bubble (as a fraction and a percentage) and its peak activations per stage; and
/// 1F1B's bubble at M = 32.
#[test]
fn lesson_16_pipeline_table_is_the_engine_s() {
    use tplab_engine::pipeline::{run, PipelineConfig, Schedule};
    let rows = [
        (Schedule::GPipe, 1),
        (Schedule::OneFOneB, 1),
        (Schedule::Interleaved, 2),
        (Schedule::ZbH1, 1),
    ];
    for (schedule, v) in rows {
        let cfg = PipelineConfig {
            virtual_stages: v,
            ..PipelineConfig::new(schedule, 4, 8)
        };
        let r = match run(&cfg) {
            Ok(r) => r,
            Err(e) => panic!("{schedule}: {e}"),
        };
        let peaks = r
            .peak_activations
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        // The table keeps the unreduced numerator P − 1 = 3.
        let (num3, den) = (3, 3 * r.bubble.den / r.bubble.num);
        assert_eq!(r.bubble.num * den, 3 * r.bubble.den, "{schedule}");
        for lang in [Lang::En, Lang::Tr] {
            let pct = percent(lang, 100.0 * r.bubble_fraction, 1);
            assert_quotes(
                "pipeline-and-experts",
                lang,
                &format!("{num3}/{den} = {pct}"),
            );
            assert_quotes("pipeline-and-experts", lang, &format!("| {peaks} "));
        }
    }
    let m32 = match run(&PipelineConfig::new(Schedule::OneFOneB, 4, 32)) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    for lang in [Lang::En, Lang::Tr] {
        assert_quotes(
            "pipeline-and-experts",
            lang,
            &percent(lang, 100.0 * m32.bubble_fraction, 1),
        );
    }
}

/// Lesson 16's all-to-all: Mixtral 8x7B (h = 4096, top-2, bf16) at EP = 8 with 4096 tokens per
/// GPU sends 56 MiB in each exchange, by the planner's cost model; and the valid EP sizes it
/// lists for 8 experts are the memory model's.
#[test]
fn lesson_16_all_to_all_bytes_are_the_cost_model_s() {
    let spec = ModelPreset::Mixtral8x7b.spec();
    assert_eq!((spec.hidden, spec.experts_per_token), (4096, 2));
    let bytes = cost::moe_all_to_all_bytes_per_gpu(&spec, 4096, 8);
    assert_eq!(bytes, 56 * 1024 * 1024);
    for lang in [Lang::En, Lang::Tr] {
        assert_quotes(
            "pipeline-and-experts",
            lang,
            "4096 · 2 · 4096 · 2 · 7/8 = 56 MiB",
        );
    }
    let valid: Vec<usize> = (1..=8)
        .filter(|&ep| spec.experts.is_multiple_of(ep))
        .collect();
    assert_eq!(valid, [1, 2, 4, 8]);
}

/// Issue 37, item 2: lesson 8 compares like with like: GPT-2 small's communication over its
/// computation at TP = 4 against GPT-3 175B's at the same TP, and splits GPT-2 small's
/// communication into ring-step latency and bytes.
#[test]
fn lesson_8_compares_communication_over_computation_at_the_same_tp() {
    let (step, comm) = gpt2_layer_us(4);
    let compute = step - comm;
    let cluster = match Cluster::new(&Catalogue::default(), "h100", 4, 8, "ib-ndr-400") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    // 4 all-reduces (2 forward, 2 backward) of 2(N − 1) = 6 ring steps each.
    let latency = 4.0 * 6.0 * cluster.intra_node.latency_us;
    let (c4, m4, _) = gpt3_layer_ms(4);
    for lang in Lang::ALL {
        for want in [
            format!("{} µs", num(lang, comm, 1)),
            format!("{} µs", num(lang, compute, 1)),
            percent(lang, 100.0 * comm / compute, 0),
            percent(lang, 100.0 * m4 / c4, 0),
            percent(lang, 100.0 * comm / step, 0),
            percent(lang, 100.0 * m4 / (c4 + m4), 0),
            format!("{} µs", num(lang, latency, 0)),
            format!("{} µs", num(lang, comm - latency, 1)),
        ] {
            assert_quotes("inside-a-node", lang, &want);
        }
    }
    // The point: most of the small layer's communication is latency.
    assert!(latency > 0.9 * comm, "{latency} of {comm}");
}

/// Issue 37, item 3: one latency model for a decode all-reduce in lessons 7, 8 and 12: the
/// cost model's NCCL price of Llama 3 70B's 16 KiB all-reduce over 4 H100s (ring, LL).
#[test]
fn lessons_7_8_12_price_a_decode_all_reduce_as_the_cost_model_does() {
    use tplab_engine::capacity::nccl;
    use tplab_engine::labs::serve_cost::{all_reduce_price, AllReduceImpl};
    let cluster = match Cluster::new(&Catalogue::default(), "h100", 8, 8, "ib-ndr-400") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let size = 8192 * 2;
    let p = match all_reduce_price(&cluster, 4, size, AllReduceImpl::Nccl) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(p.how, "nccl ring LL");
    let us = p.time_s * 1e6;
    let per_token_ms = 161.0 * us / 1e3;
    let (base, step, call) = (
        nccl::BASE_LAT_US[1][0],
        nccl::HW_LAT_US[0][1][0],
        nccl::NCCL_CALL_OVERHEAD_US,
    );
    for lang in Lang::ALL {
        for want in [
            format!("{} µs", num(lang, us, 0)),
            format!(
                "161 · {} µs ≈ {} ms",
                num(lang, us, 0),
                num(lang, per_token_ms, 1)
            ),
            format!("{} µs", num(lang, base, 1)),
            format!("{} µs", num(lang, step, 1)),
            format!("{} µs", num(lang, call, 1)),
        ] {
            assert_quotes("all-reduce", lang, &want);
        }
        assert_quotes("inside-a-node", lang, &format!("{} µs", num(lang, us, 0)));
        assert_quotes("real-world", lang, &format!("{} µs", num(lang, us, 0)));
        assert_quotes(
            "real-world",
            lang,
            &format!("{} ms", num(lang, per_token_ms, 1)),
        );
    }
    // Most of it is per call (base latency and launch), not per step.
    assert!(base + call > 0.6 * us, "{base} + {call} of {us}");
}

/// Lesson 12's serving table (TP 2, 4, 8 inside one node, TP 16 across two): the cost model's
/// weight reads, collectives and time per token, with NCCL and with a custom all-reduce.
#[test]
fn lesson_12_serving_table_is_the_cost_model_s() {
    use tplab_engine::labs::serve_cost::{decode_time, AllReduceImpl, Launch, ServeSetup};
    let cluster = match Cluster::new(&Catalogue::default(), "h100", 8, 8, "ib-ndr-400") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let two_nodes = match Cluster::new(&Catalogue::default(), "h100", 16, 8, "ib-ndr-400") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let run = |tp: usize, all_reduce: AllReduceImpl| {
        let setup = ServeSetup {
            tp,
            pp: 1,
            batch: 1,
            context: 4096,
            all_reduce,
            launch: Launch::Graphs,
            weights: tplab_engine::labs::serve_cost::WeightFormat::Bf16,
            kv_cache: tplab_engine::labs::serve_cost::KvCacheFormat::Bf16,
        };
        let on = if tp > 8 { &two_nodes } else { &cluster };
        match decode_time(&ModelPreset::Llama3_70b.spec(), on, setup) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    };
    for tp in [2usize, 4, 8] {
        let (n, c) = (run(tp, AllReduceImpl::Nccl), run(tp, AllReduceImpl::Custom));
        for lang in Lang::ALL {
            let ms = |s: f64| format!("{} ms", num(lang, s * 1e3, 1));
            let row = format!(
                "| {tp} | {} | {} | {} | {}",
                ms(n.weights_s),
                ms(n.collective_s),
                ms(c.collective_s),
                ms(n.step_s)
            );
            assert_quotes("real-world", lang, &row);
            assert_quotes("real-world", lang, &ms(c.step_s));
        }
    }
    // TP 16 crosses nodes: the custom kernel falls back to NCCL (the same row twice), and the
    // time per token is TP 8's with NCCL (within 1%), the weight reads' saving spent on the
    // all-reduces, each about twice TP 8's.
    let (n16, c16, n8) = (
        run(16, AllReduceImpl::Nccl),
        run(16, AllReduceImpl::Custom),
        run(8, AllReduceImpl::Nccl),
    );
    assert!((n16.step_s - c16.step_s).abs() < 1e-12);
    assert!((n16.step_s - n8.step_s).abs() < 0.01 * n8.step_s);
    let one_us = |r: &tplab_engine::labs::serve_cost::DecodeTime| r.all_reduce_s * 1e6;
    for lang in Lang::ALL {
        let ms = |s: f64| format!("{} ms", num(lang, s * 1e3, 1));
        for want in [
            format!("| 16 | {} | {}, ", ms(n16.weights_s), ms(n16.collective_s)),
            format!("| {} | {} |", ms(n16.step_s), ms(c16.step_s)),
            format!("{} µs", num(lang, one_us(&n16), 0)),
            format!("{} µs", num(lang, one_us(&n8), 0)),
            ms(n8.weights_s - n16.weights_s),
        ] {
            assert_quotes("real-world", lang, &want);
        }
    }
}
