//! A bounded, deterministic fuzz run over certificate and key parsing, in `cargo test`: seeded
//! structure-aware mutations of a genuine certificate (JSON record and PNG) and of genuine key
//! files, and of a genuine Open Badges 3.0 credential (the `.jwt` alone, and the PNG's
//! `openbadgecredential` chunk), each checked for no panic and for bounded memory (a counting
//! allocator measures the peak of every call). The cargo-fuzz targets in `fuzz/` (cert_parse, key_parse) run the same
//! parsers on unbounded input for as long as one likes, with nightly Rust.
//!
//! One test binary of its own: the global allocator counts every allocation in it.

#![allow(clippy::unwrap_used)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tplab_quiz::cert::{self, Certificate, IssuerKey, IssuerPublic, Verdict};
use tplab_quiz::Lang;

/// The system allocator, counting the bytes live now and the most live since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One measured call at a time (the tests of this binary would share the counters).
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `f` and returns its result and the most memory it held at once, in bytes.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(base))
}

/// The most a check of any bytes may hold: the decoded picture and the drawing it is compared
/// with (1400 × 990 × 3 bytes each, 4.2 MB), the PNG decoder's buffers, the record; a
/// compressed record over the cap must not add its inflated size. 64 MiB leaves room for the
/// decoder's internals, and is a sixteenth of what one hostile 1.1 MB PNG took before.
const MAX_PEAK: usize = 64 << 20;

fn key() -> IssuerKey {
    IssuerKey::from_seed([4; 32])
}

fn genuine() -> Certificate {
    Certificate::issue(
        "Deniz Kaya",
        "2026-11-30",
        85,
        "exam-v2",
        3,
        Lang::Tr,
        Some(&key()),
    )
    .unwrap()
}

fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for part in parts {
        for &b in *part {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
    }
    !c
}

type Chunk = ([u8; 4], Vec<u8>);

fn chunks(png: &[u8]) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut pos = 8;
    while pos + 12 <= png.len() {
        let len = u32::from_be_bytes(png[pos..pos + 4].try_into().unwrap()) as usize;
        let kind: [u8; 4] = png[pos + 4..pos + 8].try_into().unwrap();
        out.push((kind, png[pos + 8..pos + 8 + len].to_vec()));
        pos += 12 + len;
    }
    out
}

/// A PNG of `chunks`; each CRC right unless `bad_crc` names the chunk whose CRC is left wrong.
fn assemble(chunks: &[Chunk], bad_crc: Option<usize>) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (i, (kind, data)) in chunks.iter().enumerate() {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let crc = crc32(&[kind, data]) ^ u32::from(bad_crc == Some(i));
        out.extend_from_slice(&crc.to_be_bytes());
    }
    out
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

/// One mutation of a genuine PNG's chunk list, chosen by `rng`: edit bytes of a chunk (its
/// CRC then fixed, so the parsers behind the CRC check are reached), change a chunk's type,
/// insert a foreign, duplicate or compressed-record chunk, drop or reorder chunks, or cut or
/// extend the file.
fn mutate_png(rng: &mut ChaCha8Rng, base: &[Chunk]) -> Vec<u8> {
    let mut c = base.to_vec();
    let pick = |rng: &mut ChaCha8Rng, c: &Vec<Chunk>| rng.random_range(0..c.len());
    let mut bad_crc = None;
    match rng.random_range(0..9) {
        0 => {
            // Byte edits inside one chunk (the IHDR and the record most interesting).
            let i = if rng.random_bool(0.6) {
                rng.random_range(0..2)
            } else {
                pick(rng, &c)
            };
            for _ in 0..rng.random_range(1..6) {
                if !c[i].1.is_empty() {
                    let j = rng.random_range(0..c[i].1.len());
                    c[i].1[j] = rng.random();
                }
            }
        }
        1 => {
            let i = pick(rng, &c);
            const KINDS: [&[u8; 4]; 14] = [
                b"acTL", b"fcTL", b"fdAT", b"gAMA", b"cHRM", b"iCCP", b"sRGB", b"tRNS", b"PLTE",
                b"tEXt", b"zTXt", b"iTXt", b"IDAT", b"IEND",
            ];
            c[i].0 = *KINDS[rng.random_range(0..KINDS.len())];
        }
        2 => {
            let at = rng.random_range(0..=c.len());
            let len = rng.random_range(0..64);
            let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            c.insert(at, (*b"gAMA", data));
        }
        3 => {
            let i = pick(rng, &c);
            let at = rng.random_range(0..=c.len());
            let dup = c[i].clone();
            c.insert(at, dup);
        }
        4 => {
            // A compressed record: the genuine one, random bytes, or a bomb of up to 32 MiB.
            let record = serde_json::to_vec(&genuine()).unwrap();
            let text = match rng.random_range(0..3) {
                0 => record,
                1 => (0..rng.random_range(0..4096))
                    .map(|_| rng.random())
                    .collect(),
                _ => {
                    let mut r = record;
                    r.resize(rng.random_range(1..=32) << 20, b' ');
                    r
                }
            };
            let mut data = b"tplab-certificate\0\x01\0\0\0".to_vec();
            data.extend(zlib(&text));
            if rng.random_bool(0.2) {
                let n = rng.random_range(0..data.len());
                data.truncate(n);
            }
            c[1] = (*b"iTXt", data);
        }
        5 => {
            let i = pick(rng, &c);
            c.remove(i);
        }
        6 => {
            let (i, j) = (pick(rng, &c), pick(rng, &c));
            c.swap(i, j);
        }
        7 => bad_crc = Some(pick(rng, &c)),
        _ => {
            let mut bytes = assemble(&c, None);
            if rng.random_bool(0.5) {
                let n = rng.random_range(0..bytes.len());
                bytes.truncate(n);
            } else {
                let extra: Vec<u8> = (0..rng.random_range(1..32)).map(|_| rng.random()).collect();
                bytes.extend(extra);
            }
            return bytes;
        }
    }
    assemble(&c, bad_crc)
}

