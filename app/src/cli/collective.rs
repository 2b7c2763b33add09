//! `tplab collective`: a collective as NCCL runs it, swept over message sizes the way
//! nccl-tests reports it (time, algbw, busbw), with the algorithm and protocol NCCL's tuner picks
//! at each size. The model: `tplab_engine::capacity::nccl`.

use anyhow::bail;
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use tplab_engine::capacity::defaults;
use tplab_engine::capacity::hardware::{MAX_GPUS, MAX_NICS_PER_NODE};
use tplab_engine::capacity::nccl::{
    self, Fabric, NcclAlgo, NcclOp, NcclProto, NcclVersion, MAX_MESSAGE_BYTES,
};

/// Flags of `tplab collective`.
#[derive(Args, Debug, Clone)]
pub struct CollectiveArgs {
    /// all-reduce, all-gather, reduce-scatter, broadcast, all-to-all or send-recv.
    #[arg(long, default_value = "all-reduce", value_parser = parse_kind)]
    pub op: NcclOp,
    /// GPUs in the communicator.
    #[arg(long, default_value_t = 8)]
    pub gpus: usize,
    /// GPUs per node (the NVLink domain); the communicator spans gpus / gpus-per-node nodes.
    #[arg(long, default_value_t = 8)]
    pub gpus_per_node: usize,
    /// GPU (sets the default intra-node link): v100, a100, h100, h200, b200, or one from --hardware.
    #[arg(long, default_value = "h100")]
    pub gpu: String,
    /// Intra-node link instead of the GPU's: nvlink2..nvlink5, pcie4, pcie5.
    #[arg(long)]
    pub intra: Option<String>,
    /// Inter-node link, one NIC port: ib200, ib400, ib800, roce400, eth100, or one from
    /// --hardware (default: the GPU's own node's, as every command: ib200 for A100s, ib400
    /// otherwise).
    #[arg(long)]
    pub inter: Option<String>,
    /// Compute NICs per node (default: the GPU's catalogue entry, one per GPU); NCCL spreads
    /// its channels over them, rail-optimised (e.g. --nics 4 for 8 A100s with 4 x 200 Gb/s).
    #[arg(long)]
    pub nics: Option<usize>,
    /// No NVSwitch reduction (NVLS) even where the NVLink generation has it.
    #[arg(long)]
    pub no_nvls: bool,
    /// Force one algorithm (NCCL_ALGO): ring, tree, nvls.
    #[arg(long)]
    pub algo: Option<NcclAlgo>,
    /// Force one protocol (NCCL_PROTO): LL, LL128, Simple.
    #[arg(long)]
    pub proto: Option<NcclProto>,
    /// NCCL release to price (e.g. 2.18.5): up to 2.19 NVLS fills its channels one by one,
    /// from 2.20 it splits a message evenly over them (docs/calibration.md). Default 2.26.
    #[arg(long, default_value = "2.26")]
    pub nccl: NcclVersion,
    /// Smallest message (bytes; K, M, G suffixes are powers of 1024), default 8.
    #[arg(long, default_value = "8", value_parser = parse_size)]
    pub min: u64,
    /// Largest message, default 16G.
    #[arg(long, default_value = "16G", value_parser = parse_size)]
    pub max: u64,
    /// One message size instead of a sweep.
    #[arg(long, value_parser = parse_size)]
    pub size: Option<u64>,
    /// TOML file with extra GPUs and links (see docs/calibration.md).
    #[arg(long)]
    pub hardware: Option<PathBuf>,
    /// Print the sweep as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_kind(s: &str) -> Result<NcclOp, String> {
    s.parse()
}

/// `8`, `64K`, `1M`, `16G`, `4KiB`, `2GB` (all binary: K = 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let stripped = lower
        .trim_end_matches("ib")
        .trim_end_matches('b')
        .to_string();
    let (num, mult) = match stripped.chars().last() {
        Some('k') => (&stripped[..stripped.len() - 1], 1u64 << 10),
        Some('m') => (&stripped[..stripped.len() - 1], 1 << 20),
        Some('g') => (&stripped[..stripped.len() - 1], 1 << 30),
        _ => (stripped.as_str(), 1),
    };
    let n: u64 = num.trim().parse().map_err(|_| {
        format!(
            "'{s}' is not a message size; write bytes, optionally with K, M or G (e.g. 64K, 16G)"
        )
    })?;
    let bytes = n
        .checked_mul(mult)
        .filter(|&b| (1..=MAX_MESSAGE_BYTES).contains(&b))
        .ok_or_else(|| format!("message size '{s}' must be between 1 B and 16G"))?;
    Ok(bytes)
}

