//! Forging certificates the ways issue 12 lists, and tampering with their PNGs: every forgery is
//! reported unsigned or invalid, never "signed ... valid" by the issuer.

// Test helpers outside #[test] functions unwrap too: a failure there is a failed test.
#![allow(clippy::unwrap_used)]

use tplab_quiz::cert::{self, Certificate, Invalid, IssuerKey, Verdict, FORMAT, PNG_KEYWORD};
use tplab_quiz::Lang;

fn teacher() -> IssuerKey {
    IssuerKey::from_seed([1; 32])
}

fn genuine(name: &str, lang: Lang) -> Certificate {
    let k = teacher();
    Certificate::issue(name, "2026-11-30", 90, "exam-v2", 77, lang, Some(&k)).unwrap()
}

/// A record typed by hand, with its public ID recomputed the way the README describes.
fn forged(name: &str, date: &str, score: u32, version: &str) -> Certificate {
    let mut c = Certificate {
        format: FORMAT.to_string(),
        name: name.to_string(),
        date: date.to_string(),
        score_percent: score,
        exam_version: version.to_string(),
        sitting_seed: 1,
        lang: Lang::En,
        issuer_key: None,
        id: String::new(),
        signature: None,
    };
    c.id = c.compute_id();
    c
}

fn verdict_of_json(c: &Certificate, issuer: Option<&cert::IssuerPublic>) -> Verdict {
    cert::check(serde_json::to_string(c).unwrap().as_bytes(), issuer)
}

fn is_invalid(v: &Verdict) -> bool {
    matches!(v, Verdict::Invalid(_))
}

#[test]
fn the_mallory_forgery_is_invalid() {
    let c = forged("Mallory Forger", "1999-99-99", 4_294_967_295, "exam-v999");
    let v = verdict_of_json(&c, None);
    assert!(is_invalid(&v), "{v:?}");
    let text = v.explain();
    assert!(text.starts_with("invalid:"), "{text}");
    // Each wrong field alone is caught, with its reason.
    for (c, needle) in [
        (
            forged("Mallory Forger", "1999-99-99", 90, "exam-v2"),
            "no month 99",
        ),
        (
            forged("Mallory Forger", "2026-11-30", 4_294_967_295, "exam-v2"),
            "impossible",
        ),
        (
            forged("Mallory Forger", "2026-11-30", 90, "exam-v999"),
            "not an exam",
        ),
        (
            forged("Mallory Forger", "2026-11-30", 40, "exam-v2"),
            "below the pass mark",
        ),
        (
            forged("Mallory Forger", "2999-01-01", 90, "exam-v2"),
            "in the future",
        ),
    ] {
        let e = verdict_of_json(&c, None).explain();
        assert!(e.contains(needle), "{needle}: {e}");
    }
    // A score that does not even fit the field is not a record.
    let json = serde_json::to_string(&forged("Mallory Forger", "2026-11-30", 90, "exam-v2"))
        .unwrap()
        .replace("\"score_percent\":90", "\"score_percent\":42949672950");
    assert!(is_invalid(&cert::check(json.as_bytes(), None)));
}

#[test]
fn a_well_formed_hand_written_record_is_only_unsigned() {
    let c = forged("Mallory Forger", "2026-11-30", 100, "exam-v2");
    let v = verdict_of_json(&c, None);
    assert!(matches!(v, Verdict::Unsigned { .. }), "{v:?}");
    assert!(v
        .explain()
        .starts_with("unsigned: consistent, but anyone could have written it"));
    // Asked for the teacher's signature: invalid.
    let v = verdict_of_json(&c, Some(&teacher().public()));
    assert!(
        matches!(v, Verdict::Invalid(Invalid::NotSigned(_))),
        "{v:?}"
    );
}

#[test]
fn empty_records_are_invalid() {
    for text in [
        "",
        "{}",
        "null",
        "[]",
        r#"{"format":"tplab-certificate-v2"}"#,
    ] {
        assert!(is_invalid(&cert::check(text.as_bytes(), None)), "{text:?}");
    }
    let c = forged("", "", 0, "");
    assert!(is_invalid(&verdict_of_json(&c, None)));
    // Every field present but empty-ish, ID recomputed: still invalid.
    let c = forged(" ", "2026-11-30", 100, "exam-v2");
    assert!(is_invalid(&verdict_of_json(&c, None)));
}

