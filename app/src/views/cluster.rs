//! Cluster: a 3D layout drawn on its GPUs. Nodes hold their GPUs; each GPU is coloured by its
//! TP group, pipeline stage or data-parallel replica (a toggle) and says which layers and which
//! slice of them it holds, and which links its collectives use (NVLink inside a node,
//! InfiniBand across).
//!
//! Presets: the guide's scenarios (175B on one 8-GPU node, 70B served at TP 4, a trillion
//! parameters on 3072 GPUs) with the layouts the guide names, and the planner's default cluster
//! (GPT-3 175B on 64 A100s). For each the layout is the guide's, or the planner's best
//! ([`crate::lab::planner::run_planner`], off the UI thread).
//!
//! Ranks follow Megatron-LM's order, as the cost model's links do ([`Cluster::group_spans_nodes`]):
//! TP fastest, then DP, then PP: `rank = tp_rank + t·(dp_rank + d·stage)`.

use crate::background::Background;
use crate::i18n::{bytes, num, t, t_args};
use crate::lab::load_json;
use crate::lab::planner::{run_planner, PlannerInputs, PlannerResult};
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::a11y_label;
use crate::widgets::gpu_color;
use crate::widgets::text_on;
use crate::widgets::text_shape;
use serde::{Deserialize, Serialize};
use tplab_engine::capacity::cost::TrainSetup;
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::memory::{Layout, Recompute};
use tplab_engine::capacity::models::{ModelSpec, Scenario};
use tplab_engine::capacity::planner::{self, PlanRequest};

/// What colours the GPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColorBy {
    #[default]
    Tp,
    Stage,
    Replica,
}

/// Where the drawn layout comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The layout the guide (or the paper it cites) names.
    #[default]
    Guide,
    /// The planner's fastest layout that fits.
    Planner,
}

/// A preset: a model on a cluster (as the Planner view's inputs), and the layout the guide
/// names for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Preset {
    /// One of [`tplab_lessons::CLUSTERS`], or `custom` (the Planner view's inputs).
    pub id: String,
    pub inputs: PlannerInputs,
    /// Served (weights only), not trained.
    pub serving: bool,
    /// The guide's layout (`None` for the Planner view's inputs: the planner's best only).
    pub layout: Option<Layout>,
}

/// The preset with this id ([`tplab_lessons::CLUSTERS`]).
pub fn preset(id: &str) -> Option<Preset> {
    let layout = |t, p, d| Layout {
        zero: 1,
        sp: t > 1,
        recompute: Recompute::Selective,
        ..Layout::new(t, p, d)
    };
    if id == "planner-64" {
        let d = PlannerInputs::default();
        return Some(Preset {
            id: "planner-64".into(),
            inputs: d,
            serving: false,
            // Korthikanti et al. 2022 trained GPT-3 175B on 64 GPUs as TP 8 × PP 8.
            layout: Some(layout(8, 8, 1)),
        });
    }
    let s = Scenario::by_id(id).ok()?;
    let (t, p, d) = match s.id {
        "175b-one-node" => (8, 1, 1),
        "70b-serve-tp4" => (4, 1, 1),
        // Narayanan et al. 2021, Table 1: the 1T model on 3072 A100s.
        "1t-3d" => (8, 64, 6),
        _ => return None,
    };
    Some(Preset {
        id: s.id.to_string(),
        inputs: PlannerInputs {
            model: s.model,
            custom: None,
            gpu: s.gpu.to_string(),
            gpus: s.gpus,
            gpus_per_node: s.gpus_per_node,
            inter_node: s.inter_node.to_string(),
            seq: s.seq,
            global_batch: s.global_batch,
            todays_stack: false,
        },
        serving: matches!(
            s.workload,
            tplab_engine::capacity::models::Workload::Serve { .. }
        ),
        layout: Some(layout(t, p, d)),
    })
}

impl Preset {
    /// The Planner view's inputs, drawn with the planner's best layout.
    pub fn custom(inputs: PlannerInputs) -> Self {
        Preset {
            id: "custom".into(),
            inputs,
            serving: false,
            layout: None,
        }
    }

