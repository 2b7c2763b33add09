//! GPUs, links and clusters for the cost model.
//!
//! Every built-in figure is a vendor datasheet peak, with its source next to it; the efficiency
//! factors that turn peaks into achievable rates live in [`crate::capacity::cost`] and
//! `docs/calibration.md`. Users add their own GPUs and links in a TOML file
//! ([`Catalogue::from_toml`]).
//!
//! A cluster is `nodes × gpus_per_node`: GPUs inside a node talk over the intra-node link
//! (NVLink/NVSwitch or PCIe); a group that spans nodes talks over the inter-node link
//! (InfiniBand, one NIC per GPU) and is limited by it.

use crate::dtype::DType;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The largest cluster the cost model accepts: 2²⁴ GPUs (today's largest are ~10⁵).
pub const MAX_GPUS: usize = 1 << 24;
/// The most compute NICs per node the cost model accepts (today's nodes have 8 to 16; DGX
/// B300 has 8 ConnectX-8, some H20 systems 16 ConnectX-7).
pub const MAX_NICS_PER_NODE: usize = 64;
/// Achievable fraction of one NIC port's line rate that NCCL moves (inter-node busbw per
/// NIC). **Sourced**, not fitted to the test rows: NVIDIA's NCCL team, "for NDR @ 400Gbps you
/// should see 46-48GB/s per NIC" (NVIDIA/nccl-tests#290, #319), i.e. 0.92–0.96 of 50 GB/s,
/// and "on an NVIDIA DGX-A100 system we have 8x200Gbit/s IB cards and we measure 192GB/s
/// AllReduce BusBW" (NVIDIA/nccl#812), 0.96 of 8 × 25 GB/s. The middle: 0.94.
pub const NET_EFFICIENCY: f64 = 0.94;

/// FP8 asked of a GPU that has no FP8 tensor cores.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{what} needs FP8 tensor cores, which the {gpu} does not have (FP8 arrived with Ada and \
     Hopper: h100, h200 and b200 in the catalogue have it, V100 and A100 do not, and a GPU of a \
     --hardware file has it only with peak_fp8_tflops); {fix}"
)]
pub struct NoFp8 {
    pub gpu: String,
    /// The option that asked for FP8 (`--precision fp8`, `--weights fp8`, …).
    pub what: String,
    /// What to do instead.
    pub fix: String,
}

