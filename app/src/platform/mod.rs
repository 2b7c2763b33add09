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

use crate::app::{Launch, ThemeChoice};
use tplab_quiz::progress::Progress;

/// What the URL's query asks for: `view`, `tp`, `lang`, `theme`, `presenter`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UrlLaunch {
    pub launch: Launch,
    pub tp: Option<usize>,
    /// Another TP size drawn beside the scenario's (`beside=4`).
    pub beside: Option<usize>,
}

/// Reads `?view=…&tp=…&lang=…&theme=…&presenter=1`; an unknown value is an error naming the
/// choices, as the desktop's flags are.
pub fn parse_query(query: &str) -> Result<UrlLaunch, String> {
    let (mut view, mut tp, mut lang, mut theme, mut presenter) = (None, None, None, None, false);
    let mut challenge = None;
    let mut beside = None;
    for pair in query
        .trim_start_matches('?')
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "view" => view = Some(v.to_string()),
            "tp" | "beside" => {
                let n: usize = v.parse().map_err(|_| {
                    format!(
                        "{k}={v}: TP must be a whole number from 1 to {}",
                        tplab_engine::config::MAX_TP
                    )
                })?;
                if !(1..=tplab_engine::config::MAX_TP).contains(&n) {
                    return Err(format!(
                        "{k}={v}: TP must be from 1 to {}",
                        tplab_engine::config::MAX_TP
                    ));
                }
                if k == "tp" {
                    tp = Some(n);
                } else {
                    beside = Some(n);
                }
            }
            "lang" => {
                lang = Some(
                    v.parse::<tplab_lessons::Lang>()
                        .map_err(|e| format!("lang={v}: {e}"))?,
                )
            }
            "theme" => {
                theme = Some(match v {
                    "light" => ThemeChoice::Light,
                    "dark" => ThemeChoice::Dark,
                    _ => return Err(format!("theme={v}: choose light or dark")),
                })
            }
            "presenter" => presenter = v != "0",
            "challenge" => {
                challenge = Some(v.parse::<usize>().map_err(|_| {
                    format!("challenge={v}: a challenge is a number (1 for the first)")
                })?)
            }
            // Other parameters belong to whoever links here (analytics, cache busting).
            _ => {}
        }
    }
    let launch = Launch::new(view.as_deref(), presenter, lang, theme)
        .and_then(|l| l.with_challenge(challenge))
        .map_err(|e| e.to_string())?;
    Ok(UrlLaunch { launch, tp, beside })
}

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
    fn query_opens_a_view_at_a_tp_and_refuses_what_the_flags_refuse() {
        let u = parse_query("?view=playground&tp=2&lang=tr&theme=dark&presenter=1").expect("ok");
        assert_eq!(u.tp, Some(2));
        assert_eq!(u.launch.view.as_deref(), Some("playground"));
        assert_eq!(u.launch.lang, Some(tplab_lessons::Lang::Tr));
        assert_eq!(u.launch.theme, Some(ThemeChoice::Dark));
        assert!(u.launch.presenter);
        assert_eq!(parse_query("").expect("empty"), UrlLaunch::default());
        assert_eq!(
            parse_query("?view=walkthrough&utm=x")
                .expect("ok")
                .launch
                .view
                .as_deref(),
            Some("step")
        );
        for bad in [
            "?tp=0",
            "?tp=65",
            "?tp=two",
            "?view=nope",
            "?lang=de",
            "?theme=blue",
        ] {
            assert!(parse_query(bad).is_err(), "{bad}");
        }
        let e = parse_query("?view=nope").expect_err("unknown view");
        assert!(e.contains("playground"), "{e}");
    }

    #[test]
    fn query_draws_another_tp_size_beside_and_names_the_range() {
        let u = parse_query("?view=timeline&tp=2&beside=4").expect("ok");
        assert_eq!((u.tp, u.beside), (Some(2), Some(4)));
        let e = parse_query("?beside=0").expect_err("out of range");
        assert!(e.contains("beside=0") && e.contains("from 1 to"), "{e}");
        let e = parse_query("?beside=two").expect_err("not a number");
        assert!(
            e.contains("beside=two") && e.contains("whole number"),
            "{e}"
        );
    }

    #[test]
    fn query_opens_a_challenge_in_the_design_view_and_names_the_range() {
        let u = parse_query("?challenge=3").expect("ok");
        assert_eq!(u.launch.view.as_deref(), Some("design"));
        assert_eq!(u.launch.challenge, Some(3));
        let u = parse_query("?view=design&challenge=8").expect("ok");
        assert_eq!(u.launch.challenge, Some(8));
        for (bad, says) in [
            ("?challenge=0", "1 to 8"),
            ("?challenge=9", "1 to 8"),
            ("?challenge=x", "a number"),
            ("?view=memory&challenge=2", "Design view"),
        ] {
            let e = parse_query(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
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
