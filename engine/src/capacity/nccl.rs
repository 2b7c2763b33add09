//! Collectives as NCCL runs them and as nccl-tests reports them.
//!
//! NCCL's tuner (`src/graph/tuning.cc`) gives every (algorithm, protocol) pair a latency and a
//! bandwidth and runs each collective with the pair whose `latency + size / bandwidth` is
//! smallest. This module does the same for ring, double binary tree and NVLS (NVSwitch
//! reduction, SHARP inside the switch) with the LL, LL128 and Simple protocols:
//!
//! - **Ring**: latency `baseLat + (steps − interSteps)·hwLat_intra + interSteps·hwLat_net`,
//!   bandwidth term `bytes_sent_per_rank / busBw`; the steps (`2(n−1)` for all-reduce, `n−1`
//!   for all-gather and reduce-scatter) and the busiest rank's bytes come from the engine's own
//!   ring schedule ([`crate::collectives::summary`]), nothing here recounts them.
//! - **Tree** (all-reduce only, as in NCCL): NCCL's double binary tree is not the collectives
//!   module's binomial tree, so its latency is NCCL's `2·((n/nodes − 1)·hwLat_intra +
//!   log2(nodes)·hwLat_net)` and its algorithm bandwidth NCCL's `busBw/2`, with NCCL's cap on
//!   tree bandwidth and its medium-size correction table.
//! - **NVLS** (all-reduce inside one NVSwitch node of Hopper or Blackwell): the switch reduces,
//!   so each GPU sends its buffer once and receives the result once (`size·(n+1)/n` each way
//!   with the reduce-scatter/all-gather split); Simple protocol only. Priced as the larger of
//!   one pass of NCCL's NVLS channels (a 28 µs latency + the busiest channel's bytes at one
//!   channel's rate, where the busiest channel's share depends on the NCCL release: ≤ 2.19
//!   fills 16 KiB chunks channel by channel, ≥ 2.20 splits the message evenly) and the
//!   transfer at a bandwidth that ramps with log2(size) as NCCL grows its chunks
//!   ([`nvls_time_us`], [`NcclVersion`]).
//! - Protocols (NCCL): LL carries 4 bytes of data per 8 (bandwidth ×1/4 for all-reduce, ×1/3
//!   otherwise, in NCCL's accounting) at the lowest latency; LL128 120 of 128 bytes (×0.92);
//!   Simple all of it at the highest latency.
//!
//! The per-GPU bus bandwidth is the link's per-direction peak times
//! [`crate::capacity::cost::LINK_EFFICIENCY`] (the bottleneck link when the group spans nodes), capped
//! at 235 GB/s on NVLink 3 as NCCL caps A100 (`compCap80`). Every constant is in
//! `docs/calibration.md` with its source and what was fitted.

use crate::capacity::cost::{busbw_factor, LINK_EFFICIENCY};
use crate::capacity::hardware::{Cluster, LinkSpec, NET_EFFICIENCY};
use crate::collectives::CollectiveKind;
use crate::collectives::{self, Algorithm, CollectiveError};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// NCCL's algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NcclAlgo {
    Ring,
    Tree,
    Nvls,
    /// NVLS inside each node, a tree across nodes (NCCL's `NVLS_TREE`, Hopper and Blackwell
    /// multi-node all-reduce).
    #[serde(rename = "nvlstree")]
    NvlsTree,
    /// Grouped point-to-point sends (all-to-all, send/recv): no collective algorithm.
    P2p,
}

impl NcclAlgo {
    pub const ALL: [NcclAlgo; 5] = [
        NcclAlgo::Ring,
        NcclAlgo::Tree,
        NcclAlgo::Nvls,
        NcclAlgo::NvlsTree,
        NcclAlgo::P2p,
    ];

    pub fn name(self) -> &'static str {
        match self {
            NcclAlgo::Ring => "ring",
            NcclAlgo::Tree => "tree",
            NcclAlgo::Nvls => "nvls",
            NcclAlgo::NvlsTree => "nvlstree",
            NcclAlgo::P2p => "p2p",
        }
    }
}

impl std::str::FromStr for NcclAlgo {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NcclAlgo::ALL
            .into_iter()
            .find(|a| a.name() == s.to_ascii_lowercase())
            .ok_or_else(|| {
                format!("unknown NCCL algorithm '{s}'; expected ring, tree, nvls, nvlstree or p2p")
            })
    }
}

/// NCCL's protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NcclProto {
    #[serde(rename = "LL")]
    Ll,
    #[serde(rename = "LL128")]
    Ll128,
    Simple,
}

impl NcclProto {
    pub const ALL: [NcclProto; 3] = [NcclProto::Ll, NcclProto::Ll128, NcclProto::Simple];

    pub fn name(self) -> &'static str {
        match self {
            NcclProto::Ll => "LL",
            NcclProto::Ll128 => "LL128",
            NcclProto::Simple => "Simple",
        }
    }

    fn index(self) -> usize {
        match self {
            NcclProto::Ll => 0,
            NcclProto::Ll128 => 1,
            NcclProto::Simple => 2,
        }
    }
}

impl std::str::FromStr for NcclProto {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NcclProto::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown NCCL protocol '{s}'; expected LL, LL128 or Simple"))
    }
}