/// One GPU model's peak rates and memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// Catalogue key, e.g. `a100-80gb` (command-line flags, JSON and file names use it).
    pub name: String,
    /// The name a reader knows it by, e.g. "A100 80GB" ([`GpuSpec::display_name`]); a GPU
    /// loaded from a file without one is shown by its key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display: String,
    /// Dense (no 2:4 sparsity) fp16/bf16 tensor-core peak, TFLOP/s.
    pub peak_bf16_tflops: f64,
    /// Dense TF32 tensor-core peak, TFLOP/s (0 where the GPU has none).
    #[serde(default)]
    pub peak_tf32_tflops: f64,
    /// Non-tensor fp32 peak, TFLOP/s.
    pub peak_fp32_tflops: f64,
    /// fp64 peak (tensor core where available), TFLOP/s.
    pub peak_fp64_tflops: f64,
    /// Memory size, GB (10⁹ bytes, as vendors count).
    pub memory_gb: f64,
    /// Memory bandwidth, GB/s.
    pub memory_bandwidth_gbs: f64,
    /// Default intra-node link name.
    pub intra_node_link: String,
    /// Dense FP8 tensor-core peak, TFLOP/s (0 where the GPU has no FP8: V100, A100).
    #[serde(default)]
    pub peak_fp8_tflops: f64,
    /// Compute NICs (inter-node ports) per node of this GPU's usual system; 0 means one per
    /// GPU, the rail-optimised layout of DGX/HGX A100, H100, H200 and B200 (each GPU's own NIC
    /// on its own PCIe switch, every node's NIC `i` on leaf switch `i`). A node with fewer
    /// NICs than GPUs (4 × 200 Gb/s for 8 A100s is common) shares each NIC among the GPUs of
    /// its PCIe switch; `--nics` overrides it per command.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nics_per_node: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl GpuSpec {
    /// Peak rate in FLOP/s for arithmetic in `dtype` (f32 uses the non-tensor fp32 rate, as the
    /// engine's reference computes in true fp32).
    pub fn peak_flops(&self, dtype: DType) -> f64 {
        1e12 * match dtype {
            DType::Bf16 | DType::F16 => self.peak_bf16_tflops,
            DType::F32 => self.peak_fp32_tflops,
            DType::F64 => self.peak_fp64_tflops,
        }
    }

    /// The dense FP8 tensor-core rate in FLOP/s, or [`NoFp8`] naming `what` asked for it and
    /// `fix`: a GPU without FP8 tensor cores (V100, A100; a user GPU without
    /// `peak_fp8_tflops`) is refused, never priced at its 16-bit rate without a word.
    pub fn require_fp8(&self, what: &str, fix: &str) -> Result<f64, NoFp8> {
        if self.peak_fp8_tflops > 0.0 {
            Ok(self.peak_fp8_tflops * 1e12)
        } else {
            Err(NoFp8 {
                gpu: self.display_name().to_string(),
                what: what.to_string(),
                fix: fix.to_string(),
            })
        }
    }

    /// Memory in bytes.
    pub fn memory_bytes(&self) -> f64 {
        self.memory_gb * 1e9
    }

    /// The name to show a reader: the display name, or the key where there is none.
    pub fn display_name(&self) -> &str {
        if self.display.is_empty() {
            &self.name
        } else {
            &self.display
        }
    }

    /// The built-in GPUs.
    pub fn catalogue() -> Vec<GpuSpec> {
        let g = |name: &str, bf16, tf32, fp32, fp64, mem, bw, link: &str| GpuSpec {
            name: name.to_string(),
            display: match name {
                "v100" => "V100 32GB",
                "a100-40gb" => "A100 40GB",
                "a100-80gb" => "A100 80GB",
                "h100-sxm" => "H100 SXM",
                "h200" => "H200",
                "b200" => "B200",
                other => other,
            }
            .to_string(),
            peak_bf16_tflops: bf16,
            peak_tf32_tflops: tf32,
            peak_fp32_tflops: fp32,
            peak_fp64_tflops: fp64,
            memory_gb: mem,
            memory_bandwidth_gbs: bw,
            intra_node_link: link.to_string(),
            // Dense FP8 is twice the dense 16-bit rate on Hopper and Blackwell (datasheets:
            // H100/H200 SXM 3958 TFLOPS FP8 with sparsity = 1979 dense; HGX B200 4.5 PF
            // dense); Volta and Ampere have none.
            peak_fp8_tflops: if link == "nvlink4" || link == "nvlink5" {
                2.0 * bf16
            } else {
                0.0
            },
            // DGX A100 (8 × ConnectX-6 200 Gb/s for compute), DGX H100/H200 (8 × ConnectX-7
            // 400 Gb/s), DGX B200 (8 × ConnectX-7 400 Gb/s) datasheets: one compute NIC per
            // GPU. V100 DGX-1/2 nodes vary (4 to 8 EDR/HDR ports): also one per GPU here.
            nics_per_node: 0,
        };
        vec![
            // NVIDIA Tesla V100 datasheet (SXM2, 32 GB): 125 TFLOPS tensor (fp16), 15.7 fp32,
            // 7.8 fp64, 900 GB/s HBM2. No bf16/tf32: the fp16 rate is used for both 2-byte types.
            g("v100", 125.0, 0.0, 15.7, 7.8, 32.0, 900.0, "nvlink2"),
            // NVIDIA A100 datasheet (SXM4 40 GB): 312 TFLOPS bf16/fp16 dense, 156 tf32, 19.5 fp32,
            // 19.5 fp64 tensor, 1555 GB/s HBM2.
            g(
                "a100-40gb",
                312.0,
                156.0,
                19.5,
                19.5,
                40.0,
                1555.0,
                "nvlink3",
            ),
            // NVIDIA A100 datasheet (SXM4 80 GB): same rates, 2039 GB/s HBM2e.
            g(
                "a100-80gb",
                312.0,
                156.0,
                19.5,
                19.5,
                80.0,
                2039.0,
                "nvlink3",
            ),
            // NVIDIA H100 datasheet (SXM5 80 GB): 989 TFLOPS bf16 dense (1979 with sparsity),
            // 494.5 tf32, 67 fp32, 67 fp64 tensor, 3.35 TB/s HBM3.
            g(
                "h100-sxm", 989.0, 494.5, 67.0, 67.0, 80.0, 3350.0, "nvlink4",
            ),
            // NVIDIA H200 datasheet (SXM 141 GB): H100 compute, 141 GB HBM3e at 4.8 TB/s.
            g("h200", 989.0, 494.5, 67.0, 67.0, 141.0, 4800.0, "nvlink4"),
            // NVIDIA HGX B200 datasheet (1000 W): 2.25 PFLOPS bf16 dense (4.5 sparse), 1.1 PF
            // tf32, 80 fp32, 40 fp64; DGX B200 datasheet: 1440 GB and 64 TB/s for 8 GPUs, i.e.
            // 180 GB and 8 TB/s each.
            g("b200", 2250.0, 1100.0, 80.0, 40.0, 180.0, 8000.0, "nvlink5"),
        ]
    }
}

