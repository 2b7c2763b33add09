//! Certificates: a JSON record with a short verifiable ID, and a PNG to share.
//!
//! The ID is the first 12 base32 characters (60 bits) of SHA-256 over the canonical record
//! (`{"date","exam_version","name","score_percent"}` as compact JSON with sorted keys), shown as
//! `XXXX-XXXX-XXXX`. [`verify_file`] recomputes it: any edit to the name, score, date or exam
//! version changes the ID. It detects edits, not forgery: anyone can recompute an ID for a record
//! they typed themselves (that would need a signing key held by an issuer).

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use thiserror::Error;
use tplab_lessons::Lang;

/// PNG text-chunk keyword that carries the JSON record inside the image.
pub const PNG_KEYWORD: &str = "tplab-certificate";

/// Domain separation for the hash, so the ID is specific to tplab certificates.
const DOMAIN: &[u8] = b"tplab-certificate-v1\n";

/// A certificate record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Certificate {
    pub name: String,
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    /// Exam score, whole percent.
    pub score_percent: u32,
    pub exam_version: String,
    /// `XXXX-XXXX-XXXX`, from [`Certificate::compute_id`].
    pub id: String,
}

/// Why a certificate could not be read or written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CertError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a tplab certificate record: {reason}", path.display())]
    Malformed { path: PathBuf, reason: String },
    #[error("cannot draw the certificate: {0}")]
    Render(String),
    #[error(transparent)]
    Store(#[from] crate::progress::StoreError),
}

/// The result of checking a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The ID matches the record.
    Intact(Certificate),
    /// The record was changed after the ID was computed.
    Tampered {
        record: Certificate,
        computed_id: String,
    },
}

impl Certificate {
    /// A new record with its ID.
    pub fn issue(name: &str, date: &str, score_percent: u32, exam_version: &str) -> Self {
        let mut c = Self {
            name: name.trim().to_string(),
            date: date.to_string(),
            score_percent,
            exam_version: exam_version.to_string(),
            id: String::new(),
        };
        c.id = c.compute_id();
        c
    }

    /// Compact JSON of every field but `id`, keys sorted.
    pub fn canonical_json(&self) -> String {
        // Keys written in sorted order: canonical whether or not serde_json preserves order.
        let v = serde_json::json!({
            "date": self.date,
            "exam_version": self.exam_version,
            "name": self.name,
            "score_percent": self.score_percent,
        });
        v.to_string()
    }

    /// The ID this record should carry.
    pub fn compute_id(&self) -> String {
        let mut h = Sha256::new();
        h.update(DOMAIN);
        h.update(self.canonical_json().as_bytes());
        let b32 = base32(&h.finalize());
        format!("{}-{}-{}", &b32[0..4], &b32[4..8], &b32[8..12])
    }

    pub fn verify(self) -> Verdict {
        let computed_id = self.compute_id();
        if computed_id == self.id {
            Verdict::Intact(self)
        } else {
            Verdict::Tampered {
                record: self,
                computed_id,
            }
        }
    }

    /// File stem, e.g. `tplab-certificate-ABCD-EFGH-IJKL`.
    pub fn file_stem(&self) -> String {
        format!("tplab-certificate-{}", self.id)
    }

    /// Writes `<stem>.json` and `<stem>.png` (the PNG also carries the record) into `dir`,
    /// atomically. Returns both paths.
    pub fn write(&self, dir: &Path, lang: Lang) -> Result<(PathBuf, PathBuf), CertError> {
        let json =
            serde_json::to_string_pretty(self).map_err(|e| CertError::Render(e.to_string()))?;
        let json_path = dir.join(format!("{}.json", self.file_stem()));
        let png_path = dir.join(format!("{}.png", self.file_stem()));
        crate::progress::write_atomic(&json_path, json.as_bytes())?;
        crate::progress::write_atomic(&png_path, &self.render_png(lang)?)?;
        Ok((json_path, png_path))
    }

