//! The numbers the lessons quote, recomputed from the engine: if the engine's model changes,
//! these tests name the lesson and the line to update. (Test-only module.)

use crate::{Catalog, Lang};
use tplab_engine::cost;
use tplab_engine::hardware::{Catalogue, Cluster};
use tplab_engine::memory::Layout;
use tplab_engine::models::ModelPreset;
use tplab_engine::trace::schedule;
use tplab_engine::vocab::VocabConfig;
use tplab_engine::Preset;

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
    let cfg = tplab_engine::Config {
        tp,
        ..Preset::Gpt2Small.config()
    };
    let mut trace = schedule(&cfg);
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

/// `x` with `decimals` places in the lesson's language: `5.34` / `5,34`.
fn dec(x: f64, decimals: usize, lang: Lang) -> String {
    let s = format!("{x:.decimals$}");
    match lang {
        Lang::En => s,
        Lang::Tr => s.replace('.', ","),
    }
}

/// An integer with thousands grouped the language's way: `327,680` / `327.680`.
fn int(n: u64, lang: Lang) -> String {
    let digits = n.to_string();
    let sep = match lang {
        Lang::En => ',',
        Lang::Tr => '.',
    };
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

fn percent(p: f64, lang: Lang) -> String {
    match lang {
        Lang::En => format!("{p:.0}%"),
        Lang::Tr => format!("%{p:.0}"),
    }
}

#[test]
fn lesson_1_quotes_the_timeline_of_tp_1_2_4() {
    for tp in [1, 2, 4] {
        let (step, comm) = gpt2_layer_us(tp);
        for lang in Lang::ALL {
            let row = format!(
                "| {tp} | {} µs | {} µs |",
                dec(step, 1, lang),
                dec(comm, 1, lang)
            );
            assert_quotes("what-is-tp", lang, &row);
        }
    }
    // Its comparison with a GPT-3 175B layer (lesson 8's table), rounded.
    let (c1, _, _) = gpt3_layer_ms(1);
    let (c8, m8, _) = gpt3_layer_ms(8);
    for lang in Lang::ALL {
        assert_quotes("what-is-tp", lang, &format!("{c1:.0} ms"));
        assert_quotes("what-is-tp", lang, &format!("{} ms", dec(c8 + m8, 1, lang)));
    }
    // The lesson's point: TP = 2 beats TP = 1, and TP = 4 loses to TP = 2 at this size.
    assert!(gpt2_layer_us(2).0 < gpt2_layer_us(1).0);
    assert!(gpt2_layer_us(4).0 > gpt2_layer_us(2).0);
}

#[test]
fn lesson_8_table_is_the_cost_model_s() {
    for tp in [1, 2, 4, 8, 16, 32] {
        let (compute, comm, spans) = gpt3_layer_ms(tp);
        assert_eq!(spans, tp > 8, "TP {tp}");
        for lang in Lang::ALL {
            let row = format!(
                "| {} ms | {} ms | {} | {} ms |",
                dec(compute, 2, lang),
                dec(comm, 2, lang),
                percent(100.0 * comm / compute, lang),
                dec(compute + comm, 2, lang)
            );
            assert_quotes("inside-a-node", lang, &format!("| {tp} | "));
            assert_quotes("inside-a-node", lang, &row);
        }
    }
    // TP = 16 across two nodes is slower than TP = 8 inside one (the lesson's claim).
    assert!(gpt3_layer_ms(16).0 + gpt3_layer_ms(16).1 > gpt3_layer_ms(8).0 + gpt3_layer_ms(8).1);
}

#[test]
fn lesson_8_quotes_the_planner_at_tp_8_and_16() {
    use tplab_engine::cost::TrainSetup;
    use tplab_engine::planner::{self, PlanRequest};
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
    for tp in [8, 16] {
        let hundreds = (tokens(tp) / 100.0).round() as u64 * 100;
        for lang in Lang::ALL {
            assert_quotes("inside-a-node", lang, &int(hundreds, lang));
        }
    }
    assert!(tokens(16) < tokens(8) / 2.0);
}

#[test]
fn lesson_12_kv_cache_is_the_engine_s() {
    let per_token = ModelPreset::Llama3_70b.spec().kv_cache_bytes_per_token(2);
    assert_eq!(per_token, 80 * 8 * 128 * 2 * 2);
    assert_quotes(
        "real-world",
        Lang::En,
        &format!("{} bytes", int(per_token, Lang::En)),
    );
    assert_quotes(
        "real-world",
        Lang::Tr,
        &format!("{} bayt", int(per_token, Lang::Tr)),
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
    let (ce, gather) = tplab_engine::vocab::ce_bytes_sent_per_rank(&v, tplab_engine::DType::F32);
    for lang in Lang::ALL {
        assert_quotes("vocab-parallel", lang, &format!("= {ce} "));
        assert_quotes("vocab-parallel", lang, &format!("{}", gather / ce));
    }
}

#[test]
fn lesson_9_sequence_parallel_sends_a_quarter_more() {
    let sent = |sp: bool| -> u64 {
        let cfg = tplab_engine::Config {
            sequence_parallel: sp,
            ..Preset::Gpt2Small.config()
        };
        schedule(&cfg)
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