/// A link: bandwidth per GPU per direction and a per-step latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Catalogue key, e.g. `nvlink3`, `ib-ndr-400` (command-line flags, JSON and file names
    /// use it).
    pub name: String,
    /// The name a reader knows it by, e.g. "InfiniBand NDR 400 Gb/s"
    /// ([`LinkSpec::display_name`]); a link loaded from a file without one is shown by its key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display: String,
    /// Peak bandwidth per GPU per direction, GB/s.
    pub bandwidth_gbs: f64,
    /// Latency α per communication step, microseconds.
    pub latency_us: f64,
}

impl LinkSpec {
    /// Peak bytes per second per direction.
    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        self.bandwidth_gbs * 1e9
    }

    /// The name to show a reader: the display name, or the key where there is none.
    pub fn display_name(&self) -> &str {
        if self.display.is_empty() {
            &self.name
        } else {
            &self.display
        }
    }

    /// The built-in links. Bandwidths are per GPU per direction (vendors quote NVLink totals
    /// in both directions; we halve them). Latencies are assumptions of the order nccl-tests
    /// shows for small messages (see docs/calibration.md), not datasheet figures.
    pub fn catalogue() -> Vec<LinkSpec> {
        let l = |name: &str, bw, lat| LinkSpec {
            name: name.to_string(),
            display: match name {
                "nvlink2" => "NVLink 2",
                "nvlink3" => "NVLink 3",
                "nvlink4" => "NVLink 4",
                "nvlink5" => "NVLink 5",
                "pcie4" => "PCIe 4.0 x16",
                "pcie5" => "PCIe 5.0 x16",
                "ib-hdr-200" => "InfiniBand HDR 200 Gb/s",
                "ib-ndr-400" => "InfiniBand NDR 400 Gb/s",
                "ib-xdr-800" => "InfiniBand XDR 800 Gb/s",
                "roce-400" => "RoCE 400 GbE",
                "eth-100" => "Ethernet 100 GbE",
                other => other,
            }
            .to_string(),
            bandwidth_gbs: bw,
            latency_us: lat,
        };
        vec![
            // V100 datasheet: NVLink 2, 300 GB/s total per GPU (6 links × 50 GB/s) → 150 each way.
            l("nvlink2", 150.0, 3.0),
            // A100 datasheet: NVLink 3 with NVSwitch, 600 GB/s per GPU → 300 each way.
            l("nvlink3", 300.0, 3.0),
            // H100 datasheet: NVLink 4 with NVSwitch, 900 GB/s per GPU → 450 each way.
            l("nvlink4", 450.0, 3.0),
            // HGX B200 datasheet: NVLink 5 with NVSwitch, 1.8 TB/s per GPU → 900 each way.
            l("nvlink5", 900.0, 3.0),
            // PCI-SIG: PCIe 4.0 x16 = 16 GT/s × 16 lanes, 128b/130b → 31.5 GB/s each way.
            l("pcie4", 31.5, 5.0),
            // PCI-SIG: PCIe 5.0 x16 = 32 GT/s × 16 lanes → 63 GB/s each way.
            l("pcie5", 63.0, 5.0),
            // NVIDIA ConnectX-6 / InfiniBand HDR: 200 Gb/s per port (one per GPU in DGX A100)
            // → 25 GB/s each way.
            l("ib-hdr-200", 25.0, 6.0),
            // NVIDIA ConnectX-7 / InfiniBand NDR: 400 Gb/s per port (one per GPU in DGX H100)
            // → 50 GB/s each way.
            l("ib-ndr-400", 50.0, 6.0),
            // NVIDIA ConnectX-8 / InfiniBand XDR (Quantum-X800): 800 Gb/s per port, one per GPU
            // in B300/GB300 systems → 100 GB/s each way.
            l("ib-xdr-800", 100.0, 6.0),
            // RoCE over 400 GbE (ConnectX-7 / BlueField-3 in Ethernet mode, Spectrum-X): 400 Gb/s
            // per GPU → 50 GB/s each way; α an assumption a little above InfiniBand's.
            l("roce-400", 50.0, 8.0),
            // 100 GbE per GPU (cloud instances without a GPU fabric): 12.5 GB/s each way.
            l("eth-100", 12.5, 10.0),
        ]
    }
}

