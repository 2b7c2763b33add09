//! Playground: the scenario's controls and the layer's weight matrices drawn to scale, each
//! slice in its GPU's colour (from the engine's [`ShardPlan`]).
//!
//! ```text
//!  W_qkv [h, 3h]          W_out [h, h]   W1 [h, f]         W2 [f, h]
//!  ┌─Q──┬─K──┬─V──┐      ┌──────┐       ┌──┬──┬──┬──┐     ┌─────┐ r0
//!  │0│1 │0│1 │0│1 │      ├──────┤ r0,r1 │0 │1 │2 │3 │     ├─────┤ r1 …
//!  └────┴────┴────┘      └──────┘       └──┴──┴──┴──┘     └─────┘
//! ```
//! Very large matrices are drawn as an aggregated grid: only the plan's ranges are used, no
//! tensor is allocated.

use crate::i18n::{t, t_args};
use crate::lab::beside::Beside;
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::a11y_label;
use crate::widgets::beside::picker;
use crate::widgets::gpu_color;
use crate::widgets::text_on;
use crate::widgets::text_shape;
use egui::{Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use serde::{Deserialize, Serialize};
use tplab_engine::block::plan::ParamShard;
use tplab_engine::config::{Config, Preset, MAX_TP};
use tplab_engine::params::ParamKind;
use tplab_engine::{block::op::Parallel, block::op::Pass};
use tplab_engine::{collectives::Algorithm, dtype::DType};
use tplab_lessons::Lang;

/// The four weight matrices, in drawing order.
const WEIGHTS: [(ParamKind, &str); 4] = [
    (ParamKind::QkvWeight, "W_qkv"),
    (ParamKind::OutWeight, "W_out"),
    (ParamKind::Fc1Weight, "W1"),
    (ParamKind::Fc2Weight, "W2"),
];

/// Grid lines drawn per matrix side at most; beyond that a cell aggregates many elements.
const MAX_GRID_LINES: usize = 32;

/// Playground state.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Playground {
    /// Show the activation table beside the matrices.
    pub hide_activations: bool,
}

