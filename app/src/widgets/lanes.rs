//! The walkthrough's GPU lanes and narration: for the current step of the block program, what
//! every GPU holds of each tensor the op reads and writes, drawn to one scale from the engine's
//! placements ([`tplab_engine::block::Placement`]), and one plain sentence about the step in the
//! learner's language.

use super::{gpu_color, text_shape};
use crate::i18n::t_args;
use egui::{Align2, Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use tplab_engine::block::{Placement, TensorName, TensorPlacement};
use tplab_engine::{
    block::op::Pass,
    trace::{Event, Trace},
};
use tplab_lessons::Lang;

/// Lanes drawn one per GPU; beyond this the view draws the first ones and says how many more.
pub const MAX_LANES: usize = 4;

/// The narration's mode argument: one GPU, sequence parallelism, or plain tensor parallelism.
fn mode(trace: &Trace) -> &'static str {
    let cfg = &trace.config;
    if cfg.tp <= 1 {
        "one"
    } else if cfg.sequence_parallel {
        "sp"
    } else {
        "plain"
    }
}

/// The Fluent id of an op's narration: `walk-` and the op's name with dots as dashes.
pub fn narration_id(e: &Event) -> String {
    format!("walk-{}", e.op.name().replace('.', "-"))
}

/// One sentence about the step whose first event is `e`, in `lang`.
pub fn narration(lang: Lang, trace: &Trace, e: &Event) -> String {
    let group = e
        .ranks
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    t_args(
        lang,
        &narration_id(e),
        &[
            ("mode", mode(trace).to_string()),
            ("tp", trace.config.tp.to_string()),
            ("group", group),
        ],
    )
}