/// Why a hardware description is rejected.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum HardwareError {
    #[error("unknown GPU '{name}'; known GPUs: {}", known.join(", "))]
    UnknownGpu { name: String, known: Vec<String> },
    #[error("unknown link '{name}'; known links: {}", known.join(", "))]
    UnknownLink { name: String, known: Vec<String> },
    #[error("hardware TOML is invalid: {message}")]
    Toml { message: String },
    #[error("{what} '{name}': {field} must be a positive number (got {value}); latency may be 0")]
    NotPositive {
        what: &'static str,
        name: String,
        field: &'static str,
        value: f64,
    },
    #[error(
        "{what} '{name}': {field} = {value} is outside the physical range {min} to {max} {unit}"
    )]
    OutOfRange {
        what: &'static str,
        name: String,
        field: &'static str,
        value: f64,
        min: f64,
        max: f64,
        unit: &'static str,
    },
    #[error("every {what} in the hardware TOML needs a name of 1 to 64 printable characters, no control characters (got '{}')", name.escape_debug())]
    BadName { what: &'static str, name: String },
    #[error("the cluster needs at least one GPU and one GPU per node (got {gpus} GPUs, {gpus_per_node} per node)")]
    EmptyCluster { gpus: usize, gpus_per_node: usize },
    #[error("{gpus} GPUs is over the limit of {max} the cost model accepts; use fewer GPUs")]
    TooManyGpus { gpus: usize, max: usize },
    #[error(
        "{gpus} GPUs cannot be laid out as whole nodes of {gpus_per_node}: use a multiple of \
         {gpus_per_node}, or fewer GPUs than one node"
    )]
    PartialNode { gpus: usize, gpus_per_node: usize },
}

/// GPUs and links known by name: the built-ins plus any loaded from TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catalogue {
    pub gpus: Vec<GpuSpec>,
    pub links: Vec<LinkSpec>,
}