    fn spec(&self) -> ModelSpec {
        self.inputs.model_spec()
    }

    /// The model's name: the preset's, or the loaded config.json's.
    fn model_name(&self) -> String {
        self.inputs.custom.as_ref().map_or_else(
            || self.inputs.model.display_name().to_string(),
            |c| c.label(),
        )
    }

    fn cluster(&self) -> Result<Cluster, String> {
        let i = &self.inputs;
        Cluster::new(
            &Catalogue::default(),
            &i.gpu,
            i.gpus,
            i.gpus_per_node,
            &i.inter_node,
        )
        .map_err(|e| e.to_string())
    }
}

/// One GPU's place in a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub rank: usize,
    pub tp_rank: usize,
    pub dp_rank: usize,
    pub stage: usize,
    /// TP group: `dp_rank + d·stage`.
    pub tp_group: usize,
}

/// Where rank `rank` sits in `layout` (Megatron-LM's order: TP, then DP, then PP).
pub fn place(layout: &Layout, rank: usize) -> Place {
    let (t, d) = (layout.tp.max(1), layout.dp.max(1));
    Place {
        rank,
        tp_rank: rank % t,
        dp_rank: (rank / t) % d,
        stage: rank / (t * d),
        tp_group: rank / t,
    }
}

/// Cluster view state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterView {
    /// One of [`tplab_lessons::CLUSTERS`].
    pub preset: String,
    pub color_by: ColorBy,
    pub source: Source,
    /// The node drawn in detail.
    pub node: usize,
    /// The Planner view's inputs, when the learner came from there (preset `custom`).
    pub custom: Option<PlannerInputs>,
    #[serde(skip)]
    job: Option<(String, Background<PlannerResult>)>,
    /// The planner's answers, by preset id.
    #[serde(skip)]
    planned: Vec<(String, Result<Option<Layout>, String>)>,
}

impl Default for ClusterView {
    fn default() -> Self {
        Self {
            preset: "planner-64".into(),
            color_by: ColorBy::Tp,
            source: Source::Guide,
            node: 0,
            custom: None,
            job: None,
            planned: Vec::new(),
        }
    }
}

impl ClusterView {
    /// The planner's answer for the current preset, once it has come.
    fn planned(&self) -> Option<&Result<Option<Layout>, String>> {
        self.planned
            .iter()
            .find(|(id, _)| *id == self.preset)
            .map(|(_, r)| r)
    }

    /// The preset on screen.
    pub fn current(&self) -> Option<Preset> {
        match (self.preset.as_str(), &self.custom) {
            ("custom", Some(inputs)) => Some(Preset::custom(inputs.clone())),
            (id, _) => preset(id),
        }
    }

    /// Where the layout comes from: the planner's, always, for the Planner view's inputs.
    fn source(&self) -> Source {
        if self.preset == "custom" {
            Source::Planner
        } else {
            self.source
        }
    }

    /// The preset and the layout drawn: the planner's best when asked for and it has come and
    /// something fits, else the guide's (none for the Planner view's inputs).
    pub fn layout(&self) -> Option<(Preset, Layout)> {
        let p = self.current()?;
        let layout = match (self.source(), self.planned()) {
            (Source::Planner, Some(Ok(Some(l)))) => Some(*l),
            _ => p.layout,
        }?;
        Some((p, layout))
    }

    /// Opens a preset.
    pub fn select(&mut self, id: &str) {
        if preset(id).is_some() || (id == "custom" && self.custom.is_some()) {
            self.preset = id.to_string();
            self.node = 0;
        }
    }

    /// Opens the Planner view's inputs, drawn with the planner's best layout.
    pub fn open_custom(&mut self, inputs: PlannerInputs) {
        self.custom = Some(inputs);
        self.planned.retain(|(id, _)| id != "custom");
        if self.job.as_ref().is_some_and(|(id, _)| id == "custom") {
            self.job = None;
        }
        self.preset = "custom".into();
        self.node = 0;
    }
}

