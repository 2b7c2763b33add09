//! Memory: per-GPU stacked bars of weights, gradients, optimizer states and activations for
//! every valid TP size of the scenario, with the unsharded total for comparison. The numbers
//! are the engine's ([`memory::config_memory_by_tp`]).

use crate::i18n::{t, t_args, t_count};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use egui_plot::{AxisHints, Bar, BarChart, HLine, Legend, Plot};
use serde::{Deserialize, Serialize};
use tplab_engine::capacity::memory::{self, ConfigMemory};

/// The stacked terms, bottom to top, with their colours (Okabe–Ito).
const TERMS: [(&str, egui::Color32); 4] = [
    ("mem-weights", egui::Color32::from_rgb(0x00, 0x72, 0xB2)),
    ("mem-gradients", egui::Color32::from_rgb(0xE6, 0x9F, 0x00)),
    ("mem-optimizer", egui::Color32::from_rgb(0xCC, 0x79, 0xA7)),
    ("mem-activations", egui::Color32::from_rgb(0x00, 0x9E, 0x73)),
];

fn term_bytes(m: &ConfigMemory, i: usize) -> u64 {
    match i {
        0 => m.weights_bytes_per_rank,
        1 => m.gradients_bytes_per_rank,
        2 => m.optimizer_bytes_per_rank,
        _ => m.activations_bytes_per_rank,
    }
}

/// Memory view state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Memory {
    #[serde(skip)]
    cache: Option<(u64, Vec<ConfigMemory>)>,
}

impl View for Memory {
    fn id(&self) -> &'static str {
        "memory"
    }

    fn title(&self) -> &'static str {
        "Memory"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, t(lang, "mem-title"));
        // The window's height, before the page scrolls: the plot's height follows it.
        let window_h = ui.available_height();
        // The page scrolls (the plot keeps a readable height at 1280×720 presenter).
        crate::widgets::scrolling_page(ui, "mem-page", |ui| self.page_ui(ui, shared, window_h));
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}

/// The plot's least height in points: several labelled y ticks, even at 1280×720 in presenter
/// mode (the page scrolls rather than squash the plot).
const PLOT_MIN_HEIGHT: f32 = 240.0;

