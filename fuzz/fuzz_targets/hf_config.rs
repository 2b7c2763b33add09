//! A Hugging Face config.json (the `--model FILE.json` parser): any bytes give a model or an
//! error; a model that parses is valid and its sizes never overflow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tplab_engine::capacity::models::ModelSpec;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(m) = ModelSpec::from_hf_config(text) {
        assert!(m.validate().is_ok());
        assert!(m.params() <= tplab_engine::capacity::models::MAX_PARAMS);
        let _ = (m.summary(), m.active_params(), m.kv_cache_bytes_per_token(2));
        for tp in tplab_engine::capacity::memory::serving_tp_sizes(&m) {
            let _ = tplab_engine::capacity::memory::serving_memory(&m, tp, 1, 64, m.seq);
        }
    }
});