/// NCCL `tuning.cc` `baseLat` (µs): Tree {LL, LL128, Simple}, Ring {LL, LL128, Simple}, as
/// NCCL 2.26 to 2.29 have it (`ncclTunerConstantsDefaults.baseLatencies` in 2.29.7); the ring
/// rows are the same from 2.18.1 on (2.18–2.25 have 0 for tree Simple).
pub const BASE_LAT_US: [[f64; 3]; 2] = [[6.8, 14.0, 8.4], [6.6, 14.0, 8.4]];
/// NCCL `tuning.cc` `hwLat` (µs per step) for NVLink, PCIe and network: Tree, Ring rows, NCCL
/// 2.26 to 2.29 (the ring rows unchanged since 2.18.1; 2.19–2.25 have 28 for tree Simple).
pub const HW_LAT_US: [[[f64; 3]; 2]; 3] = [
    [[0.6, 1.25, 4.0], [0.6, 1.9, 3.4]],
    [[1.0, 1.9, 4.0], [1.0, 2.5, 5.7]],
    [[5.0, 8.5, 14.0], [2.7, 4.0, 14.0]],
];
/// `baseLat` of NCCL 2.7.3 to 2.17 (`tuning.cc` before 2.18.1), for `--nccl 2.17` and older.
pub const BASE_LAT_US_2_17: [[f64; 3]; 2] = [[4.4, 4.4, 0.0], [3.6, 10.0, 8.4]];
/// `hwLat` of NCCL 2.7.3 to 2.17.
pub const HW_LAT_US_2_17: [[[f64; 3]; 2]; 3] = [
    [[0.52, 1.25, 28.0], [0.47, 1.9, 3.4]],
    [[1.0, 1.9, 28.0], [1.0, 2.5, 5.7]],
    [[5.0, 8.5, 50.0], [2.7, 4.0, 9.6]],
];
/// NCCL's medium-size correction of tree bandwidth, powers of two from 64 B to 128 MiB.
pub const TREE_CORRECTION: [[f64; 22]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.5, 0.6, 0.6, 0.7, 0.7,
        0.8, 0.9, 0.9, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.6,
        0.6, 0.7, 0.8, 0.9,
    ],
];
/// NVLS latency, µs (Simple protocol), what a message of ≤ 8 KiB takes. **Fitted**: the
/// middle of the two Azure nccl-tests runs with NCCL_ALGO=NVLS at 1–8 KiB, 25.6–27.0 µs
/// (ND H100 v5, NCCL 2.18.5) and 29.9–31.2 µs (ND H200 v5, NCCL 2.20.5).
pub const NVLS_LATENCY_US: f64 = 28.0;
/// NVLS channels (thread blocks) one all-reduce runs on NVLink 4: NCCL's `NVLS_NCHANNELS`
/// default, 16 (`src/transport/nvls.cc`, 2.18 to 2.29; `NVLS_NCHANNELS_SM90`). NVLink 5
/// (Blackwell) runs 32 (`NVLS_NCHANNELS_SM100`, NCCL 2.26).
pub const NVLS_CHANNELS_NVLINK4: u32 = 16;
/// ... and on NVLink 5.
pub const NVLS_CHANNELS_NVLINK5: u32 = 32;
/// NCCL's NVLS chunk (bytes per head per step) for messages below 8 MiB on 8 GPUs: `enqueue.cc`
/// halves NVLS's 128 KiB chunk to 16 KiB when `nBytes < 2·nChannels·nHeads·32 KiB` (the same
/// rule in 2.18.5 and 2.20.5).
pub const NVLS_SMALL_CHUNK_BYTES: u64 = 16 << 10;
/// How fast one NVLS channel (one thread block: scatter, multimem reduce, gather warps) moves
/// its share of a mid-size message, bytes/s. A pass over the message costs
/// [`NVLS_LATENCY_US`] + (bytes of the busiest channel) / this rate ([`nvls_channel_bytes`]).
/// **Fitted** on two points of one table: ND H200 v5 (NCCL 2.20.5) at 1 MiB (34.65 µs, 64 KiB
/// per channel: 9.86 GB/s) and 2 MiB (41.34 µs, 128 KiB per channel: 9.83 GB/s). Checked,
/// not fitted, against the ND H200 v5 rerun with NCCL 2.26.2 and against the ND H100 v5 run
/// with NCCL 2.18.5 from 64 KiB to 2 MiB, where NCCL ≤ 2.19's partition gives every busy
/// channel 128 KiB (docs/calibration.md).
pub const NVLS_CHANNEL_BYTES_PER_S: f64 = 9.85e9;
/// Achievable fraction of the NVLink per-direction peak for NVLS traffic of ≤ 4 MiB (NCCL runs
/// few channels). **Fitted**: to the Azure H100/H200 points from 4 MiB to 64 MiB.
pub const NVLS_START_EFFICIENCY: f64 = 0.322;
/// Achievable fraction of the NVLink per-direction peak for NVLS traffic of ≥ 512 MiB (all
/// channels). **Fitted**: to the Azure H100/H200 points from 128 MiB to 8 GiB (8 GiB within
/// −3%).
pub const NVLS_EFFICIENCY: f64 = 0.667;
/// The efficiency ramps log-linearly in the size from [`NVLS_START_EFFICIENCY`] at this size
/// ...
pub const NVLS_RAMP_FROM_BYTES: u64 = 4 << 20;
/// ... to [`NVLS_EFFICIENCY`] at this size.
pub const NVLS_RAMP_TO_BYTES: u64 = 512 << 20;
/// What one NCCL call costs on top of NCCL's own latency model for ring and tree, µs: the
/// kernel's launch, its proxy and flag handshake and the completion that nccl-tests' per-call
/// time includes and `tuning.cc`'s `baseLat + steps·hwLat` leaves out. **Fitted** (the value
/// with the smallest largest error over the two points) to: 4×H100 through vLLM's PyNccl in a
/// CUDA graph, 21 µs for 512 KiB where NCCL ≥ 2.18's tuner gives 15.8 (vllm-project/vllm PR
/// #24532, "TP = 4" table); 8×H200 nccl-tests, about 18 µs for 32 KiB where the tuner gives
/// 15.4 (the figure quoted in tplab issue 25). Checked on a whole CUDA-graph nccl-tests sweep of
/// 4×H100 with NCCL 2.29.2 (waynehacking8/nccl-collectives-bench
/// `results/symmetric/all_reduce_reg0_graph1.txt`). Eager nccl-tests with one thread driving
/// 4 GPUs on the same host floor at 23.3 µs (`results/quiet/all_reduce.txt`) and Azure's 8×A100
/// at 45 µs: launch-bound, 1.6–3.2× this model (docs/calibration.md). NVLS's
/// [`NVLS_LATENCY_US`] was fitted to whole nccl-tests times and already contains it. (With
/// NCCL ≤ 2.17's smaller latencies the same two points gave 7 µs.)
pub const NCCL_CALL_OVERHEAD_US: f64 = 3.8;
/// Bus bandwidth of NCCL's ring LL inside one NVLink 4 (Hopper) node, bytes/s: NCCL's tuner
/// prices it at 141 GB/s (`tuning.cc` `llMaxBws`, Hopper single node), more than a quarter of
/// the NVLink 4 rate × [`LINK_EFFICIENCY`] (90 GB/s). Read in NCCL 2.29's own tuner table
/// (waynehacking8/nccl-collectives-bench `results/scaling_attributed/g2_auto.log` and
/// `g4_auto.log`: AllReduce Ring LL algbw 141.0 GB/s on 2 H100s, 94.0 = 141·4/6 on 4). Doubled
/// on NVLink 5 (NCCL's Blackwell row, 2×141).
pub const HOPPER_LL_BUS_BW: f64 = 141e9;
/// NCCL's cap on A100 bus bandwidth (`compCap80`: `busBw = min(busBw, 235)`), GB/s.
pub const AMPERE_BUS_CAP_GBS: f64 = 235.0;

/// The NCCL release a prediction follows, `major.minor` (the patch level changes nothing the
/// model prices). What depends on it: `tuning.cc`'s ring and tree latencies
/// ([`NcclVersion::latencies`]) and how an NVLS all-reduce is split over its channels
/// ([`NcclVersion::nvls_contiguous_split`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NcclVersion {
    pub major: u32,
    pub minor: u32,
}

impl NcclVersion {
    /// The release the model follows unless told otherwise: 2.26 (Azure's latest H200 run,
    /// NCCL 2.26.2; everything from 2.20 on prices the same).
    pub const DEFAULT: NcclVersion = NcclVersion {
        major: 2,
        minor: 26,
    };
    /// The first release that splits one collective into contiguous per-channel slices.
    pub const CONTIGUOUS_SPLIT: NcclVersion = NcclVersion {
        major: 2,
        minor: 20,
    };

    pub const fn new(major: u32, minor: u32) -> NcclVersion {
        NcclVersion { major, minor }
    }

    /// NCCL 2.20 (2.20.3's "Optimize aggregated operations to better utilize all channels":
    /// `addTunedCollToPlan` in `src/enqueue.cc`, the `oneNode` branch of the NVLS kernel in
    /// `src/device/all_reduce.h`) gives each of the NVLS channels a contiguous slice of
    /// `size / nChannels`. Up to 2.19 the kernel strides over the message in loops of
    /// `nChannels · nHeads · chunk` (2 MiB on 8 GPUs), so a message below that fills channel
    /// 0 first (`nHeads` chunks of 16 KiB, 128 KiB) and the busiest channel carries
    /// `min(size, nHeads · chunk)`.
    pub fn nvls_contiguous_split(self) -> bool {
        self >= NcclVersion::CONTIGUOUS_SPLIT
    }

