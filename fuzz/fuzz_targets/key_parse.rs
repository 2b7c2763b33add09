//! An issuer key file (`--issuer-key FILE`, `--issuer KEY`): any bytes give a key or an error,
//! never a panic, and never both readings: a file is a secret key or a public key, not both.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tplab_quiz::cert::{IssuerKey, IssuerPublic};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let secret = IssuerKey::from_file_text(&text);
    let public = IssuerPublic::parse(&text);
    assert!(!(secret.is_ok() && public.is_ok()), "read as both kinds of key");
    if let Ok(k) = secret {
        let _ = k.public().fingerprint();
    }
    if let Ok(p) = public {
        let _ = p.fingerprint();
    }
});
