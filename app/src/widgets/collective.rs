//! One collective round by round, from the collective's own schedule (the engine's
//! [`tplab_engine::collectives::Plan`]): a row per GPU, a cell per chunk filled with one sliver per
//! GPU whose data the chunk holds ("0+1" → "0+1+2" → Σ in a reduce-scatter; whole chunks
//! spreading in an all-gather), and this round's messages as arrows. The Collectives view and
//! the walkthrough draw the same picture, so a round looks the same everywhere; it grows with the
//! room it is given (a projector's full-HD screen draws it large).

use crate::widgets::{a11y_label, gpu_color, text_shape};
use egui::{Align2, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use tplab_engine::collectives::Plan;

/// `0b1011` → `"0+1+3"`.
pub fn mask_text(mask: u64) -> String {
    (0..64)
        .filter(|r| mask >> r & 1 == 1)
        .map(|r: usize| r.to_string())
        .collect::<Vec<_>>()
        .join("+")
}

/// The point a fraction `t` of the way along a path (by its length).
fn point_along(path: &[Pos2], t: f32) -> Pos2 {
    let total: f32 = path.windows(2).map(|p| p[0].distance(p[1])).sum();
    let mut left = t.clamp(0.0, 1.0) * total;
    for p in path.windows(2) {
        let d = p[0].distance(p[1]);
        if left <= d && d > 0.0 {
            return p[0] + (p[1] - p[0]) * (left / d);
        }
        left -= d;
    }
    path.last().copied().unwrap_or_default()
}

/// Rows of GPUs, columns of chunks; messages of round `k` as arrows with travelling dots.
#[allow(clippy::too_many_arguments)]
pub fn chunks_ui(
    ui: &mut egui::Ui,
    plan: &Plan,
    masks: &[Vec<Vec<u64>>],
    k: usize,
    frac: f32,
    playing: bool,
    size: Vec2,
    after: bool,
) {
    let n = plan.n;
    let chunks = plan.chunks.max(1);
    let dark = ui.visuals().dark_mode;
    let sum_all = crate::i18n::t(crate::widgets::lang(ui), "cl-sum-all");
    let width = size.x.min(ui.available_width()).max(120.0);
    let body = egui::TextStyle::Body.resolve(ui.style()).size;
    // A ring sends the last GPU's chunk to the first: room above and below the rows for that
    // arrow to leave and come back in.
    let wrap_pad_rows = if n > 2 && plan.steps.iter().any(|s| s.src.abs_diff(s.dst) == n - 1) {
        0.45
    } else {
        0.0
    };
    let row_h = ((size.y - 8.0) / (n as f32 + 2.0 * wrap_pad_rows)).clamp(18.0, 110.0);
    let pad = wrap_pad_rows * row_h;
    // Type grows with the rows (a projector's picture), never below the body text.
    // …and the labels leave the chunks at least two thirds of a narrow picture (a phone).
    let label_size = (row_h * 0.36)
        .min(width / 3.0 / 4.6)
        .clamp(0.8 * body, 3.0 * body);
    let label_w = 4.6 * label_size;
    let cell_w = ((width - label_w - 20.0) / chunks as f32).min(260.0);
    let (resp, painter) = ui.allocate_painter(
        Vec2::new(width, n as f32 * row_h + 8.0 + 2.0 * pad),
        Sense::hover(),
    );
    let text = ui.visuals().text_color();
    let panel = ui.visuals().panel_fill;
    let full = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    // What each GPU holds before round k (the messages leave from it), and what the cells show:
    // that, or the holdings after the round's messages arrived (`after`: a walkthrough's round
    // ends on its result, the last one on every chunk summed everywhere).
    let before = masks.get(k).or(masks.last());
    let state = if after {
        masks.get(k + 1).or(masks.last())
    } else {
        before
    };
    let cell = |r: usize, c: usize| {
        Rect::from_min_size(
            Pos2::new(
                resp.rect.left() + label_w + c as f32 * cell_w,
                resp.rect.top() + pad + r as f32 * row_h,
            ),
            Vec2::new(cell_w - 4.0, row_h - 6.0),
        )
    };
    let digit_w = painter
        .layout_no_wrap(
            (n - 1).to_string(),
            egui::FontId::proportional(label_size),
            text,
        )
        .size()
        .x;
    let mut shapes = Vec::new();
    // Drawn over the arrows: the digits and the "Σ all" pills stay readable where an arrow
    // crosses them, and the dots go over everything.
    let mut labels = Vec::new();
    let mut dots = Vec::new();
    for r in 0..n {
        let y = resp.rect.top() + pad + r as f32 * row_h + (row_h - 6.0) / 2.0;
        shapes.push(text_shape(
            &painter,
            Pos2::new(resp.rect.left(), y),
            Align2::LEFT_CENTER,
            format!("GPU {r}"),
            label_size,
            crate::widgets::gpu_ink(r, dark),
        ));
        for c in 0..chunks {
            let rect = cell(r, c);
            let mask = state.and_then(|s| s.get(r)).and_then(|m| m.get(c)).copied();
            let mask = mask.unwrap_or(0);
            // One sliver per contributing rank, in its colour: the partial sum at a glance.
            let parts: Vec<usize> = (0..n).filter(|q| mask >> q & 1 == 1).collect();
            let sliver = rect.width() / n as f32;
            for &q in &parts {
                let x = rect.left() + q as f32 * sliver;
                shapes.push(egui::Shape::rect_filled(
                    Rect::from_min_max(
                        Pos2::new(x, rect.top()),
                        Pos2::new(x + sliver, rect.bottom()),
                    ),
                    0.0,
                    gpu_color(q, dark).gamma_multiply(0.85),
                ));
            }
            let done = mask == full;
            shapes.push(egui::Shape::rect_stroke(
                rect,
                2.0,
                Stroke::new(if done { 2.5 } else { 1.0 }, text),
                StrokeKind::Inside,
            ));
            // Each contributing rank's digit centred in its own sliver, in ink that reads on
            // its colour, at the text's size; where the slivers are too narrow for a digit, or
            // the sum is complete, one label for the whole cell.
            let digits_fit = sliver > digit_w + 2.0 && row_h - 6.0 > label_size;
            if !done && !parts.is_empty() && digits_fit {
                for &q in &parts {
                    let centre =
                        Pos2::new(rect.left() + (q as f32 + 0.5) * sliver, rect.center().y);
                    labels.push(text_shape(
                        &painter,
                        centre,
                        Align2::CENTER_CENTER,
                        q,
                        label_size,
                        crate::widgets::text_on(gpu_color(q, dark)),
                    ));
                }
            } else if cell_w > 2.2 * label_size && row_h > label_size {
                let label = if done {
                    sum_all.clone()
                } else if parts.is_empty() {
                    "—".to_string()
                } else {
                    mask_text(mask)
                };
                // The strongest ink on the pill: "Σ all" read grey on a dark one.
                let t = text_shape(
                    &painter,
                    rect.center(),
                    Align2::CENTER_CENTER,
                    label,
                    label_size,
                    ui.visuals().strong_text_color(),
                );
                // A pill in the panel colour keeps the label readable over any sliver.
                labels.push(egui::Shape::rect_filled(
                    t.visual_bounding_rect().expand(2.0),
                    3.0,
                    panel.gamma_multiply(0.9),
                ));
                labels.push(t);
            }
        }
    }
    if k < plan.step_count() {
        // Paused, a dot sits a third of the way out of its sender: the shaft and the head of
        // its arrow show, and it reads as the sender's message.
        let along = if playing { frac } else { 0.35 };
        // This round's messages, gathered once: the arrows ask of each other which way a chunk
        // goes (a 64-GPU ring has thousands of messages in all).
        let round: Vec<_> = plan.steps.iter().filter(|s| s.index == k).collect();
        for s in round.iter().copied() {
            let c = s.chunk.min(chunks - 1);
            let (a, b) = (cell(s.src, c), cell(s.dst, c));
            // Down the cell's left quarter, up its right, each moved to the nearest border
            // between two ranks' slivers so that it does not cover their digits (at 2 GPUs
            // the quarters are the digits' centres); where a chunk goes both ways in one
            // round, the quarters themselves keep the two arrows apart.
            let quarter = if s.src < s.dst { 0.25 } else { 0.75 };
            let both_ways = round
                .iter()
                .any(|o| o.chunk == s.chunk && (o.src < o.dst) != (s.src < s.dst));
            let at = if both_ways || n < 2 {
                quarter
            } else {
                ((quarter * n as f32).round()).clamp(1.0, n as f32 - 1.0) / n as f32
            };
            let off = Vec2::new((cell_w - 4.0) * (at - 0.5), 0.0);
            // Into the receiving cell just past its border: the head stays clear of the label
            // at the cell's centre ("Σ all"), which is drawn over the arrows.
            let into = if s.src < s.dst {
                b.top() + 0.3 * b.height()
            } else {
                b.bottom() - 0.3 * b.height()
            };
            let (from, to) = (a.center() + off, Pos2::new(b.center().x + off.x, into));
            let color = gpu_color(s.src, dark);
            let w = (label_size / 7.0).max(2.0);
            // Edged in the panel's colour: a head that lands on a sliver of its own colour
            // (the chunk it brings) still shows.
            let arrow_head = |shapes: &mut Vec<egui::Shape>, from: Pos2, to: Pos2| {
                let dir = (to - from).normalized();
                let side = Vec2::new(-dir.y, dir.x) * 2.5 * w;
                shapes.push(egui::Shape::convex_polygon(
                    vec![to, to - dir * 5.0 * w + side, to - dir * 5.0 * w - side],
                    color,
                    Stroke::new(1.5, panel),
                ));
            };
            // A ring's wrap-around (the last GPU to the first, or back) goes round the rows
            // instead of crossing every row between: out of the sender's cell to the picture's
            // edge, along the edge to the gap at the column's right, dashed along that gap to
            // the other edge, and back into the receiver's cell. One path, one dot along it.
            let wraps = n > 2 && s.src.abs_diff(s.dst) == n - 1;
            let dot = if wraps {
                let down = s.src > s.dst;
                // The path turns inside the picture's edge (the dot's whole disc on screen).
                let inset = (3.0 * w + 1.0).min(0.4 * pad).max(1.0);
                let (exit_y, entry_y) = if down {
                    (resp.rect.bottom() - inset, resp.rect.top() + inset)
                } else {
                    (resp.rect.top() + inset, resp.rect.bottom() - inset)
                };
                // The gap between this chunk's column and the next (cells leave 4 points).
                let gap_x = a.right() + 2.0;
                let path = [
                    Pos2::new(from.x, if down { a.bottom() } else { a.top() }),
                    Pos2::new(from.x, exit_y),
                    Pos2::new(gap_x, exit_y),
                    Pos2::new(gap_x, entry_y),
                    Pos2::new(to.x, entry_y),
                    Pos2::new(
                        to.x,
                        if down {
                            b.top() + 2.0
                        } else {
                            b.bottom() - 2.0
                        },
                    ),
                ];
                let stroke = Stroke::new(w, color);
                for (i, pair) in path.windows(2).enumerate() {
                    if i == 2 {
                        // Along the gap: past the other GPUs' rows, not into them.
                        shapes.extend(egui::Shape::dashed_line(
                            pair,
                            Stroke::new(0.6 * w, color),
                            2.0 * w,
                            1.5 * w,
                        ));
                    } else {
                        shapes.push(egui::Shape::line_segment([pair[0], pair[1]], stroke));
                    }
                }
                arrow_head(&mut shapes, path[4], path[5]);
                if playing {
                    point_along(&path, along)
                } else {
                    // Paused: the dot just out of the sender's cell, between it and the
                    // picture's edge (half way along the path it would sit beside another
                    // GPU's row and read as that GPU's message; at the edge it was cut).
                    path[0] + (path[1] - path[0]) * 0.5
                }
            } else {
                shapes.push(egui::Shape::line_segment(
                    [from, to],
                    Stroke::new(w + 3.0, panel),
                ));
                shapes.push(egui::Shape::line_segment([from, to], Stroke::new(w, color)));
                arrow_head(&mut shapes, from, to);
                from + (to - from) * along
            };
            // A small picture's dot stays smaller than its cells' digits.
            let radius = (3.0 * w).min(0.16 * row_h).max(3.0);
            dots.push(egui::Shape::circle_filled(dot, radius, color));
            dots.push(egui::Shape::circle_stroke(
                dot,
                radius,
                Stroke::new(1.0, text),
            ));
        }
    }
    painter.extend(shapes);
    painter.extend(labels);
    painter.extend(dots);
    let held = (0..n)
        .map(|r| {
            let cells = (0..chunks)
                .map(|c| {
                    let m = state.and_then(|s| s.get(r)).and_then(|m| m.get(c)).copied();
                    mask_text(m.unwrap_or(0))
                })
                .collect::<Vec<_>>()
                .join(" | ");
            format!("GPU {r}: {cells}")
        })
        .collect::<Vec<_>>()
        .join("; ");
    // The picture in words: what a screen reader says, and what a test reads.
    let lang = crate::widgets::lang(ui);
    let sends = plan
        .steps
        .iter()
        .filter(|s| s.index == k)
        .map(|s| {
            let m = before
                .and_then(|st| st.get(s.src))
                .and_then(|m| m.get(s.chunk))
                .copied()
                .unwrap_or(0);
            format!("GPU {} → GPU {} ({})", s.src, s.dst, mask_text(m))
        })
        .collect::<Vec<_>>()
        .join(", ");
    a11y_label(
        &resp,
        &crate::i18n::t_args(
            lang,
            if after {
                "cl-round-a11y-after"
            } else {
                "cl-round-a11y"
            },
            &[
                ("k", (k + 1).min(plan.step_count().max(1)).to_string()),
                ("rounds", plan.step_count().to_string()),
                ("sends", sends),
                ("held", held),
            ],
        ),
    );
}