impl View for ClusterView {
    fn id(&self) -> &'static str {
        "cluster"
    }

    fn title(&self) -> &'static str {
        "Cluster"
    }

    fn logic(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        if let Some(inputs) = shared.cluster_request.take() {
            self.open_custom(inputs);
        }
        if let Some((id, job)) = &mut self.job {
            if let Some(r) = job.poll(Some(ctx)) {
                let id = id.clone();
                let layout = r.map(|r| r.plan.ranked.first().map(|it| it.layout));
                self.planned.retain(|(i, _)| *i != id);
                self.planned.push((id, layout));
                self.job = None;
            }
        }
        let wanted = self.source() == Source::Planner && self.planned().is_none();
        if wanted && self.job.is_none() {
            if let Some(p) = self.current() {
                let inputs = p.inputs;
                let job = Background::once(ctx, move |_| run_planner(&inputs));
                self.job = Some((self.preset.clone(), job));
            }
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, _shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, t(lang, "cu-title"));
        crate::widgets::scrolling_page(ui, "cu-page", |ui| self.page_ui(ui));
    }

    fn show_me(&mut self, target: &crate::lab::ShowMe, _shared: &mut Shared) {
        if let Some(c) = &target.cluster {
            self.select(c);
            self.source = Source::Guide;
        }
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
        if let Some(c) = &self.custom {
            // A saved config.json model is checked as the importer checks a file.
            if c.custom
                .as_ref()
                .is_some_and(|m| m.spec.validate().is_err())
            {
                self.custom = None;
            }
        }
        if self.current().is_none() {
            self.preset = ClusterView::default().preset;
        }
    }

    fn export_name(&self, _shared: &Shared) -> Option<String> {
        Some(format!("cluster-{}", self.preset))
    }
}

impl ClusterView {
    fn page_ui(&mut self, ui: &mut egui::Ui) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        ui.horizontal_wrapped(|ui| {
            ui.label(tr("cu-presets"));
            let custom = self.custom.is_some().then_some("custom");
            for id in tplab_lessons::CLUSTERS.into_iter().chain(custom) {
                if ui
                    .selectable_label(self.preset == id, tr(&format!("cu-preset-{id}")))
                    .clicked()
                {
                    self.select(id);
                }
            }
        });
        ui.horizontal_wrapped(|ui| {
            ui.label(tr("cu-layout-from"));
            if self.preset == "custom" {
                let _ = ui.selectable_label(true, tr("cu-source-planner"));
            } else {
                ui.selectable_value(&mut self.source, Source::Guide, tr("cu-source-guide"));
                ui.selectable_value(&mut self.source, Source::Planner, tr("cu-source-planner"));
            }
            ui.add_space(12.0);
            ui.label(tr("cu-colour-by"));
            ui.selectable_value(&mut self.color_by, ColorBy::Tp, tr("cu-by-tp"));
            ui.selectable_value(&mut self.color_by, ColorBy::Stage, tr("cu-by-stage"));
            ui.selectable_value(&mut self.color_by, ColorBy::Replica, tr("cu-by-replica"));
        });
        let Some(p) = self.current() else {
            return;
        };
        if p.id == "custom" {
            let i = &p.inputs;
            ui.label(t_args(
                lang,
                "cu-story-custom",
                &[
                    ("model", p.model_name()),
                    ("gpus", i.gpus.to_string()),
                    ("gpu", crate::widgets::gpu_name(&i.gpu)),
                    ("per_node", i.gpus_per_node.to_string()),
                    ("link", crate::widgets::link_name(&i.inter_node)),
                ],
            ));
        } else {
            ui.label(tr(&format!("cu-story-{}", p.id)));
        }
        if self.source() == Source::Planner {
            match self.planned() {
                None => {
                    ui.horizontal(|ui| {
                        ui.spinner();
                        ui.label(tr("cu-planning"));
                    });
                }
                Some(Ok(None)) if p.layout.is_none() => {
                    ui.colored_label(ui.visuals().warn_fg_color, tr("cu-planner-nothing-custom"));
                }
                Some(Ok(None)) => {
                    ui.colored_label(ui.visuals().warn_fg_color, tr("cu-planner-nothing"));
                }
                Some(Err(e)) => {
                    ui.colored_label(ui.visuals().error_fg_color, e.as_str());
                }
                Some(Ok(Some(_))) => {}
            }
        }
        let Some((p, layout)) = self.layout() else {
            return;
        };
        let cluster = match p.cluster() {
            Ok(c) => c,
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
                return;
            }
        };
        summary_ui(ui, &p, &layout, &cluster);
        ui.add_space(6.0);
        let nodes = cluster.nodes();
        self.node = self.node.min(nodes.saturating_sub(1));
        if let Some(n) = overview_ui(ui, &p, &layout, &cluster, self.color_by, self.node) {
            self.node = n;
        }
        ui.label(tr(match self.color_by {
            ColorBy::Tp => "cu-key-tp",
            ColorBy::Stage => "cu-key-stage",
            ColorBy::Replica => "cu-key-replica",
        }));
        ui.add_space(6.0);
        node_ui(ui, &p, &layout, &cluster, self.color_by, self.node);
        links_ui(ui, &layout, &cluster);
    }
}