fn mutate_text(rng: &mut ChaCha8Rng, text: &[u8]) -> Vec<u8> {
    let mut b = text.to_vec();
    for _ in 0..rng.random_range(1..6) {
        match rng.random_range(0..4) {
            0 if !b.is_empty() => {
                let i = rng.random_range(0..b.len());
                b[i] = rng.random();
            }
            1 => {
                let i = rng.random_range(0..=b.len());
                b.insert(i, rng.random());
            }
            2 if !b.is_empty() => {
                let i = rng.random_range(0..b.len());
                b.remove(i);
            }
            _ => {
                let n = rng.random_range(0..=b.len());
                b.truncate(n);
            }
        }
    }
    b
}

/// Every parser of certificate and key bytes on `bytes`; what must hold whatever they are.
fn check_all(bytes: &[u8]) {
    let genuine_name = "Deniz Kaya";
    if let Ok(c) = cert::parse(bytes) {
        let _ = c.validate();
        let _ = c.compute_id();
        let _ = c.check_record(None);
    }
    match cert::check(bytes, Some(&key().public())) {
        // Anything that verifies as signed by the key states what the key signed.
        Verdict::Signed { cert, .. } => {
            assert_eq!(cert.name, genuine_name);
            assert_eq!(cert.score_percent, 85);
        }
        v => {
            let _ = v.explain();
        }
    }
    let text = String::from_utf8_lossy(bytes);
    if let Ok(k) = IssuerKey::from_file_text(&text) {
        let _ = k.public().fingerprint();
    }
    if let Ok(p) = IssuerPublic::parse(&text) {
        let _ = p.fingerprint();
    }
}

#[test]
fn mutated_certificates_and_keys_never_panic_and_stay_within_memory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = genuine();
    let png = c.render_png().unwrap();
    let base = chunks(&png);
    let json = c.to_json().unwrap().into_bytes();
    let k = key();
    let keys: Vec<Vec<u8>> = vec![
        k.to_file_text().into_bytes(),
        k.public().to_file_text().into_bytes(),
        format!(
            "# tplab issuer secret key (Ed25519 seed, hex). Keep it private.\n{}\n",
            "07".repeat(32)
        )
        .into_bytes(),
        k.public().to_hex().into_bytes(),
    ];
    // Fixed case counts (the run is the same on every machine): 600 PNGs (every 21st case),
    // each decoded and drawn when its chunks pass, and 12,000 records and keys, which take
    // microseconds.
    fuzz(
        "certificate and key",
        20_261_202,
        12_600,
        check_all,
        |rng, round| {
            if round % 21 == 0 {
                mutate_png(rng, &base)
            } else if round % 2 == 0 {
                mutate_text(rng, &json)
            } else {
                let i = rng.random_range(0..keys.len());
                mutate_text(rng, &keys[i])
            }
        },
    );
}

/// Runs `rounds` seeded cases made by `make` through `check`: none may panic or hold more than
/// [`MAX_PEAK`] at once. Prints the count, the time and the most memory one case held.
fn fuzz(
    what: &str,
    seed: u64,
    rounds: usize,
    check: fn(&[u8]),
    mut make: impl FnMut(&mut ChaCha8Rng, usize) -> Vec<u8>,
) {
    let start = std::time::Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut worst = 0usize;
    for round in 0..rounds {
        let bytes = make(&mut rng, round);
        let ((), peak) = peak_of(|| check(&bytes));
        assert!(
            peak <= MAX_PEAK,
            "{what} case {round}: {peak} bytes at once for {} input bytes",
            bytes.len()
        );
        worst = worst.max(peak);
    }
    eprintln!(
        "{rounds} {what} cases in {:.1} s; the most memory one held: {:.1} MiB",
        start.elapsed().as_secs_f64(),
        worst as f64 / (1 << 20) as f64
    );
}

