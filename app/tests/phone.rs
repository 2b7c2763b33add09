//! Every view on a phone (390×844, the web edition's narrowest screen): the side bar is folded into
//! the menu row on top, text wraps to the screen, and no control or picture runs off its right
//! edge; what cannot be narrower (a table of numbers) scrolls sideways, never cut off. Snapshots:
//! `tests/snapshots/phone_*` (regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test
//! phone`).

mod common;
use common::snapshot_options;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::SnapshotResults;
use tplab::app::ThemeChoice;
use tplab::TplabApp;
use tplab_lessons::Lang;

/// Every view, in the side bar's order.
fn view_ids() -> Vec<&'static str> {
    tplab::app::all_views().iter().map(|v| v.id()).collect()
}

/// What a learner acts on or looks at: these must be whole on screen.
fn must_fit(role: egui::accesskit::Role) -> bool {
    use egui::accesskit::Role;
    matches!(
        role,
        Role::Button
            | Role::CheckBox
            | Role::Slider
            | Role::SpinButton
            | Role::ComboBox
            | Role::TextInput
            | Role::MultilineTextInput
            | Role::Link
            | Role::Figure
            | Role::Image
            | Role::Heading
    )
}

#[test]
fn every_view_fits_a_phone() {
    let mut results = SnapshotResults::new();
    let ids = view_ids();
    assert!(ids.len() >= 15, "{ids:?}");
    let mut all_cut = Vec::new();
    for lang in [Lang::En, Lang::Tr] {
        for id in &ids {
            let mut app = TplabApp::default();
            app.set_theme(ThemeChoice::Light);
            // The GPU view shows this machine's CUDA libraries: a fixed one, so that the
            // snapshot is the same on every computer.
            app.set_gpu_probe(common::fixed_probe());
            assert!(app.select(id), "no view {id}");
            let mut harness = common::gl_harness_pixels(app, (390.0, 844.0), lang, id);
            harness.run_steps(4);
            // Background work done, machine-dependent numbers masked: the same on any computer.
            common::settle_view(&mut harness, id);
            let right = harness.ctx.content_rect().right();
            // The menu row replaces the side bar: no view list down the left.
            assert!(
                harness.query_by_label("Export PNG").is_none(),
                "{id} {lang:?}: the side bar is shown on a phone"
            );
            let off: Vec<String> = harness
                .query_all_by(|n| {
                    must_fit(n.role()) && n.bounding_box().is_some_and(|b| b.x1 > 0.0)
                })
                .filter(|n| n.rect().right() > right + 1.0 && n.rect().width() < 4.0 * right)
                .map(|n| {
                    let node = n.accesskit_node();
                    format!(
                        "{:?} {:?} (right edge {:.0})",
                        node.role(),
                        node.label().or(node.value()),
                        n.rect().right()
                    )
                })
                .collect();
            assert!(
                off.is_empty(),
                "{id} {lang:?}: past the right edge of a 390-wide screen: {off:#?}"
            );
            // Text that wrapped (more than one line) wrapped at the screen's width: a paragraph
            // that runs past the right edge was laid out wider than the phone, after something
            // wide above it, and is cut off by the page's margin (a table's one-line cells scroll
            // sideways instead).
            let line_h = harness.ctx.global_style().text_styles[&egui::TextStyle::Body].size * 1.6;
            // The page ends at its margin, or where a vertical scroll bar beside the text
            // covers it (a scroll bar lower down, a table's, covers nothing above it).
            let bars: Vec<egui::Rect> = harness
                .query_all_by(|n| n.role() == egui::accesskit::Role::ScrollBar)
                .map(|n| n.rect())
                .filter(|r| r.height() > r.width() && r.left() > right / 2.0)
                .collect();
            let page_right = |text: egui::Rect| {
                bars.iter()
                    .filter(|b| b.top() < text.bottom() && b.bottom() > text.top())
                    .map(|b| b.left())
                    .fold(right - 8.0, f32::min)
            };
            let cut: Vec<String> = harness
                .query_all_by(|n| {
                    n.role() == egui::accesskit::Role::Label && n.bounding_box().is_some()
                })
                .filter(|n| {
                    n.rect().height() > line_h && n.rect().right() > page_right(n.rect()) + 0.5
                })
                .map(|n| {
                    let node = n.accesskit_node();
                    let text = node.label().or(node.value()).unwrap_or_default();
                    let text: String = text.chars().take(60).collect();
                    format!("{text:?} (right edge {:.0})", n.rect().right())
                })
                .collect();
            all_cut.extend(cut.into_iter().map(|c| format!("{id} {lang:?}: {c}")));
            if lang == Lang::En || matches!(*id, "step" | "design" | "quiz" | "lessons") {
                let name = format!("phone_{id}_{}", lang.code());
                harness.snapshot_options(&name, &snapshot_options());
                results.extend_harness(&mut harness);
            }
        }
    }
    assert!(
        all_cut.is_empty(),
        "wrapped text wider than a 390-wide screen: {all_cut:#?}"
    );
}
