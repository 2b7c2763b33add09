//! Planner: a model on a cluster, the engine's ranked 3D layouts (TP, PP, DP) with the reason
//! the winner wins, and throughput against TP showing the drop once a TP group spans nodes.
//! The planner runs off the UI thread ([`crate::background::Background`]).

use crate::background::{self, Background};
use crate::i18n::{bytes, num, num_text};
use crate::lab::load_json;
use crate::lab::planner::{run_planner, ConfigModel, PlannerInputs, PlannerResult};
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::ShowMe;
use crate::lab::View;
use crate::platform::{self, PickedFile};
use crate::widgets::errors::layout_error_text;
use crate::widgets::gantt::{plot_key, KeyMark};
use egui_plot::{AxisHints, Line, Plot, PlotPoints, Points, VLine};
use serde::{Deserialize, Serialize};
use tplab_engine::capacity::defaults;
use tplab_engine::capacity::hardware::Catalogue;
use tplab_engine::capacity::models::{
    read_input_file, InputFileError, ModelError, ModelPreset, ModelSpec, MAX_INPUT_FILE_BYTES,
};
use tplab_engine::capacity::planner;
use tplab_engine::capacity::stack::WhatIf;
use tplab_lessons::Lang;

/// Ranked layouts listed.
const SHOWN_LAYOUTS: usize = 8;

/// Narrower than this (points), the ranked table leaves out its compute and TFLOP/s columns
/// (presenter mode at 1280×720 is 800 points wide).
const COMPACT_TABLE_WIDTH: f32 = 1000.0;

/// Planner state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Planner {
    pub inputs: PlannerInputs,
    #[serde(skip)]
    computed_for: Option<PlannerInputs>,
    #[serde(skip)]
    job: Option<Background<PlannerResult>>,
    #[serde(skip)]
    result: Option<Result<PlannerResult, String>>,
    #[serde(skip)]
    config: ConfigLoad,
}

/// Loading a Hugging Face `config.json`: the browser's file picker, or on the desktop a path
/// (typed, or a file dropped onto the window).
#[derive(Default)]
struct ConfigLoad {
    picking: Option<PickedFile>,
    /// The desktop's path field is open.
    asking_path: bool,
    path: String,
    /// The last file that could not be used, and why.
    error: Option<ModelError>,
}

/// Reads a `config.json`'s text with the engine's importer (the CLI's `tplab plan --model
/// config.json`), under the same size rule as a file named on the command line.
pub fn model_from_config(file: &str, text: &str) -> Result<ModelSpec, ModelError> {
    if text.len() as u64 > MAX_INPUT_FILE_BYTES {
        return Err(ModelError::File(InputFileError::TooLarge {
            path: file.to_string(),
            size: text.len() as u64,
            limit: MAX_INPUT_FILE_BYTES,
            what: "config.json",
        }));
    }
    ModelSpec::from_hf_config(text)
}

impl Planner {
    /// What "Load config.json…" does with the file's text: plan for its model, or keep the
    /// inputs and show why the file cannot be used ([`Planner::config_error`]).
    pub fn load_config(&mut self, file: &str, text: &str) -> Result<(), ModelError> {
        match model_from_config(file, text) {
            Ok(spec) => {
                self.inputs.custom = Some(ConfigModel {
                    file: file.to_string(),
                    spec,
                });
                self.config.error = None;
                Ok(())
            }
            Err(e) => {
                self.config.error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Why the last file could not be used, in `lang`.
    pub fn config_error(&self, lang: Lang) -> Option<String> {
        self.config
            .error
            .as_ref()
            .map(|e| model_error_text(lang, e))
    }

    /// A file read from disk (the desktop's path field, or a file dropped onto the window).
    fn load_path(&mut self, path: &std::path::Path) {
        let file = path.file_name().map_or_else(
            || path.display().to_string(),
            |f| f.to_string_lossy().into(),
        );
        match read_input_file(path, "config.json", MAX_INPUT_FILE_BYTES) {
            Ok(text) => {
                if self.load_config(&file, &text).is_ok() {
                    self.config.asking_path = false;
                }
            }
            Err(e) => self.config.error = Some(ModelError::File(e)),
        }
    }

    /// The view below its heading: the inputs, then the plan (`window_h`: the window's height
    /// below the heading, for the plot's height).
    fn page_ui(&mut self, ui: &mut egui::Ui, window_h: f32, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        let config = &mut self.config;
        inputs_ui(ui, &mut self.inputs, |ui| load_config_button(ui, config));
        self.config_ui(ui);
        if let Some(job) = &self.job {
            ui.horizontal(|ui| {
                ui.spinner();
                let secs = num(lang, job.elapsed_s(), 1);
                ui.label(crate::i18n::t_args(
                    lang,
                    "pl-planning",
                    &[("seconds", secs)],
                ));
            });
        }
        match &self.result {
            None => {}
            Some(Err(e)) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            Some(Ok(r)) => {
                if let Some(w) = r.plan.ranked.first() {
                    let text = crate::i18n::t_args(
                        lang,
                        "pl-on-its-gpus",
                        &[(
                            "layout",
                            crate::widgets::words::layout_label(lang, &w.layout),
                        )],
                    );
                    if ui.button(text).clicked() {
                        shared.cluster_request = Some(self.inputs.clone());
                        shared.navigate(ShowMe {
                            view: tplab_lessons::View::Cluster,
                            ..Default::default()
                        });
                    }
                }
                result_ui(ui, r, window_h);
            }
        }
    }

    /// The loaded model's summary, the desktop's path field, dropped files and the browser's
    /// answer (the button is on the inputs' row: [`load_config_button`]).
    fn config_ui(&mut self, ui: &mut egui::Ui) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| crate::i18n::t(lang, id);
        if let Some(c) = &self.inputs.custom {
            ui.label(config_summary(lang, c));
        }
        if self.config.asking_path {
            ui.horizontal_wrapped(|ui| {
                let l = ui.label(tr("pl-config-path"));
                let edit = ui
                    .add(
                        egui::TextEdit::singleline(&mut self.config.path)
                            .hint_text("/path/to/config.json")
                            .desired_width(360.0),
                    )
                    .labelled_by(l.id);
                let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                if ui.button(tr("pl-config-read")).clicked() || enter {
                    let path = std::path::PathBuf::from(self.config.path.trim());
                    self.load_path(&path);
                }
                ui.small(tr("pl-config-drop"));
            });
        }
        if let Some(picked) = self.config.picking.as_mut().and_then(PickedFile::poll) {
            self.config.picking = None;
            match picked {
                Ok((file, text)) => {
                    let _ = self.load_config(&file, &text);
                }
                Err(message) => {
                    self.config.error = Some(ModelError::File(InputFileError::Io {
                        path: "config.json".into(),
                        message,
                    }));
                }
            }
        }
        // A file dropped onto the window (the desktop; a browser has its file picker).
        if let Some(path) = platform::dropped_path(ui.ctx()) {
            self.load_path(&path);
        }
        if let Some(e) = self.config_error(lang) {
            ui.colored_label(ui.visuals().error_fg_color, e);
        }
    }
}

/// "config.json: 32 layers, hidden 4096, 32 heads (8 KV), FFN 14336, vocabulary 128256; 8.03
/// billion parameters": what the importer read, for the learner to check.
fn config_summary(lang: Lang, c: &ConfigModel) -> String {
    let m = &c.spec;
    let id = if m.experts > 1 {
        "pl-config-summary-moe"
    } else {
        "pl-config-summary"
    };
    crate::i18n::t_args(
        lang,
        id,
        &[
            ("file", c.file.clone()),
            ("layers", m.layers.to_string()),
            ("hidden", m.hidden.to_string()),
            ("heads", m.heads.to_string()),
            ("kv_heads", m.kv_heads.to_string()),
            ("ffn", m.ffn.to_string()),
            ("vocab", m.vocab.to_string()),
            ("experts", m.experts.to_string()),
            ("per_token", m.experts_per_token.to_string()),
            ("billions", num(lang, m.params() as f64 / 1e9, 2)),
        ],
    )
}

impl View for Planner {
    fn id(&self) -> &'static str {
        "planner"
    }

    fn title(&self) -> &'static str {
        "Planner"
    }

