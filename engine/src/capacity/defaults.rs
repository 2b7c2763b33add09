//! What every command assumes where a flag is not given: `tplab serve`, `tplab plan` and
//! `tplab memory` (and the app's views) read these, so that `tplab serve --model llama3-8b`
//! and `tplab plan --serve --model llama3-8b` answer for the same GPU, node, link, batch and
//! context. A `--scenario` fills its own values first; these come last.

/// The GPU (`--gpu`): an H100 SXM, today's common serving and training GPU.
pub const GPU: &str = "h100";
/// GPUs in one node, one NVLink domain (`--gpus-per-node`): an HGX/DGX board of 8.
pub const GPUS_PER_NODE: usize = 8;
/// The link between nodes (`--inter-node`): NDR InfiniBand, 400 Gb/s per GPU.
pub const INTER_NODE: &str = "ib400";
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
}
