//! Time on a Gantt chart (the Timeline, the GPU view's measured times, the pipeline and serving
//! plots' colours and keys).

use crate::i18n::{t, t_args};
use crate::widgets::{gpu_color, keep_on_one_row, text_on};
use egui_plot::{Bar, BarChart, Legend, Plot, PlotPoint, Text, VLine};
use tplab_engine::block::op::Pass;
use tplab_engine::trace::{Event, TimeSource, Trace};
use tplab_lessons::Lang;

/// [`time_source_note`] in the learner's language.
pub fn time_source_text(lang: Lang, source: TimeSource) -> String {
    t(
        lang,
        match source {
            TimeSource::Proportional => "tl-source-proportional",
            TimeSource::CostModel => "tl-source-model",
            TimeSource::Measured => "tl-source-measured",
        },
    )
}

/// Grey of the communication bars.
pub fn comm_color(dark: bool) -> egui::Color32 {
    egui::Color32::from_gray(if dark { 170 } else { 90 })
}

/// Draws `events` as a Gantt chart: one bar chart per GPU in its colour (so the legend's
/// colours are the bars'), communication in grey, each bar named on hover with its start and
/// duration in µs, op names written on the bars wide enough for them, and a line where the
/// backward pass begins.
pub fn gantt_plot(
    ui: &mut egui::Ui,
    lang: Lang,
    id: &str,
    trace: &Trace,
    events: &[&Event],
    height: Option<f32>,
    x_max_us: Option<f64>,
) {
    let dark = ui.visuals().dark_mode;
    let separator = ui.visuals().extreme_bg_color;
    let tp = trace.config.tp.max(1);
    let mut per_rank: Vec<Vec<Bar>> = vec![Vec::new(); tp];
    let mut comm = Vec::new();
    let mut labels: Vec<(f64, f64, f64, String, egui::Color32)> = Vec::new();
    for e in events {
        if e.timing.duration_s <= 0.0 {
            continue; // identity f/g: nothing to draw
        }
        let (start, dur) = (e.timing.start_s * 1e6, e.timing.duration_s * 1e6);
        // The op in words ("g after attention"), not its trace name (`attn.g`).
        let op = super::op_label(lang, e.op);
        let hover_name = format!("{op} ({})", super::pass_name(lang, e.pass));
        for &r in &e.ranks {
            let y = (tp - 1 - r) as f64;
            // A 1-pixel outline in the plot's background colour: consecutive ops of one colour
            // (ln1, qkv, core, out) read as separate blocks, not one bar under the first name.
            let bar = Bar::new(y, dur)
                .base_offset(start)
                .width(0.7)
                .stroke(egui::Stroke::new(1.0, separator))
                .name(&hover_name);
            let fill = if e.is_collective() {
                comm_color(dark)
            } else {
                gpu_color(r, dark)
            };
            labels.push((start + dur / 2.0, y, dur, op.clone(), text_on(fill)));
            if e.is_collective() {
                comm.push(bar.fill(fill));
            } else if let Some(v) = per_rank.get_mut(r) {
                v.push(bar.fill(fill));
            }
        }
    }
    let makespan_us = events
        .iter()
        .map(|e| (e.timing.start_s + e.timing.duration_s) * 1e6)
        .fold(0.0, f64::max);
    let backward_starts = events
        .iter()
        .filter(|e| e.pass == Pass::Backward)
        .map(|e| e.timing.start_s * 1e6)
        .fold(f64::INFINITY, f64::min);
    let hover = |lang: Lang| {
        move |b: &Bar, _: &BarChart| {
            let start = b.base_offset.unwrap_or(0.0);
            t_args(
                lang,
                "tl-bar-hover",
                &[
                    ("name", b.name.clone()),
                    ("start", crate::i18n::num(lang, start, 2)),
                    ("duration", crate::i18n::num(lang, b.value, 2)),
                    ("end", crate::i18n::num(lang, start + b.value, 2)),
                ],
            )
        }
    };
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    // The time axis ends with the data; the legend (one entry per GPU, communication, the
    // backward marker) gets an empty band above the top GPU's row instead of empty time.
    let plot_h = height.unwrap_or_else(|| ui.available_height()).max(120.0);
    let legend_px = (tp + 2) as f32 * (size + 6.0) + 12.0;
    let rows = tp as f64;
    // The time axis (ticks and its name) takes about three lines of the plot's height.
    let data_h = plot_h - 3.0 * size;
    // Where the legend (a line per GPU) would not fit beside the rows (TP 12 on a projector), it
    // gives way to a key above the plot: each row is named on the axis, and its bars wear its
    // GPU's colour.
    // (The legend's band above the rows squeezes them: past 40% of the plot's height the rows
    // would be slivers, as in a side-by-side pair on a projector.)
    let legend_fits = legend_px < 0.4 * data_h;
    let band = if legend_fits {
        rows * f64::from(legend_px) / f64::from(data_h - legend_px)
    } else {
        0.0
    };
    let key_top = ui.cursor().top();
    if !legend_fits {
        plot_key(
            ui,
            &[
                (
                    KeyMark::Dot,
                    gpu_color(0, dark),
                    t(lang, "tl-compute-own-colour"),
                ),
                (KeyMark::Dot, comm_color(dark), t(lang, "tl-communication")),
                (
                    KeyMark::Dash,
                    ui_strong(dark),
                    t(lang, "tl-backward-begins"),
                ),
            ],
        );
    }
    let mut plot = Plot::new(id.to_string())
        .x_axis_label(t(lang, "tl-axis-time"))
        .x_axis_formatter(super::axis_numbers(lang))
        .label_formatter(super::hover_numbers(
            lang,
            t(lang, "tl-axis-time"),
            String::new(),
        ))
        // Every row named where rows are at least 10 points apart (egui_plot's default spacing
        // left two names of twelve rows on a projector).
        .custom_y_axes(vec![egui_plot::AxisHints::new_y()
            .label_spacing(10.0..=16.0)
            .formatter(move |mark, _| {
                let v = mark.value.round();
                if (mark.value - v).abs() < 1e-6 && v >= 0.0 && (v as usize) < tp {
                    format!("GPU {}", tp - 1 - v as usize)
                } else {
                    String::new()
                }
            })])
        .include_x(0.0)
        .include_x(x_max_us.unwrap_or(makespan_us).max(makespan_us))
        .include_y(-0.5)
        .include_y(rows - 0.5 + band)
        .set_margin_fraction(egui::Vec2::new(0.03, 0.0))
        .allow_scroll(false);
    if let Some(h) = height {
        // The key's line comes out of the height the caller gave the plot.
        let key_h = ui.cursor().top() - key_top;
        plot = plot.height((h - key_h).max(120.0));
    }
    if legend_fits {
        plot = plot.legend(Legend::default().follow_insertion_order(true));
    }
    let compute_name = t(lang, "tl-compute");
    let comm_name = t(lang, "tl-communication");
    let backward_name = t(lang, "tl-backward-begins");
    plot.show(ui, |plot| {
        for (r, bars) in per_rank.into_iter().enumerate() {
            if bars.is_empty() {
                continue;
            }
            plot.bar_chart(
                BarChart::new(format!("GPU {r} {compute_name}"), bars)
                    .color(gpu_color(r, dark))
                    .horizontal()
                    .element_formatter(Box::new(hover(lang))),
            );
        }
        if !comm.is_empty() {
            plot.bar_chart(
                BarChart::new(comm_name.clone(), comm)
                    .color(comm_color(dark))
                    .horizontal()
                    .element_formatter(Box::new(hover(lang))),
            );
        }
        if backward_starts.is_finite() {
            plot.vline(
                VLine::new(backward_name.clone(), backward_starts)
                    .color(ui_strong(dark))
                    .width(2.0)
                    .style(egui_plot::LineStyle::dashed_loose()),
            );
        }
        // Names on the bars that are wide enough for them (from last frame's scale).
        let px_per_us = plot.transform().dpos_dvalue_x();
        // A bar is 0.7 of a row high: a name goes where it fits inside, across and up.
        let bar_px = 0.7 * plot.transform().dpos_dvalue_y().abs();
        let char_w = 0.55 * 0.8 * size;
        for (x, y, dur, name, ink) in labels {
            if bar_px >= f64::from(0.8 * size)
                && dur * px_per_us > (name.chars().count() as f64 + 1.0) * f64::from(char_w)
            {
                plot.text(
                    Text::new(
                        "",
                        PlotPoint::new(x, y),
                        egui::RichText::new(name).size(0.8 * size).color(ink),
                    )
                    .allow_hover(false),
                );
            }
        }
    });
}

