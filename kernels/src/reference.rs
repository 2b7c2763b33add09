//! The CPU reference for a GPU run: the engine's unsharded reference (`tplab_engine::block::reference`)
//! in f64, on exactly the numbers the device holds (the model rounded to the GPU dtype), so the
//! measured error is the GPU's alone.

use tplab_engine::block::reference::ReferenceRun;
use tplab_engine::config::Config;
use tplab_engine::params::Model;

/// Forward and backward of the whole stack on the CPU, unsharded, in f64.
pub fn reference(cfg: &Config, model: &Model<f64>) -> ReferenceRun<f64> {
    tplab_engine::block::reference::run(cfg, model)
}