impl View for Playground {
    fn id(&self) -> &'static str {
        "playground"
    }

    fn title(&self) -> &'static str {
        "Playground"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, t(lang, "pg-title"));
        let mut config = shared.scenario.config().clone();
        if shared.presenter {
            // Large type: the controls fold away so the matrices have the screen.
            egui::CollapsingHeader::new(t(lang, "pg-controls"))
                .id_salt("pg-controls-presenter")
                .default_open(false)
                .show(ui, |ui| controls(ui, lang, &mut config));
        } else {
            controls(ui, lang, &mut config);
        }
        shared.scenario.set_config(config);
        ui.separator();
        let config = shared.scenario.config().clone();
        let other = shared
            .beside
            .other(&shared.scenario, None)
            .filter(|o| matches!(o.with, Beside::Tp(_)));
        let Some(derived) = crate::widgets::derived_or_fixes(ui, &mut shared.scenario) else {
            // Why the heads do not split, drawn, and a head count that does.
            if let Err(tplab_engine::config::ConfigError::HeadsNotDivisible { .. }) =
                shared.scenario.derived()
            {
                if let Some(c) = heads_over_gpus_ui(ui, lang, &config) {
                    shared.scenario.set_config(c);
                }
            }
            return;
        };
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut self.hide_activations, t(lang, "pg-hide-activations"));
            ui.add_space(12.0);
            if picker(ui, lang, "playground", &mut shared.beside, &config, false) {
                ui.ctx().request_repaint();
            }
        });
        let presenter = shared.presenter;
        if let Some(other) = other {
            // Two TP sizes side by side: each one's matrices and what each GPU holds and sends.
            egui::ScrollArea::both()
                .id_salt("playground-beside")
                .auto_shrink([false, false])
                .show(ui, |ui| {
                    crate::widgets::columns(ui, 2, |cols| {
                        cols[0].strong(t_args(
                            lang,
                            "beside-this",
                            &[("tp", config.tp.to_string())],
                        ));
                        cols[0].label(holds_text(lang, &derived.trace));
                        matrices_ui(
                            &mut cols[0],
                            lang,
                            &config,
                            &derived.plan.params,
                            presenter,
                            true,
                        );
                        cols[1].strong(other.label(lang));
                        match &other.derived {
                            Ok(d) => {
                                cols[1].label(holds_text(lang, &d.trace));
                                matrices_ui(
                                    &mut cols[1],
                                    lang,
                                    &other.config,
                                    &d.plan.params,
                                    presenter,
                                    true,
                                );
                            }
                            Err(e) => {
                                let red = cols[1].visuals().error_fg_color;
                                cols[1].colored_label(
                                    red,
                                    t_args(lang, "beside-error", &[("error", e.to_string())]),
                                );
                            }
                        }
                    });
                });
            return;
        }
        let size = ui.style().text_styles[&egui::TextStyle::Body].size;
        // The activation table beside the matrices when there is room (about 30 lines of
        // text), below them otherwise (a narrow window, presenter mode's large type).
        let table_w = activations_width(ui, lang, &config, &derived.trace).max(26.0 * size);
        let side_by_side = ui.available_width() - table_w >= 36.0 * size;
        egui::ScrollArea::both()
            .id_salt("playground")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                if side_by_side {
                    ui.horizontal_top(|ui| {
                        let gap = 2.0 * ui.spacing().item_spacing.x;
                        let matrix_w = if self.hide_activations {
                            ui.available_width()
                        } else {
                            ui.available_width() - table_w - gap
                        };
                        ui.vertical(|ui| {
                            ui.set_width(matrix_w);
                            matrices_ui(ui, lang, &config, &derived.plan.params, presenter, false);
                        });
                        if !self.hide_activations {
                            ui.vertical(|ui| {
                                ui.set_max_width(table_w);
                                activations_ui(ui, lang, &config, &derived.trace, presenter);
                            });
                        }
                    });
                } else {
                    ui.vertical(|ui| {
                        ui.set_width(ui.available_width());
                        matrices_ui(ui, lang, &config, &derived.plan.params, presenter, false);
                    });
                    if !self.hide_activations {
                        ui.separator();
                        activations_ui(ui, lang, &config, &derived.trace, presenter);
                    }
                }
            });
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

/// "Each GPU holds 1/4 of every weight matrix and sends 4.5 MiB per layer, forward and
/// backward": from the trace's first layer.
fn holds_text(lang: Lang, trace: &tplab_engine::trace::Trace) -> String {
    let tp = trace.config.tp;
    if tp <= 1 {
        return t(lang, "beside-holds-one");
    }
    let sent: u64 = trace
        .events
        .iter()
        .filter(|e| e.layer == 0 && e.is_collective() && e.ranks.len() > 1 && e.on_rank(0))
        .map(|e| e.bytes_sent_per_rank)
        .sum();
    t_args(
        lang,
        "beside-holds",
        &[
            ("share", format!("1/{tp}")),
            ("bytes", crate::i18n::bytes(lang, sent)),
        ],
    )
}