#[test]
fn a_name_that_spoofs_the_terminal_is_invalid() {
    for name in [
        "Alice\u{202E}\npassed exam-v2 with 100%",
        "Alice\u{2067}ecilA",
        "Alice\r\nsigned by ed25519:0000",
        "\u{1b}[2KAlice",
    ] {
        let c = forged(name, "2026-11-30", 100, "exam-v2");
        let v = verdict_of_json(&c, None);
        assert!(is_invalid(&v), "{name:?}: {v:?}");
        // The reason is printed without the character itself.
        let e = v.explain();
        assert!(
            !e.contains('\u{202E}') && !e.contains('\u{1b}') && !e.contains('\n'),
            "{e:?}"
        );
    }
}

#[test]
fn a_reason_quoting_the_file_cannot_spoof_the_terminal() {
    // The parser's message quotes the bad value; the verdict escapes what it quotes.
    let json = r#"{"format":"tplab-certificate-v2","name":"x","date":"2026-11-30","score_percent":"\u202e\n\u001b[2Kvalid","exam_version":"exam-v2","sitting_seed":1,"lang":"en","issuer_key":null,"id":"X","signature":null}"#;
    let e = cert::check(json.as_bytes(), None).explain();
    assert!(e.starts_with("invalid:"), "{e}");
    assert!(
        !e.contains('\u{202E}') && !e.contains('\n') && !e.contains('\u{1b}'),
        "{e:?}"
    );
    let c = forged("Alice", "2026-11-30\u{202E}", 100, "exam-v2\n");
    let e = verdict_of_json(&c, None).explain();
    assert!(!e.contains('\u{202E}') && !e.contains('\n'), "{e:?}");
}

#[test]
fn editing_a_signed_record_and_recomputing_the_public_hash_is_caught() {
    let mut c = genuine("Bob Student", Lang::En);
    c.name = "Mallory Forger".into();
    c.score_percent = 100;
    c.id = c.compute_id();
    assert_eq!(
        verdict_of_json(&c, None),
        Verdict::Invalid(Invalid::Signature)
    );
    // Dropping the issuer key and the signature turns it into an unsigned record, which says so
    // and fails as soon as the teacher's key is asked for.
    c.issuer_key = None;
    c.signature = None;
    c.id = c.compute_id();
    assert!(matches!(
        verdict_of_json(&c, None),
        Verdict::Unsigned { .. }
    ));
    assert!(is_invalid(&verdict_of_json(&c, Some(&teacher().public()))));
}

#[test]
fn a_record_signed_with_mallorys_own_key_names_mallorys_key() {
    let mallory = IssuerKey::from_seed([66; 32]);
    let c = Certificate::issue(
        "Mallory Forger",
        "2026-11-30",
        100,
        "exam-v2",
        5,
        Lang::En,
        Some(&mallory),
    )
    .unwrap();
    match verdict_of_json(&c, None) {
        Verdict::Signed { fingerprint, .. } => {
            assert_eq!(fingerprint, mallory.public().fingerprint());
            assert_ne!(fingerprint, teacher().public().fingerprint());
        }
        v => panic!("{v:?}"),
    }
    assert!(matches!(
        verdict_of_json(&c, Some(&teacher().public())),
        Verdict::Invalid(Invalid::OtherIssuer { .. })
    ));
}