    fn logic(&mut self, ctx: &egui::Context, _shared: &mut Shared) {
        if let Some(r) = background::finished(&mut self.job, ctx) {
            self.result = Some(r);
        }
        // One job at a time: while the learner drags a value, only the latest inputs run next.
        if self.job.is_none() && self.computed_for.as_ref() != Some(&self.inputs) {
            let inputs = self.inputs.clone();
            self.job = Some(Background::once(ctx, move |_| run_planner(&inputs)));
            self.computed_for = Some(self.inputs.clone());
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, crate::i18n::t(lang, "pl-title"));
        // The window's height, before the page scrolls: the plot's height follows it.
        let window_h = ui.available_height();
        // The page scrolls (the plot keeps a readable height at 1280×720 presenter).
        crate::widgets::scrolling_page(ui, "pl-page", |ui| self.page_ui(ui, window_h, shared));
    }

    /// A lesson's planner target: the default inputs with the target's model and cluster
    /// (so the lesson's numbers do not depend on what the learner changed before).
    fn show_me(&mut self, target: &ShowMe, _shared: &mut Shared) {
        let has_fields = target.model.is_some()
            || target.gpu.is_some()
            || target.gpus.is_some()
            || target.gpus_per_node.is_some();
        if !has_fields {
            return;
        }
        let mut inputs = PlannerInputs::default();
        if let Some(m) = target.model.as_deref().and_then(|m| m.parse().ok()) {
            inputs.model = m;
        }
        if let Some(g) = target.gpu.as_deref() {
            if let Ok(spec) = Catalogue::default().gpu(g) {
                inputs.gpu = spec.name;
            }
        }
        inputs.gpus = target.gpus.unwrap_or(inputs.gpus);
        inputs.gpus_per_node = target.gpus_per_node.unwrap_or(inputs.gpus_per_node);
        self.inputs = inputs;
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
        // A saved config.json model is checked as the importer checks a file.
        if let Some(c) = &self.inputs.custom {
            if c.spec.validate().is_err() {
                self.inputs.custom = None;
            }
        }
    }
}

/// "Load config.json…": the browser's file picker, or on the desktop the path field.
fn load_config_button(ui: &mut egui::Ui, config: &mut ConfigLoad) {
    let lang = crate::widgets::lang(ui);
    if ui
        .button(crate::i18n::t(lang, "pl-load-config"))
        .on_hover_text(crate::i18n::t(lang, "pl-load-config-hover"))
        .clicked()
    {
        if platform::CAN_PICK_FILES {
            config.picking = Some(platform::pick_text_file(ui.ctx(), ".json,application/json"));
        } else {
            config.asking_path = !config.asking_path;
        }
    }
}