/// The colour index of a GPU under `by`.
fn color_index(pl: &Place, by: ColorBy) -> usize {
    match by {
        ColorBy::Tp => pl.tp_group,
        ColorBy::Stage => pl.stage,
        ColorBy::Replica => pl.dp_rank,
    }
}

/// "TP 8 × PP 8 × DP 1 on 64 GPUs (8 nodes of 8)", the model, and memory per GPU.
fn summary_ui(ui: &mut egui::Ui, p: &Preset, layout: &Layout, cluster: &Cluster) {
    let lang = crate::widgets::lang(ui);
    let spec = p.spec();
    ui.label(
        egui::RichText::new(crate::i18n::t_count(
            lang,
            "cu-layout",
            ("nodes", cluster.nodes() as u64),
            &[
                ("tp", layout.tp.to_string()),
                ("pp", layout.pp.to_string()),
                ("dp", layout.dp.to_string()),
                ("gpus", layout.gpus().to_string()),
                ("nodes", cluster.nodes().to_string()),
                ("per_node", cluster.gpus_per_node.to_string()),
                ("model", p.model_name()),
                ("gpu", cluster.gpu.display_name().to_string()),
            ],
        ))
        .strong(),
    );
    if p.serving {
        let weights = spec.params().saturating_mul(2) / layout.tp.max(1) as u64;
        ui.label(t_args(
            lang,
            "cu-serving-memory",
            &[
                ("weights", bytes(lang, weights)),
                ("tp", layout.tp.to_string()),
            ],
        ));
        return;
    }
    let req = PlanRequest::new(
        spec.clone(),
        TrainSetup::new(p.inputs.seq, p.inputs.global_batch),
        cluster.clone(),
    );
    match planner::evaluate(&req, layout) {
        Ok(it) => {
            let id = if it.fits {
                "cu-memory-fits"
            } else {
                "cu-memory-no-fit"
            };
            ui.label(t_args(
                lang,
                id,
                &[
                    ("total", bytes(lang, it.memory.total_bytes)),
                    ("weights", bytes(lang, it.memory.weights_bytes)),
                    ("gradients", bytes(lang, it.memory.gradients_bytes)),
                    ("optimizer", bytes(lang, it.memory.optimizer_bytes)),
                    ("activations", bytes(lang, it.memory.activations_bytes)),
                    ("usable", bytes(lang, it.memory_limit_bytes)),
                    ("seconds", num(lang, it.iteration_time_s, 2)),
                ],
            ));
        }
        Err(e) => {
            ui.colored_label(
                ui.visuals().error_fg_color,
                crate::widgets::errors::layout_error_text(lang, &e),
            );
        }
    }
}

