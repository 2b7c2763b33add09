//! The `--hardware FILE.toml` parser: any bytes give a catalogue or an error; what parses has
//! every figure finite, positive and selectable by its name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tplab_engine::capacity::hardware::{Catalogue, Cluster};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cat) = Catalogue::default().from_toml(text) {
        for g in &cat.gpus {
            assert!(g.memory_gb.is_finite() && g.memory_gb > 0.0);
            assert!(g.peak_bf16_tflops.is_finite() && g.peak_bf16_tflops > 0.0);
            let found = cat.gpu(&g.name).expect("every GPU is selectable by its own name");
            let _ = Cluster::new(&cat, &found.name, 16, 8, "ib400");
        }
        for l in &cat.links {
            assert!(l.bandwidth_gbs.is_finite() && l.bandwidth_gbs > 0.0);
            assert!(cat.link(&l.name).is_ok());
        }
    }
});