/// The model, the cluster and the batch, then `more` (the config button) on the same wrapping
/// rows: a row of its own pushed the plot's axis below a projector's fold.
fn inputs_ui(ui: &mut egui::Ui, inputs: &mut PlannerInputs, more: impl FnOnce(&mut egui::Ui)) {
    let catalogue = Catalogue::default();
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    ui.horizontal_wrapped(|ui| {
        let shown = inputs.custom.as_ref().map_or_else(
            || inputs.model.display_name().to_string(),
            ConfigModel::label,
        );
        egui::ComboBox::from_label(tr("pl-model"))
            .selected_text(shown)
            .show_ui(ui, |ui| {
                if let Some(c) = &inputs.custom {
                    let _ = ui.selectable_label(true, c.label());
                }
                for m in ModelPreset::ALL {
                    let on = inputs.custom.is_none() && inputs.model == m;
                    if ui.selectable_label(on, m.display_name()).clicked() {
                        inputs.model = m;
                        inputs.custom = None;
                    }
                }
            });
        egui::ComboBox::from_label(tr("pl-gpu"))
            .selected_text(crate::widgets::gpu_name(&inputs.gpu))
            .show_ui(ui, |ui| {
                for g in &catalogue.gpus {
                    let on = inputs.gpu == g.name;
                    if ui.selectable_label(on, g.display_name()).clicked() && !on {
                        // The network follows the GPU's own node where the learner kept the
                        // last GPU's (an A100 cluster on HDR 200, an H100 one on NDR 400).
                        let was = catalogue.gpu(&inputs.gpu).ok();
                        if was.is_some_and(|w| inputs.inter_node == defaults::inter_node_for(&w)) {
                            inputs.inter_node = defaults::inter_node_for(g).to_string();
                        }
                        inputs.gpu = g.name.clone();
                    }
                }
            });
        for (label, v, max) in [
            ("pl-gpus", &mut inputs.gpus, 65536),
            ("pl-per-node", &mut inputs.gpus_per_node, 64),
        ] {
            crate::widgets::labelled_drag(ui, &tr(label), v, max);
        }
        egui::ComboBox::from_label(tr("pl-between-nodes"))
            .selected_text(crate::widgets::link_name(&inputs.inter_node))
            .show_ui(ui, |ui| {
                for l in &catalogue.links {
                    ui.selectable_value(&mut inputs.inter_node, l.name.clone(), l.display_name());
                }
            });
        for (label, v, max) in [
            ("pl-seq", &mut inputs.seq, 1 << 20),
            ("pl-global-batch", &mut inputs.global_batch, 1 << 20),
        ] {
            crate::widgets::labelled_drag(ui, &tr(label), v, max);
        }
        ui.checkbox(
            &mut inputs.todays_stack,
            crate::i18n::t(lang, "cap-todays-stack"),
        )
        .on_hover_text(crate::i18n::t(lang, "cap-todays-stack-hover"));
        more(ui);
    });
}

/// `+1.5%` / `+1,5%`: a signed percentage with one decimal in `lang`.
fn signed_percent(lang: Lang, fraction: f64) -> String {
    let p = 100.0 * fraction;
    let sign = if p >= 0.0 { "+" } else { "" };
    format!("{sign}{}%", num(lang, p, 1))
}

/// The winner's what-if table: the iteration time with each switch of today's stack flipped.
fn what_if_ui(ui: &mut egui::Ui, rows: &[WhatIf]) {
    if rows.is_empty() {
        return;
    }
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    ui.strong(tr("cap-what-if-title"));
    egui::Grid::new("what-if").striped(true).show(ui, |ui| {
        for h in [
            "cap-what-if-switch",
            "cap-what-if-flip",
            "cap-what-if-change",
        ] {
            ui.strong(tr(h));
        }
        ui.end_row();
        for w in rows {
            ui.label(tr(&format!(
                "cap-switch-{}",
                w.switch.key().replace('_', "-")
            )));
            ui.label(tr(if w.on {
                "cap-what-if-off"
            } else {
                "cap-what-if-on"
            }));
            match (w.change, w.flipped_fits) {
                (Some(c), Some(true)) => ui.label(signed_percent(lang, c)),
                (Some(c), _) => ui.label(format!(
                    "{} ({})",
                    signed_percent(lang, c),
                    tr("cap-what-if-no-fit")
                )),
                _ => ui.label(tr("cap-what-if-invalid")),
            };
            ui.end_row();
        }
    });
}

/// Share of the window's height (below the heading) that the plot takes, between
/// [`PLOT_MIN_HEIGHT`] and [`PLOT_MAX_HEIGHT`]; the page scrolls to the ranked table.
const PLOT_SHARE: f32 = 0.45;
/// The plot's least height in points: several labelled y ticks and room for the points, even
/// at 1280×720 in presenter mode (the page scrolls rather than squash the plot).
const PLOT_MIN_HEIGHT: f32 = 240.0;
const PLOT_MAX_HEIGHT: f32 = 360.0;
/// The least the plot gives up to on a short window: its y axis labelled at two ticks.
const PLOT_LEAST_HEIGHT: f32 = 210.0;

