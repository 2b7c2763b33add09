//! What every command assumes where a flag is not given: `tplab serve`, `tplab plan` and
//! `tplab memory` (and the app's views) read these, so that `tplab serve --model llama3-8b`
//! and `tplab plan --serve --model llama3-8b` answer for the same GPU, node, link, batch and
//! context. A `--scenario` fills its own values first; these come last.

/// The GPU (`--gpu`): an H100 SXM, today's common serving and training GPU.
pub const GPU: &str = "h100";
/// GPUs in one node, one NVLink domain (`--gpus-per-node`): an HGX/DGX board of 8.
pub const GPUS_PER_NODE: usize = 8;
/// The link between nodes (`--inter-node`) where the GPU's own node does not say otherwise
/// ([`inter_node_for`]): NDR InfiniBand, 400 Gb/s per GPU.
pub const INTER_NODE: &str = "ib-ndr-400";

/// The link between nodes where none is named: the network the GPU's own DGX node ships with,
/// one port per GPU, told by the node's NVLink generation. DGX A100 (NVLink 3): eight
/// ConnectX-6 InfiniBand HDR 200 Gb/s ports (the DGX A100 SuperPOD of Narayanan et al. 2021);
/// DGX H100/H200 (NVLink 4) and DGX B200 (NVLink 5): eight ConnectX-7 NDR 400 Gb/s ports
/// (NVIDIA's DGX datasheets). Any other GPU gets [`INTER_NODE`]. Every command and view that
/// builds a cluster without a named link calls this, so `tplab plan --gpu a100`, the Planner
/// and the Pipeline view price an A100 cluster on the same network.
pub fn inter_node_for(gpu: &super::hardware::GpuSpec) -> &'static str {
    match gpu.intra_node_link.as_str() {
        "nvlink3" => "ib-hdr-200",
        _ => INTER_NODE,
    }
}

/// The link between nodes a command prices: the one named (`--inter-node`), else the GPU's own
/// node's ([`inter_node_for`]). Errors on a GPU the catalogue does not know.
pub fn inter_node(
    catalogue: &super::hardware::Catalogue,
    gpu: &str,
    named: Option<&str>,
) -> Result<String, super::hardware::HardwareError> {
    Ok(match named {
        Some(link) => link.to_string(),
        None => inter_node_for(&catalogue.gpu(gpu)?).to_string(),
    })
}
/// Sequences decoded together when serving (`serve --batch`, `plan --serve --global-batch`):
/// one, the latency of a single user.
pub const SERVE_BATCH: usize = 1;
/// Tokens each served sequence holds in its KV cache (`serve --context`, `plan --serve
/// --seq`): 4096.
pub const SERVE_CONTEXT_TOKENS: usize = 4096;
/// Prompt tokens of the time to first token (`serve --prompt-tokens`).
pub const PROMPT_TOKENS: usize = 1024;

#[cfg(test)]
mod tests {
    use crate::capacity::hardware::{Catalogue, Cluster};

    #[test]
    fn the_defaults_name_a_cluster_of_the_catalogue() {
        let c = Cluster::new(
            &Catalogue::default(),
            super::GPU,
            super::GPUS_PER_NODE,
            super::GPUS_PER_NODE,
            super::INTER_NODE,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.gpus_per_node, 8);
        assert!(c.gpu.name.starts_with("h100"), "{}", c.gpu.name);
    }

    #[test]
    fn each_gpu_gets_its_own_node_s_network() {
        let cat = Catalogue::default();
        let net =
            |gpu: &str| super::inter_node_for(&cat.gpu(gpu).unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(net("a100"), "ib-hdr-200");
        assert_eq!(net("a100-40gb"), "ib-hdr-200");
        for gpu in ["h100", "h200", "b200", "v100"] {
            assert_eq!(net(gpu), "ib-ndr-400", "{gpu}");
        }
        for gpu in &cat.gpus {
            let link = super::inter_node_for(gpu);
            assert!(
                cat.link(link).is_ok(),
                "{link} for {} is not in the catalogue",
                gpu.name
            );
        }
    }
}