/// One sentence about a step of a learner's plan (the Design view's "Step through my plan"),
/// read off the trace alone: what the op reads and writes on the first GPU, or what a
/// collective changes and what each GPU sends. (Megatron's split has a sentence written for each
/// op, [`narration`]; a learner's plan can split any weight any way.)
pub fn plan_narration(lang: Lang, trace: &Trace, e: &Event) -> String {
    let words = |ts: &[TensorPlacement]| -> String {
        ts.iter()
            .filter_map(|t| {
                let p = t.on(0)?;
                Some(format!(
                    "{} ({})",
                    symbol(t.tensor),
                    badge(lang, t.tensor, p)
                ))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let first = |ts: &[TensorPlacement]| -> (String, String) {
        ts.first()
            .and_then(|t| Some((symbol(t.tensor), badge(lang, t.tensor, t.on(0)?))))
            .unwrap_or_default()
    };
    match e.collective_kind() {
        None => t_args(
            lang,
            "walk-plan-compute",
            &[
                ("op", super::trace_op_label(lang, trace, e.op)),
                ("reads", words(&e.reads)),
                ("writes", words(&e.writes)),
            ],
        ),
        Some(kind) => {
            let (tensor, from) = first(&e.reads);
            let (_, to) = first(&e.writes);
            if e.is_identity_half() {
                let other = match e.pass {
                    Pass::Forward => Pass::Backward,
                    Pass::Backward => Pass::Forward,
                };
                return t_args(
                    lang,
                    "walk-plan-identity",
                    &[
                        ("tensor", tensor),
                        ("from", from),
                        ("other", super::pass_name(lang, other)),
                    ],
                );
            }
            t_args(
                lang,
                if kind == tplab_engine::collectives::CollectiveKind::Identity {
                    "walk-plan-slice"
                } else {
                    "walk-plan-collective"
                },
                &[
                    ("kind", kind.name().to_string()),
                    ("tp", e.ranks.len().to_string()),
                    ("tensor", tensor),
                    ("from", from),
                    ("to", to),
                    ("bytes", crate::i18n::bytes(lang, e.bytes_sent_per_rank)),
                ],
            )
        }
    }
}

/// "Step 3/28 · layer 0 · forward".
pub fn step_heading(lang: Lang, n: usize, total: usize, layer: usize, pass: Pass) -> String {
    let pass = super::pass_name(lang, pass);
    t_args(
        lang,
        "walk-step",
        &[
            ("n", n.to_string()),
            ("total", total.to_string()),
            ("layer", layer.to_string()),
            ("pass", pass),
        ],
    )
}

/// The placement in words: "whole copy", "its columns", "its rows", "its tokens", "partial sum".
pub fn badge(lang: Lang, tensor: TensorName, p: &Placement) -> String {
    let id = match p {
        Placement::Replicate => "walk-placement-whole",
        Placement::Partial => "walk-placement-partial",
        // A weight's split along dim 0 is its rows; an activation's, its tokens.
        Placement::Shard { dim: 0, .. } if !tensor.is_parameter() => "walk-placement-tokens",
        Placement::Shard { dim: 0, .. } => "walk-placement-rows",
        Placement::Shard { .. } => "walk-placement-cols",
    };
    t_args(lang, id, &[])
}

/// The tensors of one side (reads or writes) on the `i`-th rank of `e`.
fn side(ts: &[TensorPlacement], i: usize) -> Vec<(&TensorPlacement, &Placement)> {
    ts.iter().filter_map(|t| Some((t, t.on(i)?))).collect()
}

/// What each lane shows: for rank `r`, the event it runs in this step and its index there.
fn lane_event(events: &[Event], r: usize) -> Option<(&Event, usize)> {
    events
        .iter()
        .find_map(|e| e.ranks.iter().position(|&x| x == r).map(|i| (e, i)))
}

/// The short symbol a learner reads for a tensor: `W1` for `mlp.fc1.weight`, `dW1` for its
/// gradient; activations keep their names (`X`, `H1`, `A`).
pub fn symbol(tensor: TensorName) -> String {
    tensor.symbol()
}

/// A tensor as a rank holds it, in the JAX scaling book's notation: `W1[:, 768:1536]`, `X[0:64, :]`
/// (the placement's words say whether it is a whole copy or a partial sum).
pub fn held(t: &TensorPlacement, p: &Placement) -> String {
    match p {
        Placement::Shard { .. } => p.index_notation(&symbol(t.tensor)),
        Placement::Replicate | Placement::Partial => symbol(t.tensor),
    }
}

/// Draws one lane per GPU (at most [`MAX_LANES`]) for the step made of `events`: each tensor the
/// op reads and writes as a block, the part the GPU holds filled in its colour, with its index
/// ranges and placement in words. Every block is drawn to one scale for the whole step, by the
/// square root of its rows and columns, so that a [128, 3072] activation and a [3072, 768]
/// weight both stay visible and still compare the right way round.
pub fn lanes_ui(ui: &mut egui::Ui, lang: Lang, trace: &Trace, events: &[Event], reserve: f32) {
    lanes_sized(ui, lang, trace, events, reserve, None);
}

/// [`lanes_ui`], with the height left shared by `lanes` lanes when given (two programs side by
/// side: both drawn to the scale at which the one with more GPUs fits, so that a slice of 1/4
/// looks half as wide as a slice of 1/2).
pub fn lanes_sized(
    ui: &mut egui::Ui,
    lang: Lang,
    trace: &Trace,
    events: &[Event],
    reserve: f32,
    lanes_for_height: Option<usize>,
) {
    // Two programs side by side share a projector's height: the letters' key would squeeze
    // them (each block names itself on hover).
    let opts = LaneOptions {
        lanes_for_height,
        with_key: lanes_for_height.is_none(),
        ..LaneOptions::default()
    };
    lanes_with_key(ui, lang, trace, events, reserve, opts);
}

/// [`lanes_ui`] on a short projector screen: every lane in the height left, compact captions and
/// gaps, blocks down to 1.2 lines, the letters' key kept.
pub fn lanes_compact(ui: &mut egui::Ui, lang: Lang, trace: &Trace, events: &[Event], reserve: f32) {
    let lanes = trace.config.tp.clamp(1, MAX_LANES);
    let opts = LaneOptions {
        lanes_for_height: Some(lanes),
        tight: true,
        ..LaneOptions::default()
    };
    lanes_with_key(ui, lang, trace, events, reserve, opts);
}

/// What every GPU holds before the step (what it reads, not what it writes), fitted to the
/// height there is: the picture beside a prediction, which must not show the answer.
pub fn lanes_before(ui: &mut egui::Ui, lang: Lang, trace: &Trace, events: &[Event]) {
    let opts = LaneOptions {
        lanes_for_height: Some(trace.config.tp.clamp(1, MAX_LANES)),
        reads_only: true,
        ..LaneOptions::default()
    };
    lanes_with_key(ui, lang, trace, events, 0.0, opts);
}

/// The lanes fitted to the height there is (all `lanes` of them), with the letters' key under
/// them: a collective's lanes beside its round picture.
///
/// `pending`: the collective's rounds are still running, and what it writes is drawn faint.
pub fn lanes_fitted(
    ui: &mut egui::Ui,
    lang: Lang,
    trace: &Trace,
    events: &[Event],
    lanes: usize,
    pending: bool,
) {
    let opts = LaneOptions {
        lanes_for_height: Some(lanes),
        writes_pending: pending,
        ..LaneOptions::default()
    };
    lanes_with_key(ui, lang, trace, events, 0.0, opts);
}

/// How [`lanes_with_key`] draws.
#[derive(Clone, Copy)]
struct LaneOptions {
    /// The height left shared by this many lanes (compact captions and gaps).
    lanes_for_height: Option<usize>,
    /// The letters' key ("H1: LayerNorm 1's output") under or beside the lanes.
    with_key: bool,
    /// A short projector screen: the key beside the lanes where they leave room.
    tight: bool,
    /// What each GPU reads only: no arrow, nothing it writes.
    reads_only: bool,
    /// What each GPU writes drawn faint (a collective's rounds still running).
    writes_pending: bool,
}

impl Default for LaneOptions {
    fn default() -> Self {
        LaneOptions {
            lanes_for_height: None,
            with_key: true,
            tight: false,
            reads_only: false,
            writes_pending: false,
        }
    }
}

fn lanes_with_key(
    ui: &mut egui::Ui,
    lang: Lang,
    trace: &Trace,
    events: &[Event],
    reserve: f32,
    opts: LaneOptions,
) {
    let LaneOptions {
        lanes_for_height,
        with_key,
        tight,
        reads_only,
        writes_pending,
    } = opts;
    let tp = trace.config.tp.max(1);
    let dark = ui.visuals().dark_mode;
    let text = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    let lanes = tp.min(MAX_LANES);
    // The tensors drawn of an event: what it reads, and (unless `reads_only`) what it writes.
    let drawn = |e: &'_ Event| -> usize {
        if reads_only {
            e.reads.len()
        } else {
            e.reads.len() + e.writes.len()
        }
    };
    let all: Vec<&TensorPlacement> = events
        .iter()
        .flat_map(|e| e.reads.iter().chain(&e.writes).take(drawn(e)))
        .collect();
    let width = ui.available_width();
    let label_w = 5.0 * size;
    let arrow_w = 2.6 * size;
    let gap = 1.2 * size;
    // Side by side, on a projector's small screen: slightly smaller captions and gaps.
    let compact = lanes_for_height.is_some();
    let caption_size = if compact { 0.78 } else { 0.85 } * size;
    let lane_gap = if compact { 0.5 } else { 0.9 } * size;
    // The lanes take the height left (a collective's message picture needs some below them):
    // every GPU's lane on screen, on a projector too, larger blocks where there is room.
    // The letters' key under the lanes ("A: fc1's output, before GeLU"), in the room it needs.
    let key = super::words::legend(lang, all.iter().map(|t| t.tensor));
    // Under the lanes the letters run on in one paragraph; beside them, one to a line.
    let key_layout = |wrap: f32, beside: bool| {
        (with_key && !key.is_empty()).then(|| {
            let legend = if beside {
                format!("\n{}", key.replace(" · ", "\n"))
            } else {
                key.clone()
            };
            ui.painter().layout(
                t_args(lang, "lanes-key", &[("legend", legend)]),
                egui::FontId::proportional(caption_size),
                weak,
                wrap,
            )
        })
    };
    let mut key_galley = key_layout(width, false);
    let root = |d: usize| (d.max(1) as f32).sqrt();
    let max_root = all
        .iter()
        .map(|t| root(t.shape[0]).max(root(t.shape[1])))
        .fold(1.0f32, f32::max);
    let max_rows = all.iter().map(|t| root(t.shape[0])).fold(1.0f32, f32::max);
    let min_side = 0.35 * size;
    let measure = ui.painter().clone();
    let caption = |t: &TensorPlacement, p: &Placement, wrap: f32, font: f32| {
        measure.layout(
            format!(
                "{}\n{}",
                super::words::slice_words(lang, &trace.config, t, p),
                badge(lang, t.tensor, p)
            ),
            egui::FontId::proportional(font),
            text,
            wrap,
        )
    };
    // Per column (each tensor lines up under the others in every lane): the widest block's
    // square root of columns and the widest caption; and the tallest caption.
    let measure_needs = |wrap: f32, font: f32| {
        let mut needs: Vec<(f32, f32)> = Vec::new();
        let mut tallest_caption = 0.0f32;
        for r in 0..lanes {
            if let Some((e, i)) = lane_event(events, r) {
                for (j, t) in e.reads.iter().chain(&e.writes).take(drawn(e)).enumerate() {
                    let Some(p) = t.on(i) else { continue };
                    let size = caption(t, p, wrap, font).size();
                    tallest_caption = tallest_caption.max(size.y);
                    let need = (root(t.shape[1]), size.x);
                    if needs.len() <= j {
                        needs.push(need);
                    } else {
                        needs[j] = (needs[j].0.max(need.0), needs[j].1.max(need.1));
                    }
                }
            }
        }
        (needs, tallest_caption)
    };
    let (mut needs, _) = measure_needs(f32::INFINITY, caption_size);
    // A step with many tensors (the backward of QKV reads and writes six) whose captions on one
    // line each are wider than the screen even at the smallest blocks: the captions shrink to
    // fit, down to 0.8 of their size; past that they wrap to their share of the width, a line
    // more, rather than run off the right edge.
    let smallest = 1.2 * size / max_root;
    let widest_row = label_w
        + arrow_w
        + needs
            .iter()
            .map(|&(cols, cap)| (cols * smallest).max(min_side).max(cap) + gap)
            .sum::<f32>();
    let mut caption_wrap = f32::INFINITY;
    let mut caption_font = caption_size;
    let mut caption_h = 2.4 * caption_size;
    // (A phone's row scrolls sideways, at the phone's own type size.)
    if widest_row > width && width >= crate::widgets::NARROW_WIDTH && !needs.is_empty() {
        let fixed = label_w + arrow_w + needs.len() as f32 * gap;
        let captions: f32 = needs.iter().map(|n| n.1).sum();
        let shrink = (width - fixed) / captions.max(1.0);
        if shrink >= 0.8 {
            caption_font = caption_size * shrink * 0.98;
            needs = measure_needs(f32::INFINITY, caption_font).0;
            caption_h = 2.4 * caption_font;
        } else {
            // The narrow captions keep their width; the wide ones share what is left equally
            // (where that share holds a few words: a phone's row scrolls sideways instead).
            let mut caps: Vec<f32> = needs.iter().map(|n| n.1).collect();
            caps.sort_by(f32::total_cmp);
            let mut rest = width - fixed;
            let mut share = rest / caps.len() as f32;
            for (k, &c) in caps.iter().enumerate() {
                share = rest / (caps.len() - k) as f32;
                if c > share {
                    break;
                }
                rest -= c;
            }
            if share >= 7.0 * caption_size {
                caption_wrap = share;
                let (wrapped, tallest_caption) = measure_needs(caption_wrap, caption_font);
                needs = wrapped;
                caption_h = caption_h.max(tallest_caption + 0.3 * caption_size);
            }
        }
    }
    // Tight (a short projector screen): the key goes beside the lanes where they leave room at
    // the right.
    let key_beside_w = 10.0 * size;
    let key_h = key_galley
        .as_ref()
        .map_or(0.0, |g| g.size().y + ui.spacing().item_spacing.y);
    let room = (ui.available_height() - reserve - 2.0 * size - key_h).max(0.0);
    // The tallest block fills its lane's share of the room; the longest side stays between
    // 2.5 and 9 lines of text.
    let per_lane = room / lanes_for_height.unwrap_or(lanes).max(1) as f32 - caption_h - lane_gap;
    // Side by side the longest side may shrink to 1.2 lines, so that both programs fit.
    let shortest = if lanes_for_height.is_some() { 1.2 } else { 2.5 };
    let mut scale = (per_lane / max_rows).clamp(shortest * size / max_root, 9.0 * size / max_root);
    let column_w = |s: f32, (cols, cap): (f32, f32)| (cols * s).max(min_side).max(cap);
    let row_w =
        |s: f32| label_w + arrow_w + needs.iter().map(|&n| column_w(s, n) + gap).sum::<f32>();
    // Narrower than the row at that scale (presenter mode on a laptop): the largest scale that
    // fits, so that nothing is cut off at the right.
    let fit_width = |scale: f32, width: f32| {
        if row_w(scale) <= width {
            return scale;
        }
        let (mut lo, mut hi) = (0.0f32, scale);
        for _ in 0..24 {
            let mid = 0.5 * (lo + hi);
            if row_w(mid) <= width {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let tallest_at = |scale: f32| {
        all.iter()
            .map(|t| (root(t.shape[0]) * scale).max(min_side))
            .fold(min_side, f32::max)
    };
    scale = fit_width(scale, width);
    // Lanes that overflow the height even at the smallest blocks (tall weights on a
    // projector's 1080 lines) go two to a row where the screen is wide enough for two: every
    // GPU on screen, none below the fold, the blocks larger rather than smaller.
    let lane_col_gap = 2.0 * size;
    let mut per_row = 1;
    let fits =
        |scale: f32, rows: usize| rows as f32 * (tallest_at(scale) + caption_h + lane_gap) <= room;
    if lanes_for_height.is_none() && lanes > 1 && !fits(scale, lanes) {
        let rows = lanes.div_ceil(2);
        let per_lane2 = room / rows as f32 - caption_h - lane_gap;
        let half = (width - lane_col_gap) / 2.0;
        let two = fit_width(
            (per_lane2 / max_rows).clamp(shortest * size / max_root, 9.0 * size / max_root),
            half,
        );
        // Worth it when the blocks are no smaller than in one column, or every lane then fits.
        if row_w(two) <= half && (two >= scale || fits(two, rows)) {
            per_row = 2;
            scale = two;
        }
    }
    // Still too tall in one column (a step with five tensors is too wide for two): smaller
    // blocks, down to the 1.2 lines two programs side by side allow, before any lane scrolls.
    if per_row == 1 && !fits(scale, lanes) {
        scale = fit_width(
            (per_lane / max_rows).clamp(1.2 * size / max_root, 9.0 * size / max_root),
            width,
        )
        .min(scale);
    }
    let lane_rows = lanes.div_ceil(per_row);
    let lane_w = (width - (per_row - 1) as f32 * lane_col_gap) / per_row as f32;
    let columns: Vec<f32> = needs.iter().map(|&n| column_w(scale, n)).collect();
    // The tallest block of the step sets the lane's height; captions sit under it.
    let tallest = tallest_at(scale);
    let lane_h = tallest + caption_h + lane_gap;
    // The key beside the lanes, in the room they leave at their right, one entry a line: on a
    // short projector screen, or wherever the key under them would not fit the height left
    // (a backward step's five letters at 1080 lines). Taken when it makes the picture no
    // taller than the key under the lanes would.
    let lanes_h = lane_rows as f32 * lane_h;
    let under_overflows = lanes_h + key_h > ui.available_height() - reserve;
    let mut key_beside: Option<(f32, std::sync::Arc<egui::Galley>)> = None;
    if (tight || under_overflows) && per_row == 1 {
        let free = width - row_w(scale);
        if free >= key_beside_w {
            if let Some(g) = key_layout(free - gap, true) {
                if g.size().y <= lanes_h + key_h {
                    key_beside = Some((width - free + gap, g));
                    key_galley = None;
                }
            }
        }
    }
    let picture_h = key_beside
        .as_ref()
        .map_or(lanes_h, |(_, g)| lanes_h.max(g.size().y + 0.2 * size));
    let (resp, painter) = ui.allocate_painter(Vec2::new(width, picture_h), Sense::hover());
    let mut shapes = Vec::new();
    let mut hovers: Vec<(Rect, String)> = Vec::new();
    for r in 0..lanes {
        let top = resp.rect.top() + (r / per_row) as f32 * lane_h;
        let left = resp.rect.left() + (r % per_row) as f32 * (lane_w + lane_col_gap);
        let color = gpu_color(r, dark);
        let swatch = Rect::from_min_size(
            Pos2::new(left, top + 0.2 * size),
            Vec2::new(0.5 * size, tallest.max(1.5 * size)),
        );
        shapes.push(egui::Shape::rect_filled(swatch, 2.0, color));
        shapes.push(text_shape(
            &painter,
            Pos2::new(swatch.right() + 0.4 * size, top + 0.2 * size),
            Align2::LEFT_TOP,
            t_args(lang, "walk-gpu", &[("r", r.to_string())]),
            size,
            text,
        ));
        let Some((e, i)) = lane_event(events, r) else {
            continue;
        };
        let mut x = left + label_w;
        let mut column = 0;
        let mut draw = |x: &mut f32,
                        shapes: &mut Vec<egui::Shape>,
                        t: &TensorPlacement,
                        p: &Placement,
                        pending: bool| {
            let w = (root(t.shape[1]) * scale).max(min_side);
            let h = (root(t.shape[0]) * scale).max(min_side);
            let outer = Rect::from_min_size(Pos2::new(*x, top + 0.2 * size), Vec2::new(w, h));
            let fill = match p {
                Placement::Partial => color.gamma_multiply(0.45),
                _ => color,
            };
            // What the step writes, while its collective's rounds are still running: faint,
            // until the last round leaves it.
            let fill = if pending {
                fill.gamma_multiply(0.2)
            } else {
                fill
            };
            match p {
                Placement::Replicate | Placement::Partial => {
                    shapes.push(egui::Shape::rect_filled(outer, 0.0, fill));
                }
                Placement::Shard { dim, ranges } => {
                    let along = t.shape[(*dim).min(1)].max(1) as f32;
                    for [a, b] in ranges {
                        let (f0, f1) = (*a as f32 / along, *b as f32 / along);
                        let part = if *dim == 0 {
                            Rect::from_min_max(
                                Pos2::new(outer.left(), outer.top() + f0 * h),
                                Pos2::new(outer.right(), outer.top() + f1 * h),
                            )
                        } else {
                            Rect::from_min_max(
                                Pos2::new(outer.left() + f0 * w, outer.top()),
                                Pos2::new(outer.left() + f1 * w, outer.bottom()),
                            )
                        };
                        shapes.push(egui::Shape::rect_filled(part, 0.0, fill));
                    }
                }
            }
            shapes.push(egui::Shape::rect_stroke(
                outer,
                0.0,
                Stroke::new(1.0, weak),
                StrokeKind::Outside,
            ));
            let at = Pos2::new(*x, top + 0.5 * size + tallest);
            let words = caption(t, p, caption_wrap, caption_font);
            shapes.push(if pending {
                egui::Shape::galley_with_override_text_color(at, words, weak)
            } else {
                egui::Shape::galley(at, words, text)
            });
            // The index form and what the tensor is, on hover.
            let meaning = super::words::tensor_meaning(lang, t.tensor)
                .map(|m| format!(" — {m}"))
                .unwrap_or_default();
            hovers.push((outer, format!("{}{meaning}", held(t, p))));
            *x += columns.get(column).copied().unwrap_or(w) + gap;
            column += 1;
        };
        for t in &e.reads {
            if let Some(p) = t.on(i) {
                draw(&mut x, &mut shapes, t, p, false);
            }
        }
        if reads_only {
            continue;
        }
        // An arrow from what the op reads to what it writes (drawn: the fonts have no arrow).
        let y = top + 0.2 * size + tallest / 2.0;
        let (from, tip) = (Pos2::new(x, y), Pos2::new(x + arrow_w - 1.1 * size, y));
        shapes.push(egui::Shape::line_segment(
            [from, tip],
            Stroke::new(2.0, text),
        ));
        shapes.push(egui::Shape::convex_polygon(
            vec![
                tip + Vec2::new(0.5 * size, 0.0),
                tip + Vec2::new(0.0, -0.35 * size),
                tip + Vec2::new(0.0, 0.35 * size),
            ],
            text,
            Stroke::NONE,
        ));
        x += arrow_w;
        for t in &e.writes {
            if let Some(p) = t.on(i) {
                draw(&mut x, &mut shapes, t, p, writes_pending);
            }
        }
    }
    if let Some((x, g)) = key_beside {
        shapes.push(egui::Shape::galley(
            Pos2::new(resp.rect.left() + x, resp.rect.top() + 0.2 * size),
            g,
            weak,
        ));
    }
    painter.extend(shapes);
    // What the lanes show, for screen readers and tests: every GPU's placements (before the
    // step only, where the picture keeps the answer to a prediction back).
    let words = if reads_only {
        holdings_text(events, tp)
    } else {
        placements_text(events, tp)
    };
    super::a11y_label(&resp, &words);
    for (k, (rect, words)) in hovers.into_iter().enumerate() {
        let block = ui.interact(rect, resp.id.with(("block", k)), Sense::hover());
        super::a11y_label(&block, &words);
        block.on_hover_text(words);
    }
    if let Some(g) = key_galley {
        let (rect, _) = ui.allocate_exact_size(g.size(), Sense::hover());
        ui.painter().galley(rect.min, g, weak);
    }
    if tp > lanes {
        ui.label(format!("… +{} GPU", tp - lanes));
    }
}

/// What every rank holds before the step (`GPU r holds: reads`), as the lanes beside a
/// prediction label them.
pub fn holdings_text(events: &[Event], tp: usize) -> String {
    (0..tp.min(MAX_LANES))
        .filter_map(|r| {
            let (e, i) = lane_event(events, r)?;
            let names = side(&e.reads, i)
                .iter()
                .map(|(t, p)| held(t, p))
                .collect::<Vec<_>>()
                .join(", ");
            Some(format!("GPU {r} holds: {names}"))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The placements of every rank for the step (`GPU r: reads -> writes`), as the lanes label them.
pub fn placements_text(events: &[Event], tp: usize) -> String {
    (0..tp.min(MAX_LANES))
        .filter_map(|r| {
            let (e, i) = lane_event(events, r)?;
            let names = |ts: &[TensorPlacement]| {
                side(ts, i)
                    .iter()
                    .map(|(t, p)| held(t, p))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            Some(format!(
                "GPU {r}: {} -> {}",
                names(&e.reads),
                names(&e.writes)
            ))
        })
        .collect::<Vec<_>>()
        .join("; ")
}