fn result_ui(ui: &mut egui::Ui, r: &PlannerResult, window_h: f32) {
    let plan = &r.plan;
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    let plot_h = (window_h * PLOT_SHARE).clamp(PLOT_MIN_HEIGHT, PLOT_MAX_HEIGHT);
    crate::widgets::columns(ui, 2, |cols| {
        let ui = &mut cols[0];
        ui.strong(tr("pl-plot-title"));
        let pts = |fits: bool, spans: bool| -> Vec<[f64; 2]> {
            r.by_tp
                .iter()
                .filter(|p| p.fits == fits && p.spans_nodes == spans)
                .filter_map(|p| p.best.as_ref().map(|b| [p.tp as f64, b.tokens_per_s]))
                .collect()
        };
        let line: Vec<[f64; 2]> = r
            .by_tp
            .iter()
            .filter(|p| p.fits)
            .filter_map(|p| p.best.as_ref().map(|b| [p.tp as f64, b.tokens_per_s]))
            .collect();
        let node = r.gpus_per_node as f64;
        // The key above the plot, not a legend inside it: at projector sizes the plot is too
        // short for a legend that hides no point.
        let (inside, spans) = (
            egui::Color32::from_rgb(0x00, 0x9E, 0x73),
            egui::Color32::from_rgb(0xD5, 0x5E, 0x00),
        );
        let (curve, node_line) = (
            ui.visuals().weak_text_color(),
            egui::Color32::from_rgb(0x56, 0xB4, 0xE9),
        );
        plot_key(
            ui,
            &[
                (KeyMark::Dot, inside, tr("pl-plot-inside")),
                (KeyMark::Dot, spans, tr("pl-plot-spans")),
                (KeyMark::Dash, curve, tr("pl-plot-fits")),
                (KeyMark::Upright, node_line, tr("pl-plot-node")),
            ],
        );
        // Where the window shows less than that below the key (a projector's 720 lines in
        // Turkish, whose inputs take a row more), the plot gives up height down to
        // PLOT_LEAST_HEIGHT rather than push its axis label below the fold.
        let room = ui.clip_rect().bottom() - ui.cursor().top() - 4.0;
        let plot_h = plot_h.min(room.max(PLOT_LEAST_HEIGHT));
        Plot::new("tp-throughput")
            .height(plot_h)
            // From zero: a y axis from 7000 made a 2% gap look like a cliff.
            .include_y(0.0)
            .x_axis_label(tr("pl-plot-x"))
            // Labels from 14 points apart (egui_plot's 20 leaves one label on a short plot),
            // in the learner's digits.
            .custom_y_axes(vec![AxisHints::new_y()
                .label(tr("pl-plot-y"))
                .label_spacing(14.0..=24.0)
                .formatter(crate::widgets::axis_numbers(lang))])
            .label_formatter(crate::widgets::hover_numbers(
                lang,
                tr("pl-plot-x"),
                tr("pl-plot-y"),
            ))
            .allow_scroll(false)
            .show(ui, |plot| {
                plot.line(Line::new(tr("pl-plot-fits"), PlotPoints::from(line)).color(curve));
                plot.points(
                    Points::new(tr("pl-plot-inside"), PlotPoints::from(pts(true, false)))
                        .radius(5.0)
                        .color(inside),
                );
                plot.points(
                    Points::new(tr("pl-plot-spans"), PlotPoints::from(pts(true, true)))
                        .radius(5.0)
                        .color(spans),
                );
                plot.vline(VLine::new(tr("pl-plot-node"), node).color(node_line));
            });
        // The reasons in full beside the plot (the page scrolls, not a box inside it); the
        // set-aside layouts in body text and colour, as readable as the rest.
        // Plain top-down layout: the columns' default justification stretches the wrapped
        // lines' word spacing.
        let layout = egui::Layout::top_down(egui::Align::Min);
        cols[1].with_layout(layout, |ui| {
            ui.strong(tr("pl-why"));
            for f in &plan.findings {
                ui.label(format!("• {}", finding_text(lang, f)));
            }
            ui.label(crate::i18n::t_args(
                lang,
                "pl-fit-count",
                &[
                    ("fit", plan.ranked.len().to_string()),
                    ("dropped", plan.dropped.len().to_string()),
                ],
            ));
            for d in plan.dropped.iter().take(3) {
                let reason = match (&d.shortfall, &d.shape) {
                    (Some(s), _) => shortfall_text(lang, s),
                    (None, Some(e)) => layout_error_text(lang, e),
                    (None, None) => d.reason.clone(),
                };
                // The search drops a layout at several interleaving depths: `v=` tells them apart.
                let label = planner::label_at_depth(
                    &crate::widgets::words::layout_label(lang, &d.layout),
                    d.virtual_stages,
                );
                ui.label(format!("{label}: {reason}"));
            }
        });
    });
    ui.separator();
    // What the layout column's short words stand for (outside the table's sideways scroll, so
    // that it wraps to the screen).
    // (A phone's page scrolls sideways: wrapped to the screen, not to the widest row.)
    let w = ui.available_width().min(
        ui.ctx().content_rect().width()
            - 2.0 * ui.spacing().window_margin.sum().x
            - ui.spacing().scroll.allocated_width(),
    );
    ui.scope(|ui| {
        ui.set_max_width(w.max(120.0));
        ui.weak(crate::i18n::t(lang, "pl-layout-key"));
    });
    ranked_ui(ui, r);
}

/// The ranked layouts (scrolling sideways: at projector sizes a row is wider than the window;
/// the page scrolls down), then the winner's what-if table.
fn ranked_ui(ui: &mut egui::Ui, r: &PlannerResult) {
    let lang = crate::widgets::lang(ui);
    let tr = |id: &str| crate::i18n::t(lang, id);
    let compact = ui.available_width() < COMPACT_TABLE_WIDTH;
    egui::ScrollArea::horizontal()
        .id_salt("pl-ranked-scroll")
        .show(ui, |ui| {
            let gap = table_gap(ui, compact);
            egui::Grid::new("ranked")
                .striped(true)
                .spacing(gap)
                .show(ui, |ui| {
                    ui.strong("#");
                    // Every layout has the view's ZeRO stage: said once in the header, not per row.
                    let zero = r.plan.ranked.first().map(|it| it.layout.zero);
                    let same_zero =
                        zero.filter(|z| r.plan.ranked.iter().all(|it| it.layout.zero == *z));
                    match same_zero {
                        Some(z) => ui.strong(crate::i18n::t_args(
                            lang,
                            "pl-col-layout-zero",
                            &[("zero", z.to_string())],
                        )),
                        None => ui.strong(tr("pl-col-layout")),
                    };
                    for h in [
                        "pl-col-iteration",
                        "pl-col-compute",
                        "pl-col-tp",
                        "pl-col-bubble",
                        "pl-col-dp",
                        "pl-col-tokens",
                        "pl-col-tflops",
                        "pl-col-mfu",
                        "pl-col-memory",
                    ] {
                        if compact && h == "pl-col-memory" {
                            ui.strong(tr("pl-col-memory-short"));
                        } else if !(compact && COMPACT_LEAVES_OUT.contains(&h)) {
                            ui.strong(tr(h));
                        }
                    }
                    ui.end_row();
                    for (i, it) in r.plan.ranked.iter().take(SHOWN_LAYOUTS).enumerate() {
                        ui.label((i + 1).to_string());
                        let mut label = crate::widgets::words::layout_label(lang, &it.layout);
                        if let Some(z) = same_zero.filter(|z| *z > 0) {
                            let suffix = format!(" ZeRO-{z}");
                            if let Some(short) = label.strip_suffix(&suffix) {
                                label = short.to_string();
                            }
                        }
                        if it.tp_spans_nodes {
                            label.push(' ');
                            label.push_str(&tr("pl-spans-nodes"));
                        }
                        ui.label(label);
                        ui.label(num(lang, it.iteration_time_s, 3));
                        let share =
                            |s: f64| format!("{:.0}%", 100.0 * s / it.iteration_time_s.max(1e-12));
                        if !compact {
                            ui.label(share(it.compute_s));
                        }
                        for s in [it.tp_comm_s, it.pipeline_bubble_s, it.dp_comm_s] {
                            ui.label(share(s));
                        }
                        ui.label(num(lang, it.tokens_per_s, 0));
                        if !compact {
                            ui.label(format!("{:.0}", it.tflops_per_gpu));
                        }
                        ui.label(format!("{:.0}%", 100.0 * it.mfu));
                        ui.label(bytes(lang, it.memory.total_bytes));
                        ui.end_row();
                    }
                });
            ui.add_space(8.0);
            what_if_ui(ui, &r.what_if);
        });
}

