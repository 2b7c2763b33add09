//! A learner's progress file (what `Store::load` reads): any bytes give progress or an error,
//! never a panic; what parses can be scored.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tplab_quiz::progress;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = progress::parse(data) {
        let _ = p.practice_score();
        let _ = p.best_pass();
    }
});