/// The issue's bomb: a record chunk that inflates to 256 MiB, refused having held a fraction.
#[test]
fn a_compressed_record_bomb_is_refused_without_inflating_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let c = genuine();
    let mut base = chunks(&c.render_png().unwrap());
    let mut text = serde_json::to_vec(&c).unwrap();
    text.resize(256 << 20, b' ');
    let mut data = b"tplab-certificate\0\x01\0\0\0".to_vec();
    data.extend(zlib(&text));
    drop(text);
    base[1] = (*b"iTXt", data);
    let bomb = assemble(&base, None);
    assert!(bomb.len() < 2 << 20, "{} bytes", bomb.len());
    let (v, peak) = peak_of(|| cert::check(&bomb, None));
    assert!(matches!(v, Verdict::Invalid(_)), "{v:?}");
    assert!(v.explain().contains("over the"), "{}", v.explain());
    assert!(peak < 1 << 20, "{peak} bytes held to refuse it");
}

/// A genuine certificate's Open Badges 3.0 credential (`.jwt`) and its PNG carrying it.
fn genuine_badge() -> (String, Vec<u8>) {
    let c = genuine();
    let subject = tplab_quiz::badge::Subject {
        email: Some("deniz@example.org"),
        practical: Some(true),
        // 2026-11-30T10:00:00Z, the record's date.
        issued_at_s: 1_796_032_800,
    };
    let jwt = tplab_quiz::badge::issue(&c, &key(), &subject)
        .unwrap()
        .unwrap();
    let png = c.render_png_with(Some(&jwt)).unwrap();
    (jwt, png)
}

/// What must hold of any credential bytes: no panic, and whatever verifies with the issuer's
/// key states what the key signed.
fn check_badge_bytes(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Ok((claims, _)) = tplab_quiz::badge::verify(&text, u64::MAX / 4) {
        assert_eq!(claims.score_percent, 85);
    }
    match cert::check(bytes, Some(&key().public())) {
        Verdict::Badge { claims, .. } => {
            assert_eq!(
                (claims.name.as_str(), claims.score_percent),
                ("Deniz Kaya", 85)
            );
        }
        Verdict::Signed { cert, badge, .. } => {
            assert_eq!((cert.name.as_str(), cert.score_percent), ("Deniz Kaya", 85));
            if let Some(b) = badge {
                assert_eq!(b.score_percent, 85);
                assert_eq!(b.practical, Some(true));
            }
        }
        v => {
            let _ = v.explain();
        }
    }
}

/// One mutation of the PNG's credential chunk (index 2, right after the record): its bytes
/// edited (CRC fixed), a random or oversized credential, the chunk compressed (refused: OB 3.0
/// bakes it uncompressed) or inflating to up to 32 MiB, duplicated, moved, or a second
/// credential of random text after the image data.
fn mutate_badge_chunk(rng: &mut ChaCha8Rng, base: &[Chunk], jwt: &str) -> Vec<u8> {
    let mut c = base.to_vec();
    let head = b"openbadgecredential\0\0\0\0\0".to_vec();
    match rng.random_range(0..6) {
        0 => {
            for _ in 0..rng.random_range(1..6) {
                let j = rng.random_range(0..c[2].1.len());
                c[2].1[j] = rng.random();
            }
        }
        1 => {
            let mut data = head.clone();
            let len = if rng.random_bool(0.2) {
                rng.random_range(60_000..200_000)
            } else {
                rng.random_range(0..2048)
            };
            data.extend((0..len).map(|_| rng.random_range(32u8..127)));
            c[2] = (*b"iTXt", data);
        }
        2 => {
            // Compressed: the genuine token, or a bomb of up to 32 MiB.
            let mut text = jwt.as_bytes().to_vec();
            if rng.random_bool(0.5) {
                text.resize(rng.random_range(1..=32) << 20, b'A');
            }
            let mut data = b"openbadgecredential\0\x01\0\0\0".to_vec();
            data.extend(zlib(&text));
            c[2] = (*b"iTXt", data);
        }
        3 => {
            let dup = c[2].clone();
            let at = rng.random_range(0..=c.len());
            c.insert(at, dup);
        }
        4 => {
            let moved = c.remove(2);
            let at = rng.random_range(0..=c.len());
            c.insert(at, moved);
        }
        _ => {
            let mut data = head;
            data.extend(mutate_text(rng, jwt.as_bytes()));
            let at = c.len() - 1;
            c.insert(at, (*b"iTXt", data));
        }
    }
    assemble(&c, None)
}

/// Issue 38: the credential is read from untrusted bytes too (a `.jwt` given to `tplab cert
/// verify`, the PNG's chunk): seeded mutations of both never panic, stay within the memory
/// bound, and nothing verifies with the issuer's key unless it says what the key signed.
#[test]
fn mutated_badges_never_panic_and_stay_within_memory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (jwt, png) = genuine_badge();
    let base = chunks(&png);
    assert!(
        base[2].1.starts_with(b"openbadgecredential\0"),
        "the chunk after the record"
    );
    check_badge_bytes(jwt.as_bytes());
    check_badge_bytes(&png);
    // 300 PNGs (every 21st case; each decoded and drawn when its chunks pass) and 6,000 tokens.
    fuzz(
        "credential",
        20_261_206,
        6_300,
        check_badge_bytes,
        |rng, round| {
            if round % 21 == 0 {
                mutate_badge_chunk(rng, &base, &jwt)
            } else {
                mutate_text(rng, jwt.as_bytes())
            }
        },
    );
}