/// A table's cell spacing: narrow, the columns closer together (the rows' stripes keep them
/// apart).
pub fn table_gap(ui: &egui::Ui, compact: bool) -> egui::Vec2 {
    let x = if compact {
        4.0
    } else {
        ui.spacing().item_spacing.x
    };
    egui::vec2(x, ui.spacing().item_spacing.y)
}

/// Columns the compact table leaves out (the others add up to them: compute is what remains of
/// the iteration; TFLOP/s per GPU is MFU times the GPU's peak).
const COMPACT_LEAVES_OUT: [&str; 2] = ["pl-col-compute", "pl-col-tflops"];

/// Why a layout does not fit, in the learner's language (English: the engine's sentence).
fn shortfall_text(lang: Lang, s: &planner::Shortfall) -> String {
    let b = |x: u64| bytes(lang, x);
    crate::i18n::t_args(
        lang,
        "pl-shortfall",
        &[
            ("needs", b(s.needs_bytes)),
            ("weights", b(s.weights_bytes)),
            ("gradients", b(s.gradients_bytes)),
            ("optimizer", b(s.optimizer_bytes)),
            ("activations", b(s.activations_bytes)),
            ("usable", b(s.usable_bytes)),
        ],
    )
}

/// `[("tp", tp.to_string()), ...]`: Fluent arguments named as the fields they come from.
macro_rules! args {
    ($($field:ident),* $(,)?) => {
        vec![$((stringify!($field), $field.to_string())),*]
    };
}

/// Why a `config.json` cannot be used, in the learner's language: the rule and the fix. English
/// is the engine's sentence, except where that names command-line flags.
pub fn model_error_text(lang: Lang, e: &ModelError) -> String {
    // The importer's short English phrases ("attention heads", "a directory"), in the learner's
    // words.
    let phrase = |p: &str| {
        let id = format!(
            "pl-me-phrase-{}",
            p.to_lowercase().replace([' ', '(', ')'], "-")
        );
        match crate::i18n::t(lang, &id) {
            found if found != id => found,
            _ => p.to_string(),
        }
    };
    let (id, args) = match e {
        ModelError::Json { message } => ("pl-me-json", args!(message)),
        ModelError::NotAnObject => ("pl-me-not-object", vec![]),
        ModelError::MissingKey { key, hint } => {
            let hint = phrase(hint);
            ("pl-me-missing", args!(key, hint))
        }
        ModelError::BadValue { key, expected, got } => {
            let expected = phrase(expected);
            ("pl-me-bad-value", args!(key, expected, got))
        }
        ModelError::Zero { field } => ("pl-me-zero", args!(field)),
        ModelError::OverLimit { field, value, max } => {
            ("pl-me-over-limit", args!(field, value, max))
        }
        ModelError::TooManyParams { params, limit } => ("pl-me-too-many", args!(params, limit)),
        ModelError::HiddenNotDivisibleByHeads { hidden, heads } => {
            ("pl-me-hidden-heads", args!(hidden, heads))
        }
        ModelError::HeadsNotDivisibleByKvHeads { heads, kv_heads } => {
            ("pl-me-kv-heads", args!(heads, kv_heads))
        }
        ModelError::BadExpertsPerToken { per_token, experts } => {
            ("pl-me-experts", args!(per_token, experts))
        }
        ModelError::File(f) => match f {
            InputFileError::NotFound { path } => ("pl-fe-not-found", args!(path)),
            InputFileError::NotAFile { path, kind, what } => {
                let kind = phrase(kind);
                ("pl-fe-not-file", args!(path, kind, what))
            }
            InputFileError::TooLarge {
                path,
                size,
                limit,
                what,
            } => ("pl-fe-too-large", args!(path, size, limit, what)),
            InputFileError::NotText { path } => ("pl-fe-not-text", args!(path)),
            InputFileError::Io { path, message } => ("pl-fe-io", args!(path, message)),
            other => return other.to_string(),
        },
        other => return other.to_string(),
    };
    crate::i18n::t_args(lang, id, &args)
}