    /// The certificate as a PNG, with the JSON record in an iTXt chunk.
    pub fn render_png(&self, lang: Lang) -> Result<Vec<u8>, CertError> {
        let font = FontRef::try_from_slice(epaint_default_fonts::UBUNTU_LIGHT)
            .map_err(|e| CertError::Render(e.to_string()))?;
        let mut c = Canvas::new(1400, 990, [250, 247, 238]);
        let navy = [24, 44, 92];
        let gold = [176, 137, 48];
        c.frame(30, 6, navy);
        c.frame(48, 2, gold);
        let (title, course, certifies, passed, date_l, verify_l) = match lang {
            Lang::En => (
                "Certificate of Completion".to_string(),
                "Tensor Parallelism for Large Models".to_string(),
                "This certifies that".to_string(),
                format!(
                    "passed the tplab exam {} with a score of {}%",
                    self.exam_version, self.score_percent
                ),
                "Date",
                "Verify with: tplab cert verify",
            ),
            Lang::Tr => (
                "Başarı Sertifikası".to_string(),
                "Büyük Modeller için Tensör Paralelliği".to_string(),
                "Bu belge".to_string(),
                format!(
                    "adlı kişinin tplab sınavını ({}) %{} puanla geçtiğini onaylar",
                    self.exam_version, self.score_percent
                ),
                "Tarih",
                "Doğrulamak için: tplab cert verify",
            ),
        };
        c.text_centered(&font, &title, 64.0, 190.0, navy);
        c.text_centered(&font, &course, 40.0, 270.0, gold);
        c.text_centered(&font, &certifies, 30.0, 390.0, [60, 60, 60]);
        c.text_centered(&font, &self.name, 76.0, 500.0, [20, 20, 20]);
        c.text_centered(&font, &passed, 30.0, 590.0, [60, 60, 60]);
        c.text_centered(
            &font,
            &format!("{date_l}: {}      ID: {}", self.date, self.id),
            30.0,
            760.0,
            navy,
        );
        c.text_centered(
            &font,
            &format!("{verify_l} {}.json", self.file_stem()),
            22.0,
            830.0,
            [90, 90, 90],
        );
        c.encode_png(&serde_json::to_string(self).unwrap_or_default())
    }
}

/// Reads a record from JSON text.
pub fn parse(text: &str, path: &Path) -> Result<Certificate, CertError> {
    serde_json::from_str(text).map_err(|e| CertError::Malformed {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// Checks a `.json` record, or a `.png` certificate through the record it carries.
pub fn verify_file(path: &Path) -> Result<Verdict, CertError> {
    let bytes = std::fs::read(path).map_err(|source| CertError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text = if bytes.starts_with(b"\x89PNG") {
        png_record(&bytes).ok_or_else(|| CertError::Malformed {
            path: path.to_path_buf(),
            reason: format!("the PNG carries no '{PNG_KEYWORD}' text chunk"),
        })?
    } else {
        String::from_utf8(bytes).map_err(|e| CertError::Malformed {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?
    };
    Ok(parse(&text, path)?.verify())
}

fn png_record(bytes: &[u8]) -> Option<String> {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let reader = decoder.read_info().ok()?;
    reader
        .info()
        .utf8_text
        .iter()
        .find(|c| c.keyword == PNG_KEYWORD)
        .and_then(|c| c.get_text().ok())
}

/// RFC 4648 base32, upper case, no padding.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    let (mut buf, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buf = (buf << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buf >> bits) & 31) as usize]));
        }
        buf &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buf << (5 - bits)) & 31) as usize]));
    }
    out
}

/// An RGB image to draw on.
struct Canvas {
    w: u32,
    h: u32,
    px: Vec<u8>,
}

impl Canvas {
    fn new(w: u32, h: u32, bg: [u8; 3]) -> Self {
        let px = bg
            .iter()
            .copied()
            .cycle()
            .take((w * h * 3) as usize)
            .collect();
        Self { w, h, px }
    }

    fn blend(&mut self, x: i64, y: i64, rgb: [u8; 3], alpha: f32) {
        if x < 0 || y < 0 || x >= i64::from(self.w) || y >= i64::from(self.h) {
            return;
        }
        let i = ((y as u32 * self.w + x as u32) * 3) as usize;
        let a = alpha.clamp(0.0, 1.0);
        for (k, &c) in rgb.iter().enumerate() {
            let old = f32::from(self.px[i + k]);
            self.px[i + k] = (old + (f32::from(c) - old) * a).round() as u8;
        }
    }

    /// A rectangular frame `inset` pixels from the edge, `thick` pixels wide.
    fn frame(&mut self, inset: u32, thick: u32, rgb: [u8; 3]) {
        for y in inset..self.h - inset {
            for x in inset..self.w - inset {
                let edge = x < inset + thick
                    || y < inset + thick
                    || x >= self.w - inset - thick
                    || y >= self.h - inset - thick;
                if edge {
                    self.blend(i64::from(x), i64::from(y), rgb, 1.0);
                }
            }
        }
    }

