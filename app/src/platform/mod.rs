//! What differs between the desktop app and the web edition, in one place.
//!
//! The views call these functions and never test the platform themselves:
//!
//! | | desktop ([`native`]) | browser ([`web`], `wasm32`) |
//! |---|---|---|
//! | [`save_file`] (exports, certificates) | written atomically into a folder | a download |
//! | [`pick_text_file`] (an HF `config.json`, a progress file) | none: the command line reads files | the browser's file picker |
//! | [`LearnerStore`] (quiz progress, certificates) | `tplab_quiz::progress::Store`: files under a lock | the browser's local storage, with export and import of the progress file |
//! | GPU view | the CUDA executor | an explanation that real GPUs need the desktop app |
//! | background jobs ([`crate::background`]) | a worker thread | slices of a few ms per frame |
//!
//! The clock is `web_time` everywhere (it is `std::time` on the desktop; `std::time::Instant`
//! panics in a browser); randomness is getrandom's `wasm_js` backend in a browser
//! (`.cargo/config.toml`).

#[cfg(not(target_arch = "wasm32"))]
pub mod native;
#[cfg(not(target_arch = "wasm32"))]
pub use native::*;

#[cfg(target_arch = "wasm32")]
pub mod web;
#[cfg(target_arch = "wasm32")]
pub use web::*;

/// A file the learner picked: its name and text, or why it could not be read.
pub type Picked = Result<(String, String), String>;

/// True in the web edition.
pub const WEB: bool = cfg!(target_arch = "wasm32");

/// Remembers where a control was drawn this frame under `name`, so the browser test clicks it
/// where it is (`window.tplab.target(name)`) instead of at coordinates a layout change moves.
/// Nothing on the desktop.
#[inline]
pub fn mark(name: &str, rect: egui::Rect) {
    #[cfg(target_arch = "wasm32")]
    web::remember_target(name, rect);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (name, rect);
}

/// Encodes an egui image as PNG bytes.
pub fn png_bytes(image: &egui::ColorImage) -> anyhow::Result<Vec<u8>> {
    use anyhow::Context as _;
    let [w, h] = image.size;
    let rgba: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
    let mut out = std::io::Cursor::new(Vec::new());
    image::write_buffer_with_format(
        &mut out,
        &rgba,
        u32::try_from(w).context("image too wide")?,
        u32::try_from(h).context("image too tall")?,
        image::ColorType::Rgba8,
        image::ImageFormat::Png,
    )
    .context("encoding PNG")?;
    Ok(out.into_inner())
}

/// Saves the window's picture as `name` in `dir` (desktop) or downloads it (browser); returns
/// the line the side bar shows.
pub fn export_png(
    image: &egui::ColorImage,
    dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<String> {
    save_file(dir, name, &png_bytes(image)?)
}

use tplab_quiz::progress::Progress;

/// Adds to `into` the answers, exams and lessons of `from` it does not hold yet; returns how
/// many records were added.
pub fn merge(into: &mut Progress, from: Progress) -> usize {
    let mut added = 0;
    for a in from.answers {
        if !into.answers.contains(&a) {
            into.answers.push(a);
            added += 1;
        }
    }
    for e in from.exams {
        if !into.exams.contains(&e) {
            into.exams.push(e);
            added += 1;
        }
    }
    for l in from.lessons_read {
        if into.lessons_read.insert(l) {
            added += 1;
        }
    }
    for (id, c) in from.challenges {
        let better = into
            .challenges
            .get(&id)
            .is_none_or(|have| have.stars < c.stars);
        if better {
            into.record_challenge(&id, c.stars, c.at_unix_s);
            added += 1;
        }
    }
    if into.lang.is_none() {
        into.lang = from.lang;
    }
    into.answers.sort_by_key(|a| a.at_unix_s);
    into.exams.sort_by_key(|e| e.at_unix_s);
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_bytes_decode_to_the_same_pixels() {
        let pixels = (0..6)
            .map(|i| egui::Color32::from_rgb(i * 40, 200 - i * 30, 9))
            .collect();
        let image = egui::ColorImage::new([3, 2], pixels);
        let bytes = png_bytes(&image).expect("encodes");
        let back = image::load_from_memory(&bytes).expect("decodes").to_rgba8();
        assert_eq!(back.dimensions(), (3, 2));
        assert_eq!(back.get_pixel(2, 1).0, [200, 50, 9, 255]);
    }

    #[test]
    fn merging_an_imported_progress_file_adds_and_never_removes() {
        use tplab_quiz::progress::{AnswerRecord, ExamRecord};
        let answer = |q: &str, at| AnswerRecord {
            question_id: q.into(),
            correct: true,
            lang: tplab_lessons::Lang::En,
            exam: false,
            at_unix_s: at,
        };
        let mut here = Progress::new("Ada");
        here.answers = vec![answer("a", 1), answer("c", 3)];
        let mut there = Progress::new("Ada");
        there.answers = vec![answer("a", 1), answer("b", 2)];
        there.exams.push(ExamRecord {
            version: "1".into(),
            correct: 18,
            total: 20,
            score_percent: 90.0,
            passed: true,
            at_unix_s: 5,
            certificate_id: None,
            seed: Some(7),
            signed_by: None,
        });
        there.lessons_read.insert("01-why".into());
        there.lang = Some(tplab_lessons::Lang::Tr);
        assert_eq!(merge(&mut here, there.clone()), 3);
        let ids: Vec<&str> = here
            .answers
            .iter()
            .map(|a| a.question_id.as_str())
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(here.exams.len(), 1);
        assert_eq!(here.lang, Some(tplab_lessons::Lang::Tr));
        // A second import of the same file adds nothing.
        assert_eq!(merge(&mut here, there), 0);
        assert_eq!(here.answers.len(), 3);
    }
}
