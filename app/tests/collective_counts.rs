//! The CLI and the views report the same collective counts per layer, in every mode: both print
//! the engine's own account ([`tplab_engine::trace::CollectiveCounts::describe`]) of the trace.

use std::process::Command;
use tplab::views::step::counter_text;
use tplab_engine::block::program::schedule;
use tplab_engine::{config::Config, config::Preset};

#[test]
fn cli_and_step_view_count_alike_with_gqa_and_sequence_parallelism() {
    // (tp, sequence parallel, kv heads): plain, SP, Megatron's KV split, vLLM's replication.
    let modes: [(usize, bool, Option<usize>); 6] = [
        (1, false, None),
        (4, false, None),
        (4, true, None),
        (2, false, Some(2)),
        (4, false, Some(2)),
        (4, true, Some(1)),
    ];
    for (tp, sp, kv) in modes {
        let cfg = Config {
            tp,
            layers: 1,
            sequence_parallel: sp,
            kv_heads: kv,
            ..Preset::Tiny.config()
        };
        cfg.validate().expect("a valid mode");
        let counts = schedule(&cfg)
            .expect("Megatron's plan propagates")
            .collective_counts(Some(0));
        let mut args = vec![
            "run".to_string(),
            "--preset".into(),
            "tiny".into(),
            "--layers".into(),
            "1".into(),
            "--dtype".into(),
            "f64".into(),
            "--tp".into(),
            tp.to_string(),
        ];
        if sp {
            args.push("--sequence-parallel".into());
        }
        if let Some(k) = kv {
            args.push("--kv-heads".into());
            args.push(k.to_string());
        }
        let out = Command::new(env!("CARGO_BIN_EXE_tplab"))
            .args(&args)
            .output()
            .expect("the tplab binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {stdout}");
        let cli = format!("all-reduces per layer: {}", counts.describe());
        assert!(stdout.contains(&cli), "{args:?}: no «{cli}» in\n{stdout}");
        let view = counter_text(&schedule(&cfg).expect("Megatron's plan propagates"), 0);
        assert_eq!(
            view,
            format!("all-reduces this layer: {}", counts.describe())
        );
        // And the counts themselves: two each way without sequence parallelism, the KV copies'
        // syncs apart (vLLM's replication: one per group of copies).
        if !sp {
            // One GPU has nothing to combine.
            let expected = if tp > 1 { 2 } else { 0 };
            assert_eq!(counts.forward_all_reduce, expected, "{args:?}");
            assert_eq!(counts.backward_all_reduce, expected, "{args:?}");
        }
        let copies = cfg.kv_replica_groups().len();
        assert_eq!(counts.kv_copy_grad_all_reduce, copies, "{args:?}");
    }
}