/// Every node as a small box of GPU cells; returns the node clicked.
fn overview_ui(
    ui: &mut egui::Ui,
    p: &Preset,
    layout: &Layout,
    cluster: &Cluster,
    by: ColorBy,
    selected: usize,
) -> Option<usize> {
    let lang = crate::widgets::lang(ui);
    let dark = ui.visuals().dark_mode;
    let nodes = cluster.nodes();
    let per = cluster.gpus_per_node.max(1);
    let width = ui.available_width().max(200.0);
    let gap = 6.0;
    // Cells of 5 points in rows of at most 8 (a 16-GPU node: two rows).
    let cols_in_node = per.min(8);
    let rows_in_node = per.div_ceil(cols_in_node);
    let cell = if nodes <= 16 { 14.0 } else { 5.0 };
    let node_w = cols_in_node as f32 * cell + 6.0;
    let node_h = rows_in_node as f32 * cell + 6.0;
    let per_row = (((width - 6.0 + gap) / (node_w + gap)).floor() as usize).max(1);
    let rows = nodes.div_ceil(per_row);
    // A margin for the selected node's outline, drawn outside its box.
    let margin = 3.0;
    let height = rows as f32 * (node_h + gap) + 2.0 * margin;
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::click());
    let painter = ui.painter_at(rect);
    let mut shapes = Vec::new();
    let used = layout.gpus().min(cluster.gpus);
    let frame = ui.visuals().weak_text_color();
    let highlight = ui.visuals().selection.stroke.color;
    let node_rect = |n: usize| {
        let (r, c) = (n / per_row, n % per_row);
        egui::Rect::from_min_size(
            rect.min
                + egui::vec2(margin, margin)
                + egui::vec2(c as f32 * (node_w + gap), r as f32 * (node_h + gap)),
            egui::vec2(node_w, node_h),
        )
    };
    for n in 0..nodes {
        let nr = node_rect(n);
        for g in 0..per {
            let rank = n * per + g;
            let (r, c) = (g / cols_in_node, g % cols_in_node);
            let cr = egui::Rect::from_min_size(
                nr.min + egui::vec2(3.0 + c as f32 * cell, 3.0 + r as f32 * cell),
                egui::vec2(cell - 1.0, cell - 1.0),
            );
            if rank < used {
                let pl = place(layout, rank);
                shapes.push(egui::Shape::rect_filled(
                    cr,
                    1.0,
                    gpu_color(color_index(&pl, by), dark),
                ));
            } else {
                shapes.push(egui::Shape::rect_stroke(
                    cr,
                    1.0,
                    egui::Stroke::new(1.0, frame),
                    egui::StrokeKind::Inside,
                ));
            }
        }
        let (w, c) = if n == selected {
            (2.5, highlight)
        } else {
            (1.0, frame)
        };
        shapes.push(egui::Shape::rect_stroke(
            nr,
            2.0,
            egui::Stroke::new(w, c),
            egui::StrokeKind::Outside,
        ));
    }
    painter.extend(shapes);
    a11y_label(
        &resp,
        &crate::i18n::t_count(
            lang,
            "cu-overview-a11y",
            ("nodes", nodes as u64),
            &[
                ("nodes", nodes.to_string()),
                ("gpus", used.to_string()),
                ("model", p.model_name()),
            ],
        ),
    );
    let clicked = resp
        .interact_pointer_pos()
        .filter(|_| resp.clicked())
        .and_then(|pos| (0..nodes).find(|&n| node_rect(n).contains(pos)));
    resp.on_hover_text(t(lang, "cu-overview-hover"));
    clicked
}