    /// Draws `text` centred horizontally with its baseline at `baseline_y`; shrinks it to fit.
    fn text_centered(
        &mut self,
        font: &FontRef<'_>,
        text: &str,
        size_px: f32,
        baseline_y: f32,
        rgb: [u8; 3],
    ) {
        let max_w = self.w as f32 - 160.0;
        let mut size = size_px;
        let width = |size: f32| {
            let sf = font.as_scaled(PxScale::from(size));
            let mut w = 0.0;
            let mut prev = None;
            for ch in text.chars() {
                let id = sf.glyph_id(ch);
                if let Some(p) = prev {
                    w += sf.kern(p, id);
                }
                w += sf.h_advance(id);
                prev = Some(id);
            }
            w
        };
        while width(size) > max_w && size > 8.0 {
            size *= 0.95;
        }
        let sf = font.as_scaled(PxScale::from(size));
        let mut x = (self.w as f32 - width(size)) / 2.0;
        let mut prev = None;
        for ch in text.chars() {
            let id = sf.glyph_id(ch);
            if let Some(p) = prev {
                x += sf.kern(p, id);
            }
            let glyph = id.with_scale_and_position(PxScale::from(size), point(x, baseline_y));
            x += sf.h_advance(id);
            prev = Some(id);
            if let Some(outline) = font.outline_glyph(glyph) {
                let b = outline.px_bounds();
                let (ox, oy) = (b.min.x as i64, b.min.y as i64);
                let mut hits = Vec::new();
                outline
                    .draw(|gx, gy, cov| hits.push((ox + i64::from(gx), oy + i64::from(gy), cov)));
                for (px, py, cov) in hits {
                    self.blend(px, py, rgb, cov);
                }
            }
        }
    }

    fn encode_png(&self, record_json: &str) -> Result<Vec<u8>, CertError> {
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, self.w, self.h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            enc.add_itxt_chunk(PNG_KEYWORD.to_string(), record_json.to_string())
                .map_err(|e| CertError::Render(e.to_string()))?;
            let mut w = enc
                .write_header()
                .map_err(|e| CertError::Render(e.to_string()))?;
            w.write_image_data(&self.px)
                .map_err(|e| CertError::Render(e.to_string()))?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert() -> Certificate {
        Certificate::issue("Şule Öztürk", "2026-11-30", 85, "exam-v1")
    }

    #[test]
    fn base32_matches_rfc4648_vectors() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY");
        assert_eq!(base32(b"fo"), "MZXQ");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
    }

    #[test]
    fn id_is_stable_and_short() {
        let c = cert();
        assert_eq!(c.id.len(), 14);
        assert_eq!(c.id, cert().id);
        assert_eq!(
            c.canonical_json(),
            r#"{"date":"2026-11-30","exam_version":"exam-v1","name":"Şule Öztürk","score_percent":85}"#
        );
        // Independent computation of the ID from the canonical record.
        let mut h = Sha256::new();
        h.update(b"tplab-certificate-v1\n");
        h.update(c.canonical_json().as_bytes());
        let b = base32(&h.finalize());
        assert_eq!(c.id.replace('-', ""), b[..12]);
    }

    #[test]
    fn any_edit_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let (json_path, png_path) = cert().write(dir.path(), Lang::Tr).unwrap();
        assert!(matches!(
            verify_file(&json_path).unwrap(),
            Verdict::Intact(_)
        ));
        assert!(matches!(
            verify_file(&png_path).unwrap(),
            Verdict::Intact(_)
        ));
        let original = std::fs::read_to_string(&json_path).unwrap();
        for (from, to) in [
            ("Şule Öztürk", "Sule Ozturk"),
            ("\"score_percent\": 85", "\"score_percent\": 95"),
            ("2026-11-30", "2026-11-29"),
            ("exam-v1", "exam-v2"),
        ] {
            assert!(original.contains(from), "{from}");
            let edited = original.replace(from, to);
            let p = dir.path().join("edited.json");
            std::fs::write(&p, edited).unwrap();
            assert!(
                matches!(verify_file(&p).unwrap(), Verdict::Tampered { .. }),
                "edit {from} -> {to} not detected"
            );
        }
        // Re-formatting alone is not an edit.
        let p = dir.path().join("compact.json");
        std::fs::write(&p, serde_json::to_string(&cert()).unwrap()).unwrap();
        assert!(matches!(verify_file(&p).unwrap(), Verdict::Intact(_)));
        // Garbage and extra fields are malformed, not intact.
        std::fs::write(&p, "{\"name\": 1}").unwrap();
        assert!(matches!(verify_file(&p), Err(CertError::Malformed { .. })));
    }

    #[test]
    fn png_is_a_real_image_with_ink() {
        let bytes = cert().render_png(Lang::En).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(&bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (1400, 990));
        // The name line (baseline 500, 76 px) is drawn: dark pixels in the middle band.
        let dark = (430..510)
            .flat_map(|y| (200..1200).map(move |x| (y, x)))
            .filter(|&(y, x)| buf[(y * 1400 + x) * 3] < 100)
            .count();
        assert!(dark > 2000, "{dark} dark pixels");
    }
}