    /// `tuning.cc`'s (`baseLat`, `hwLat`) of this release: NCCL 2.18.1 raised the ring LL base
    /// latency from 3.6 to 6.6 µs and the NVLink LL step from 0.47 to 0.6 µs
    /// ([`BASE_LAT_US`], [`HW_LAT_US`]; before: [`BASE_LAT_US_2_17`], [`HW_LAT_US_2_17`]).
    pub fn latencies(self) -> (&'static [[f64; 3]; 2], &'static [[[f64; 3]; 2]; 3]) {
        if self >= NcclVersion::new(2, 18) {
            (&BASE_LAT_US, &HW_LAT_US)
        } else {
            (&BASE_LAT_US_2_17, &HW_LAT_US_2_17)
        }
    }
}

impl Default for NcclVersion {
    fn default() -> Self {
        NcclVersion::DEFAULT
    }
}

impl std::fmt::Display for NcclVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl std::str::FromStr for NcclVersion {
    type Err = String;
    /// `2.18`, `2.18.5` or `2.18.5-1`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "unknown NCCL version '{s}'; expected 2.MINOR, 2.MINOR.PATCH or \
                 2.MINOR.PATCH-BUILD, e.g. 2.18 or 2.20.5-1"
            )
        };
        let t = s.trim();
        let (version, build) = match t.split_once('-') {
            Some((v, b)) => (v, Some(b)),
            None => (t, None),
        };
        let parts: Vec<&str> = version.split('.').collect();
        // Each part a number of at most three digits (NCCL's are 2.x.y-z with small x, y, z).
        let number = |x: &str| {
            (!x.is_empty() && x.len() <= 3 && x.bytes().all(|b| b.is_ascii_digit()))
                .then(|| x.parse::<u32>().ok())
                .flatten()
        };
        if !(2..=3).contains(&parts.len())
            || parts.iter().any(|p| number(p).is_none())
            || build.is_some_and(|b| number(b).is_none())
        {
            return Err(bad());
        }
        let (major, minor) = (
            number(parts[0]).ok_or_else(bad)?,
            number(parts[1]).ok_or_else(bad)?,
        );
        if major != 2 {
            return Err(bad());
        }
        Ok(NcclVersion { major, minor })
    }
}

/// The hardware class of a link, as NCCL's latency table distinguishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    NvLink,
    Pcie,
    Net,
}

impl LinkKind {
    /// From a catalogue name: `nvlink*`, `pcie*`, anything else is a network.
    pub fn of(link: &LinkSpec) -> LinkKind {
        let n = link.name.to_ascii_lowercase();
        if n.starts_with("nvlink") {
            LinkKind::NvLink
        } else if n.starts_with("pcie") {
            LinkKind::Pcie
        } else {
            LinkKind::Net
        }
    }

    fn index(self) -> usize {
        match self {
            LinkKind::NvLink => 0,
            LinkKind::Pcie => 1,
            LinkKind::Net => 2,
        }
    }
}

/// The GPUs of one communicator and their links: `nodes × gpus_per_node` ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fabric {
    /// Ranks in the communicator.
    pub ranks: usize,
    /// Ranks per node (NVLink domain); `ranks` when the group fits in one node.
    pub ranks_per_node: usize,
    pub intra: LinkSpec,
    pub inter: LinkSpec,
    /// NVSwitch reduction (NVLS) available inside a node.
    pub nvls: bool,
    /// The NCCL release priced ([`NcclVersion::DEFAULT`] unless set with
    /// [`Fabric::with_nccl`]).
    #[serde(default)]
    pub nccl: NcclVersion,
    /// GPUs in each physical node; 0 means `ranks_per_node` ([`Fabric::with_nics`]).
    #[serde(default)]
    pub node_gpus: usize,
    /// Compute NICs in each node; 0 means one per GPU ([`Fabric::with_nics`]).
    #[serde(default)]
    pub nics_per_node: usize,
}

/// Why a collective cannot be predicted.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum NcclError {
    #[error("a collective needs at least 2 GPUs (got {ranks})")]
    TooFewRanks { ranks: usize },
    #[error(
        "{ranks} GPUs cannot be laid out as whole nodes of {per_node}: use a multiple of \
         {per_node}"
    )]
    PartialNode { ranks: usize, per_node: usize },
    #[error("{algo} does not run {kind} here: {why}")]
    Unsupported {
        algo: &'static str,
        kind: &'static str,
        why: &'static str,
    },
    #[error("NCCL does not run {kind} with {proto} on this fabric ({why})")]
    ProtoUnsupported {
        kind: &'static str,
        proto: &'static str,
        why: &'static str,
    },
    #[error("{kind} is not a collective NCCL runs; use all-reduce, all-gather, reduce-scatter, broadcast or all-to-all")]
    NotACollective { kind: &'static str },
    #[error("message size {size} B is outside 1 B .. 16 GiB")]
    BadSize { size: u64 },
    #[error(transparent)]
    Schedule(#[from] CollectiveError),
}

/// The largest message the model prices: 16 GiB (nccl-tests' usual upper end).
pub const MAX_MESSAGE_BYTES: u64 = 16 << 30;

impl Fabric {
    /// `ranks` GPUs at `ranks_per_node` per node over `intra` and `inter`.
    pub fn new(
        ranks: usize,
        ranks_per_node: usize,
        intra: LinkSpec,
        inter: LinkSpec,
        nvls: bool,
    ) -> Result<Fabric, NcclError> {
        if ranks < 2 {
            return Err(NcclError::TooFewRanks { ranks });
        }
        let per_node = ranks_per_node.clamp(1, ranks);
        if !ranks.is_multiple_of(per_node) {
            return Err(NcclError::PartialNode { ranks, per_node });
        }
        Ok(Fabric {
            ranks,
            ranks_per_node: per_node,
            intra,
            inter,
            nvls,
            nccl: NcclVersion::DEFAULT,
            node_gpus: 0,
            nics_per_node: 0,
        })
    }

    /// The same fabric in nodes of `node_gpus` GPUs with `nics` compute NICs each (0: one per
    /// GPU). The communicator's `ranks_per_node` ranks drive `ranks_per_node · nics /
    /// node_gpus` of them: rail-optimised, each GPU its own NIC or its share of one
    /// ([`Fabric::net_bus_bw`]).
    pub fn with_nics(mut self, node_gpus: usize, nics: usize) -> Fabric {
        self.node_gpus = node_gpus.max(self.ranks_per_node);
        self.nics_per_node = nics;
        self
    }

    /// GPUs per physical node.
    pub fn node_gpus(&self) -> usize {
        if self.node_gpus == 0 {
            self.ranks_per_node
        } else {
            self.node_gpus
        }
        .max(1)
    }

    /// Compute NICs per physical node.
    pub fn node_nics(&self) -> usize {
        if self.nics_per_node == 0 {
            self.node_gpus()
        } else {
            self.nics_per_node
        }
    }

    /// NICs per node the communicator's ranks drive (fractional where GPUs share one).
    pub fn nics_used(&self) -> f64 {
        self.ranks_per_node as f64 * self.node_nics() as f64 / self.node_gpus() as f64
    }

    /// What the communicator moves out of (and into) each node per direction, bytes/s: the
    /// NICs its ranks drive ([`Fabric::nics_used`]) × the port rate × [`NET_EFFICIENCY`].
    pub fn net_bus_bw(&self) -> f64 {
        self.nics_used() * self.inter.bandwidth_bytes_per_s() * NET_EFFICIENCY
    }

    /// The same fabric priced as NCCL `version` runs it.
    pub fn with_nccl(mut self, version: NcclVersion) -> Fabric {
        self.nccl = version;
        self
    }

    /// The fabric of a group of `size` ranks at rank stride `stride` in `cluster` (TP:
    /// stride 1, DP: stride `tp`, PP: stride `tp·dp`), NVLS where the intra-node link is an
    /// NVSwitch generation that has it (NVLink 4 and 5).
    pub fn of_group(cluster: &Cluster, stride: usize, size: usize) -> Result<Fabric, NcclError> {
        let g = cluster.gpus_per_node.max(1);
        let per_node = if stride >= g {
            1
        } else {
            (g / stride.max(1)).clamp(1, size.max(1))
        };
        let nvls = nvls_capable(&cluster.intra_node);
        Ok(Fabric::new(
            size,
            per_node,
            cluster.intra_node.clone(),
            cluster.inter_node.clone(),
            nvls,
        )?
        .with_nics(g, cluster.nics_per_node))
    }

    pub fn nodes(&self) -> usize {
        self.ranks / self.ranks_per_node.max(1)
    }

    /// Bus bandwidth (bytes/s) of a ring, nccl-tests' busbw at large sizes. In one node, the
    /// link × η (NCCL's A100 cap). Across nodes NCCL runs one ring per channel and spreads the
    /// channels over the node's NICs, each ring leaving a node through a different NIC; per
    /// node each ring has `r − 1` NVLink hops and one network hop, so with `T` the bytes each
    /// rank sends (`2(n−1)/n` of the buffer for all-reduce) every GPU's NVLink carries
    /// `T·(r−1)/r` and the node's NICs `T` together: busbw = min(intra × `r/(r−1)`, the NICs'
    /// rate [`Fabric::net_bus_bw`]).
    fn ring_bus_bw(&self) -> f64 {
        let intra = self.link_bus_bw(&self.intra);
        if self.nodes() > 1 {
            let r = self.ranks_per_node as f64;
            let nvlink = if r > 1.0 {
                intra * r / (r - 1.0)
            } else {
                f64::INFINITY
            };
            nvlink.min(self.net_bus_bw())
        } else {
            intra
        }
    }

    fn link_bus_bw(&self, link: &LinkSpec) -> f64 {
        let mut bw = link.bandwidth_bytes_per_s() * LINK_EFFICIENCY;
        if link.name.eq_ignore_ascii_case("nvlink3") {
            bw = bw.min(AMPERE_BUS_CAP_GBS * 1e9);
        }
        bw
    }

    fn intra_kind(&self) -> LinkKind {
        if self.ranks_per_node > 1 {
            LinkKind::of(&self.intra)
        } else {
            LinkKind::Net
        }
    }
}

/// Whether a link is an NVSwitch generation with NVLS (NVLink 4 on Hopper, NVLink 5 on
/// Blackwell).
pub fn nvls_capable(link: &LinkSpec) -> bool {
    matches!(
        link.name.to_ascii_lowercase().as_str(),
        "nvlink4" | "nvlink5"
    )
}

/// One priced (algorithm, protocol) for one message.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub algo: NcclAlgo,
    pub proto: NcclProto,
    pub size_bytes: u64,
    pub time_s: f64,
    /// Latency part of the time.
    pub latency_s: f64,
    /// nccl-tests algbw, bytes/s.
    pub algbw: f64,
    /// nccl-tests busbw, bytes/s.
    pub busbw: f64,
}

