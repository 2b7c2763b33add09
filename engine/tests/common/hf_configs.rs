//! The `config.json` fixtures of `tests/fixtures/hf-configs/`, read as the CLI reads them;
//! shared by the MoE and the calibration tests.

use tplab_engine::capacity::models::ModelSpec;

/// The model of fixture `name` (a file in `tests/fixtures/hf-configs/`).
pub fn hf_config(name: &str) -> ModelSpec {
    let path: std::path::PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "hf-configs",
        name,
    ]
    .iter()
    .collect();
    ModelSpec::from_preset_or_path(path.to_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}
