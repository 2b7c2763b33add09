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

use super::{
    a11y_label, config_error_ui, gpu_color, load_json, save_json, text_on, text_shape, Shared, View,
};
use egui::{Pos2, Rect, Sense, Stroke, StrokeKind, Vec2};
use serde::{Deserialize, Serialize};
use tplab_engine::config::{human_bytes, Config, Preset, MAX_TP};
use tplab_engine::params::ParamKind;
use tplab_engine::plan::ParamShard;
use tplab_engine::trace::{Parallel, Pass};
use tplab_engine::{Algorithm, DType};

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
        ui.heading("Playground: how one layer is split");
        let mut config = shared.scenario.config().clone();
        controls(ui, &mut config);
        shared.scenario.set_config(config);
        ui.separator();
        let config = shared.scenario.config().clone();
        let derived = match shared.scenario.derived() {
            Ok(d) => d,
            Err(err) => {
                if let Some(tp) = config_error_ui(ui, err, &config) {
                    shared.scenario.set_tp(tp);
                }
                return;
            }
        };
        ui.checkbox(&mut self.hide_activations, "Hide activations");
        let dark = ui.visuals().dark_mode;
        ui.horizontal_top(|ui| {
            let table_w = if self.hide_activations { 0.0 } else { 360.0 };
            let matrix_w = (ui.available_width() - table_w).max(200.0);
            ui.vertical(|ui| {
                ui.set_width(matrix_w);
                matrices_ui(ui, &config, &derived.plan.params, dark);
            });
            if !self.hide_activations {
                ui.vertical(|ui| {
                    ui.strong("Activations on each GPU (layer 0, forward)");
                    egui::ScrollArea::vertical().show(ui, |ui| {
                        activations_ui(ui, &config, &derived.trace, dark);
                    });
                });
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

fn labelled_drag(ui: &mut egui::Ui, label: &str, value: &mut usize, max: usize) {
    let l = ui.label(label);
    ui.add(egui::DragValue::new(value).range(1..=max).speed(1.0))
        .labelled_by(l.id);
}

/// The scenario controls; edits `config` in place.
fn controls(ui: &mut egui::Ui, config: &mut Config) {
    ui.horizontal_wrapped(|ui| {
        ui.label("Preset:");
        for p in Preset::ALL {
            if ui.button(p.name()).clicked() {
                *config = Config {
                    tp: config.tp,
                    ..p.config()
                };
            }
        }
        ui.separator();
        labelled_drag(ui, "hidden", &mut config.hidden, 1 << 16);
        labelled_drag(ui, "heads", &mut config.heads, 1024);
        let mut kv = config.kv_heads();
        let l = ui.label("KV heads");
        ui.add(
            egui::DragValue::new(&mut kv)
                .range(1..=config.heads.max(1))
                .speed(0.2),
        )
        .labelled_by(l.id)
        .on_hover_text(
            "Grouped-query attention: fewer key/value heads than query heads, each shared by a \
             group of query heads. Equal to heads: plain multi-head attention.",
        );
        if kv != config.kv_heads() {
            config.kv_heads = (kv != config.heads).then_some(kv);
        }
        labelled_drag(ui, "ffn", &mut config.ffn, 1 << 18);
        labelled_drag(ui, "seq", &mut config.seq, 1 << 16);
        labelled_drag(ui, "batch", &mut config.batch, 1024);
        labelled_drag(ui, "layers", &mut config.layers, 256);
    });
    ui.horizontal_wrapped(|ui| {
        ui.label("TP:");
        for tp in 1..=8 {
            if ui
                .selectable_label(config.tp == tp, format!("TP={tp}"))
                .clicked()
            {
                config.tp = tp;
            }
        }
        labelled_drag(ui, "TP (up to 64)", &mut config.tp, MAX_TP);
        ui.separator();
        egui::ComboBox::from_label("dtype")
            .selected_text(config.dtype.name())
            .show_ui(ui, |ui| {
                for d in DType::ALL {
                    ui.selectable_value(&mut config.dtype, d, d.name());
                }
            });
        egui::ComboBox::from_label("algorithm")
            .selected_text(config.algorithm.name())
            .show_ui(ui, |ui| {
                for a in Algorithm::ALL {
                    ui.selectable_value(&mut config.algorithm, a, a.name());
                }
            });
        ui.checkbox(&mut config.sequence_parallel, "sequence parallel")
            .on_hover_text(
                "Korthikanti et al. 2022: LayerNorm, bias and residual work on 1/TP of the tokens; \
                 each all-reduce becomes a reduce-scatter plus an all-gather",
            );
    });
}

/// How a rank's slice of a weight is described on hover.
fn slice_note(p: &ParamShard, config: &Config, rank: usize) -> String {
    let hp = config.heads_per_rank();
    match p.kind {
        ParamKind::QkvWeight if config.is_gqa() => {
            let (k0, kvp) = (config.first_kv_head(rank), config.kv_heads_per_rank());
            let copies = config.kv_replicas();
            let copy = if copies > 1 {
                format!(
                    " (copy {} of {copies}: TP > KV heads, so vLLM replicates each KV head)",
                    rank % copies + 1
                )
            } else {
                String::new()
            };
            format!(
                "Q columns of heads {}–{}, K and V columns of KV head(s) {}–{}{copy} \
                 (ColumnParallelLinear)",
                rank * hp,
                (rank + 1) * hp - 1,
                k0,
                k0 + kvp - 1
            )
        }
        ParamKind::QkvWeight => format!(
            "Q, K and V columns of heads {}–{} (ColumnParallelLinear)",
            rank * hp,
            (rank + 1) * hp - 1
        ),
        ParamKind::OutWeight => format!(
            "rows of heads {}–{} (RowParallelLinear: output is a partial sum)",
            rank * hp,
            (rank + 1) * hp - 1
        ),
        ParamKind::Fc1Weight => {
            "a block of columns (ColumnParallelLinear; GeLU stays local)".into()
        }
        ParamKind::Fc2Weight => {
            "a block of rows (RowParallelLinear: output is a partial sum)".into()
        }
        _ => String::new(),
    }
}

/// Draws the four weight matrices to one scale.
fn matrices_ui(ui: &mut egui::Ui, config: &Config, params: &[ParamShard], dark: bool) {
    let shards: Vec<(&ParamShard, &str)> = WEIGHTS
        .iter()
        .filter_map(|(k, name)| params.iter().find(|p| p.kind == *k).map(|p| (p, *name)))
        .collect();
    let gap = 24.0;
    let label_h = 34.0;
    let total_cols: f32 = shards.iter().map(|(p, _)| p.full_shape[1] as f32).sum();
    let max_rows = shards
        .iter()
        .map(|(p, _)| p.full_shape[0] as f32)
        .fold(1.0, f32::max);
    let avail = ui.available_size();
    let usable_w = (avail.x - gap * (shards.len() as f32)).max(100.0);
    let usable_h = (avail.y - label_h - 60.0).max(120.0);
    // One scale for all four, so that sizes compare.
    let scale = (usable_w / total_cols.max(1.0)).min(usable_h / max_rows);
    let height = max_rows * scale + label_h;
    let (resp, painter) = ui.allocate_painter(Vec2::new(avail.x, height), Sense::hover());
    let origin = resp.rect.min;
    let text_color = ui.visuals().text_color();
    let grid_color = ui.visuals().weak_text_color().gamma_multiply(0.35);
    let outline = Stroke::new(1.0, ui.visuals().strong_text_color());
    let elem_bytes = config.dtype.size_bytes() as u64;
    let mut shapes = Vec::new();
    let mut hovered: Option<String> = None;
    let pointer = resp.hover_pos();
    let mut x = origin.x;
    for (p, name) in &shards {
        let [rows, cols] = p.full_shape;
        let size = Vec2::new(cols as f32 * scale, rows as f32 * scale);
        let top = origin.y + label_h;
        let split = match p.parallel {
            Parallel::Column => "split by columns",
            Parallel::Row => "split by rows",
            _ => "replicated",
        };
        shapes.push(text_shape(
            &painter,
            Pos2::new(x, origin.y),
            egui::Align2::LEFT_TOP,
            format!("{name} [{rows}, {cols}]\n{split}"),
            12.0,
            text_color,
        ));
        for (rank, blocks) in p.blocks.iter().enumerate() {
            let fill = gpu_color(rank, dark);
            for b in blocks {
                // A block several ranks hold (replicated KV heads) is drawn as one band per
                // holder, so every copy shows in its GPU's colour.
                let holds = |bl: &&Vec<tplab_engine::plan::Block>| bl.contains(b);
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
                    hovered = Some(format!(
                        "GPU {rank}: {name} shard [{sr}, {sc}], {}\n{}",
                        human_bytes(p.shard_elems(rank) as u64 * elem_bytes),
                        slice_note(p, config, rank)
                    ));
                }
            }
        }
        // Aggregated grid: at most MAX_GRID_LINES lines a side, each cell `cell` elements.
        let cell = rows.max(cols).div_ceil(MAX_GRID_LINES).max(1);
        let mut c = cell;
        while c < cols {
            let gx = x + c as f32 * scale;
            shapes.push(egui::Shape::line_segment(
                [Pos2::new(gx, top), Pos2::new(gx, top + size.y)],
                Stroke::new(0.5, grid_color),
            ));
            c += cell;
        }
        let mut r = cell;
        while r < rows {
            let gy = top + r as f32 * scale;
            shapes.push(egui::Shape::line_segment(
                [Pos2::new(x, gy), Pos2::new(x + size.x, gy)],
                Stroke::new(0.5, grid_color),
            ));
            r += cell;
        }
        shapes.push(egui::Shape::rect_stroke(
            Rect::from_min_size(Pos2::new(x, top), size),
            0.0,
            outline,
            StrokeKind::Outside,
        ));
        if cell > 1 && size.x > 110.0 {
            shapes.push(text_shape(
                &painter,
                Pos2::new(x, top + size.y + 4.0),
                egui::Align2::LEFT_TOP,
                format!("grid cell = {cell}×{cell} elements"),
                10.0,
                text_color,
            ));
        }
        x += size.x + gap;
    }
    painter.extend(shapes);
    let summary = shards
        .iter()
        .map(|(p, name)| {
            let split = match p.parallel {
                Parallel::Column => "split by columns",
                Parallel::Row => "split by rows",
                _ => "replicated",
            };
            format!("{name} [{}, {}] {split}", p.full_shape[0], p.full_shape[1])
        })
        .collect::<Vec<_>>()
        .join("; ");
    a11y_label(
        &resp,
        &format!("Weight matrices over {} GPUs: {summary}", config.tp),
    );
    if let Some(text) = hovered {
        resp.on_hover_text_at_pointer(text);
    }
    ui.add_space(16.0);
    legend_ui(ui, config.tp, dark);
    if let Some(note) = config.gqa_note() {
        ui.label(note);
    }
}

/// One coloured chip per GPU.
pub fn legend_ui(ui: &mut egui::Ui, tp: usize, dark: bool) {
    ui.horizontal_wrapped(|ui| {
        for r in 0..tp {
            let fill = gpu_color(r, dark);
            let text = egui::RichText::new(format!(" GPU {r} "))
                .background_color(fill)
                .color(text_on(fill));
            ui.label(text);
        }
    });
}

/// The output of each forward op of layer 0 on every GPU (from the trace): shape, bytes and
/// whether it is split, replicated or a partial sum waiting for `g`.
fn activations_ui(
    ui: &mut egui::Ui,
    config: &Config,
    trace: &tplab_engine::trace::Trace,
    dark: bool,
) {
    ui.horizontal_wrapped(|ui| {
        ui.label("Each of");
        legend_ui(ui, config.tp.min(8), dark);
        if config.tp > 8 {
            ui.label(format!("… GPU {}", config.tp - 1));
        }
        ui.label("holds:");
    });
    egui::Grid::new("acts").striped(true).show(ui, |ui| {
        for h in ["op", "output", "bytes", "kind"] {
            ui.strong(h);
        }
        ui.end_row();
        for e in trace
            .layer_events(0, Pass::Forward)
            .filter(|e| !e.is_collective() && e.on_rank(0))
        {
            let [r, c] = e.output;
            let kind = match &e.kind {
                tplab_engine::trace::EventKind::Compute { parallel, .. } => match parallel {
                    Parallel::Row => "partial sum",
                    Parallel::Column | Parallel::Local => "split 1/TP",
                    Parallel::Replicated => "replicated",
                    Parallel::Sequence => "split by tokens 1/TP",
                },
                _ => "",
            };
            ui.label(e.name());
            ui.label(format!("[{r}, {c}]"));
            ui.label(human_bytes((r * c * config.dtype.size_bytes()) as u64));
            ui.label(kind);
            ui.end_row();
        }
    });
    ui.small(
        "split 1/TP: each GPU holds its own columns. partial sum: each GPU holds one term of the \
         full result; the g all-reduce adds them, then the bias is added once. split by tokens \
         (sequence parallel): each GPU holds 1/TP of the token rows; g is a reduce-scatter and f \
         an all-gather.",
    );
}