fn kind_name(kind: CollectiveKind) -> &'static str {
    kind.name()
}

/// Prices `kind` of `size` bytes with one algorithm and protocol on `fabric`.
///
/// **Errors** when NCCL has no such pair for this collective or fabric.
pub fn price(
    kind: CollectiveKind,
    size: u64,
    fabric: &Fabric,
    algo: NcclAlgo,
    proto: NcclProto,
) -> Result<Choice, NcclError> {
    if size == 0 || size > MAX_MESSAGE_BYTES {
        return Err(NcclError::BadSize { size });
    }
    if !matches!(
        kind,
        CollectiveKind::AllReduce
            | CollectiveKind::AllGather
            | CollectiveKind::ReduceScatter
            | CollectiveKind::Broadcast
            | CollectiveKind::AllToAll
    ) {
        return Err(NcclError::NotACollective {
            kind: kind_name(kind),
        });
    }
    if (kind == CollectiveKind::AllToAll) != (algo == NcclAlgo::P2p) {
        return Err(NcclError::Unsupported {
            algo: algo.name(),
            kind: kind_name(kind),
            why: "NCCL runs all-to-all as grouped sends (p2p), and only all-to-all so",
        });
    }
    if algo == NcclAlgo::P2p {
        return all_to_all(size, fabric, proto);
    }
    let n = fabric.ranks;
    let nodes = fabric.nodes();
    let p = proto.index();
    let intra_kind = fabric.intra_kind();
    let (base_lat, hw_lat) = fabric.nccl.latencies();
    let ll128_ok = intra_kind == LinkKind::NvLink;
    if proto == NcclProto::Ll128 && !ll128_ok {
        return Err(NcclError::ProtoUnsupported {
            kind: kind_name(kind),
            proto: proto.name(),
            why: "NCCL enables LL128 only over NVLink",
        });
    }
    let allreduce = kind == CollectiveKind::AllReduce;
    let (latency_us, time_us) = match algo {
        NcclAlgo::Ring => {
            // Steps and busiest-rank bytes from the engine's ring schedule.
            let s = collectives::summary(kind, Algorithm::Ring, n, size)?;
            let inter_steps = match kind {
                CollectiveKind::AllReduce => 2 * (nodes - 1),
                _ => nodes - 1,
            };
            let mut intra_lat = hw_lat[intra_kind.index()][1][p];
            if nodes > 1 && proto == NcclProto::Ll {
                intra_lat *= 1.8;
            }
            let net_lat = hw_lat[LinkKind::Net.index()][1][p];
            let mut lat = base_lat[1][p]
                + s.steps.saturating_sub(inter_steps) as f64 * intra_lat
                + inter_steps as f64 * net_lat;
            // NCCL: "plateau effect of ring" for multi-node all-reduce of large messages.
            if proto == NcclProto::Simple
                && nodes > 1
                && allreduce
                && size as f64 >= n as f64 / 16.0 * 65536.0
            {
                lat *= 1.9;
            }
            let mut bus = fabric.ring_bus_bw();
            match proto {
                NcclProto::Ll => {
                    bus *= if nodes > 1 || allreduce {
                        0.25
                    } else {
                        1.0 / 3.0
                    };
                    if nodes == 1 {
                        match fabric.intra.name.to_ascii_lowercase().as_str() {
                            "nvlink4" => bus = bus.max(HOPPER_LL_BUS_BW),
                            "nvlink5" => bus = bus.max(2.0 * HOPPER_LL_BUS_BW),
                            _ => {}
                        }
                    }
                }
                NcclProto::Ll128 => {
                    let ppn = fabric.ranks_per_node as f64;
                    bus *= if ppn < 2.0 { 0.7 } else { 0.92 };
                }
                NcclProto::Simple => {}
            }
            let lat = lat + NCCL_CALL_OVERHEAD_US;
            (lat, lat + s.max_bytes_sent as f64 / bus * 1e6)
        }
        NcclAlgo::Tree => {
            if !allreduce {
                return Err(NcclError::Unsupported {
                    algo: "tree",
                    kind: kind_name(kind),
                    why: "NCCL runs only all-reduce on trees",
                });
            }
            let intra_lat = hw_lat[intra_kind.index()][0][p]
                * if nodes > 1 && proto == NcclProto::Ll {
                    1.8
                } else {
                    1.0
                };
            let net_lat = hw_lat[LinkKind::Net.index()][0][p];
            let log2_nodes = log2_floor(nodes);
            let lat = base_lat[0][p]
                + 2.0
                    * ((fabric.ranks_per_node.saturating_sub(1)) as f64 * intra_lat
                        + log2_nodes * net_lat);
            let max_tree = if nodes > 2 { 80e9 } else { 110e9 };
            let mut bus = (fabric.ring_bus_bw() * 0.9).min(max_tree);
            match proto {
                NcclProto::Ll => bus /= 3.8,
                NcclProto::Ll128 => bus *= if nodes == 1 { 7.0 / 9.0 } else { 0.915 },
                NcclProto::Simple => {}
            }
            let lat = lat + NCCL_CALL_OVERHEAD_US;
            let mut algbw = bus * 0.5;
            let log_size = 63u32.saturating_sub((size >> 6).max(1).leading_zeros()) as usize;
            if log_size < 22 {
                algbw *= TREE_CORRECTION[p][log_size];
            }
            (lat, lat + size as f64 / algbw * 1e6)
        }
        NcclAlgo::Nvls => {
            if !fabric.nvls {
                return Err(NcclError::Unsupported {
                    algo: "nvls",
                    kind: kind_name(kind),
                    why: "NVLS needs an NVSwitch with reduction (NVLink 4 or 5)",
                });
            }
            if !allreduce {
                return Err(NcclError::Unsupported {
                    algo: "nvls",
                    kind: kind_name(kind),
                    why: "this model prices NVLS for all-reduce only",
                });
            }
            if nodes > 1 {
                return Err(NcclError::Unsupported {
                    algo: "nvls",
                    kind: kind_name(kind),
                    why: "NVLS reduces inside one NVSwitch node; across nodes NCCL uses NVLS-tree, not modelled",
                });
            }
            if proto != NcclProto::Simple {
                return Err(NcclError::ProtoUnsupported {
                    kind: kind_name(kind),
                    proto: proto.name(),
                    why: "NVLS runs the Simple protocol only",
                });
            }
            let t = nvls_time_us(size, n, &fabric.intra, fabric.nccl.nvls_contiguous_split());
            (NVLS_LATENCY_US, t)
        }
        NcclAlgo::NvlsTree => {
            let why = if !fabric.nvls {
                Some("NVLS needs an NVSwitch with reduction (NVLink 4 or 5)")
            } else if !allreduce {
                Some("NCCL runs only all-reduce on NVLS trees")
            } else if nodes < 2 {
                Some("inside one node NCCL runs NVLS itself")
            } else if fabric.ranks_per_node < 2 {
                Some("NVLS needs at least two GPUs of the communicator in each node")
            } else if fabric.nccl < NcclVersion::new(2, 18) {
                Some("NVLS trees came with NCCL 2.18")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(NcclError::Unsupported {
                    algo: "nvlstree",
                    kind: kind_name(kind),
                    why,
                });
            }
            if proto != NcclProto::Simple {
                return Err(NcclError::ProtoUnsupported {
                    kind: kind_name(kind),
                    proto: proto.name(),
                    why: "NVLS trees run the Simple protocol only",
                });
            }
            nvls_tree_time_us(size, fabric)
        }
        NcclAlgo::P2p => unreachable_p2p(kind)?,
    };
    let time_s = time_us * 1e-6;
    let algbw = size as f64 / time_s;
    Ok(Choice {
        algo,
        proto,
        size_bytes: size,
        time_s,
        latency_s: latency_us * 1e-6,
        algbw,
        busbw: algbw * busbw_factor(kind, n),
    })
}