impl Memory {
    /// The view below its heading (`window_h`: the window's height below the heading).
    fn page_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, window_h: f32) {
        let lang = crate::widgets::lang(ui);
        let cfg = shared.scenario.config().clone();
        if let Err(err) = cfg.validate_shapes() {
            // A TP that does not divide is fine here: every *valid* TP is drawn.
            if !matches!(
                err,
                tplab_engine::config::ConfigError::HeadsNotDivisible { .. }
                    | tplab_engine::config::ConfigError::FfnNotDivisible { .. }
            ) {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    t_args(
                        lang,
                        "invalid-choice",
                        &[("error", crate::widgets::config_error_text(lang, &err))],
                    ),
                );
                return;
            }
        }
        let generation = shared.scenario.generation();
        if self.cache.as_ref().is_none_or(|(g, _)| *g != generation) {
            self.cache = Some((generation, memory::config_memory_by_tp(&cfg)));
        }
        let Some((_, rows)) = &self.cache else { return };
        let Some(unsharded_bytes) = rows.first().map(|r| r.unsharded_total_bytes) else {
            return;
        };
        ui.label(t_count(
            lang,
            "mem-intro",
            ("layers", cfg.layers as u64),
            &[("dtype", cfg.dtype.to_string())],
        ));
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let mut charts: Vec<BarChart> = Vec::new();
        for (i, (name, color)) in TERMS.iter().enumerate() {
            let bars = rows
                .iter()
                .enumerate()
                .map(|(x, r)| {
                    // Solid fills: egui_plot's default (a fifth of the colour) left the stack
                    // near-black on the dark theme, its terms hard to tell apart on a projector.
                    Bar::new(x as f64, mib(term_bytes(r, i)))
                        .width(0.6)
                        .fill(color.gamma_multiply(0.85))
                        .stroke(egui::Stroke::new(1.0, *color))
                        .name(format!("TP={}", r.tp))
                })
                .collect();
            let below: Vec<&BarChart> = charts.iter().collect();
            let chart = BarChart::new(t(lang, name), bars)
                .color(*color)
                .stack_on(&below);
            charts.push(chart);
        }
        let tps: Vec<usize> = rows.iter().map(|r| r.tp).collect();
        let current = cfg.tp;
        let line_color = ui.visuals().strong_text_color();
        let now = t(lang, "mem-now");
        Plot::new("memory")
            // The legend in the stack's order, top to bottom (weights last, as drawn at the
            // bottom), the same in every language: not alphabetical.
            .legend(Legend::default().follow_insertion_order(true))
            .height((window_h * 0.55).max(PLOT_MIN_HEIGHT))
            // Labels from 14 points apart (egui_plot's default leaves two on a short plot), in
            // the learner's digits.
            .custom_y_axes(vec![AxisHints::new_y()
                .label(t(lang, "mem-axis"))
                .label_spacing(14.0..=24.0)
                .formatter(crate::widgets::axis_numbers(lang))])
            // Each bar names its term and size on hover; the pointer's coordinates (a bar's index)
            // would say nothing.
            .label_formatter(|_| None)
            .x_axis_formatter(move |mark, _| {
                let i = mark.value.round();
                if (mark.value - i).abs() > 1e-6 || i < 0.0 {
                    return String::new();
                }
                tps.get(i as usize)
                    .map(|t| {
                        if *t == current {
                            format!("TP={t} ({now})")
                        } else {
                            format!("TP={t}")
                        }
                    })
                    .unwrap_or_default()
            })
            .allow_scroll(false)
            .show(ui, |plot| {
                // Added top to bottom, for the legend: the unsharded line above the stack, then
                // the stack from activations down to weights.
                plot.hline(
                    HLine::new(t(lang, "mem-unsharded"), mib(unsharded_bytes)).color(line_color),
                );
                for c in charts.into_iter().rev() {
                    plot.bar_chart(c);
                }
            });
        egui::ScrollArea::horizontal().show(ui, |ui| {
            egui::Grid::new("memory-table")
                .striped(true)
                .show(ui, |ui| {
                    ui.strong("TP");
                    for (h, _) in TERMS {
                        ui.strong(t(lang, h));
                    }
                    ui.strong(t(lang, "mem-total"));
                    ui.strong(t(lang, "mem-vs-unsharded"));
                    ui.end_row();
                    for r in rows {
                        ui.label(r.tp.to_string());
                        for i in 0..TERMS.len() {
                            ui.label(crate::i18n::bytes(lang, term_bytes(r, i)));
                        }
                        ui.label(crate::i18n::bytes(lang, r.total_bytes_per_rank));
                        ui.label(t_args(
                            lang,
                            "mem-percent",
                            &[(
                                "percent",
                                crate::i18n::num(
                                    lang,
                                    100.0 * r.total_bytes_per_rank as f64
                                        / unsharded_bytes.max(1) as f64,
                                    0,
                                ),
                            )],
                        ));
                        ui.end_row();
                    }
                });
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::i18n::t_count;
    use tplab_lessons::Lang;

    /// The subtitle's layer count takes Fluent's plural variant in English ("1 layer",
    /// "2 layers", never "layer(s)"); Turkish has one form.
    #[test]
    fn the_layer_count_is_singular_or_plural() {
        let intro = |lang, n| t_count(lang, "mem-intro", ("layers", n), &[("dtype", "f32".into())]);
        assert!(
            intro(Lang::En, 1).starts_with("1 layer in f32,"),
            "{}",
            intro(Lang::En, 1)
        );
        assert!(
            intro(Lang::En, 2).starts_with("2 layers in f32,"),
            "{}",
            intro(Lang::En, 2)
        );
        assert!(
            intro(Lang::Tr, 2).starts_with("f32 veri tipinde 2 katman,"),
            "{}",
            intro(Lang::Tr, 2)
        );
        assert!(!intro(Lang::En, 1).contains("layer(s)"));
    }
}