fn human(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (u, name) in UNITS {
        if bytes >= u && bytes.is_multiple_of(u) {
            return format!("{}{name}", bytes / u);
        }
    }
    format!("{bytes}")
}

/// Resolves the flags to a fabric.
pub fn fabric(args: &CollectiveArgs) -> anyhow::Result<Fabric> {
    let cat = super::plan::catalogue(args.hardware.as_deref())?;
    if args.gpus_per_node == 0 {
        bail!("--gpus-per-node must be at least 1 (got 0)");
    }
    // The same ceiling as `plan` and `serve` (and far below where rank arithmetic overflows).
    for (flag, n) in [
        ("--gpus", args.gpus),
        ("--gpus-per-node", args.gpus_per_node),
    ] {
        if n > MAX_GPUS {
            bail!(
                "{flag} {n} is outside the range the cost model covers, 1 to {MAX_GPUS} GPUs \
                 (2^24; today's largest clusters have about 10^5); give a smaller {flag}"
            );
        }
    }
    let gpu = cat.gpu(&args.gpu)?;
    let intra = cat.link(args.intra.as_deref().unwrap_or(&gpu.intra_node_link))?;
    let inter = cat.link(
        args.inter
            .as_deref()
            .unwrap_or_else(|| defaults::inter_node_for(&gpu)),
    )?;
    let nvls = !args.no_nvls && nccl::nvls_capable(&intra);
    let nics = match args.nics {
        Some(0) => bail!("--nics must be at least 1 (a node without a NIC cannot reach another)"),
        Some(k) if k > MAX_NICS_PER_NODE => {
            bail!("--nics {k} is outside the physical range 1 to {MAX_NICS_PER_NODE} NICs per node")
        }
        Some(k) => k,
        None => gpu.nics_per_node,
    };
    Ok(Fabric::new(
        args.gpus,
        args.gpus_per_node.min(args.gpus.max(1)),
        intra,
        inter,
        nvls,
    )?
    .with_nccl(args.nccl)
    .with_nics(args.gpus_per_node, nics))
}