fn unreachable_p2p(kind: CollectiveKind) -> Result<(f64, f64), NcclError> {
    Err(NcclError::Unsupported {
        algo: "p2p",
        kind: kind_name(kind),
        why: "NCCL runs all-to-all as grouped sends (p2p), and only all-to-all so",
    })
}

/// log2 of the node count, rounded down (NCCL's tree depth).
fn log2_floor(nodes: usize) -> f64 {
    (usize::BITS - 1 - nodes.max(1).leading_zeros()) as f64
}

/// An NVLS tree all-reduce (NCCL ≥ 2.18 on Hopper/Blackwell nodes, more than one node), µs
/// (latency, time). Inside each node the NVSwitch reduces and multicasts (NVLS), leaving each
/// GPU `1/r` of the sum; across nodes each GPU exchanges its slice with its peers in the other
/// nodes over its own NIC, in a double binary tree: every node sends and receives the whole
/// buffer once on two nodes and twice on more (an inner tree node takes two children's halves
/// and sends two halves down). NCCL pipelines the two parts, so the time is the larger of the
/// node's NVLS all-reduce ([`nvls_time_us`]) and `f · size` through the node's NICs
/// ([`Fabric::net_bus_bw`], `f` = 1 or 2), after NVLS's latency plus a tree's network steps
/// (`2·log2(nodes)` × `tuning.cc`'s network tree latency).
pub fn nvls_tree_time_us(size: u64, fabric: &Fabric) -> (f64, f64) {
    let (_, hw_lat) = fabric.nccl.latencies();
    let nodes = fabric.nodes();
    let net_lat = hw_lat[LinkKind::Net.index()][0][NcclProto::Simple.index()];
    let lat = NVLS_LATENCY_US + 2.0 * log2_floor(nodes) * net_lat;
    let intra = nvls_time_us(
        size,
        fabric.ranks_per_node,
        &fabric.intra,
        fabric.nccl.nvls_contiguous_split(),
    ) - NVLS_LATENCY_US;
    let f = if nodes == 2 { 1.0 } else { 2.0 };
    let net = f * size as f64 / fabric.net_bus_bw() * 1e6;
    (lat, lat + intra.max(net))
}

/// An all-to-all as NCCL runs it (grouped sends to every peer, the Simple protocol): each of
/// the `n` ranks sends `size/n` to every other. Every GPU sends `size·(r−1)/n` over NVLink (its
/// link × [`LINK_EFFICIENCY`]) and each node `r·size·(n−r)/n` through its NICs
/// ([`Fabric::net_bus_bw`]: NCCL's PXN moves a message over NVLink to the GPU on the
/// receiver's rail first); the time is the larger of the two after one send's latency
/// (`tuning.cc`'s ring Simple base latency and one step of the slowest link).
fn all_to_all(size: u64, fabric: &Fabric, proto: NcclProto) -> Result<Choice, NcclError> {
    if proto != NcclProto::Simple {
        return Err(NcclError::ProtoUnsupported {
            kind: "all-to-all",
            proto: proto.name(),
            why: "this model prices NCCL's sends with the Simple protocol only",
        });
    }
    let n = fabric.ranks as f64;
    let r = fabric.ranks_per_node as f64;
    let (lat, t) = p2p_latency_and(fabric, |f| {
        let per_peer = size as f64 / n;
        let intra = per_peer * (r - 1.0) / f.link_bus_bw(&f.intra);
        let net = if f.nodes() > 1 {
            r * per_peer * (n - r) / f.net_bus_bw()
        } else {
            0.0
        };
        intra.max(net) * 1e6
    });
    let time_s = t * 1e-6;
    let algbw = size as f64 / time_s;
    Ok(Choice {
        algo: NcclAlgo::P2p,
        proto: NcclProto::Simple,
        size_bytes: size,
        time_s,
        latency_s: lat * 1e-6,
        algbw,
        busbw: algbw * busbw_factor(CollectiveKind::AllToAll, fabric.ranks),
    })
}

