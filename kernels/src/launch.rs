//! Host-side kernel bookkeeping: the `.cu` sources, how each is compiled, and launch shapes.
//! Pure host logic, unit-tested without a GPU.

use tplab_engine::dtype::DType;

/// Prelude prepended to every source (element type, block reductions).
pub const COMMON: &str = include_str!("cu/common.cuh");

/// One `.cu` file and the kernels it defines.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    pub name: &'static str,
    pub code: &'static str,
    pub kernels: &'static [&'static str],
}

/// Every kernel source, compiled by NVRTC at run time.
pub const SOURCES: [KernelSource; 7] = [
    KernelSource {
        name: "layernorm.cu",
        code: include_str!("cu/layernorm.cu"),
        kernels: &["ln_fwd", "ln_bwd_input", "ln_bwd_params"],
    },
    KernelSource {
        name: "elementwise.cu",
        code: include_str!("cu/elementwise.cu"),
        kernels: &[
            "bias_add",
            "bias_residual",
            "gelu_fwd",
            "gelu_bwd",
            "col_sum",
        ],
    },
    KernelSource {
        name: "softmax.cu",
        code: include_str!("cu/softmax.cu"),
        kernels: &["causal_softmax_fwd", "causal_softmax_bwd"],
    },
    KernelSource {
        name: "allreduce.cu",
        code: include_str!("cu/allreduce.cu"),
        kernels: &["sum_ranks"],
    },
    KernelSource {
        name: "collectives.cu",
        code: include_str!("cu/collectives.cu"),
        kernels: &[
            "gather_ranks",
            "scatter_sum_ranks",
            "pack_cols",
            "unpack_cols",
            "max_ranks",
            "copy_block",
            "all_to_all_ranks",
        ],
    },
    KernelSource {
        name: "decode.cu",
        code: include_str!("cu/decode.cu"),
        kernels: &[
            "embed_lookup",
            "add_inplace",
            "kv_append",
            "cached_attention",
        ],
    },
    KernelSource {
        name: "vocab.cu",
        code: include_str!("cu/vocab.cu"),
        kernels: &["ce_local", "ce_rescale", "ce_bwd", "embed_scatter_add"],
    },
];

/// Storage types the GPU executor runs in (arithmetic inside kernels is always f32).
pub fn gpu_dtype_supported(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::Bf16)
}

/// The full program text NVRTC compiles for `src` in `dtype`.
pub fn program_text(src: &KernelSource, dtype: DType) -> String {
    let bf16 = u8::from(dtype == DType::Bf16);
    format!(
        "#define TPLAB_BF16 {bf16}\n{COMMON}\n// ---- {} ----\n{}",
        src.name, src.code
    )
}

/// NVRTC options for a virtual architecture such as `compute_90`.
pub fn nvrtc_options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        // Keep IEEE division and sqrt so f32 results stay close to the CPU reference.
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
    ]
}

/// `compute_XY` for a device of compute capability `X.Y`.
pub fn arch_for(major: i32, minor: i32) -> String {
    format!("compute_{major}{minor}")
}

/// Grid and block sizes of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub grid: u32,
    pub block: u32,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
}

/// Threads per block of element-wise kernels.
pub const ELEMENTWISE_BLOCK: u32 = 256;
/// Grid cap of grid-stride kernels: enough blocks to fill 132 SMs many times over.
pub const MAX_GRID: u32 = 65_535;

/// Element-wise, grid-stride: one thread per element up to [`MAX_GRID`] blocks.
pub fn elementwise(n: usize) -> Launch {
    let blocks = n.div_ceil(ELEMENTWISE_BLOCK as usize).max(1);
    Launch {
        grid: blocks.min(MAX_GRID as usize) as u32,
        block: ELEMENTWISE_BLOCK,
        shared_bytes: 0,
    }
}

/// The all-reduce sum: each thread handles four elements per step (see `allreduce.cu`).
pub fn all_reduce(len: usize) -> Launch {
    elementwise(len.div_ceil(4))
}

/// One block per row; the block is a power of two between 32 and 1024 threads, no wider than
/// the row needs (the block reductions assume a power of two).
pub fn per_row(rows: usize, cols: usize) -> Launch {
    let block = cols.clamp(32, 1024).next_power_of_two().min(1024) as u32;
    Launch {
        grid: rows.max(1) as u32,
        block,
        shared_bytes: 0,
    }
}

/// One thread per column (column reductions over rows).
pub fn per_column(cols: usize) -> Launch {
    Launch {
        grid: cols.div_ceil(ELEMENTWISE_BLOCK as usize).max(1) as u32,
        block: ELEMENTWISE_BLOCK,
        shared_bytes: 0,
    }
}

/// Dynamic shared memory a block may use without opting in (48 KiB on every CUDA GPU).
pub const MAX_SHARED_BYTES: u32 = 48 * 1024;