/// Why `config.heads` do not split over `config.tp` GPUs, drawn: each GPU's whole heads in its
/// colour, the heads left over marked; and a button for the nearest head count that does split
/// (the hidden size kept when it divides), e.g. 16 heads for one node of 8 GPUs. Returns the
/// configuration picked.
fn heads_over_gpus_ui(ui: &mut egui::Ui, lang: Lang, config: &Config) -> Option<Config> {
    let (heads, tp) = (config.heads, config.tp.max(1));
    if heads == 0 {
        return None;
    }
    let each = heads / tp;
    let over = heads - each * tp;
    let dark = ui.visuals().dark_mode;
    ui.add_space(6.0);
    ui.label(t_args(
        lang,
        "pg-heads-why",
        &[
            ("heads", heads.to_string()),
            ("tp", tp.to_string()),
            ("each", each.to_string()),
            ("over", over.to_string()),
        ],
    ));
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    let cell = (2.2 * size).min((ui.available_width() - 8.0) / heads as f32);
    let (resp, painter) = ui.allocate_painter(
        egui::vec2(heads as f32 * cell + 4.0, 2.4 * cell),
        egui::Sense::hover(),
    );
    let mut shapes = Vec::new();
    let weak = ui.visuals().weak_text_color();
    let error = ui.visuals().error_fg_color;
    for h in 0..heads {
        let rect = egui::Rect::from_min_size(
            resp.rect.min + egui::vec2(2.0 + h as f32 * cell, 2.0),
            egui::vec2(cell - 3.0, cell - 3.0),
        );
        let owner = (h < each * tp).then(|| h / each.max(1));
        match owner {
            Some(r) => {
                let fill = gpu_color(r, dark);
                shapes.push(egui::Shape::rect_filled(rect, 3.0, fill));
                shapes.push(text_shape(
                    &painter,
                    rect.center(),
                    egui::Align2::CENTER_CENTER,
                    h,
                    0.5 * cell,
                    text_on(fill),
                ));
                shapes.push(text_shape(
                    &painter,
                    rect.center_bottom() + egui::vec2(0.0, 2.0),
                    egui::Align2::CENTER_TOP,
                    format!("GPU {r}"),
                    (0.32 * cell).max(9.0),
                    weak,
                ));
            }
            None => {
                shapes.push(egui::Shape::rect_stroke(
                    rect,
                    3.0,
                    egui::Stroke::new(2.0, error),
                    egui::StrokeKind::Inside,
                ));
                shapes.push(text_shape(
                    &painter,
                    rect.center(),
                    egui::Align2::CENTER_CENTER,
                    h,
                    0.5 * cell,
                    error,
                ));
                shapes.push(text_shape(
                    &painter,
                    rect.center_bottom() + egui::vec2(0.0, 2.0),
                    egui::Align2::CENTER_TOP,
                    "?",
                    (0.4 * cell).max(9.0),
                    error,
                ));
            }
        }
    }
    painter.extend(shapes);
    let summary = t_args(
        lang,
        "pg-heads-a11y",
        &[
            ("heads", heads.to_string()),
            ("tp", tp.to_string()),
            ("each", each.to_string()),
            ("over", over.to_string()),
        ],
    );
    a11y_label(&resp, &summary);
    // The nearest head count that splits over these GPUs and divides the hidden size.
    let fit = (1..=8)
        .map(|k| k * tp)
        .filter(|&h| config.hidden.is_multiple_of(h))
        // A tie goes to more heads (12 heads on 8 GPUs: 16, one node's worth, not 8).
        .min_by_key(|&h| (h.abs_diff(heads), h < heads))?;
    let picked = Config {
        heads: fit,
        kv_heads: None,
        ..config.clone()
    };
    if picked.validate_shapes().is_err() {
        return None;
    }
    let text = t_args(
        lang,
        "pg-heads-fix",
        &[
            ("heads", fit.to_string()),
            ("size", (config.hidden / fit).to_string()),
            ("tp", tp.to_string()),
        ],
    );
    ui.button(text).clicked().then_some(picked)
}

/// A preset's configuration, keeping the learner's TP when the preset can use it (its own TP
/// otherwise: the tiny layer's 4 heads cannot be split over 8 GPUs).
pub fn preset_config(preset: Preset, tp: usize) -> Config {
    let c = preset.config();
    if c.valid_tp_sizes().contains(&tp) {
        Config { tp, ..c }
    } else {
        c
    }
}