/// The planner's finding in the learner's language (English: the same words as the engine's
/// sentence, which `tplab plan` prints).
fn finding_text(lang: Lang, f: &planner::Finding) -> String {
    use planner::{Finding, Reason};
    let s3 = |x: f64| num_text(lang, &format!("{x:.3}"));
    let hb = |x: u64| bytes(lang, x);
    let t = |id: &str, args: &[(&str, String)]| crate::i18n::t_args(lang, id, args);
    match f {
        Finding::NoFit {
            usable_bytes,
            closest,
            needs_bytes,
        } => t(
            "pl-f-nofit",
            &[
                ("usable", hb(*usable_bytes)),
                ("closest", closest.clone()),
                ("needs", hb(*needs_bytes)),
            ],
        ),
        Finding::NoShape => t("pl-f-noshape", &[]),
        Finding::Beats {
            winner,
            other,
            percent,
            reason,
            trade,
        } => {
            let two = |w: f64, o: f64| vec![("w", s3(w)), ("o", s3(o))];
            // What the winner gives back elsewhere, appended to the reason.
            let trade = trade.map(|tr| {
                let term = match tr.term {
                    planner::Term::Compute => "pl-term-compute",
                    planner::Term::TpComm => "pl-term-tp",
                    planner::Term::Bubble => "pl-term-bubble",
                    planner::Term::DpComm => "pl-term-dp",
                    planner::Term::PpSends => "pl-term-pp",
                    planner::Term::Optimizer => "pl-term-optimizer",
                };
                let mut a = two(tr.winner_s, tr.other_s);
                a.push(("term", t(term, &[])));
                t("pl-trade", &a)
            });
            let reason = match reason {
                Reason::Tie => t("pl-r-tie", &[]),
                Reason::TpInsideNode {
                    intra,
                    other_tp,
                    inter,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("intra", intra.clone()),
                        ("other_tp", other_tp.to_string()),
                        ("inter", inter.clone()),
                    ]);
                    t("pl-r-tp-inside", &a)
                }
                Reason::TpLess {
                    winner_s,
                    other_s,
                    winner_tp,
                    other_tp,
                    other_full_recompute,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("wtp", winner_tp.to_string()),
                        ("otp", other_tp.to_string()),
                    ]);
                    let id = if *other_full_recompute {
                        "pl-r-tp-less-full"
                    } else {
                        "pl-r-tp-less"
                    };
                    t(id, &a)
                }
                Reason::Bubble {
                    winner_fraction,
                    other_fraction,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([("wf", s3(*winner_fraction)), ("of", s3(*other_fraction))]);
                    t("pl-r-bubble", &a)
                }
                Reason::DpInsideNode { winner_s, other_s } => {
                    t("pl-r-dp-inside", &two(*winner_s, *other_s))
                }
                Reason::DpHides {
                    winner_micro_batch,
                    other_micro_batch,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("wmb", winner_micro_batch.to_string()),
                        ("omb", other_micro_batch.to_string()),
                    ]);
                    t("pl-r-dp-hides", &a)
                }
                Reason::DpCheaper {
                    winner_s,
                    other_s,
                    winner_grad_bytes,
                    other_grad_bytes,
                    winner_dp,
                    other_dp,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("wb", hb(*winner_grad_bytes)),
                        ("ob", hb(*other_grad_bytes)),
                        ("wdp", winner_dp.to_string()),
                        ("odp", other_dp.to_string()),
                    ]);
                    t("pl-r-dp-cheaper", &a)
                }
                Reason::PipelineSends { winner_s, other_s } => {
                    t("pl-r-pp", &two(*winner_s, *other_s))
                }
                Reason::Optimizer { winner_s, other_s } => {
                    t("pl-r-optimizer", &two(*winner_s, *other_s))
                }
                Reason::Logits {
                    winner_micro_batches,
                    other_micro_batches,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    a.extend([
                        ("wm", winner_micro_batches.to_string()),
                        ("om", other_micro_batches.to_string()),
                    ]);
                    t("pl-r-logits", &a)
                }
                Reason::Recompute {
                    winner,
                    other,
                    winner_s,
                    other_s,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    // The recomputation's name in the learner's language.
                    let name = |n: &str| {
                        let id = format!("recompute-name-{n}");
                        let words = crate::i18n::t(lang, &id);
                        if words == id {
                            n.to_string()
                        } else {
                            words
                        }
                    };
                    a.extend([("wr", name(winner)), ("or", name(other))]);
                    t("pl-r-recompute", &a)
                }
                Reason::Gemm {
                    winner_s,
                    other_s,
                    micro_batches,
                } => {
                    let mut a = two(*winner_s, *other_s);
                    match micro_batches {
                        Some((w, o)) => {
                            a.extend([("wmb", w.to_string()), ("omb", o.to_string())]);
                            t("pl-r-gemm-mb", &a)
                        }
                        None => t("pl-r-gemm", &a),
                    }
                }
            };
            // A tie is no win: the pair within the model's accuracy, the simpler listed first.
            let tie = matches!(
                f,
                Finding::Beats {
                    reason: Reason::Tie,
                    ..
                }
            );
            t(
                if tie { "pl-f-tie" } else { "pl-f-beats" },
                &[
                    ("winner", crate::widgets::words::layout_text(lang, winner)),
                    ("other", crate::widgets::words::layout_text(lang, other)),
                    ("percent", num_text(lang, &format!("{:.1}", percent.abs()))),
                    ("reason", format!("{reason}{}", trade.unwrap_or_default())),
                ],
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use planner::{Finding, Reason};
    use tplab_engine::capacity::memory::LayoutError;

    /// One finding of every kind, with distinct values so a swapped argument shows.
    fn every_finding() -> Vec<Finding> {
        let (w, o) = (1.25, 2.5);
        let reasons = vec![
            Reason::Tie,
            Reason::TpInsideNode {
                intra: "nvlink4".into(),
                other_tp: 16,
                inter: "ib400".into(),
                winner_s: w,
                other_s: o,
            },
            Reason::TpLess {
                winner_s: w,
                other_s: o,
                winner_tp: 4,
                other_tp: 8,
                other_full_recompute: false,
            },
            Reason::TpLess {
                winner_s: w,
                other_s: o,
                winner_tp: 4,
                other_tp: 8,
                other_full_recompute: true,
            },
            Reason::Bubble {
                winner_fraction: 0.125,
                other_fraction: 0.375,
                winner_s: w,
                other_s: o,
            },
            Reason::DpInsideNode {
                winner_s: w,
                other_s: o,
            },
            Reason::DpHides {
                winner_micro_batch: 1,
                other_micro_batch: 2,
                winner_s: w,
                other_s: o,
            },
            Reason::DpCheaper {
                winner_s: w,
                other_s: o,
                winner_grad_bytes: 3 << 30,
                other_grad_bytes: 6 << 30,
                winner_dp: 2,
                other_dp: 4,
            },
            Reason::PipelineSends {
                winner_s: w,
                other_s: o,
            },
            Reason::Optimizer {
                winner_s: w,
                other_s: o,
            },
            Reason::Logits {
                winner_micro_batches: 16,
                other_micro_batches: 32,
                winner_s: w,
                other_s: o,
            },
            Reason::Recompute {
                winner: "selective".into(),
                other: "full".into(),
                winner_s: w,
                other_s: o,
            },
            Reason::Gemm {
                winner_s: w,
                other_s: o,
                micro_batches: None,
            },
            Reason::Gemm {
                winner_s: w,
                other_s: o,
                micro_batches: Some((1, 2)),
            },
        ];
        let mut all: Vec<Finding> = reasons
            .into_iter()
            .map(|reason| Finding::Beats {
                winner: "TP=4 PP=2 DP=1".into(),
                other: "TP=8 PP=1 DP=1".into(),
                percent: 12.34,
                reason,
                trade: None,
            })
            .collect();
        // Each term a trade can name, once.
        for term in [
            planner::Term::Compute,
            planner::Term::TpComm,
            planner::Term::Bubble,
            planner::Term::DpComm,
            planner::Term::PpSends,
            planner::Term::Optimizer,
        ] {
            all.push(Finding::Beats {
                winner: "TP=4 PP=2 DP=1".into(),
                other: "TP=8 PP=1 DP=1".into(),
                percent: 12.34,
                reason: Reason::TpLess {
                    winner_s: 4.087,
                    other_s: 10.052,
                    winner_tp: 4,
                    other_tp: 8,
                    other_full_recompute: false,
                },
                trade: Some(planner::Trade {
                    term,
                    winner_s: 7.5,
                    other_s: 2.25,
                }),
            });
        }
        all.push(Finding::NoFit {
            usable_bytes: 67 << 30,
            closest: "TP=8 PP=1 DP=1".into(),
            needs_bytes: 90 << 30,
        });
        all.push(Finding::NoShape);
        all
    }

    #[test]
    fn a_shortfall_reads_the_same_in_the_app_and_the_cli_and_exists_in_turkish() {
        let s = planner::Shortfall {
            needs_bytes: 90 << 30,
            weights_bytes: 10 << 30,
            gradients_bytes: 20 << 30,
            optimizer_bytes: 40 << 30,
            activations_bytes: 20 << 30,
            usable_bytes: 67 << 30,
        };
        assert_eq!(shortfall_text(Lang::En, &s), s.to_string());
        let tr = shortfall_text(Lang::Tr, &s);
        // Turkish writes the decimal comma (this assertion read "90.0 GiB" before the view's
        // numbers went through `num_text`).
        assert!(tr.starts_with("GPU başına 90,0 GiB"), "{tr}");
        assert!(tr.contains("67,0 GiB"), "{tr}");
    }

    /// `text` of `x` in English is `x`'s Display (the CLI's words); in Turkish it differs and is
    /// no bare Fluent id. Returns the Turkish.
    fn both_languages<T: std::fmt::Display>(text: fn(Lang, &T) -> String, x: &T) -> String {
        assert_eq!(text(Lang::En, x), x.to_string());
        let tr = text(Lang::Tr, x);
        assert_ne!(tr, x.to_string());
        assert!(!tr.contains("pl-"), "{tr}");
        tr
    }

    /// One shape error of every kind, with distinct numbers so a swapped argument shows.
    fn every_layout_error() -> Vec<LayoutError> {
        vec![
            LayoutError::Zero { field: "pp" },
            LayoutError::HeadsNotDivisible {
                tp: 3,
                heads: 32,
                valid: vec![1, 2, 4, 8],
            },
            LayoutError::KvHeadsNotDivisible {
                tp: 16,
                kv_heads: 8,
                valid: vec![1, 2, 4, 8],
            },
            LayoutError::FfnNotDivisible { tp: 7, ffn: 14336 },
            LayoutError::LayersNotDivisible { pp: 5, layers: 96 },
            LayoutError::BatchNotDivisible {
                global_batch: 512,
                micro_batch: 3,
                dp: 7,
            },
            LayoutError::GpuCountMismatch {
                tp: 8,
                pp: 4,
                dp: 3,
                needed: 96,
                gpus: 64,
            },
            LayoutError::TpLargerThanCluster { tp: 16, gpus: 8 },
            LayoutError::BadZero { zero: 5 },
            LayoutError::OverLimit {
                field: "micro_batch",
                value: 70000,
                max: 65536,
            },
            LayoutError::TooManyTokens {
                global_batch: 1 << 24,
                seq: 1 << 24,
                tokens: 1 << 48,
                max: 1 << 40,
            },
            LayoutError::BadVirtualStages {
                v: 4,
                pp: 32,
                min_stage: 3,
            },
            LayoutError::BadContextParallel { cp: 3, seq: 2047 },
            LayoutError::KvHeadsNotServable {
                tp: 3,
                kv_heads: 8,
                valid: vec![1, 2, 4, 8, 16],
            },
        ]
    }

    /// Numbers in a sentence, in order: what both languages must name.
    fn numbers(s: &str) -> Vec<String> {
        let mut v: Vec<String> = s
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        v.sort();
        v
    }

    /// A dropped layout's shape rule: English is the engine's sentence word for word (what
    /// `tplab plan` prints), for every variant; Turkish differs from it and names the same
    /// numbers.
    #[test]
    fn layout_errors_read_the_same_in_the_app_and_the_cli_and_exist_in_turkish() {
        for e in every_layout_error() {
            let tr = both_languages(layout_error_text, &e);
            // The engine's lists ("[1, 2, 4]") are words in Turkish ("1, 2 veya 4").
            assert!(!tr.contains('['), "{tr}");
            assert_eq!(numbers(&tr), numbers(&e.to_string()), "{tr} vs {e}");
        }
    }

    /// The view shows the shape rule of a dropped layout from the engine's own error: a plan
    /// where batch rules drop layouts carries them as data, each matching its sentence.
    #[test]
    fn dropped_layouts_carry_their_shape_rule() {
        let inputs = PlannerInputs {
            model: ModelPreset::Llama3_8b,
            global_batch: 96,
            ..Default::default()
        };
        for todays_stack in [false, true] {
            let r = run_planner(&PlannerInputs {
                todays_stack,
                ..inputs.clone()
            })
            .unwrap();
            let shapes: Vec<_> = r
                .plan
                .dropped
                .iter()
                .filter(|d| d.shortfall.is_none())
                .map(|d| (d, &d.shape))
                .collect();
            assert!(!shapes.is_empty(), "batch 96 on 64 GPUs drops some layouts");
            for (d, e) in shapes {
                let e = e
                    .as_ref()
                    .unwrap_or_else(|| panic!("no error for {}", d.reason));
                assert!(matches!(e, LayoutError::BatchNotDivisible { .. }), "{e}");
                assert_eq!(layout_error_text(Lang::En, e), d.reason);
                assert!(layout_error_text(Lang::Tr, e).contains("global parti 96"));
            }
        }
    }

    /// Every way a config.json can be refused: English is the engine's sentence (except the
    /// missing key's fix, which names the app's way out instead of command-line flags); Turkish
    /// differs and names the same numbers and keys.
    #[test]
    fn config_errors_exist_in_both_languages() {
        let file = |e: InputFileError| ModelError::File(e);
        let errors = vec![
            ModelError::Json {
                message: "expected value at line 1 column 2".into(),
            },
            ModelError::NotAnObject,
            ModelError::BadValue {
                key: "hidden_size".into(),
                expected: "a non-negative integer",
                got: "-1".into(),
            },
            ModelError::BadValue {
                key: "head_dim".into(),
                expected: "a positive integer",
                got: "0".into(),
            },
            ModelError::Zero { field: "layers" },
            ModelError::OverLimit {
                field: "hidden",
                value: 2_000_000,
                max: 1 << 20,
            },
            ModelError::TooManyParams {
                params: "2.0e15".into(),
                limit: 1_000_000_000_000_000,
            },
            ModelError::HiddenNotDivisibleByHeads {
                hidden: 4097,
                heads: 32,
            },
            ModelError::HeadsNotDivisibleByKvHeads {
                heads: 32,
                kv_heads: 5,
            },
            ModelError::BadExpertsPerToken {
                per_token: 9,
                experts: 8,
            },
            file(InputFileError::NotFound {
                path: "/tmp/x.json".into(),
            }),
            file(InputFileError::NotAFile {
                path: "/tmp".into(),
                kind: "a directory",
                what: "config.json",
            }),
            file(InputFileError::TooLarge {
                path: "big.json".into(),
                size: 2_000_000,
                limit: 1 << 20,
                what: "config.json",
            }),
            file(InputFileError::NotText {
                path: "w.bin".into(),
            }),
            file(InputFileError::Io {
                path: "c.json".into(),
                message: "permission denied".into(),
            }),
        ];
        for e in &errors {
            let tr = both_languages(model_error_text, e);
            assert_eq!(numbers(&tr), numbers(&e.to_string()), "{tr} vs {e}");
        }
        let missing = ModelError::MissingKey {
            key: "num_hidden_layers".into(),
            hint: "number of transformer blocks",
        };
        let en = model_error_text(Lang::En, &missing);
        assert!(
            en.starts_with(
                "config.json has no 'num_hidden_layers' key (number of transformer blocks); add it"
            ),
            "{en}"
        );
        assert!(!en.contains("--layers"), "{en}");
        let tr = model_error_text(Lang::Tr, &missing);
        assert!(tr.contains("'num_hidden_layers'") && tr.contains("transformer bloğu sayısı"));
    }

    /// The view's English is the engine's sentence word for word (what `tplab plan` prints), for
    /// every kind of finding; the Turkish differs from it and names the same numbers.
    #[test]
    fn findings_read_the_same_in_the_app_and_the_cli_and_exist_in_turkish() {
        for f in every_finding() {
            let tr = both_languages(finding_text, &f);
            if let Finding::Beats { trade, .. } = &f {
                // "12,3": Turkish writes the decimal comma (this read "12.3" before `num_text`).
                for n in ["12,3", "TP=4 PP=2 DP=1", "TP=8 PP=1 DP=1"] {
                    assert!(tr.contains(n), "{tr} lacks {n}");
                }
                // A trade names its two times too.
                if trade.is_some() {
                    for n in ["7,500", "2,250"] {
                        assert!(tr.contains(n), "{tr} lacks {n}");
                    }
                }
            }
        }
    }
}
