//! The benchmark on CUDA (see [`crate::bench`]).

use crate::bench::{
    gemm_flops, linear_shapes, BandwidthCheck, BenchOptions, BenchReport, BenchRow, GemmRate,
};
use crate::error::GpuError;
use crate::run::{device_model, DeviceMode, RunOptions};
use tplab_engine::{config::Config, dtype::DType};

use super::exec::Micro;

pub(crate) fn bench(
    opts: &BenchOptions,
    log: &mut dyn FnMut(&str),
) -> Result<BenchReport, GpuError> {
    crate::run::check_config(&opts.config)?;
    crate::error::guard("GPU bench", || match opts.config.dtype {
        DType::Bf16 => bench_typed::<half::bf16>(opts, log),
        _ => bench_typed::<f32>(opts, log),
    })
}

fn bench_typed<T: super::exec::GpuElem>(
    opts: &BenchOptions,
    log: &mut dyn FnMut(&str),
) -> Result<BenchReport, GpuError> {
    let base = &opts.config;
    let mut micro = Micro::<T>::new(opts.ordinal)?;
    let device = micro.device_name();
    log(&format!(
        "device: {device}; computing the CPU reference ({})",
        base.label()
    ));
    let model = device_model(base);
    let reference = crate::reference::reference(base, &model);
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for &tp in &opts.tps {
        let cfg = Config { tp, ..base.clone() };
        if let Err(e) = cfg.validate_shapes() {
            skipped.push(format!("TP={tp}: {e}"));
            continue;
        }
        log(&format!(
            "TP={tp}: full forward+backward pass, {} iterations",
            opts.iters
        ));
        let run = crate::run::run(
            &cfg,
            &RunOptions {
                iters: opts.iters,
                mode: DeviceMode::SingleDevice(opts.ordinal),
            },
            &mut |_, _| {},
        )?;
        let v = crate::verify::verify_run(&cfg, &run, &reference);
        let mut its = run.iteration_ms.clone();
        its.sort_by(f64::total_cmp);
        let iteration_ms = its.get(its.len() / 2).copied().unwrap_or(0.0);
        log(&format!("TP={tp}: GEMMs shard vs unsharded"));
        let mut gemms = Vec::new();
        for (op, shard, full) in linear_shapes(&cfg, tp) {
            let ms_s = micro.gemm_ms(shard[0], shard[1], shard[2], opts.reps)?;
            let ms_f = micro.gemm_ms(full[0], full[1], full[2], opts.reps)?;
            let shard_tflops = gemm_flops(shard) / (ms_s * 1e-3) / 1e12;
            let full_tflops = gemm_flops(full) / (ms_f * 1e-3) / 1e12;
            gemms.push(GemmRate {
                op,
                shard,
                full,
                shard_tflops,
                full_tflops,
                ratio: shard_tflops / full_tflops,
            });
        }
        let all_reduce = if tp > 1 {
            log(&format!("TP={tp}: all-reduce vs device-to-device copy"));
            let len = cfg.tokens() * cfg.hidden;
            let (sum_ms, copy_ms) = micro.all_reduce_vs_copy_ms(tp, len, opts.reps)?;
            let bytes_moved = (2 * tp * len * std::mem::size_of::<T>()) as u64;
            let gbps = |ms: f64| bytes_moved as f64 / (ms * 1e-3) / 1e9;
            Some(BandwidthCheck {
                ranks: tp,
                bytes_moved,
                sum_gbps: gbps(sum_ms),
                copy_gbps: gbps(copy_ms),
                ratio: copy_ms / sum_ms,
            })
        } else {
            None
        };
        log(&format!(
            "TP={tp}: the step as a CUDA graph vs plain launches"
        ));
        let (graph, graph_error) =
            match super::exec::graph_timing::<T>(&cfg, opts.ordinal, opts.reps) {
                Ok(g) => (Some(g), None),
                Err(e) => (None, Some(e.to_string())),
            };
        rows.push(BenchRow {
            graph,
            graph_error,
            tp,
            iteration_ms,
            ops: crate::summary::op_table(&run.trace),
            verification: crate::verify::summary(&v),
            verified: v.passed(),
            gemms,
            all_reduce,
        });
    }
    Ok(BenchReport {
        device,
        label: base.label(),
        rows,
        skipped,
    })
}