/// The GPUs of one node, each a card: its place, its layers and its slice.
fn node_ui(
    ui: &mut egui::Ui,
    p: &Preset,
    layout: &Layout,
    cluster: &Cluster,
    by: ColorBy,
    node: usize,
) {
    let lang = crate::widgets::lang(ui);
    let dark = ui.visuals().dark_mode;
    let spec = p.spec();
    let per = cluster.gpus_per_node.max(1);
    let used = layout.gpus().min(cluster.gpus);
    ui.strong(t_args(
        lang,
        "cu-node",
        &[
            ("node", node.to_string()),
            ("last", cluster.nodes().saturating_sub(1).to_string()),
        ],
    ));
    let body = ui.style().text_styles[&egui::TextStyle::Body].size;
    let small = body * 0.9;
    let width = ui.available_width().max(200.0);
    let gap = 6.0;
    let min_card = 13.0 * small;
    let cols = (((width + gap) / (min_card + gap)).floor() as usize).clamp(1, per.min(8));
    let card_w = (width - gap * (cols - 1) as f32) / cols as f32;
    let (t, pp) = (layout.tp.max(1), layout.pp.max(1));
    let layers_per_stage = spec.layers / pp;
    let heads_per = spec.heads / t;
    let ffn_per = spec.ffn / t;
    // Each card's lines first, wrapped to the card: the cards are as tall as the tallest.
    let cards: Vec<Option<(Place, Vec<String>)>> = (0..per)
        .map(|g| {
            let rank = node * per + g;
            (rank < used).then(|| {
                let pl = place(layout, rank);
                let mut lines = gpu_lines(lang, g, &pl, layers_per_stage, heads_per, ffn_per);
                lines.push(gpu_links(lang, layout, cluster, &pl));
                (pl, lines)
            })
        })
        .collect();
    let font = egui::FontId::proportional(small);
    let wrap = |text: &str, color| {
        ui.painter()
            .layout(text.to_string(), font.clone(), color, card_w - 8.0)
    };
    let laid: Vec<Option<Card>> = cards
        .into_iter()
        .map(|c| {
            c.map(|(pl, lines)| {
                let fill = gpu_color(color_index(&pl, by), dark);
                let galleys = lines.iter().map(|l| wrap(l, text_on(fill))).collect();
                (pl, galleys, lines)
            })
        })
        .collect();
    let card_h = laid
        .iter()
        .flatten()
        .map(|(_, g, _)| g.iter().map(|x| x.size().y).sum::<f32>())
        .fold(2.0 * small, f32::max)
        + 8.0;
    let rows = per.div_ceil(cols);
    let height = rows as f32 * (card_h + gap);
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let mut shapes = Vec::new();
    let frame = ui.visuals().weak_text_color();
    let mut texts = Vec::new();
    for (g, card_lines) in laid.into_iter().enumerate() {
        let (r, c) = (g / cols, g % cols);
        let card = egui::Rect::from_min_size(
            rect.min + egui::vec2(c as f32 * (card_w + gap), r as f32 * (card_h + gap)),
            egui::vec2(card_w, card_h),
        );
        let Some((pl, galleys, lines)) = card_lines else {
            shapes.push(egui::Shape::rect_stroke(
                card,
                3.0,
                egui::Stroke::new(1.0, frame),
                egui::StrokeKind::Inside,
            ));
            let text = t_args(lang, "cu-gpu-unused", &[("gpu", g.to_string())]);
            shapes.push(text_shape(
                &painter,
                card.center(),
                egui::Align2::CENTER_CENTER,
                text.clone(),
                small,
                frame,
            ));
            texts.push(text);
            continue;
        };
        let fill = gpu_color(color_index(&pl, by), dark);
        shapes.push(egui::Shape::rect_filled(card, 3.0, fill));
        let mut y = card.top() + 4.0;
        for galley in galleys {
            let h = galley.size().y;
            shapes.push(egui::Shape::galley(
                egui::pos2(card.left() + 4.0, y),
                galley,
                text_on(fill),
            ));
            y += h;
        }
        texts.push(lines.join(", "));
    }
    painter.extend(shapes);
    a11y_label(&resp, &texts.join("; "));
}

/// A GPU card: its place, its lines laid out, and the lines (for the accessible label).
type Card = (Place, Vec<std::sync::Arc<egui::Galley>>, Vec<String>);

