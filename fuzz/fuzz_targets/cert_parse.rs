//! A certificate file (`tplab cert verify FILE`): any bytes give a certificate or an error, and
//! checking them (without a trusted issuer) gives a verdict, never a panic. The same bytes as a
//! key file (`--issuer KEY`, `--issuer-key FILE`) give a key or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tplab_quiz::cert;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = cert::parse(data) {
        let _ = c.validate();
        let _ = c.compute_id();
        let _ = c.check_record(None);
    }
    let _ = cert::check(data, None).explain();
    let text = String::from_utf8_lossy(data);
    let _ = cert::IssuerKey::from_file_text(&text);
    let _ = cert::IssuerPublic::parse(&text);
});