pub fn run(args: CollectiveArgs) -> anyhow::Result<ExitCode> {
    let f = fabric(&args)?;
    let (from, to) = match args.size {
        Some(s) => (s, s),
        None => (args.min, args.max),
    };
    if from > to {
        bail!(
            "--min {} is larger than --max {}; give the smaller size first",
            human(from),
            human(to)
        );
    }
    let points = nccl::sweep_op(args.op, &f, from, to, args.algo, args.proto)?;
    if args.json {
        let v = json!({
            "collective": args.op.name(),
            "gpus": f.ranks,
            "gpus_per_node": f.ranks_per_node,
            "nodes": f.nodes(),
            "intra_node": f.intra.name,
            "inter_node": f.inter.name,
            "nics_per_node": f.node_nics(),
            "node_network_gbs": if f.nodes() > 1 { Some(f.net_bus_bw() / 1e9) } else { None },
            "nvls": f.nvls,
            "nccl": f.nccl.to_string(),
            "algorithm_forced": args.algo.map(|a| a.name()),
            "protocol_forced": args.proto.map(|p| p.name()),
            "busbw_factor": args.op.busbw_factor(f.ranks),
            "points": points.iter().map(|c| json!({
                "size_bytes": c.size_bytes,
                "time_s": c.time_s,
                "time_us": c.time_s * 1e6,
                "latency_us": c.latency_s * 1e6,
                "algbw_gbs": c.algbw / 1e9,
                "busbw_gbs": c.busbw / 1e9,
                "algorithm": c.algo.name(),
                "protocol": c.proto.name(),
            })).collect::<Vec<_>>(),
        });
        outln!("{}", super::json_text("collective", &v)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} over {} GPUs ({} of {}; intra-node {} {} GB/s{}, inter-node {} {} GB/s per NIC{})",
        args.op.name(),
        f.ranks,
        super::nodes(f.nodes()),
        f.ranks_per_node,
        f.intra.name,
        f.intra.bandwidth_gbs,
        if f.nvls { " with NVLS" } else { "" },
        f.inter.name,
        f.inter.bandwidth_gbs,
        if f.nodes() > 1 {
            format!(
                ", {} NICs per node in use: {:.1} GB/s out of each node at {:.0}% of line rate",
                format!("{:.3}", f.nics_used())
                    .trim_end_matches('0')
                    .trim_end_matches('.'),
                f.net_bus_bw() / 1e9,
                tplab_engine::capacity::hardware::NET_EFFICIENCY * 100.0
            )
        } else {
            String::new()
        }
    );
    outln!(
        "busbw = algbw x {:.3} (nccl-tests); algorithm and protocol as NCCL {}'s tuner picks them{}",
        args.op.busbw_factor(f.ranks),
        f.nccl,
        match (args.algo, args.proto) {
            (None, None) => String::new(),
            (a, p) => format!(
                " (forced: {}{})",
                a.map_or("", |a| a.name()),
                p.map_or(String::new(), |p| format!(" {}", p.name()))
            ),
        }
    );
    outln!(
        "{:>10} {:>12} {:>12} {:>12}  {:<8} {:<6}",
        "size",
        "time (us)",
        "algbw GB/s",
        "busbw GB/s",
        "algo",
        "proto"
    );
    for c in &points {
        outln!(
            "{:>10} {:>12.2} {:>12.2} {:>12.2}  {:<8} {:<6}",
            human(c.size_bytes),
            c.time_s * 1e6,
            c.algbw / 1e9,
            c.busbw / 1e9,
            c.algo.name(),
            c.proto.name()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_engine::collectives::CollectiveKind;

    fn args() -> CollectiveArgs {
        CollectiveArgs {
            op: NcclOp::Collective(CollectiveKind::AllReduce),
            gpus: 8,
            gpus_per_node: 8,
            gpu: "h100".into(),
            intra: None,
            inter: None,
            nics: None,
            no_nvls: false,
            algo: None,
            proto: None,
            nccl: NcclVersion::DEFAULT,
            min: 8,
            max: 16 << 30,
            size: None,
            hardware: None,
            json: true,
        }
    }

    #[test]
    fn sizes_parse_and_refuse() {
        assert_eq!(parse_size("8"), Ok(8));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("16G"), Ok(16 << 30));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        for bad in ["0", "17G", "x", "-1", "99999999999G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_kind("all_gather").is_ok());
        assert!(parse_kind("alltoall").is_ok() && parse_kind("send_recv").is_ok());
        assert!(parse_kind("gather").is_err());
    }

    #[test]
    fn the_default_sweep_is_8_bytes_to_16_gib() {
        let f = fabric(&args()).unwrap();
        let pts = nccl::sweep(CollectiveKind::AllReduce, &f, 8, 16 << 30, None, None).unwrap();
        assert_eq!(pts.len(), 32);
        assert!(f.nvls);
        let no = fabric(&CollectiveArgs {
            no_nvls: true,
            ..args()
        })
        .unwrap();
        assert!(!no.nvls);
        let old = fabric(&CollectiveArgs {
            nccl: "2.18.5".parse().unwrap(),
            ..args()
        })
        .unwrap();
        assert_eq!(old.nccl, NcclVersion::new(2, 18));
        let bad = fabric(&CollectiveArgs { gpus: 12, ..args() });
        assert!(bad.is_err());
        // Beyond 2^24 GPUs (once a panic in the rank arithmetic above 2^63): the range.
        for (gpus, per_node) in [(usize::MAX, 1), (MAX_GPUS + 1, 8), (16, usize::MAX)] {
            let err = fabric(&CollectiveArgs {
                gpus,
                gpus_per_node: per_node,
                ..args()
            })
            .unwrap_err()
            .to_string();
            assert!(err.contains("1 to 16777216 GPUs"), "{err}");
        }
        let pcie = fabric(&CollectiveArgs {
            intra: Some("pcie5".into()),
            ..args()
        })
        .unwrap();
        let err = nccl::sweep(
            CollectiveKind::AllReduce,
            &pcie,
            8,
            8,
            Some(NcclAlgo::Nvls),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("NVSwitch"), "{err}");
    }
}