/// Decodes a certificate PNG into its pixels.
fn pixels(png_bytes: &[u8]) -> Vec<u8> {
    let mut r = png::Decoder::new(std::io::Cursor::new(png_bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    r.next_frame(&mut buf).unwrap();
    buf
}

/// A text chunk under the certificate's keyword: international (iTXt, as tplab writes) or
/// plain (tEXt).
enum Chunk<'a> {
    Itxt(&'a str),
    Text(&'a str),
}

/// A PNG of `px` carrying `chunks` (what a forger's script would write).
fn encode_chunks(px: &[u8], chunks: &[Chunk]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, cert::WIDTH, cert::HEIGHT);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        for c in chunks {
            match c {
                Chunk::Itxt(t) => enc.add_itxt_chunk(PNG_KEYWORD.to_string(), t.to_string()),
                Chunk::Text(t) => enc.add_text_chunk(PNG_KEYWORD.to_string(), t.to_string()),
            }
            .unwrap();
        }
        let mut w = enc.write_header().unwrap();
        w.write_image_data(px).unwrap();
    }
    out
}

/// A PNG of `px` carrying `record`.
fn encode(px: &[u8], record: &str) -> Vec<u8> {
    encode_chunks(px, &[Chunk::Itxt(record)])
}

#[test]
fn tampered_and_truncated_pngs_fail() {
    let bob = genuine("Bob Student", Lang::En);
    let png_bytes = bob.render_png().unwrap();
    assert!(matches!(
        cert::check(&png_bytes, Some(&teacher().public())),
        Verdict::Signed { .. }
    ));
    let record = serde_json::to_string(&bob).unwrap();
    let px = pixels(&png_bytes);
    let w = cert::WIDTH as usize;

    // Erased name: the name's band painted over with the background.
    let mut erased = px.clone();
    for y in 430..515 {
        for x in 100..1300 {
            let i = (y * w + x) * 3;
            erased[i..i + 3].copy_from_slice(&[250, 247, 238]);
        }
    }
    let v = cert::check(&encode(&erased, &record), None);
    assert!(
        matches!(v, Verdict::Invalid(Invalid::Pixels { .. })),
        "{v:?}"
    );

    // One pixel changed is enough.
    let mut one = px.clone();
    one[(500 * w + 700) * 3] ^= 0x40;
    assert!(matches!(
        cert::check(&encode(&one, &record), None),
        Verdict::Invalid(Invalid::Pixels { .. })
    ));

    // Another person's picture carrying Bob's signed record.
    let alice_png = genuine("Alice Other", Lang::En).render_png().unwrap();
    let v = cert::check(&encode(&pixels(&alice_png), &record), None);
    assert!(
        matches!(v, Verdict::Invalid(Invalid::Pixels { .. })),
        "{v:?}"
    );

    // Bob's picture carrying Alice's (genuine, signed) record.
    let alice = serde_json::to_string(&genuine("Alice Other", Lang::En)).unwrap();
    assert!(matches!(
        cert::check(&encode(&px, &alice), None),
        Verdict::Invalid(Invalid::Pixels { .. })
    ));

    // The same record drawn in the other language is another picture.
    let tr = pixels(&genuine("Bob Student", Lang::Tr).render_png().unwrap());
    assert!(is_invalid(&cert::check(&encode(&tr, &record), None)));

    // Cut to its first 5,000 bytes, or just before its end.
    for len in [5_000, png_bytes.len() - 12, png_bytes.len() / 2, 60] {
        let v = cert::check(&png_bytes[..len], None);
        assert!(
            matches!(v, Verdict::Invalid(Invalid::BadPng(_))),
            "{len}: {v:?}"
        );
    }

    // A byte of the compressed image flipped: the chunk's CRC (or the pixels) catch it.
    let mut flipped = png_bytes.clone();
    let n = flipped.len();
    flipped[n - 5_000] ^= 0x01;
    assert!(is_invalid(&cert::check(&flipped, None)));

    // No record, or two records.
    let bare = encode_chunks(&px, &[]);
    assert_eq!(
        cert::check(&bare, None),
        Verdict::Invalid(Invalid::NoRecord)
    );
    // A second record in a tEXt chunk (written before the iTXt one): a chunk tplab does not
    // write. (Two iTXt records: quiz/src/cert.rs's unit tests.)
    let two = encode_chunks(&px, &[Chunk::Itxt(&record), Chunk::Text(&alice)]);
    assert!(matches!(
        cert::check(&two, None),
        Verdict::Invalid(Invalid::ForeignChunk(why)) if why.starts_with("'tEXt'")
    ));
}