/// The scenario controls; edits `config` in place.
fn controls(ui: &mut egui::Ui, lang: Lang, config: &mut Config) {
    let tr = |id: &str| t(lang, id);
    ui.horizontal_wrapped(|ui| {
        ui.label(tr("pg-preset"));
        for p in Preset::ALL {
            if ui.button(crate::widgets::preset_name(lang, p)).clicked() {
                *config = preset_config(p, config.tp);
            }
        }
        ui.separator();
        crate::widgets::labelled_drag(ui, &tr("pg-hidden"), &mut config.hidden, 1 << 16);
        crate::widgets::labelled_drag(ui, &tr("pg-heads"), &mut config.heads, 1024);
        let mut kv = config.kv_heads();
        let l = ui.label(tr("pg-kv-heads"));
        ui.add(
            egui::DragValue::new(&mut kv)
                .range(1..=config.heads.max(1))
                .speed(0.2),
        )
        .labelled_by(l.id)
        .on_hover_text(tr("pg-kv-hint"));
        if kv != config.kv_heads() {
            config.kv_heads = (kv != config.heads).then_some(kv);
        }
        crate::widgets::labelled_drag(ui, &tr("pg-ffn"), &mut config.ffn, 1 << 18);
        crate::widgets::labelled_drag(ui, &tr("pg-seq"), &mut config.seq, 1 << 16);
        crate::widgets::labelled_drag(ui, &tr("pg-batch"), &mut config.batch, 1024);
        crate::widgets::labelled_drag(ui, &tr("pg-layers"), &mut config.layers, 256);
    });
    ui.horizontal_wrapped(|ui| {
        ui.label("TP:");
        for tp in 1..=8 {
            let button = ui.selectable_label(config.tp == tp, format!("TP={tp}"));
            if tp == 4 {
                crate::platform::mark("playground-tp4", button.rect);
            }
            if button.clicked() {
                config.tp = tp;
            }
        }
        crate::widgets::labelled_drag(ui, &tr("pg-tp-field"), &mut config.tp, MAX_TP);
        ui.separator();
        egui::ComboBox::from_label(tr("pg-dtype"))
            .selected_text(config.dtype.name())
            .show_ui(ui, |ui| {
                for d in DType::ALL {
                    ui.selectable_value(&mut config.dtype, d, d.name());
                }
            });
        egui::ComboBox::from_label(tr("pg-algorithm"))
            .selected_text(crate::widgets::algorithm_name(lang, config.algorithm))
            .show_ui(ui, |ui| {
                for a in Algorithm::ALL {
                    ui.selectable_value(
                        &mut config.algorithm,
                        a,
                        crate::widgets::algorithm_name(lang, a),
                    );
                }
            });
        ui.checkbox(&mut config.sequence_parallel, tr("pg-sp"))
            .on_hover_text(tr("pg-sp-hint"));
    });
}

/// How a rank's slice of a weight is described on hover.
fn slice_note(lang: Lang, p: &ParamShard, config: &Config, rank: usize) -> String {
    let hp = config.heads_per_rank();
    let heads = [
        ("first", (rank * hp).to_string()),
        ("last", ((rank + 1) * hp - 1).to_string()),
    ];
    match p.kind {
        ParamKind::QkvWeight if config.is_gqa() => {
            let (k0, kvp) = (config.first_kv_head(rank), config.kv_heads_per_rank());
            let copies = config.kv_replicas();
            let copy = if copies > 1 {
                t_args(
                    lang,
                    "pg-note-copy",
                    &[
                        ("copy", (rank % copies + 1).to_string()),
                        ("copies", copies.to_string()),
                    ],
                )
            } else {
                String::new()
            };
            let mut args = heads.to_vec();
            args.extend([
                ("kvfirst", k0.to_string()),
                ("kvlast", (k0 + kvp - 1).to_string()),
                ("copy", copy),
            ]);
            t_args(lang, "pg-note-qkv-gqa", &args)
        }
        ParamKind::QkvWeight => t_args(lang, "pg-note-qkv", &heads),
        ParamKind::OutWeight => t_args(lang, "pg-note-out", &heads),
        ParamKind::Fc1Weight => t(lang, "pg-note-fc1"),
        ParamKind::Fc2Weight => t(lang, "pg-note-fc2"),
        _ => String::new(),
    }
}

/// "split by columns", "split by rows" or "replicated".
fn split_words(lang: Lang, parallel: Parallel) -> String {
    t(
        lang,
        match parallel {
            Parallel::Column => "pg-split-cols",
            Parallel::Row => "pg-split-rows",
            _ => "pg-replicated",
        },
    )
}