/// One send's latency (µs) on `fabric` and the total with `transfer_us`.
fn p2p_latency_and(fabric: &Fabric, transfer_us: impl Fn(&Fabric) -> f64) -> (f64, f64) {
    let (base_lat, hw_lat) = fabric.nccl.latencies();
    let p = NcclProto::Simple.index();
    let link = if fabric.nodes() > 1 {
        LinkKind::Net
    } else {
        fabric.intra_kind()
    };
    let lat = base_lat[1][p] + hw_lat[link.index()][1][p] + NCCL_CALL_OVERHEAD_US;
    (lat, lat + transfer_us(fabric))
}

/// nccl-tests' `sendrecv_perf`: every rank sends `size` bytes to the next rank and receives
/// from the one before, at once. Inside a node a send moves over NVLink (link ×
/// [`LINK_EFFICIENCY`]); across nodes the last GPU of each node sends through its own NIC
/// share, `nics/node_gpus` ports but at least one whole port (nothing else crosses at that
/// moment), × [`NET_EFFICIENCY`]. busbw = algbw.
pub fn send_recv(size: u64, fabric: &Fabric) -> Result<Choice, NcclError> {
    if size == 0 || size > MAX_MESSAGE_BYTES {
        return Err(NcclError::BadSize { size });
    }
    let (lat, t) = p2p_latency_and(fabric, |f| {
        let bw = if f.nodes() > 1 {
            let per_gpu = (f.nics_used() / f.ranks_per_node.max(1) as f64).max(1.0);
            per_gpu * f.inter.bandwidth_bytes_per_s() * NET_EFFICIENCY
        } else {
            f.link_bus_bw(&f.intra)
        };
        size as f64 / bw * 1e6
    });
    let time_s = t * 1e-6;
    let algbw = size as f64 / time_s;
    Ok(Choice {
        algo: NcclAlgo::P2p,
        proto: NcclProto::Simple,
        size_bytes: size,
        time_s,
        latency_s: lat * 1e-6,
        algbw,
        busbw: algbw,
    })
}

/// `v0` at or below `s0` bytes, `v1` at or above `s1`, linear in log2(size) between.
fn log_ramp(size: u64, s0: u64, v0: f64, s1: u64, v1: f64) -> f64 {
    if size <= s0 {
        v0
    } else if size >= s1 {
        v1
    } else {
        let f = (size as f64 / s0 as f64).log2() / (s1 as f64 / s0 as f64).log2();
        v0 + f * (v1 - v0)
    }
}

/// NVLS channels on `link` ([`NVLS_CHANNELS_NVLINK4`], [`NVLS_CHANNELS_NVLINK5`]).
pub fn nvls_channels(link: &LinkSpec) -> u32 {
    if link.name.eq_ignore_ascii_case("nvlink5") {
        NVLS_CHANNELS_NVLINK5
    } else {
        NVLS_CHANNELS_NVLINK4
    }
}

/// Bytes the busiest NVLS channel carries in its first step of an all-reduce of `size` over
/// `n` GPUs on `channels` channels; a step holds at most one 16 KiB chunk per head, `n · 16 KiB`
/// ([`NVLS_SMALL_CHUNK_BYTES`]). NCCL ≥ 2.20 splits the message evenly, `size / channels` per
/// channel; ≤ 2.19 strides over it in loops of `channels · n · 16 KiB`, so channel 0 takes the
/// first `n · 16 KiB` ([`NcclVersion::nvls_contiguous_split`]).
pub fn nvls_channel_bytes(size: u64, n: usize, channels: u32, contiguous: bool) -> f64 {
    let step = (n.max(1) as u64 * NVLS_SMALL_CHUNK_BYTES) as f64;
    let share = if contiguous {
        size as f64 / channels.max(1) as f64
    } else {
        size as f64
    };
    share.min(step)
}

/// NVLS all-reduce time (µs) of `size` bytes over `n` GPUs of one NVSwitch node on `link`:
/// the larger of
/// - one step of the channels: [`NVLS_LATENCY_US`] + the busiest channel's bytes in it
///   ([`nvls_channel_bytes`], by NCCL release) / [`NVLS_CHANNEL_BYTES_PER_S`];
/// - the transfer: each GPU sends and receives `size·(n+1)/n` at the link's per-direction rate
///   × an efficiency that ramps from [`NVLS_START_EFFICIENCY`] (≤ 4 MiB) to
///   [`NVLS_EFFICIENCY`] (≥ 512 MiB), after [`NVLS_LATENCY_US`].
pub fn nvls_time_us(size: u64, n: usize, link: &LinkSpec, contiguous: bool) -> f64 {
    let pass = NVLS_LATENCY_US
        + nvls_channel_bytes(size, n, nvls_channels(link), contiguous) / NVLS_CHANNEL_BYTES_PER_S
            * 1e6;
    let eff = log_ramp(
        size,
        NVLS_RAMP_FROM_BYTES,
        NVLS_START_EFFICIENCY,
        NVLS_RAMP_TO_BYTES,
        NVLS_EFFICIENCY,
    );
    let n = n.max(1) as f64;
    let bytes = size as f64 * (n + 1.0) / n;
    pass.max(NVLS_LATENCY_US + bytes / (link.bandwidth_bytes_per_s() * eff) * 1e6)
}

/// Every (algorithm, protocol) NCCL has for `kind` on `fabric`, priced.
pub fn candidates(kind: CollectiveKind, size: u64, fabric: &Fabric) -> Vec<Choice> {
    NcclAlgo::ALL
        .into_iter()
        .flat_map(|a| NcclProto::ALL.into_iter().map(move |p| (a, p)))
        .filter_map(|(a, p)| price(kind, size, fabric, a, p).ok())
        .collect()
}

/// What NCCL's tuner runs: the fastest pair, optionally restricted to one algorithm and/or
/// protocol (NCCL_ALGO / NCCL_PROTO).
///
/// **Errors** when nothing is left (e.g. `--algo nvls` on PCIe), with the reason of the
/// restricted pair.
pub fn predict(
    kind: CollectiveKind,
    size: u64,
    fabric: &Fabric,
    algo: Option<NcclAlgo>,
    proto: Option<NcclProto>,
) -> Result<Choice, NcclError> {
    if size == 0 || size > MAX_MESSAGE_BYTES {
        return Err(NcclError::BadSize { size });
    }
    let mut best: Option<Choice> = None;
    let mut last_err = None;
    for a in NcclAlgo::ALL {
        if algo.is_some_and(|x| x != a) {
            continue;
        }
        for p in NcclProto::ALL {
            if proto.is_some_and(|x| x != p) {
                continue;
            }
            match price(kind, size, fabric, a, p) {
                Ok(c) if best.is_none_or(|b| c.time_s < b.time_s) => best = Some(c),
                Ok(_) => {}
                Err(e) => last_err = Some(e),
            }
        }
    }
    best.ok_or_else(|| {
        last_err.unwrap_or(NcclError::NotACollective {
            kind: kind_name(kind),
        })
    })
}

/// What `tplab collective --op` prices: one of NCCL's collectives (all-to-all included), or
/// nccl-tests' `sendrecv_perf` pattern ([`send_recv`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NcclOp {
    Collective(CollectiveKind),
    SendRecv,
}

