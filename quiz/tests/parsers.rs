//! The parsers of untrusted bytes — a progress file, a certificate record or PNG — return Ok or
//! Err for any input and never panic (proptest, modest case counts: they run in CI).

// Test helpers outside #[test] functions unwrap too: a failure there is a failed test.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use tplab_quiz::cert::{self, Certificate, IssuerKey};
use tplab_quiz::progress;
use tplab_quiz::Lang;

/// The certificate both fixtures come from (seeded issuer key).
fn genuine() -> Certificate {
    let k = IssuerKey::from_seed([4; 32]);
    Certificate::issue(
        "Deniz Kaya",
        "2026-11-30",
        85,
        "exam-v2",
        3,
        Lang::Tr,
        Some(&k),
    )
    .unwrap()
}

fn genuine_png() -> &'static [u8] {
    static PNG: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    PNG.get_or_init(|| genuine().render_png().unwrap())
}

fn genuine_json() -> String {
    genuine().to_json().unwrap()
}

const PROGRESS: &str = r#"{"schema": 2, "learner": "Ayşe", "lang": "tr", "answers": [{"question_id": "q1", "correct": true, "lang": "tr", "exam": false, "at_unix_s": 1}], "exams": [], "lessons_read": ["what-is-tp"]}"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = progress::parse(&bytes);
        let _ = cert::parse(&bytes);
        let _ = cert::check(&bytes, None);
        // The same bytes behind a PNG signature take the PNG path.
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend_from_slice(&bytes);
        let _ = cert::parse(&png);
        let _ = cert::check(&png, None);
    }

    #[test]
    fn edited_progress_files_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = PROGRESS.as_bytes().to_vec();
        for (at, b) in &edits {
            let i = at.index(bytes.len());
            bytes[i] = *b;
        }
        let n = cut.index(bytes.len() + 1);
        let _ = progress::parse(&bytes[..n]);
    }

    #[test]
    fn edited_certificate_records_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = genuine_json().into_bytes();
        for (at, b) in &edits {
            let i = at.index(bytes.len());
            bytes[i] = *b;
        }
        let v = cert::check(&bytes, None);
        // An edited signed record never verifies as signed unless the edit left the signed
        // content as it was (e.g. whitespace).
        if let cert::Verdict::Signed { cert, .. } = &v {
            prop_assert_eq!(cert.name.as_str(), "Deniz Kaya");
            prop_assert_eq!(cert.score_percent, 85);
        }
    }
}

proptest! {
    // Each case decodes a full 1400×990 picture: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn edited_or_cut_certificate_pngs_never_panic_nor_verify_changed(
        at in any::<prop::sample::Index>(),
        b in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let original = genuine_png();
        let mut bytes = original.to_vec();
        let i = at.index(bytes.len());
        bytes[i] = b;
        let n = cut.index(bytes.len() + 1);
        let v = cert::check(&bytes[..n], None);
        if &bytes[..n] != original {
            prop_assert!(!v.is_valid() || n == bytes.len(), "a cut PNG verified: {v:?}");
        }
    }
}
