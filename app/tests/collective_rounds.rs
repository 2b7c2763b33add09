//! An all-reduce you can watch: in the walkthrough on a projector, the attention's `g` (a ring
//! all-reduce over 4 GPUs, 6 rounds) is drawn next to the lanes, round by round from its own
//! schedule. At 1280×720, 1600×1000 and 1920×1080 in presenter mode, English and Turkish: the
//! lanes and the collective are both whole on screen, and two consecutive rounds' pictures differ
//! in the collective itself (its chunks and arrows), not only in a caption. Snapshots:
//! `tests/snapshots/round_*` (regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test
//! collective_rounds`).

mod common;
use common::{shot_name, snapshot_options};
use egui_kittest::kittest::Queryable;
use egui_kittest::SnapshotResults;
use tplab::app::ThemeChoice;
use tplab::lab::ShowMe;
use tplab::TplabApp;
use tplab_lessons::{Lang, View};

/// The pixels of `rect` (points) in `image`, as RGBA bytes.
fn crop(image: &image::RgbaImage, rect: egui::Rect, ppp: f32) -> Vec<u8> {
    let x0 = (rect.left() * ppp).max(0.0) as u32;
    let y0 = (rect.top() * ppp).max(0.0) as u32;
    let x1 = ((rect.right() * ppp) as u32).min(image.width());
    let y1 = ((rect.bottom() * ppp) as u32).min(image.height());
    let mut out = Vec::new();
    for y in y0..y1 {
        for x in x0..x1 {
            out.extend_from_slice(&image.get_pixel(x, y).0);
        }
    }
    out
}

#[test]
fn the_attention_g_changes_round_by_round_beside_the_lanes_on_a_projector() {
    let mut results = SnapshotResults::new();
    for size in [(1280.0, 720.0), (1600.0, 1000.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::Tr] {
            let mut app = TplabApp::default();
            app.set_theme(ThemeChoice::Light);
            app.shared.presenter = true;
            // GPT-2 small at TP 4: the attention's g is a ring all-reduce of 6 rounds.
            app.show_me(&ShowMe {
                view: View::Step,
                event: Some("attn.g".into()),
                ..Default::default()
            });
            app.load_view_state("step", r#"{"predict": false}"#);
            let mut harness = common::gl_harness_pixels(app, size, lang, "round");
            harness.state_mut().show_me(&ShowMe {
                view: View::Step,
                event: Some("attn.g".into()),
                ..Default::default()
            });
            harness.run_steps(3);
            // Rounds 4 and 5 (of 6): one press is one round.
            for _ in 0..3 {
                common::press(&mut harness, egui::Key::ArrowRight, 2);
            }
            let window = harness.ctx.content_rect();
            let picture = |h: &egui_kittest::Harness<'static, TplabApp>| {
                h.query_all_by(|n| {
                    n.label()
                        .is_some_and(|l| l.starts_with("Round ") || l.starts_with("Tur "))
                        && n.role() == egui::Role::Figure
                })
                .next()
                .map(|n| n.rect())
            };
            let ppp = harness.ctx.pixels_per_point();
            let mut crops = Vec::new();
            for k in [4, 5] {
                let what = format!("{size:?} {lang:?} round {k}");
                let caption = match lang {
                    Lang::En => format!("Round {k} of 6"),
                    Lang::Tr => format!("Tur {k} / 6"),
                };
                assert!(
                    harness
                        .query_all_by_label_contains(&caption)
                        .next()
                        .is_some(),
                    "{what}: no \"{caption}\""
                );
                let pic = picture(&harness).unwrap_or_else(|| panic!("{what}: no round picture"));
                // The lanes and the collective are both whole on screen.
                let lane = harness
                    .query_all_by_label_contains("GPU 3")
                    .map(|n| n.rect())
                    .find(|r| r.left() < pic.left())
                    .unwrap_or_else(|| panic!("{what}: no lane of GPU 3 left of the picture"));
                for (name, r) in [("picture", pic), ("lane", lane)] {
                    assert!(
                        window.contains_rect(r.shrink(0.5)),
                        "{what}: the {name} {r:?} is not whole in {window:?}"
                    );
                }
                let image = harness.render().unwrap_or_else(|e| panic!("{e}"));
                crops.push(crop(&image, pic, ppp));
                let name = format!(
                    "round_{k}_{}",
                    shot_name("attn_g", size, lang, ThemeChoice::Light, true)
                );
                harness.snapshot_options(&name, &snapshot_options());
                results.extend_harness(&mut harness);
                common::press(&mut harness, egui::Key::ArrowRight, 2);
            }
            // The two rounds' pictures differ in their chunks, not in a caption's few pixels.
            let differ = crops[0]
                .chunks(4)
                .zip(crops[1].chunks(4))
                .filter(|(a, b)| a.iter().zip(b.iter()).any(|(x, y)| x.abs_diff(*y) > 16))
                .count();
            assert!(
                differ > 2000,
                "{size:?} {lang:?}: rounds 4 and 5 differ in {differ} pixels of the picture"
            );
        }
    }
    results.unwrap();
}