impl NcclOp {
    pub fn name(self) -> &'static str {
        match self {
            NcclOp::Collective(k) => k.name(),
            NcclOp::SendRecv => "send-recv",
        }
    }

    /// nccl-tests' busbw / algbw for this operation over `n` ranks (1 for send/recv).
    pub fn busbw_factor(self, n: usize) -> f64 {
        match self {
            NcclOp::Collective(k) => busbw_factor(k, n),
            NcclOp::SendRecv => 1.0,
        }
    }
}

impl std::str::FromStr for NcclOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "all-reduce" | "allreduce" => NcclOp::Collective(CollectiveKind::AllReduce),
            "all-gather" | "allgather" => NcclOp::Collective(CollectiveKind::AllGather),
            "reduce-scatter" | "reducescatter" => NcclOp::Collective(CollectiveKind::ReduceScatter),
            "broadcast" => NcclOp::Collective(CollectiveKind::Broadcast),
            "all-to-all" | "alltoall" => NcclOp::Collective(CollectiveKind::AllToAll),
            "send-recv" | "sendrecv" => NcclOp::SendRecv,
            _ => {
                return Err(format!(
                    "unknown collective '{s}'; expected all-reduce, all-gather, reduce-scatter, \
                     broadcast, all-to-all or send-recv"
                ))
            }
        })
    }
}

/// [`sweep`] for any [`NcclOp`]; send/recv has no algorithm or protocol to force (they must
/// be absent, p2p or Simple).
pub fn sweep_op(
    op: NcclOp,
    fabric: &Fabric,
    from: u64,
    to: u64,
    algo: Option<NcclAlgo>,
    proto: Option<NcclProto>,
) -> Result<Vec<Choice>, NcclError> {
    match op {
        NcclOp::Collective(k) => sweep(k, fabric, from, to, algo, proto),
        NcclOp::SendRecv => {
            if algo.is_some_and(|a| a != NcclAlgo::P2p) {
                return Err(NcclError::Unsupported {
                    algo: algo.map_or("", |a| a.name()),
                    kind: "send-recv",
                    why: "sends are point-to-point (p2p)",
                });
            }
            if proto.is_some_and(|p| p != NcclProto::Simple) {
                return Err(NcclError::ProtoUnsupported {
                    kind: "send-recv",
                    proto: proto.map_or("", |p| p.name()),
                    why: "this model prices NCCL's sends with the Simple protocol only",
                });
            }
            for s in [from, to] {
                if s == 0 || s > MAX_MESSAGE_BYTES {
                    return Err(NcclError::BadSize { size: s });
                }
            }
            let mut out = Vec::new();
            let mut s = from;
            while s <= to {
                out.push(send_recv(s, fabric)?);
                match s.checked_mul(2) {
                    Some(x) => s = x,
                    None => break,
                }
            }
            Ok(out)
        }
    }
}

/// nccl-tests' sweep: `from`, `2·from`, … up to `to` bytes (both within 1 B .. 16 GiB).
pub fn sweep(
    kind: CollectiveKind,
    fabric: &Fabric,
    from: u64,
    to: u64,
    algo: Option<NcclAlgo>,
    proto: Option<NcclProto>,
) -> Result<Vec<Choice>, NcclError> {
    for s in [from, to] {
        if s == 0 || s > MAX_MESSAGE_BYTES {
            return Err(NcclError::BadSize { size: s });
        }
    }
    let mut out = Vec::new();
    let mut s = from;
    while s <= to {
        out.push(predict(kind, s, fabric, algo, proto)?);
        match s.checked_mul(2) {
            Some(x) => s = x,
            None => break,
        }
    }
    Ok(out)
}