/// A GPU card's lines: its name, its place, its layers, its heads and its FFN columns.
fn gpu_lines(
    lang: tplab_lessons::Lang,
    g: usize,
    pl: &Place,
    layers_per_stage: usize,
    heads_per: usize,
    ffn_per: usize,
) -> Vec<String> {
    let first = pl.stage * layers_per_stage;
    let range = |per: usize| {
        (
            (pl.tp_rank * per).to_string(),
            ((pl.tp_rank + 1) * per).saturating_sub(1).to_string(),
        )
    };
    let (h0, h1) = range(heads_per);
    let (f0, f1) = range(ffn_per);
    vec![
        t_args(
            lang,
            "cu-gpu-title",
            &[("gpu", g.to_string()), ("rank", pl.rank.to_string())],
        ),
        t_args(
            lang,
            "cu-gpu-place",
            &[
                ("tp", pl.tp_rank.to_string()),
                ("stage", pl.stage.to_string()),
                ("replica", pl.dp_rank.to_string()),
            ],
        ),
        t_args(
            lang,
            "cu-gpu-layers",
            &[
                ("first", first.to_string()),
                (
                    "last",
                    (first + layers_per_stage).saturating_sub(1).to_string(),
                ),
            ],
        ),
        t_args(lang, "cu-gpu-heads", &[("h0", h0), ("h1", h1)]),
        t_args(lang, "cu-gpu-ffn", &[("f0", f0), ("f1", f1)]),
    ]
}

/// The links one GPU's collectives use: its TP group's, the send to its next stage's and its
/// DP group's, each the node's NVLink unless the group crosses a node.
fn gpu_links(lang: tplab_lessons::Lang, layout: &Layout, cluster: &Cluster, pl: &Place) -> String {
    let (t, p, d) = (layout.tp.max(1), layout.pp.max(1), layout.dp.max(1));
    let per = cluster.gpus_per_node.max(1);
    // A group's link: the inter-node one when its ranks are on more than one node.
    let link = |ranks: &mut dyn Iterator<Item = usize>| {
        let nodes: Vec<usize> = ranks.map(|r| r / per).collect();
        match nodes.first() {
            _ if nodes.len() < 2 => "—".to_string(),
            Some(first) if nodes.iter().all(|n| n == first) => {
                cluster.intra_node.display_name().to_string()
            }
            _ => cluster.inter_node.display_name().to_string(),
        }
    };
    let tp = link(&mut (pl.tp_group * t..(pl.tp_group + 1) * t));
    let pp = if pl.stage + 1 < p {
        link(&mut [pl.rank, pl.rank + t * d].into_iter())
    } else {
        "—".to_string()
    };
    let dp = link(&mut (0..d).map(|j| pl.tp_rank + t * (j + d * pl.stage)));
    // Only the collectives this GPU takes part in; one that has none says so in words.
    let parts: Vec<String> = [
        ("cu-gpu-link-tp", tp),
        ("cu-gpu-link-pp", pp),
        ("cu-gpu-link-dp", dp),
    ]
    .into_iter()
    .filter(|(_, l)| l != "—")
    .map(|(id, l)| t_args(lang, id, &[("link", l)]))
    .collect();
    if parts.is_empty() {
        crate::i18n::t(lang, "cu-gpu-links-none")
    } else {
        parts.join(" · ")
    }
}

/// Which link each collective uses, for the drawn layout.
fn links_ui(ui: &mut egui::Ui, layout: &Layout, cluster: &Cluster) {
    let lang = crate::widgets::lang(ui);
    let (tp, p, d) = (layout.tp.max(1), layout.pp.max(1), layout.dp.max(1));
    let link = |stride: usize, size: usize| {
        let spans = cluster.group_spans_nodes(stride, size);
        let name = cluster.group_link(stride, size).display_name().to_string();
        let id = if spans {
            "cu-link-across"
        } else {
            "cu-link-inside"
        };
        t_args(lang, id, &[("link", name)])
    };
    ui.add_space(4.0);
    ui.strong(t(lang, "cu-links"));
    if tp > 1 {
        ui.label(t_args(
            lang,
            "cu-link-tp",
            &[("tp", tp.to_string()), ("how", link(1, tp))],
        ));
    }
    if p > 1 {
        ui.label(t_args(
            lang,
            "cu-link-pp",
            &[("pp", p.to_string()), ("how", link(tp * d, p))],
        ));
    }
    if d > 1 {
        ui.label(t_args(
            lang,
            "cu-link-dp",
            &[("dp", d.to_string()), ("how", link(tp, d))],
        ));
    }
    if tp == 1 && p == 1 && d == 1 {
        ui.label(t(lang, "cu-link-none"));
    }
}