/// One row of marks and names, wrapping: a plot's key, drawn above the plot rather than as a
/// legend inside it, where it would hide points.
pub fn plot_key(ui: &mut egui::Ui, items: &[(KeyMark, egui::Color32, String)]) {
    ui.horizontal_wrapped(|ui| {
        let font = egui::TextStyle::Body.resolve(ui.style());
        for (mark, color, name) in items {
            // Body-size names (the small size is hard to read on a projector), each kept on
            // one row with its mark.
            let h = ui.text_style_height(&egui::TextStyle::Body);
            let name_width = ui
                .painter()
                .layout_no_wrap(name.clone(), font.clone(), egui::Color32::PLACEHOLDER)
                .size()
                .x;
            keep_on_one_row(ui, h + ui.spacing().item_spacing.x + name_width);
            let (rect, _) = ui.allocate_exact_size(egui::vec2(h, h), egui::Sense::hover());
            let p = ui.painter();
            let stroke = egui::Stroke::new(2.0, *color);
            match mark {
                KeyMark::Dot => {
                    p.circle_filled(rect.center(), h * 0.35, *color);
                }
                KeyMark::Dash => {
                    p.line_segment([rect.left_center(), rect.right_center()], stroke);
                }
                KeyMark::Upright => {
                    p.line_segment([rect.center_top(), rect.center_bottom()], stroke);
                }
            }
            ui.add(egui::Label::new(name.as_str()).extend());
            ui.add_space(6.0);
        }
    });
}

/// How a series of a plot is drawn, for its key (also the Serve view's).
#[derive(Clone, Copy)]
pub enum KeyMark {
    Dot,
    Dash,
    Upright,
}

/// The strongest text colour of the theme (lines drawn over the bars).
fn ui_strong(dark: bool) -> egui::Color32 {
    if dark {
        egui::Color32::WHITE
    } else {
        egui::Color32::BLACK
    }
}