/// Draws the four weight matrices to one scale, left to right, going on in a new row when the
/// next one does not fit (presenter mode's large type on a laptop).
fn matrices_ui(
    ui: &mut egui::Ui,
    lang: Lang,
    config: &Config,
    params: &[ParamShard],
    presenter: bool,
    beside: bool,
) {
    let dark = ui.visuals().dark_mode;
    let shards: Vec<(&ParamShard, &str)> = WEIGHTS
        .iter()
        .filter_map(|(k, name)| params.iter().find(|p| p.kind == *k).map(|p| (p, *name)))
        .collect();
    // Sizes follow the body text, so that presenter mode's large type grows the pictures too.
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    let font = egui::FontId::proportional(0.9 * size);
    // Captions in body text for a class, smaller at a desk.
    let small = if presenter { size } else { 0.75 * size };
    let gap = 2.0 * size;
    let total_cols: f32 = shards.iter().map(|(p, _)| p.full_shape[1] as f32).sum();
    let max_rows = shards
        .iter()
        .map(|(p, _)| p.full_shape[0] as f32)
        .fold(1.0, f32::max);
    let avail = ui.available_size();
    // The room the window would give without presenter mode's zoom: the matrices keep their
    // size next to the text, and grow with it (in more rows, scrolling, when they must).
    // Beside another TP size, both sets fit the height there is (two rows of matrices each).
    let zoom = if beside {
        1.0
    } else {
        ui.ctx().zoom_factor().max(1.0)
    };
    let usable_w = (avail.x * zoom - gap * (shards.len() as f32)).max(100.0);
    let usable_h = if beside {
        (avail.y * 0.3).max(4.0 * size)
    } else {
        (ui.ctx().content_rect().height() * zoom * 0.45).max(8.0 * size)
    };
    // One scale for all four, so that sizes compare.
    let scale = (usable_w / total_cols.max(1.0)).min(usable_h / max_rows);
    let text_color = ui.visuals().text_color();
    // Titles on one line each ("W_out [768, 768]" never breaks); a column is as wide as its
    // matrix or its title, whichever is wider, and a gap keeps neighbours apart.
    let titles: Vec<std::sync::Arc<egui::Galley>> = shards
        .iter()
        .map(|(p, name)| {
            let [rows, cols] = p.full_shape;
            ui.painter().layout_no_wrap(
                format!("{name} [{rows}, {cols}]\n{}", split_words(lang, p.parallel)),
                font.clone(),
                text_color,
            )
        })
        .collect();
    let widths: Vec<f32> = shards
        .iter()
        .zip(&titles)
        .map(|((p, _), g)| (p.full_shape[1] as f32 * scale).max(g.size().x))
        .collect();
    // Aggregated grid: at most MAX_GRID_LINES lines a side, each cell `cell` elements; the
    // caption saying so wraps to its column.
    let cells: Vec<usize> = shards
        .iter()
        .map(|(p, _)| {
            let [rows, cols] = p.full_shape;
            rows.max(cols).div_ceil(MAX_GRID_LINES).max(1)
        })
        .collect();
    let notes: Vec<Option<std::sync::Arc<egui::Galley>>> = cells
        .iter()
        .zip(&widths)
        .map(|(&cell, &w)| {
            (cell > 1).then(|| {
                ui.painter().layout(
                    t_args(lang, "pg-grid-cell", &[("cell", cell.to_string())]),
                    egui::FontId::proportional(small),
                    text_color,
                    w,
                )
            })
        })
        .collect();
    // Rows of matrices: indices into `shards`, a new row when the next would pass the edge.
    let mut rows_of: Vec<Vec<usize>> = vec![Vec::new()];
    let mut x = 0.0;
    for (i, w) in widths.iter().enumerate() {
        if let Some(row) = rows_of.last_mut() {
            if !row.is_empty() && x + w > avail.x {
                rows_of.push(Vec::new());
                x = 0.0;
            }
        }
        if let Some(row) = rows_of.last_mut() {
            row.push(i);
        }
        x += w + gap;
    }
    let qkv_band = 1.2 * small;
    // Per row: the title band's height, then the matrices and their notes.
    let bands: Vec<(f32, f32)> = rows_of
        .iter()
        .map(|row| {
            let label_h =
                row.iter().map(|&i| titles[i].size().y).fold(0.0, f32::max) + qkv_band + 4.0;
            let body = row
                .iter()
                .map(|&i| {
                    let note = notes[i].as_ref().map_or(0.0, |g| g.size().y + 4.0);
                    shards[i].0.full_shape[0] as f32 * scale + note
                })
                .fold(0.0, f32::max);
            (label_h, body + size)
        })
        .collect();
    let height = bands.iter().map(|(l, b)| l + b).sum::<f32>() + 0.5 * size;
    let (resp, painter) = ui.allocate_painter(Vec2::new(avail.x, height), Sense::hover());
    let origin = resp.rect.min;
    let grid_color = ui.visuals().weak_text_color().gamma_multiply(0.35);
    let outline = Stroke::new(1.0, ui.visuals().strong_text_color());
    let elem_bytes = config.dtype.size_bytes() as u64;
    let mut shapes = Vec::new();
    let mut hovered: Option<String> = None;
    let pointer = resp.hover_pos();
    let mut row_top = origin.y;
    let mut titles = titles.into_iter().map(Some).collect::<Vec<_>>();
    let mut notes = notes;
    for (row, (label_h, body_h)) in rows_of.iter().zip(&bands) {
        let mut x = origin.x;
        for &i in row {
            let (p, name) = shards[i];
            let [rows, cols] = p.full_shape;
            let size_px = Vec2::new(cols as f32 * scale, rows as f32 * scale);
            let top = row_top + label_h;
            if let Some(title) = titles[i].take() {
                shapes.push(egui::Shape::galley(
                    Pos2::new(x, row_top),
                    title,
                    text_color,
                ));
            }
            if p.kind == ParamKind::QkvWeight {
                // The packed layout [Q | K | V]: Q has heads·d columns, K and V kv_heads·d each.
                let d = config.hidden / config.heads.max(1);
                let (q, kv) = (config.heads * d, config.kv_heads() * d);
                for (label, c0, c1) in [("Q", 0, q), ("K", q, q + kv), ("V", q + kv, q + 2 * kv)] {
                    let (x0, x1) = (x + c0 as f32 * scale, x + c1 as f32 * scale);
                    shapes.push(text_shape(
                        &painter,
                        Pos2::new((x0 + x1) / 2.0, top - 2.0),
                        egui::Align2::CENTER_BOTTOM,
                        label,
                        small,
                        text_color,
                    ));
                    if c0 > 0 {
                        shapes.push(egui::Shape::line_segment(
                            [
                                Pos2::new(x0, top - qkv_band),
                                Pos2::new(x0, top + size_px.y),
                            ],
                            Stroke::new(2.0, ui.visuals().strong_text_color()),
                        ));
                    }
                }
            }
            for (rank, blocks) in p.blocks.iter().enumerate() {
                let fill = gpu_color(rank, dark);
                for b in blocks {
                    // A block several ranks hold (replicated KV heads) is drawn as one band per
                    // holder, so every copy shows in its GPU's colour.
                    let holds = |bl: &&Vec<tplab_engine::block::plan::Block>| bl.contains(b);
                    let n = p.blocks.iter().filter(holds).count().max(1) as f32;
                    let i = p.blocks[..rank].iter().filter(holds).count() as f32;
                    let (y0, y1) = (
                        top + b.rows.start as f32 * scale,
                        top + b.rows.end as f32 * scale,
                    );
                    let band = (y1 - y0) / n;
                    let rect = Rect::from_min_max(
                        Pos2::new(x + b.cols.start as f32 * scale, y0 + i * band),
                        Pos2::new(x + b.cols.end as f32 * scale, y0 + (i + 1.0) * band),
                    );
                    shapes.push(egui::Shape::rect_filled(rect, 0.0, fill));
                    if pointer.is_some_and(|pos| rect.contains(pos)) {
                        let [sr, sc] = p.shard_shape(rank);
                        hovered = Some(t_args(
                            lang,
                            "pg-shard-hover",
                            &[
                                ("rank", rank.to_string()),
                                ("name", name.to_string()),
                                ("rows", sr.to_string()),
                                ("cols", sc.to_string()),
                                (
                                    "bytes",
                                    crate::i18n::bytes(
                                        lang,
                                        p.shard_elems(rank) as u64 * elem_bytes,
                                    ),
                                ),
                                ("note", slice_note(lang, p, config, rank)),
                            ],
                        ));
                    }
                }
            }
            let cell = cells[i];
            let mut c = cell;
            while c < cols {
                let gx = x + c as f32 * scale;
                shapes.push(egui::Shape::line_segment(
                    [Pos2::new(gx, top), Pos2::new(gx, top + size_px.y)],
                    Stroke::new(0.5, grid_color),
                ));
                c += cell;
            }
            let mut r = cell;
            while r < rows {
                let gy = top + r as f32 * scale;
                shapes.push(egui::Shape::line_segment(
                    [Pos2::new(x, gy), Pos2::new(x + size_px.x, gy)],
                    Stroke::new(0.5, grid_color),
                ));
                r += cell;
            }
            shapes.push(egui::Shape::rect_stroke(
                Rect::from_min_size(Pos2::new(x, top), size_px),
                0.0,
                outline,
                StrokeKind::Outside,
            ));
            if let Some(note) = notes[i].take() {
                shapes.push(egui::Shape::galley(
                    Pos2::new(x, top + size_px.y + 4.0),
                    note,
                    text_color,
                ));
            }
            x += widths[i] + gap;
        }
        row_top += label_h + body_h;
    }
    painter.extend(shapes);
    let summary = shards
        .iter()
        .map(|(p, name)| {
            format!(
                "{name} [{}, {}] {}",
                p.full_shape[0],
                p.full_shape[1],
                split_words(lang, p.parallel)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    a11y_label(
        &resp,
        &t_args(
            lang,
            "pg-matrices-a11y",
            &[("tp", config.tp.to_string()), ("summary", summary)],
        ),
    );
    if let Some(text) = hovered {
        resp.on_hover_text_at_pointer(text);
    }
    legend_ui(ui, config.tp, dark);
    if config.is_gqa() {
        ui.label(gqa_note(lang, config));
    }
}

/// The grouped-query attention sentence: which GPUs hold which KV head.
fn gqa_note(lang: Lang, config: &Config) -> String {
    let (a, kv, tp) = (config.heads, config.kv_heads(), config.tp.max(1));
    let head = t_args(
        lang,
        "pg-gqa-head",
        &[
            ("heads", a.to_string()),
            ("kv", kv.to_string()),
            ("per", config.queries_per_kv().to_string()),
        ],
    );
    if config.kv_replicas() > 1 {
        let holders = config
            .kv_holders()
            .iter()
            .enumerate()
            .map(|(k, rs)| {
                let rs: Vec<String> = rs.iter().map(|r| r.to_string()).collect();
                t_args(
                    lang,
                    "pg-gqa-holders",
                    &[("gpus", rs.join(", ")), ("k", k.to_string())],
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        t_args(
            lang,
            "pg-gqa-replicated",
            &[
                ("head", head),
                ("tp", tp.to_string()),
                ("kv", kv.to_string()),
                ("copies", config.kv_replicas().to_string()),
                ("holders", holders),
            ],
        )
    } else {
        t_args(
            lang,
            "pg-gqa-split",
            &[
                ("head", head),
                ("per", config.kv_heads_per_rank().to_string()),
            ],
        )
    }
}

/// One coloured chip per GPU.
pub fn legend_ui(ui: &mut egui::Ui, tp: usize, dark: bool) {
    ui.horizontal_wrapped(|ui| {
        for r in 0..tp {
            let fill = gpu_color(r, dark);
            // Non-breaking spaces: a chip never splits into "GPU" and "7" across two lines.
            let text = egui::RichText::new(format!("\u{a0}GPU\u{a0}{r}\u{a0}"))
                .background_color(fill)
                .color(text_on(fill));
            ui.label(text);
        }
    });
}

/// The output of each forward op of layer 0 on every GPU (from the trace): shape, bytes and
/// whether it is split, replicated or a partial sum waiting for `g`.
/// The activation table's column headings.
const ACTIVATION_COLUMNS: [&str; 4] = ["pg-col-op", "pg-col-output", "pg-col-bytes", "pg-col-kind"];

/// The activation table's rows: each forward op of layer 0 on GPU 0, its output's shape, bytes
/// and how it is held.
fn activation_rows(
    lang: Lang,
    config: &Config,
    trace: &tplab_engine::trace::Trace,
) -> Vec<[String; 4]> {
    trace
        .layer_events(0, Pass::Forward)
        .filter(|e| !e.is_collective() && e.on_rank(0))
        .map(|e| {
            let [r, c] = e.output;
            let kind = match &e.kind {
                tplab_engine::trace::EventKind::Compute { parallel, .. } => t(
                    lang,
                    match parallel {
                        Parallel::Row => "pg-kind-partial",
                        Parallel::Column | Parallel::Local => "pg-kind-split",
                        Parallel::Replicated => "pg-kind-replicated",
                        Parallel::Sequence => "pg-kind-tokens",
                    },
                ),
                _ => String::new(),
            };
            [
                crate::widgets::op_label(lang, e.op),
                format!("[{r}, {c}]"),
                crate::i18n::bytes(lang, (r * c * config.dtype.size_bytes()) as u64),
                kind,
            ]
        })
        .collect()
}

/// The width the activation table needs in `ui`'s type: its widest cell per column, with the
/// grid's spacing (a projector's large type needs more than a desk's).
fn activations_width(
    ui: &egui::Ui,
    lang: Lang,
    config: &Config,
    trace: &tplab_engine::trace::Trace,
) -> f32 {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let width = |s: &str| {
        ui.painter()
            .layout_no_wrap(s.to_string(), font.clone(), egui::Color32::WHITE)
            .size()
            .x
    };
    let mut widths: Vec<f32> = ACTIVATION_COLUMNS
        .iter()
        .map(|h| width(&t(lang, h)))
        .collect();
    for row in activation_rows(lang, config, trace) {
        for (w, cell) in widths.iter_mut().zip(&row) {
            *w = w.max(width(cell));
        }
    }
    widths.iter().sum::<f32>() + 4.0 * ui.spacing().item_spacing.x + 8.0
}

fn activations_ui(
    ui: &mut egui::Ui,
    lang: Lang,
    config: &Config,
    trace: &tplab_engine::trace::Trace,
    presenter: bool,
) {
    let dark = ui.visuals().dark_mode;
    let tr = |id: &str| t(lang, id);
    ui.strong(tr("pg-activations"));
    ui.horizontal_wrapped(|ui| {
        ui.label(tr("pg-each-of"));
        legend_ui(ui, config.tp.min(8), dark);
        if config.tp > 8 {
            ui.label(format!("… GPU {}", config.tp - 1));
        }
        ui.label(tr("pg-holds"));
    });
    crate::widgets::sideways(ui, "acts-scroll", |ui| {
        egui::Grid::new("acts").striped(true).show(ui, |ui| {
            for h in ACTIVATION_COLUMNS {
                ui.strong(tr(h));
            }
            ui.end_row();
            for row in activation_rows(lang, config, trace) {
                for cell in row {
                    ui.label(cell);
                }
                ui.end_row();
            }
        });
    });
    // The footnote in body text for a class, small at a desk.
    let note = egui::RichText::new(tr("pg-kinds-explained"));
    let note = if presenter { note } else { note.small() };
    ui.add(egui::Label::new(note).wrap());
}
