//! Memory: per-GPU stacked bars of weights, gradients, optimizer states and activations for
//! every valid TP size of the scenario, with the unsharded total for comparison. The numbers
//! are the engine's ([`memory::config_memory_by_tp`]).

use super::{load_json, save_json, Shared, View};
use crate::i18n::{t, t_args};
use egui_plot::{Bar, BarChart, HLine, Legend, Plot};
use serde::{Deserialize, Serialize};
use tplab_engine::memory::{self, ConfigMemory};

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
        let lang = super::lang(ui);
        ui.heading(t(lang, "mem-title"));
        let cfg = shared.scenario.config().clone();
        if let Err(err) = cfg.validate_shapes() {
            // A TP that does not divide is fine here: every *valid* TP is drawn.
            if !matches!(
                err,
                tplab_engine::ConfigError::HeadsNotDivisible { .. }
                    | tplab_engine::ConfigError::FfnNotDivisible { .. }
            ) {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    t_args(
                        lang,
                        "invalid-choice",
                        &[("error", super::config_error_text(lang, &err))],
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
        ui.label(t_args(
            lang,
            "mem-intro",
            &[
                ("layers", cfg.layers.to_string()),
                ("dtype", cfg.dtype.to_string()),
            ],
        ));
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let mut charts: Vec<BarChart> = Vec::new();
        for (i, (name, color)) in TERMS.iter().enumerate() {
            let bars = rows
                .iter()
                .enumerate()
                .map(|(x, r)| {
                    Bar::new(x as f64, mib(term_bytes(r, i)))
                        .width(0.6)
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
            .legend(Legend::default())
            .height((ui.available_height() * 0.55).max(200.0))
            .y_axis_label(t(lang, "mem-axis"))
            .y_axis_formatter(super::axis_numbers(lang))
            .label_formatter(super::hover_numbers(lang))
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
                for c in charts {
                    plot.bar_chart(c);
                }
                plot.hline(
                    HLine::new(t(lang, "mem-unsharded"), mib(unsharded_bytes)).color(line_color),
                );
            });
        egui::ScrollArea::both().show(ui, |ui| {
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

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
    }
}