/// Time of `kind` of `size` bytes over a group of `size_ranks` at `stride` in `cluster`, as
/// NCCL's tuner would run it; 0 for a group of one or an empty message.
pub fn group_time_s(
    cluster: &Cluster,
    kind: CollectiveKind,
    stride: usize,
    size_ranks: usize,
    size: u64,
) -> f64 {
    if size_ranks < 2 || size == 0 {
        return 0.0;
    }
    let size = size.min(MAX_MESSAGE_BYTES);
    match Fabric::of_group(cluster, stride, size_ranks) {
        Ok(f) => predict(kind, size, &f, None, None).map_or(0.0, |c| c.time_s),
        // A group that is not whole nodes (a DP group spread one per node over an odd count):
        // price it as one rank per node.
        Err(_) => Fabric::new(
            size_ranks,
            1,
            cluster.intra_node.clone(),
            cluster.inter_node.clone(),
            false,
        )
        .ok()
        .map(|f| f.with_nics(cluster.gpus_per_node, cluster.nics_per_node))
        .and_then(|f| predict(kind, size, &f, None, None).ok())
        .map_or(0.0, |c| c.time_s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::hardware::Catalogue;

    fn node(link: &str, n: usize) -> Fabric {
        let cat = Catalogue::default();
        let l = cat.link(link).unwrap();
        let nvls = nvls_capable(&l);
        Fabric::new(n, n, l, cat.link("ib400").unwrap(), nvls).unwrap()
    }

    #[test]
    fn tuner_picks_low_latency_small_and_bandwidth_large() {
        let f = node("nvlink4", 8);
        let small = predict(CollectiveKind::AllReduce, 8, &f, None, None).unwrap();
        assert_eq!((small.algo, small.proto), (NcclAlgo::Ring, NcclProto::Ll));
        let big = predict(CollectiveKind::AllReduce, 1 << 32, &f, None, None).unwrap();
        assert_eq!(big.algo, NcclAlgo::Nvls);
        // The chosen pair is the minimum over every candidate.
        for size in [8u64, 1 << 16, 1 << 24, 1 << 32] {
            let c = predict(CollectiveKind::AllReduce, size, &f, None, None).unwrap();
            for x in candidates(CollectiveKind::AllReduce, size, &f) {
                assert!(c.time_s <= x.time_s);
            }
        }
        // No NVLS on A100 or PCIe; no LL128 over PCIe.
        let a100 = node("nvlink3", 8);
        assert!(price(
            CollectiveKind::AllReduce,
            1 << 20,
            &a100,
            NcclAlgo::Nvls,
            NcclProto::Simple
        )
        .is_err());
        let pcie = node("pcie5", 4);
        assert!(price(
            CollectiveKind::AllReduce,
            1 << 20,
            &pcie,
            NcclAlgo::Ring,
            NcclProto::Ll128
        )
        .is_err());
        assert!(price(
            CollectiveKind::AllGather,
            1 << 20,
            &f,
            NcclAlgo::Tree,
            NcclProto::Simple
        )
        .is_err());
    }

    #[test]
    fn ring_uses_the_engine_schedule_and_nccl_tests_definitions() {
        let f = node("nvlink4", 8);
        let size = 1u64 << 30;
        let c = price(
            CollectiveKind::AllReduce,
            size,
            &f,
            NcclAlgo::Ring,
            NcclProto::Simple,
        )
        .unwrap();
        let s = collectives::summary(CollectiveKind::AllReduce, Algorithm::Ring, 8, size).unwrap();
        let lat = (8.4 + s.steps as f64 * 3.4 + NCCL_CALL_OVERHEAD_US) * 1e-6;
        let want = lat + s.max_bytes_sent as f64 / (450e9 * LINK_EFFICIENCY);
        assert!((c.time_s - want).abs() < 1e-12, "{} vs {want}", c.time_s);
        assert!((c.busbw - c.algbw * 2.0 * 7.0 / 8.0).abs() < 1e-6 * c.busbw);
        let ag = price(
            CollectiveKind::AllGather,
            size,
            &f,
            NcclAlgo::Ring,
            NcclProto::Simple,
        )
        .unwrap();
        assert!((ag.busbw - ag.algbw * 7.0 / 8.0).abs() < 1e-6 * ag.busbw);
        // Large ring busbw approaches the link rate × η.
        // (latency: 8.4 + 14·3.4 + 3.8 µs of 5.2 ms, 1.1%)
        assert!((c.busbw / (450e9 * LINK_EFFICIENCY) - 1.0).abs() < 0.02);
    }

    #[test]
    fn sweep_covers_8_bytes_to_16_gib_and_refuses_bad_input() {
        let f = node("nvlink4", 8);
        let s = sweep(
            CollectiveKind::AllReduce,
            &f,
            8,
            MAX_MESSAGE_BYTES,
            None,
            None,
        )
        .unwrap();
        assert_eq!(s.len(), 32);
        assert_eq!(s.last().map(|c| c.size_bytes), Some(16 << 30));
        for w in s.windows(2) {
            assert!(w[1].time_s >= w[0].time_s);
        }
        assert!(sweep(CollectiveKind::AllReduce, &f, 0, 8, None, None).is_err());
        assert!(matches!(
            Fabric::new(1, 1, f.intra.clone(), f.inter.clone(), false),
            Err(NcclError::TooFewRanks { .. })
        ));
        assert!(matches!(
            Fabric::new(12, 8, f.intra.clone(), f.inter.clone(), false),
            Err(NcclError::PartialNode { .. })
        ));
    }

    #[test]
    fn nvls_pass_follows_the_nccl_release_then_bandwidth_ramps_to_the_asymptote() {
        let link = Catalogue::default().link("nvlink4").unwrap();
        let rate = link.bandwidth_bytes_per_s();
        for contiguous in [false, true] {
            // A tiny message: the latency.
            let t = nvls_time_us(1 << 10, 8, &link, contiguous);
            assert!((NVLS_LATENCY_US..NVLS_LATENCY_US + 0.2).contains(&t), "{t}");
            // Time never falls as the size doubles, though the efficiency grows.
            let mut prev = 0.0;
            for k in 0..=34 {
                let t = nvls_time_us(1u64 << k, 8, &link, contiguous);
                assert!(t >= prev, "2^{k}: {t} < {prev}");
                prev = t;
            }
            // 8 GiB: latency + size·9/8 at link × NVLS_EFFICIENCY.
            let size = 8u64 << 30;
            let want = NVLS_LATENCY_US + size as f64 * 9.0 / 8.0 / (rate * NVLS_EFFICIENCY) * 1e6;
            assert!((nvls_time_us(size, 8, &link, contiguous) - want).abs() < 1e-6 * want);
        }
        // NCCL ≤ 2.19: from 128 KiB to 2 MiB the busiest channel carries 8 chunks of 16 KiB,
        // so the time is flat; ≥ 2.20 splits 512 KiB over 16 channels, 32 KiB each.
        let flat = NVLS_LATENCY_US + (128u64 << 10) as f64 / NVLS_CHANNEL_BYTES_PER_S * 1e6;
        for size in [128u64 << 10, 512 << 10, 1 << 20] {
            assert!((nvls_time_us(size, 8, &link, false) - flat).abs() < 1e-9);
        }
        assert_eq!(
            nvls_channel_bytes(512 << 10, 8, 16, true),
            (32u64 << 10) as f64
        );
        assert_eq!(
            nvls_channel_bytes(32 << 10, 8, 16, false),
            (16u64 << 10) as f64 * 2.0
        );
        assert_eq!(
            nvls_channel_bytes(4 << 20, 8, 16, false),
            (128u64 << 10) as f64
        );
        assert_eq!(
            nvls_channel_bytes(4 << 20, 8, 16, true),
            (128u64 << 10) as f64
        );
        assert!(nvls_time_us(512 << 10, 8, &link, true) < nvls_time_us(512 << 10, 8, &link, false));
        // The release travels with the fabric.
        let f = node("nvlink4", 8);
        assert_eq!(f.nccl, NcclVersion::DEFAULT);
        let old = f.clone().with_nccl("2.18.5".parse().unwrap());
        let at = |f: &Fabric| {
            price(
                CollectiveKind::AllReduce,
                256 << 10,
                f,
                NcclAlgo::Nvls,
                NcclProto::Simple,
            )
            .unwrap()
            .time_s
        };
        assert!(at(&old) > at(&f));
        assert!("3.1".parse::<NcclVersion>().is_err() && "x".parse::<NcclVersion>().is_err());
        assert!(!NcclVersion::new(2, 19).nvls_contiguous_split());
        assert!(NcclVersion::new(2, 20).nvls_contiguous_split());
    }

    #[test]
    fn crossing_nodes_pays_the_network() {
        let cat = Catalogue::default();
        let one = node("nvlink4", 8);
        let two = Fabric::new(
            16,
            8,
            cat.link("nvlink4").unwrap(),
            cat.link("ib400").unwrap(),
            true,
        )
        .unwrap();
        let size = 8u64 << 30;
        let ring = |f: &Fabric| {
            predict(
                CollectiveKind::AllReduce,
                size,
                f,
                Some(NcclAlgo::Ring),
                None,
            )
            .unwrap()
            .busbw
        };
        // One NIC per GPU: the ring runs at the node's 8 NICs, 8 × 50 × 0.94 = 376 GB/s,
        // nearly NVLink's ring (360 GB/s) and 8× one NIC (issue 39).
        let a = ring(&one);
        let b = ring(&two);
        assert!(b <= 376e9 * 1.0001 && b > 0.98 * 376e9, "{b} vs {a}");
        // One NIC per node: the network is the bottleneck, 47 GB/s.
        let thin = two.clone().with_nics(8, 1);
        assert!(ring(&thin) <= 47e9 * 1.0001 && ring(&thin) > 0.97 * 47e9);
        assert!((thin.nics_used() - 1.0).abs() < 1e-12 && (two.nics_used() - 8.0).abs() < 1e-12);
        // A DP group of one rank per node on 8-NIC nodes drives one NIC: its share.
        let dp = Fabric::new(
            4,
            1,
            cat.link("nvlink4").unwrap(),
            cat.link("ib400").unwrap(),
            true,
        )
        .unwrap()
        .with_nics(8, 8);
        assert!((dp.net_bus_bw() - 47e9).abs() < 1e3);
        // NVLS trees only where they exist.
        assert!(price(
            CollectiveKind::AllReduce,
            size,
            &one,
            NcclAlgo::NvlsTree,
            NcclProto::Simple
        )
        .is_err());
        assert!(price(
            CollectiveKind::AllGather,
            size,
            &two,
            NcclAlgo::NvlsTree,
            NcclProto::Simple
        )
        .is_err());
        assert!(price(
            CollectiveKind::AllReduce,
            size,
            &two.clone().with_nccl(NcclVersion::new(2, 17)),
            NcclAlgo::NvlsTree,
            NcclProto::Simple
        )
        .is_err());
        // All-to-all only as p2p, Simple.
        assert!(price(
            CollectiveKind::AllToAll,
            size,
            &two,
            NcclAlgo::Ring,
            NcclProto::Simple
        )
        .is_err());
        assert!(price(
            CollectiveKind::AllToAll,
            size,
            &two,
            NcclAlgo::P2p,
            NcclProto::Ll
        )
        .is_err());
    }
}