/// Positions the decode attention can hold in shared memory (one f32 score each).
pub const MAX_DECODE_POSITIONS: usize = (MAX_SHARED_BYTES / 4) as usize;

/// Decode attention (`cached_attention`): one block per (new row, query head) of 128 threads,
/// with one f32 score per cached position in shared memory. `positions` is the cache length
/// after the step. **Errors** past [`MAX_DECODE_POSITIONS`].
pub fn cached_attention(new_rows: usize, heads: usize, positions: usize) -> Result<Launch, String> {
    if positions > MAX_DECODE_POSITIONS {
        return Err(format!(
            "{positions} cached positions need {} KiB of shared memory per block, more than the \
             {} KiB a block gets; use a context of at most {MAX_DECODE_POSITIONS} tokens",
            positions * 4 / 1024,
            MAX_SHARED_BYTES / 1024
        ));
    }
    Ok(Launch {
        grid: (new_rows * heads).max(1) as u32,
        block: 128,
        shared_bytes: (positions.max(1) * 4) as u32,
    })
}

/// Launches must fit the hardware: at most 1024 threads per block, grid.x below 2^31.
pub fn check(l: Launch) -> Result<(), String> {
    if l.block == 0 || l.block > 1024 {
        return Err(format!("block of {} threads (1..=1024 allowed)", l.block));
    }
    if l.grid == 0 || l.grid > i32::MAX as u32 {
        return Err(format!("grid of {} blocks (1..2^31 allowed)", l.grid));
    }
    if l.shared_bytes > MAX_SHARED_BYTES {
        return Err(format!(
            "{} bytes of shared memory (at most {MAX_SHARED_BYTES})",
            l.shared_bytes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elementwise_covers_every_element() {
        for n in [1usize, 255, 256, 257, 10_000, 1 << 30] {
            let l = elementwise(n);
            check(l).unwrap();
            // Grid-stride: the loop covers n whatever the grid; without the cap one pass does.
            if n.div_ceil(256) <= MAX_GRID as usize {
                assert!(l.grid as usize * l.block as usize >= n, "n={n}");
            } else {
                assert_eq!(l.grid, MAX_GRID);
            }
        }
    }

    #[test]
    fn per_row_blocks_are_powers_of_two_within_limits() {
        for cols in [1usize, 8, 31, 33, 64, 768, 1000, 1024, 3072, 50_000] {
            let l = per_row(7, cols);
            check(l).unwrap();
            assert!(l.block.is_power_of_two() && (32..=1024).contains(&l.block));
            assert_eq!(l.grid, 7);
            if cols <= 1024 {
                assert!(l.block as usize >= cols, "one pass per row for cols={cols}");
            }
        }
    }

    #[test]
    fn all_reduce_covers_vectors_and_tail() {
        for len in [1usize, 3, 4, 5, 1023, 98_304] {
            let l = all_reduce(len);
            assert!(l.grid as usize * l.block as usize * 4 >= len, "len={len}");
        }
    }

    #[test]
    fn per_column_covers_columns() {
        for cols in [1usize, 256, 257, 3072] {
            let l = per_column(cols);
            assert!(l.grid as usize * l.block as usize >= cols);
            assert!((l.grid as usize - 1) * (l.block as usize) < cols);
        }
    }

    #[test]
    fn every_kernel_is_defined_in_its_source() {
        for src in SOURCES {
            for k in src.kernels {
                let decl = format!("__global__ void {k}(");
                assert!(src.code.contains(&decl), "{k} not in {}", src.name);
            }
        }
        let t = program_text(&SOURCES[0], DType::Bf16);
        assert!(t.starts_with("#define TPLAB_BF16 1\n"));
        assert!(program_text(&SOURCES[0], DType::F32).starts_with("#define TPLAB_BF16 0\n"));
        assert_eq!(arch_for(9, 0), "compute_90");
    }

    #[test]
    fn bad_launch_is_rejected() {
        assert!(check(Launch {
            grid: 1,
            block: 2048,
            shared_bytes: 0
        })
        .is_err());
        assert!(check(Launch {
            grid: 0,
            block: 32,
            shared_bytes: 0
        })
        .is_err());
        assert!(check(Launch {
            grid: 1,
            block: 32,
            shared_bytes: MAX_SHARED_BYTES + 4
        })
        .is_err());
    }

    #[test]
    fn decode_attention_blocks_cover_rows_and_heads() {
        let l = cached_attention(5, 4, 64).unwrap();
        check(l).unwrap();
        assert_eq!((l.grid, l.shared_bytes), (20, 256));
        // The block reductions need a power of two of at least one warp.
        assert!(l.block.is_power_of_two() && l.block >= 32);
        let most = cached_attention(1, 1, MAX_DECODE_POSITIONS).unwrap();
        check(most).unwrap();
        let e = cached_attention(1, 1, MAX_DECODE_POSITIONS + 1).unwrap_err();
        assert!(e.contains("context of at most"), "{e}");
    }
}