impl Default for Catalogue {
    fn default() -> Self {
        Catalogue {
            gpus: GpuSpec::catalogue(),
            links: LinkSpec::catalogue(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    #[serde(default)]
    gpu: Vec<GpuSpec>,
    #[serde(default)]
    link: Vec<LinkSpec>,
}

impl Catalogue {
    /// Adds (or replaces, by name) GPUs and links from TOML text:
    ///
    /// ```toml
    /// [[gpu]]
    /// name = "my-gpu"
    /// peak_bf16_tflops = 400.0
    /// peak_fp32_tflops = 40.0
    /// peak_fp64_tflops = 20.0
    /// memory_gb = 96.0
    /// memory_bandwidth_gbs = 3000.0
    /// intra_node_link = "nvlink4"
    ///
    /// [[link]]
    /// name = "roce-100"
    /// bandwidth_gbs = 12.5
    /// latency_us = 8.0
    /// ```
    pub fn from_toml(mut self, text: &str) -> Result<Self, HardwareError> {
        let file: TomlFile = toml::from_str(text).map_err(|e| HardwareError::Toml {
            message: e.to_string(),
        })?;
        for l in file.link {
            check_name("link", &l.name)?;
            // Latency may be zero (a pure-bandwidth link); bandwidth must be positive.
            for (field, value, min, max, unit) in [
                ("bandwidth_gbs", l.bandwidth_gbs, 1e-3, 1e5, "GB/s"),
                ("latency_us", l.latency_us, 0.0, 1e6, "µs"),
            ] {
                check_value("link", &l.name, field, value, min, max, unit)?;
            }
            self.links
                .retain(|x| canonical_link(&x.name) != canonical_link(&l.name));
            self.links.push(l);
        }
        for g in file.gpu {
            check_name("GPU", &g.name)?;
            for (field, value, min, max, unit) in [
                ("peak_bf16_tflops", g.peak_bf16_tflops, 1e-3, 1e5, "TFLOP/s"),
                ("peak_fp32_tflops", g.peak_fp32_tflops, 1e-3, 1e5, "TFLOP/s"),
                ("peak_fp64_tflops", g.peak_fp64_tflops, 1e-3, 1e5, "TFLOP/s"),
                ("memory_gb", g.memory_gb, 1e-3, 1e5, "GB"),
                (
                    "memory_bandwidth_gbs",
                    g.memory_bandwidth_gbs,
                    1e-3,
                    1e6,
                    "GB/s",
                ),
            ] {
                check_value("GPU", &g.name, field, value, min, max, unit)?;
            }
            // FP8 may be absent (0: no FP8 tensor cores).
            if g.peak_fp8_tflops != 0.0 {
                check_value(
                    "GPU",
                    &g.name,
                    "peak_fp8_tflops",
                    g.peak_fp8_tflops,
                    1e-3,
                    1e5,
                    "TFLOP/s",
                )?;
            }
            // TF32 may be absent (0: no TF32 tensor cores).
            if g.peak_tf32_tflops != 0.0 {
                check_value(
                    "GPU",
                    &g.name,
                    "peak_tf32_tflops",
                    g.peak_tf32_tflops,
                    1e-3,
                    1e5,
                    "TFLOP/s",
                )?;
            }
            if g.nics_per_node > MAX_NICS_PER_NODE {
                check_value(
                    "GPU",
                    &g.name,
                    "nics_per_node",
                    g.nics_per_node as f64,
                    1.0,
                    MAX_NICS_PER_NODE as f64,
                    "NICs",
                )?;
            }
            self.link(&g.intra_node_link)?;
            self.gpus
                .retain(|x| canonical_gpu(&x.name) != canonical_gpu(&g.name));
            self.gpus.push(g);
        }
        Ok(self)
    }

    /// A GPU by name, matched case-insensitively the same way for built-in and TOML GPUs; also
    /// accepts the family names `a100` (80 GB), `h100`, `b200`.
    pub fn gpu(&self, name: &str) -> Result<GpuSpec, HardwareError> {
        let key = canonical_gpu(name);
        self.gpus
            .iter()
            .rev() // a later TOML entry overrides an earlier one of the same name
            .find(|g| canonical_gpu(&g.name) == key)
            .cloned()
            .ok_or_else(|| HardwareError::UnknownGpu {
                name: name.to_string(),
                known: self.gpus.iter().map(|g| g.name.clone()).collect(),
            })
    }

    /// A link by name, matched case-insensitively; also accepts `ib200`, `ib400`.
    pub fn link(&self, name: &str) -> Result<LinkSpec, HardwareError> {
        let key = canonical_link(name);
        self.links
            .iter()
            .rev()
            .find(|l| canonical_link(&l.name) == key)
            .cloned()
            .ok_or_else(|| HardwareError::UnknownLink {
                name: name.to_string(),
                known: self.links.iter().map(|l| l.name.clone()).collect(),
            })
    }
}

/// The one way GPU names are compared: trimmed, lower-case, family aliases resolved.
fn canonical_gpu(name: &str) -> String {
    let key = name.trim().to_lowercase();
    match key.as_str() {
        "a100" => "a100-80gb".to_string(),
        "h100" | "h100-80gb" => "h100-sxm".to_string(),
        "h200-sxm" => "h200".to_string(),
        _ => key,
    }
}

/// The one way link names are compared: trimmed, lower-case, aliases resolved.
fn canonical_link(name: &str) -> String {
    let key = name.trim().to_lowercase();
    match key.as_str() {
        "ib200" | "hdr" => "ib-hdr-200".to_string(),
        "ib400" | "ndr" => "ib-ndr-400".to_string(),
        "ib800" | "xdr" => "ib-xdr-800".to_string(),
        "roce400" | "roce" => "roce-400".to_string(),
        "eth100" => "eth-100".to_string(),
        _ => key,
    }
}

fn check_name(what: &'static str, name: &str) -> Result<(), HardwareError> {
    let n = name.trim();
    if n.is_empty() || n.chars().count() > 64 || n.chars().any(char::is_control) {
        return Err(HardwareError::BadName {
            what,
            name: name.chars().take(80).collect(),
        });
    }
    Ok(())
}

fn check_value(
    what: &'static str,
    name: &str,
    field: &'static str,
    value: f64,
    min: f64,
    max: f64,
    unit: &'static str,
) -> Result<(), HardwareError> {
    if !value.is_finite() || value < 0.0 || (value == 0.0 && min > 0.0) {
        return Err(HardwareError::NotPositive {
            what,
            name: name.to_string(),
            field,
            value,
        });
    }
    if value < min || value > max {
        return Err(HardwareError::OutOfRange {
            what,
            name: name.to_string(),
            field,
            value,
            min,
            max,
            unit,
        });
    }
    Ok(())
}

/// `nodes × gpus_per_node` GPUs of one kind, with the links inside and between nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    pub gpu: GpuSpec,
    pub gpus: usize,
    pub gpus_per_node: usize,
    pub intra_node: LinkSpec,
    pub inter_node: LinkSpec,
    /// Compute NICs per node, each an `inter_node` port; 0 means one per GPU
    /// ([`Cluster::nics`]).
    #[serde(default)]
    pub nics_per_node: usize,
}

/// A cluster's shape rules: some GPUs, at most [`MAX_GPUS`], and whole nodes past the first.
fn check_shape(gpus: usize, gpus_per_node: usize) -> Result<(), HardwareError> {
    if gpus == 0 || gpus_per_node == 0 {
        return Err(HardwareError::EmptyCluster {
            gpus,
            gpus_per_node,
        });
    }
    if gpus > MAX_GPUS {
        return Err(HardwareError::TooManyGpus {
            gpus,
            max: MAX_GPUS,
        });
    }
    if gpus > gpus_per_node && !gpus.is_multiple_of(gpus_per_node) {
        return Err(HardwareError::PartialNode {
            gpus,
            gpus_per_node,
        });
    }
    Ok(())
}

impl Cluster {
    /// Builds a cluster from catalogue names; the intra-node link is the GPU's default.
    pub fn new(
        catalogue: &Catalogue,
        gpu: &str,
        gpus: usize,
        gpus_per_node: usize,
        inter_node: &str,
    ) -> Result<Self, HardwareError> {
        check_shape(gpus, gpus_per_node)?;
        let gpu = catalogue.gpu(gpu)?;
        let intra_node = catalogue.link(&gpu.intra_node_link)?;
        let inter_node = catalogue.link(inter_node)?;
        let nics_per_node = gpu.nics_per_node;
        Ok(Cluster {
            gpu,
            gpus,
            gpus_per_node,
            intra_node,
            inter_node,
            nics_per_node,
        })
    }

    /// The same nodes and links with `gpus` GPUs (a plan sweep's GPU axis).
    ///
    /// **Errors** as [`Cluster::new`]: no GPUs, more than [`MAX_GPUS`], or a partial node.
    pub fn with_gpus(&self, gpus: usize) -> Result<Self, HardwareError> {
        check_shape(gpus, self.gpus_per_node)?;
        Ok(Cluster {
            gpus,
            ..self.clone()
        })
    }

    /// The same cluster with `nics` compute NICs per node (0: one per GPU).
    ///
    /// **Errors** when `nics` is over [`MAX_NICS_PER_NODE`].
    pub fn with_nics(mut self, nics: usize) -> Result<Self, HardwareError> {
        if nics > MAX_NICS_PER_NODE {
            return Err(HardwareError::OutOfRange {
                what: "cluster",
                name: "nics".to_string(),
                field: "nics_per_node",
                value: nics as f64,
                min: 1.0,
                max: MAX_NICS_PER_NODE as f64,
                unit: "NICs",
            });
        }
        self.nics_per_node = nics;
        Ok(self)
    }

    /// Compute NICs per node: the catalogue's or `--nics`, one per GPU where neither says.
    pub fn nics(&self) -> usize {
        if self.nics_per_node == 0 {
            self.gpus_per_node.max(1)
        } else {
            self.nics_per_node
        }
    }

    /// What one GPU's share of the node's NICs moves across nodes, bytes/s per direction:
    /// `nics / gpus_per_node` ports × the port's rate × [`NET_EFFICIENCY`] (rail-optimised:
    /// every GPU drives its own NIC, or its share of one its PCIe switch holds).
    pub fn nic_bytes_per_s_per_gpu(&self) -> f64 {
        self.nics() as f64 / self.gpus_per_node.max(1) as f64
            * self.inter_node.bandwidth_bytes_per_s()
            * NET_EFFICIENCY
    }

    /// The smallest cluster of whole `gpus_per_node` nodes with at least `gpus` GPUs (e.g. for
    /// modelling a trace at TP=16 on 8-GPU nodes: 2 nodes, the TP group spans them).
    pub fn covering(
        catalogue: &Catalogue,
        gpu: &str,
        gpus: usize,
        gpus_per_node: usize,
        inter_node: &str,
    ) -> Result<Self, HardwareError> {
        let whole = match gpus.checked_next_multiple_of(gpus_per_node) {
            Some(whole) => whole,
            // Nodes of no GPUs: `new` refuses them by name.
            None if gpus_per_node == 0 => gpus,
            None => {
                return Err(HardwareError::TooManyGpus {
                    gpus,
                    max: MAX_GPUS,
                })
            }
        };
        Cluster::new(catalogue, gpu, whole, gpus_per_node, inter_node)
    }

    /// Nodes in the cluster.
    pub fn nodes(&self) -> usize {
        self.gpus.div_ceil(self.gpus_per_node.max(1))
    }

    /// Whether a group of `size` ranks at rank stride `stride` (starting at rank 0) touches
    /// more than one node. Megatron orders ranks TP fastest, then DP, then PP, so a TP group
    /// has stride 1, a DP group stride `tp`, a PP group stride `tp·dp`.
    pub fn group_spans_nodes(&self, stride: usize, size: usize) -> bool {
        size > 1 && (size - 1).saturating_mul(stride) / self.gpus_per_node.max(1) > 0
    }

    /// The link a group pays: the inter-node link when it spans nodes (the bottleneck), else
    /// the intra-node one.
    /// Bytes/s one GPU of a group of `size` ranks at `stride` sends to another: its share of
    /// the node's NICs ([`Cluster::nic_bytes_per_s_per_gpu`]) where the group spans nodes, the
    /// intra-node link × [`crate::capacity::cost::LINK_EFFICIENCY`] where it does not.
    pub fn p2p_bytes_per_s(&self, stride: usize, size: usize) -> f64 {
        if self.group_spans_nodes(stride, size) {
            self.nic_bytes_per_s_per_gpu()
        } else {
            self.intra_node.bandwidth_bytes_per_s() * crate::capacity::cost::LINK_EFFICIENCY
        }
    }

    /// Ranks of a group of `size` at `stride` inside each node it touches.
    pub fn group_ranks_per_node(&self, stride: usize, size: usize) -> usize {
        let g = self.gpus_per_node.max(1);
        if stride >= g {
            1
        } else {
            (g / stride.max(1)).clamp(1, size.max(1))
        }
    }

    /// The link an α–β ring over a group of `size` at `stride` runs at, as one link whose
    /// rate × [`crate::capacity::cost::LINK_EFFICIENCY`] is the ring's bus bandwidth: the
    /// intra-node link inside a node; across nodes the smaller of the NVLink share (`r/(r−1)`
    /// of the link, `r` the group's ranks per node) and the NICs those ranks drive
    /// (`r · nics / gpus_per_node` ports × [`NET_EFFICIENCY`]), NCCL spreading its channels
    /// over the node's NICs (the model of [`crate::capacity::nccl`]), with the network's
    /// latency.
    pub fn group_ring_link(&self, stride: usize, size: usize) -> LinkSpec {
        if !self.group_spans_nodes(stride, size) {
            return self.intra_node.clone();
        }
        let eff = crate::capacity::cost::LINK_EFFICIENCY;
        let r = self.group_ranks_per_node(stride, size) as f64;
        let net = r * self.nic_bytes_per_s_per_gpu();
        let nvlink = if r > 1.0 {
            self.intra_node.bandwidth_bytes_per_s() * eff * r / (r - 1.0)
        } else {
            f64::INFINITY
        };
        LinkSpec {
            bandwidth_gbs: net.min(nvlink) / eff / 1e9,
            ..self.inter_node.clone()
        }
    }

    /// The link one GPU's sends to another GPU of the group run at, as one link whose rate ×
    /// [`crate::capacity::cost::LINK_EFFICIENCY`] is [`Cluster::p2p_bytes_per_s`].
    pub fn group_p2p_link(&self, stride: usize, size: usize) -> LinkSpec {
        if !self.group_spans_nodes(stride, size) {
            return self.intra_node.clone();
        }
        LinkSpec {
            bandwidth_gbs: self.p2p_bytes_per_s(stride, size)
                / crate::capacity::cost::LINK_EFFICIENCY
                / 1e9,
            ..self.inter_node.clone()
        }
    }

    pub fn group_link(&self, stride: usize, size: usize) -> &LinkSpec {
        if self.group_spans_nodes(stride, size) {
            &self.inter_node
        } else {
            &self.intra_node
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_gpu_lists_known() {
        let err = Catalogue::default().gpu("tpu-v5").unwrap_err();
        assert!(matches!(err, HardwareError::UnknownGpu { .. }));
        let msg = err.to_string();
        for name in ["v100", "a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200"] {
            assert!(msg.contains(name), "{msg}");
        }
        assert!(matches!(
            Catalogue::default().link("ethernet-1g"),
            Err(HardwareError::UnknownLink { .. })
        ));
    }

    #[test]
    fn user_toml_adds_gpu_and_link() {
        let text = r#"
            [[gpu]]
            name = "my-gpu"
            peak_bf16_tflops = 400.0
            peak_fp32_tflops = 40.0
            peak_fp64_tflops = 20.0
            memory_gb = 96.0
            memory_bandwidth_gbs = 3000.0
            intra_node_link = "roce-100"

            [[link]]
            name = "roce-100"
            bandwidth_gbs = 12.5
            latency_us = 8.0
        "#;
        let cat = Catalogue::default().from_toml(text).unwrap();
        let c = Cluster::new(&cat, "my-gpu", 16, 8, "roce-100").unwrap();
        assert_eq!(c.gpu.peak_bf16_tflops, 400.0);
        assert_eq!(c.intra_node.bandwidth_gbs, 12.5);
        let bad = text.replace("memory_gb = 96.0", "memory_gb = -1.0");
        assert!(matches!(
            Catalogue::default().from_toml(&bad),
            Err(HardwareError::NotPositive {
                field: "memory_gb",
                ..
            })
        ));
        assert!(matches!(
            Catalogue::default().from_toml("[[gpu]]\nname = 3"),
            Err(HardwareError::Toml { .. })
        ));
    }

    #[test]
    fn toml_names_match_one_way_and_absurd_values_are_refused() {
        let gpu = |name: &str, bf16: &str| {
            format!(
                "[[gpu]]\nname = \"{name}\"\npeak_bf16_tflops = {bf16}\npeak_fp32_tflops = 40.0\n\
                 peak_fp64_tflops = 20.0\nmemory_gb = 96.0\nmemory_bandwidth_gbs = 3000.0\n\
                 intra_node_link = \"NVLink4\"\n"
            )
        };
        // The issue's example: a GPU named "MyGPU" could not be selected by that name.
        let cat = Catalogue::default()
            .from_toml(&gpu("MyGPU", "400.0"))
            .unwrap();
        for name in ["MyGPU", "mygpu", " MYGPU "] {
            assert_eq!(cat.gpu(name).unwrap().name, "MyGPU", "{name}");
        }
        assert!(Cluster::new(&cat, "MyGPU", 8, 8, "ib400").is_ok());
        // A second definition with another case replaces the first.
        let cat = cat.from_toml(&gpu("mygpu", "500.0")).unwrap();
        assert_eq!(cat.gpu("MyGPU").unwrap().peak_bf16_tflops, 500.0);
        assert_eq!(
            cat.gpus
                .iter()
                .filter(|g| g.name.eq_ignore_ascii_case("mygpu"))
                .count(),
            1
        );
        // 1e-300 TFLOP/s was accepted.
        let err = Catalogue::default()
            .from_toml(&gpu("slow", "1e-300"))
            .unwrap_err();
        assert!(
            matches!(
                err,
                HardwareError::OutOfRange {
                    field: "peak_bf16_tflops",
                    ..
                }
            ),
            "{err}"
        );
        for bad in ["0.0", "-1.0", "nan", "inf", "1e9"] {
            assert!(
                Catalogue::default().from_toml(&gpu("x", bad)).is_err(),
                "{bad}"
            );
        }
        // A misspelt table or key is an error, not ignored.
        let err = Catalogue::default()
            .from_toml(&gpu("x", "1.0").replace("[[gpu]]", "[[gpus]]"))
            .unwrap_err();
        assert!(err.to_string().contains("gpus"), "{err}");
        let err = Catalogue::default()
            .from_toml(&gpu("x", "1.0").replace("memory_gb", "memory_gib"))
            .unwrap_err();
        assert!(err.to_string().contains("memory_gib"), "{err}");
        assert!(matches!(
            Catalogue::default().from_toml(&gpu("", "1.0")),
            Err(HardwareError::BadName { .. })
        ));
    }

    #[test]
    fn cluster_sizes_are_checked() {
        let cat = Catalogue::default();
        // --gpus-per-node 0 used to be taken as 1.
        assert!(matches!(
            Cluster::covering(&cat, "h100", 4, 0, "ib400"),
            Err(HardwareError::EmptyCluster {
                gpus_per_node: 0,
                ..
            })
        ));
        assert!(matches!(
            Cluster::covering(&cat, "h100", usize::MAX, 8, "ib400"),
            Err(HardwareError::TooManyGpus { .. })
        ));
        assert!(matches!(
            Cluster::new(&cat, "h100", 100_000_000_000, 8, "ib400"),
            Err(HardwareError::TooManyGpus { .. })
        ));
    }

    #[test]
    fn groups_spanning_nodes() {
        let c = Cluster::new(&Catalogue::default(), "a100", 64, 8, "ib400").unwrap();
        assert!(!c.group_spans_nodes(1, 8));
        assert!(c.group_spans_nodes(1, 16));
        assert!(c.group_spans_nodes(8, 2)); // DP over TP=8 groups: next node
        assert!(!c.group_spans_nodes(2, 4)); // DP=4 over TP=2 stays in the node
        assert_eq!(c.group_link(1, 16).name, "ib-ndr-400");
        assert!(matches!(
            Cluster::new(&Catalogue::default(), "a100", 12, 8, "ib400"),
            Err(HardwareError::PartialNode { .. })
        ));
        let c = Cluster::covering(&Catalogue::default(), "h100", 12, 8, "ib400").unwrap();
        assert_eq!((c.gpus, c.nodes()), (16, 2));
    }
}
