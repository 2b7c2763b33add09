//! Shared drawing: colours, words for the engine's things, numbers on axes, the player's buttons,
//! the lanes, the plan banner. Stateless, or with small UI state of their own; they read the lab
//! state ([`crate::lab`]) and never a view.

pub mod beside;
pub mod class;
pub mod collective;
pub mod errors;
pub mod gantt;
pub mod lanes;
pub mod links;
pub mod plan;
pub mod predict;
pub mod verdict;
pub mod words;

/// The "›" between two ops of a chain, drawn (not a label): a screen reader reads the ops, not
/// the marks between them.
pub fn separator_mark(ui: &mut egui::Ui) {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let color = ui.visuals().weak_text_color();
    let galley = ui.painter().layout_no_wrap("›".into(), font, color);
    // At the end of a wrapping row with no room left, the line break separates: a mark that
    // would start the next line alone ("›" under "+ artık bağlantı") is left out.
    if ui.layout().main_wrap && ui.available_size_before_wrap().x < galley.size().x {
        return;
    }
    let (rect, _) = ui.allocate_exact_size(galley.size(), egui::Sense::hover());
    ui.painter().galley(rect.min, galley, color);
}

/// A screen shorter than this many points (a projector's 720 lines at presenter mode's zoom of
/// 1.6 are 450) is drawn compact: the walkthrough shows one pass and compact lanes, a lesson
/// folds its "Show me" buttons into a menu, so that what the class reads stays above the fold.
pub const SHORT_SCREEN_H: f32 = 500.0;

/// Whether the screen is shorter than [`SHORT_SCREEN_H`].
pub fn short_screen(ctx: &egui::Context) -> bool {
    ctx.content_rect().height() < SHORT_SCREEN_H
}

/// Narrower than this (points), the side bar folds into a one-row menu on top and a view's
/// page scrolls sideways where it cannot be narrower (a phone).
pub const NARROW_WIDTH: f32 = 600.0;

/// A table that may be wider than a phone: on a narrow screen it scrolls sideways on its own, so
/// that it does not widen the page and the text after it still wraps to the screen.
pub fn sideways<R>(ui: &mut egui::Ui, id_salt: &str, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    if ui.ctx().content_rect().width() < NARROW_WIDTH {
        egui::ScrollArea::horizontal()
            .id_salt(id_salt)
            .show(ui, add)
            .inner
    } else {
        add(ui)
    }
}

use crate::i18n::{t, t_args};
use crate::lab::{Derived, Scenario};
use tplab_engine::config::{Config, ConfigError};
use tplab_lessons::Lang;

/// `text` as a wrapped label, its `backtick` spans (commands, file names) in the monospace font
/// on the code background, without the backticks.
pub fn code_label(ui: &mut egui::Ui, text: &str, color: egui::Color32) -> egui::Response {
    let body = egui::TextStyle::Body.resolve(ui.style());
    let mono = egui::TextStyle::Monospace.resolve(ui.style());
    let mut job = egui::text::LayoutJob::default();
    for (i, part) in text.split('`').enumerate().filter(|(_, p)| !p.is_empty()) {
        // A short command stays on one line ("docker run --gpus all" split before "all" read
        // as two things); a long one may still wrap at its spaces.
        let nbsp;
        let part = if i % 2 == 1 && part.chars().count() <= 40 {
            nbsp = part.replace(' ', "\u{a0}");
            nbsp.as_str()
        } else {
            part
        };
        let format = if i % 2 == 1 {
            egui::TextFormat {
                font_id: mono.clone(),
                color,
                background: ui.visuals().code_bg_color,
                ..Default::default()
            }
        } else {
            egui::TextFormat::simple(body.clone(), color)
        };
        job.append(part, 0.0, format);
    }
    ui.add(egui::Label::new(job).wrap())
}

/// Colours for GPUs: the Okabe–Ito palette, distinguishable with the common colour-vision
/// deficiencies, per theme: on a light background the yellow becomes a dark gold (the pale yellow
/// is 1.2:1 against white) and black a dark grey; on a dark background black becomes light grey.
/// GPUs 8 to 15 (TP 12 or 16, two nodes) take eight more colours, picked so that each is at
/// least ΔE 30 (CIELAB) from every other of the sixteen in both themes (the Okabe–Ito eight are
/// 25 apart at the closest) and reads as a shape on white and on the dark canvas (contrast ≥ 2);
/// ranks past 15 repeat them. Use it for fills; for text drawn in a GPU's colour use [`gpu_ink`].
pub fn gpu_color(rank: usize, dark: bool) -> egui::Color32 {
    use egui::Color32;
    const OKABE_ITO: [Color32; 7] = [
        Color32::from_rgb(0x00, 0x72, 0xB2), // blue
        Color32::from_rgb(0xE6, 0x9F, 0x00), // orange
        Color32::from_rgb(0x00, 0x9E, 0x73), // bluish green
        Color32::from_rgb(0xD5, 0x5E, 0x00), // vermillion
        Color32::from_rgb(0x56, 0xB4, 0xE9), // sky blue
        Color32::from_rgb(0xCC, 0x79, 0xA7), // reddish purple
        Color32::from_rgb(0xF0, 0xE4, 0x42), // yellow
    ];
    const SECOND_NODE: [Color32; 8] = [
        Color32::from_rgb(0x6A, 0x3D, 0x9A), // violet
        Color32::from_rgb(0x33, 0xA0, 0x2C), // green
        Color32::from_rgb(0xCF, 0x1C, 0x90), // magenta
        Color32::from_rgb(0x8C, 0x51, 0x0A), // brown
        Color32::from_rgb(0xF9, 0x7B, 0x72), // salmon
        Color32::from_rgb(0x9E, 0x01, 0x42), // crimson
        Color32::from_rgb(0x70, 0x80, 0x90), // slate
        Color32::from_rgb(0xE3, 0x1A, 0x1C), // red
    ];
    match rank % GPU_COLORS {
        i if i >= 8 => SECOND_NODE[i - 8],
        7 if dark => Color32::from_rgb(0xDD, 0xDD, 0xDD),
        7 => Color32::from_rgb(0x20, 0x20, 0x20),
        6 if !dark => Color32::from_rgb(0xA8, 0x94, 0x00),
        i => OKABE_ITO[i],
    }
}

/// How many different GPU colours [`gpu_color`] has before it repeats.
pub const GPU_COLORS: usize = 16;

/// WCAG relative luminance of a colour.
pub fn luminance(c: egui::Color32) -> f32 {
    let lin = |v: u8| {
        let v = f32::from(v) / 255.0;
        if v <= 0.040_45 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    let [r, g, b, _] = c.to_array();
    0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
}

/// WCAG contrast ratio of two colours (1 to 21).
pub fn contrast(a: egui::Color32, b: egui::Color32) -> f32 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// A GPU's colour for text on the theme's backgrounds: darkened (light theme) or lightened (dark
/// theme) until it reaches a contrast of 4.5:1, WCAG's level for body text, on every background
/// text is drawn on ([`text_backgrounds`]: the panel, windows, stripes) and on white or the dark
/// canvas.
///
/// Worked out once per colour and theme (the palette repeats every 8 GPUs), not per label drawn.
pub fn gpu_ink(rank: usize, dark: bool) -> egui::Color32 {
    static INKS: std::sync::OnceLock<[[egui::Color32; GPU_COLORS]; 2]> = std::sync::OnceLock::new();
    let inks = INKS.get_or_init(|| {
        [false, true].map(|dark| {
            let (visuals, canvas) = if dark {
                (egui::Visuals::dark(), egui::Color32::from_gray(27))
            } else {
                (egui::Visuals::light(), egui::Color32::WHITE)
            };
            let mut backgrounds = text_backgrounds(&visuals);
            backgrounds.push(canvas);
            std::array::from_fn(|r| ink_against(gpu_color(r, dark), &backgrounds, dark, 4.5))
        })
    });
    inks[usize::from(dark)][rank % GPU_COLORS]
}

/// `c` darkened (light theme) or lightened (dark theme) until it reaches `ratio` against every
/// one of `backgrounds` (or as far as black or white go).
pub fn ink_against(
    c: egui::Color32,
    backgrounds: &[egui::Color32],
    dark: bool,
    ratio: f32,
) -> egui::Color32 {
    let target = if dark {
        egui::Color32::WHITE
    } else {
        egui::Color32::BLACK
    };
    let mut out = c;
    for i in 1..=40 {
        if backgrounds.iter().all(|bg| contrast(out, *bg) >= ratio) {
            break;
        }
        out = c.lerp_to_gamma(target, i as f32 / 40.0);
    }
    out
}

/// The backgrounds text is drawn on in a theme: panels, windows, the faint stripes of tables and
/// code, and the inactive widgets' fill.
pub fn text_backgrounds(v: &egui::Visuals) -> Vec<egui::Color32> {
    [
        v.panel_fill,
        v.window_fill,
        v.faint_bg_color,
        v.extreme_bg_color,
        v.code_bg_color,
        v.widgets.inactive.weak_bg_fill,
        v.widgets.noninteractive.weak_bg_fill,
    ]
    .into_iter()
    // A see-through fill shows the panel under it.
    .filter(|c| c.a() == 255)
    .collect()
}

/// Makes every text colour of the theme reach 4.5:1 (WCAG AA for body text) on every background
/// it is drawn on: the secondary (weak) text, warnings, errors, links and the widgets' text. egui's
/// own weak grey reads about 2.6:1 on a projector's washed-out white.
///
/// egui's weak text is its text colour at half opacity: a see-through colour whose own channels
/// read dark. It is first laid on the panel (what the eye sees), then darkened or lightened, so
/// every text colour the app draws with is opaque and measured as it shows.
pub fn legible_visuals(v: &mut egui::Visuals) {
    legible_visuals_at(v, 4.5);
}

/// The secondary (weak) text's contrast on a projector: 7:1 (WCAG AAA), where small grey legends
/// are read from the back of a room on a washed-out screen.
pub const PRESENTER_WEAK_CONTRAST: f32 = 7.0;

/// [`legible_visuals`], with the weak text at `weak_ratio` (4.5 at a desk,
/// [`PRESENTER_WEAK_CONTRAST`] on a projector).
pub fn legible_visuals_at(v: &mut egui::Visuals, weak_ratio: f32) {
    let dark = v.dark_mode;
    let bgs = text_backgrounds(v);
    let panel = v.panel_fill;
    let fix = |c: egui::Color32| ink_against(opaque_on(c, panel), &bgs, dark, 4.5);
    let weak = v.weak_text_color();
    v.weak_text_color = Some(ink_against(
        opaque_on(weak, panel),
        &bgs,
        dark,
        weak_ratio.max(4.5),
    ));
    v.warn_fg_color = fix(v.warn_fg_color);
    v.error_fg_color = fix(v.error_fg_color);
    v.hyperlink_color = fix(v.hyperlink_color);
    for w in [
        &mut v.widgets.noninteractive,
        &mut v.widgets.inactive,
        &mut v.widgets.hovered,
        &mut v.widgets.active,
        &mut v.widgets.open,
    ] {
        let own: Vec<egui::Color32> = [w.bg_fill, w.weak_bg_fill]
            .into_iter()
            .filter(|c| c.a() == 255)
            .collect();
        let ink = ink_against(w.fg_stroke.color, &own, dark, 4.5);
        w.fg_stroke.color = ink_against(ink, &bgs, dark, 4.5);
    }
}

/// `c` (premultiplied, perhaps see-through) laid on the opaque `bg`: the colour the eye sees,
/// blended as egui blends, in gamma space.
pub fn opaque_on(c: egui::Color32, bg: egui::Color32) -> egui::Color32 {
    let [r, g, b, a] = c.to_array();
    let [br, bg_, bb, _] = bg.to_array();
    let keep = 1.0 - f32::from(a) / 255.0;
    let mix = |x: u8, y: u8| (f32::from(x) + keep * f32::from(y)).round().min(255.0) as u8;
    egui::Color32::from_rgb(mix(r, br), mix(g, bg_), mix(b, bb))
}

/// Text of a passed check or a right answer: Okabe–Ito's bluish green, darker on a light
/// background and lighter on a dark one so that it keeps contrast on both.
pub fn ok_ink(ui: &egui::Ui) -> egui::Color32 {
    if ui.visuals().dark_mode {
        egui::Color32::from_rgb(0x4C, 0xC9, 0xA0)
    } else {
        egui::Color32::from_rgb(0x00, 0x7A, 0x5A)
    }
}

/// The keyboard focus ring's colour: 3:1 or more against every background it is drawn on, in
/// both themes (WCAG 2.2's non-text contrast; `tests/contrast.rs`).
pub fn focus_ink(dark: bool) -> egui::Color32 {
    if dark {
        egui::Color32::from_rgb(0xFF, 0xC8, 0x3D)
    } else {
        egui::Color32::from_rgb(0x00, 0x3A, 0x94)
    }
}

/// A 2-point ring around the widget that has the keyboard focus, drawn above everything, so a
/// keyboard user sees where Tab went (egui only tints a focused widget as if pressed). Drawn
/// from the widget's place in the last frame; nothing when no widget has the focus.
pub fn focus_ring(ctx: &egui::Context) {
    let Some(id) = ctx.memory(|m| m.focused()) else {
        return;
    };
    let Some(r) = ctx.read_response(id) else {
        return;
    };
    if !r.rect.is_positive() {
        return;
    }
    let ink = focus_ink(ctx.global_style().visuals.dark_mode);
    let painter = ctx.layer_painter(egui::LayerId::new(
        egui::Order::Foreground,
        egui::Id::unique("tplab-focus-ring"),
    ));
    painter.rect_stroke(
        r.rect.expand(2.0),
        4.0,
        egui::Stroke::new(2.0, ink),
        egui::StrokeKind::Outside,
    );
}

/// Black or white, whichever reads better on `bg`.
pub fn text_on(bg: egui::Color32) -> egui::Color32 {
    let [r, g, b, _] = bg.to_array();
    let luma = 0.299 * f32::from(r) + 0.587 * f32::from(g) + 0.114 * f32::from(b);
    if luma > 140.0 {
        egui::Color32::BLACK
    } else {
        egui::Color32::WHITE
    }
}

/// A view's whole page in a vertical scroll area that fills the panel: what does not fit the
/// window (a 1280x720 projector in presenter mode) scrolls instead of being cut off.
pub fn scrolling_page<R>(ui: &mut egui::Ui, id: &str, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    egui::ScrollArea::vertical()
        .id_salt(id)
        .auto_shrink([false, false])
        .show(ui, add)
        .inner
}

/// The learner's language (the side bar, the first screen and the lessons switch it, live).
pub fn lang(ui: &egui::Ui) -> Lang {
    crate::i18n::current_lang(ui.ctx())
}

/// An egui_plot axis formatter writing the ticks as the learner's language writes numbers
/// (`0,5` in Turkish), with as many decimals as the tick spacing needs (egui_plot's rule).
pub fn axis_numbers(
    lang: Lang,
) -> impl Fn(egui_plot::GridMark, &std::ops::RangeInclusive<f64>) -> String {
    move |mark, _| crate::i18n::num(lang, mark.value, step_decimals(mark.step_size))
}

/// Decimals a tick of a grid of `step` needs: 1 for steps of 0.1, 0.2 and 0.5 (rounding the
/// logarithm gave 0 for 0.5 and printed 0.5 as "1"), 2 for 0.05, 0 from 1 up.
pub fn step_decimals(step: f64) -> usize {
    if !(step.is_finite() && step > 0.0) {
        return 0;
    }
    (-step.log10() - 1e-6).ceil().clamp(0.0, 6.0) as usize
}

/// The smallest of 1, 2 and 5 times a power of ten that is at least `at_least` (1 for
/// nonsense input).
pub fn nice_step(at_least: f64) -> f64 {
    if !(at_least.is_finite() && at_least > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(at_least.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&v| v >= at_least * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

/// A grid of 1-2-5 steps whose labelled step is at least `gap` points apart. egui_plot's
/// default grid steps by powers of ten only: on a short axis (a 150-point chart from 0 to 0.9)
/// the tenths are too close to carry labels and the next power, 1, is off the axis, so the
/// axis showed "0" alone.
pub fn nice_grid(gap: f64) -> Box<dyn Fn(egui_plot::GridInput) -> Vec<egui_plot::GridMark>> {
    egui_plot::uniform_grid_spacer(move |input| {
        // `base_step_size` is the value of egui_plot's least grid spacing, 8 points.
        let step = nice_step(input.base_step_size / 8.0 * gap);
        [step / 5.0, step, step * 10.0]
    })
}

/// A slider's or drag value's number as the learner's language writes it (`custom_formatter`).
pub fn widget_number(lang: Lang) -> impl Fn(f64, std::ops::RangeInclusive<usize>) -> String {
    move |v, decimals| {
        crate::i18n::num_text(
            lang,
            &egui::emath::format_with_decimals_in_range(v, decimals),
        )
    }
}

/// A typed number with either decimal mark, `0,25` or `0.25` (`custom_parser`).
pub fn parse_number(s: &str) -> Option<f64> {
    s.trim().replace(',', ".").parse().ok()
}

/// An egui_plot hover label near a curve: the series, then its x and y named by the axes' names
/// (`y_name` empty: x only), to three decimals in the learner's numbers; nothing away from the
/// data ("x = 2.343" of an empty spot says nothing).
pub fn hover_numbers(
    lang: Lang,
    x_name: String,
    y_name: String,
) -> impl Fn(&egui_plot::HoverPosition<'_>) -> Option<String> {
    move |pos| {
        let n = |v: f64| crate::i18n::num(lang, v, 3);
        match pos {
            egui_plot::HoverPosition::NearDataPoint {
                plot_name,
                position,
                ..
            } => {
                let mut s = format!("{plot_name}\n{x_name}: {}", n(position.x));
                if !y_name.is_empty() {
                    s.push_str(&format!("\n{y_name}: {}", n(position.y)));
                }
                Some(s)
            }
            // Away from the data the pointer's coordinates say nothing a learner needs.
            egui_plot::HoverPosition::Elsewhere { .. } => None,
        }
    }
}

/// A pass in the learner's words: "forward" / "ileri geçiş".
pub fn pass_name(lang: Lang, pass: tplab_engine::block::op::Pass) -> String {
    t(
        lang,
        match pass {
            tplab_engine::block::op::Pass::Forward => "walk-forward",
            tplab_engine::block::op::Pass::Backward => "walk-backward",
        },
    )
}

/// A list in words: "2, 4, 5 or 10" ("2, 4, 5 veya 10").
pub fn list_words(lang: Lang, items: &[usize]) -> String {
    let or = t(lang, "list-or");
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!(
            "{} {or} {last}",
            rest.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Points a combo box adds to its texts (the arrow, the padding and the gaps).
pub const COMBO_EXTRA: f32 = 48.0;

/// Points a slider adds to its label: the rail, the value box and the gaps.
pub fn slider_extra(ui: &egui::Ui) -> f32 {
    ui.spacing().slider_width + ui.spacing().interact_size.x + 4.0 * ui.spacing().item_spacing.x
}

/// Columns whose text reads left-aligned: egui lays out `ui.columns` top-down *justified*, and
/// a wrapped label in a justified layout is justified word by word ("it  issues  no
/// certificates"), which reads badly in a narrow column on a projector. Each column becomes a
/// plain top-down one, so its labels wrap ragged-right as everywhere else.
pub fn columns<R>(ui: &mut egui::Ui, n: usize, add: impl FnOnce(&mut [egui::Ui]) -> R) -> R {
    ui.columns(n, |cols| {
        for c in cols.iter_mut() {
            let plain = c.new_child(
                egui::UiBuilder::new()
                    .max_rect(c.max_rect())
                    .layout(egui::Layout::top_down(egui::Align::Min)),
            );
            *c = plain;
        }
        add(cols)
    })
}

/// A label and its number field, kept on one row of a wrapping row: the row breaks before
/// the label when the pair does not fit in what is left of it ("global batch" never ends one
/// row with its field on the next). Whole labels: "sequence length" never breaks either.
pub fn labelled_drag(ui: &mut egui::Ui, label: &str, v: &mut usize, max: usize) {
    let field = (body_text_width(ui, &[&v.to_string()]) + 2.0 * ui.spacing().button_padding.x)
        .max(ui.spacing().interact_size.x);
    let needed = body_text_width(ui, &[label]) + ui.spacing().item_spacing.x + field;
    keep_on_one_row(ui, needed);
    let l = ui.add(egui::Label::new(label).extend());
    ui.add(egui::DragValue::new(v).range(1..=max))
        .labelled_by(l.id);
}

/// In a wrapping row: starts the next row unless a widget with these texts and `extra` points
/// still fits in this one (a slider or a combo box is laid out as one piece: it would run off
/// the window rather than wrap).
pub fn keep_together(ui: &mut egui::Ui, texts: &[&str], extra: f32) {
    keep_on_one_row(ui, body_text_width(ui, texts) + extra);
}

/// The width of `texts` laid out on one line each in the body style, added up.
pub fn body_text_width(ui: &egui::Ui, texts: &[&str]) -> f32 {
    let font = egui::TextStyle::Body.resolve(ui.style());
    texts
        .iter()
        .map(|t| {
            ui.painter()
                .layout_no_wrap(t.to_string(), font.clone(), egui::Color32::PLACEHOLDER)
                .size()
                .x
        })
        .sum()
}

/// Which of a player's buttons were clicked this frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pressed {
    pub play: bool,
    pub previous: bool,
    pub next: bool,
    pub restart: bool,
}

/// A player's buttons — Play (Pause while `playing`), Previous, Next and Restart — with their keys
/// in the hover text (Space, ←, →, Home), as the walkthrough, the Pipeline and the MoE views draw
/// them. `ids`: the Fluent ids of play, pause, previous, next and restart.
pub fn player_buttons(ui: &mut egui::Ui, lang: Lang, playing: bool, ids: [&str; 5]) -> Pressed {
    let tr = |id: &str| t(lang, id);
    let [play, pause, previous, next, restart] = ids;
    let label = if playing { tr(pause) } else { tr(play) };
    Pressed {
        play: ui.button(label).on_hover_text(tr("st-key-space")).clicked(),
        previous: ui
            .button(tr(previous))
            .on_hover_text(tr("st-key-left"))
            .clicked(),
        next: ui
            .button(tr(next))
            .on_hover_text(tr("st-key-right"))
            .clicked(),
        restart: ui.button(tr(restart)).on_hover_text("Home").clicked(),
    }
}

/// The scenario in words (`hidden 768, 12 heads, …, TP=4, f32`), not its id (`h768-a12-…`).
pub fn scenario_words(lang: Lang, cfg: &Config) -> String {
    let kv = if cfg.is_gqa() {
        t_args(
            lang,
            "gpu-scenario-kv",
            &[("kv", cfg.kv_heads().to_string())],
        )
    } else {
        String::new()
    };
    let sp = if cfg.sequence_parallel {
        t(lang, "gpu-scenario-sp")
    } else {
        String::new()
    };
    let n = |v: usize| v.to_string();
    t_args(
        lang,
        "gpu-scenario-words",
        &[
            ("hidden", n(cfg.hidden)),
            ("heads", n(cfg.heads)),
            ("kv", kv),
            ("ffn", n(cfg.ffn)),
            ("seq", n(cfg.seq)),
            ("batch", n(cfg.batch)),
            ("layers", n(cfg.layers)),
            ("tp", n(cfg.tp)),
            ("sp", sp),
            ("dtype", cfg.dtype.to_string()),
        ],
    )
}

/// An op of the block program in the learner's words (`Op::label` in English).
pub fn op_label(lang: Lang, op: tplab_engine::block::Op) -> String {
    if lang == Lang::En {
        return op.label().to_string();
    }
    let id = format!("op-{}", op.name().replace(['.', '_'], "-"));
    match t(lang, &id) {
        s if s == id => op.label().to_string(),
        s => s,
    }
}

/// One event's op in words: an identity half of a learner's plan's move as such (it moves
/// nothing: the other half of an all-reduce), else [`trace_op_label`].
pub fn event_op_label(
    lang: Lang,
    trace: &tplab_engine::trace::Trace,
    e: &tplab_engine::trace::Event,
) -> String {
    use tplab_engine::block::{OpKind, Role};
    if e.is_identity_half() && matches!(e.op.kind(), OpKind::Collective(Role::Move)) {
        return t(lang, "op-identity-half");
    }
    trace_op_label(lang, trace, e.op)
}

/// An op as the trace runs it: [`op_label`], except where a learner's plan (the Design view's
/// "Step through my plan") splits a weight otherwise than Megatron-LM, whose split the op's own
/// label names ("QKV projection (column-parallel)"): then the split the trace's events record.
pub fn trace_op_label(
    lang: Lang,
    trace: &tplab_engine::trace::Trace,
    op: tplab_engine::block::Op,
) -> String {
    use tplab_engine::block::Op;
    use tplab_engine::{block::op::Parallel, trace::EventKind};
    if !matches!(op, Op::Qkv | Op::Fc1 | Op::AttnOut | Op::Fc2 | Op::AttnCore) {
        return op_label(lang, op);
    }
    // The op's first event (forward ops come first in a trace: a short scan).
    let parallel = trace.events.iter().find_map(|e| match e.kind {
        EventKind::Compute { parallel, .. } if e.op == op => Some(parallel),
        _ => None,
    });
    let megatron = match op {
        Op::Qkv | Op::Fc1 => Parallel::Column,
        Op::AttnOut | Op::Fc2 => Parallel::Row,
        Op::AttnCore if parallel == Some(Parallel::Replicated) => {
            return t(lang, "op-attn-core-all");
        }
        _ => return op_label(lang, op),
    };
    match parallel {
        Some(p) if p != megatron => {
            let how = match p {
                Parallel::Column => "op-split-column",
                Parallel::Row => "op-split-row",
                Parallel::Sequence => "op-split-sequence",
                Parallel::Replicated | Parallel::Local => "op-split-whole",
            };
            t_args(
                lang,
                "op-linear-as",
                &[
                    (
                        "op",
                        t(lang, &format!("op-base-{}", op.name().replace('.', "-"))),
                    ),
                    ("how", t(lang, how)),
                ],
            )
        }
        _ => op_label(lang, op),
    }
}

/// A preset in the learner's words ("GPT-2 small", "tiny layer"; the engine's `gpt2-small` is
/// for the CLI and the TOML files).
pub fn preset_name(lang: Lang, preset: tplab_engine::config::Preset) -> String {
    t(lang, &format!("preset-{}", preset.name()))
}

/// A GPU of the hardware catalogue by the name a reader knows ("A100 80GB" for the key
/// `a100-80gb`, which stays in the CLI, the JSON and the file names); a key the catalogue does
/// not know, as it is.
pub fn gpu_name(key: &str) -> String {
    tplab_engine::capacity::hardware::Catalogue::default()
        .gpu(key)
        .map_or_else(|_| key.to_string(), |g| g.display_name().to_string())
}

/// A link of the hardware catalogue by the name a reader knows ("InfiniBand NDR 400 Gb/s" for
/// `ib-ndr-400`); a key the catalogue does not know, as it is.
pub fn link_name(key: &str) -> String {
    tplab_engine::capacity::hardware::Catalogue::default()
        .link(key)
        .map_or_else(|_| key.to_string(), |l| l.display_name().to_string())
}

/// A model preset of the Planner by the name a reader knows ("GPT-3 175B" for `gpt3-175b`); a
/// name that is no preset, as it is.
pub fn model_name(key: &str) -> String {
    key.parse::<tplab_engine::capacity::models::ModelPreset>()
        .map_or_else(|_| key.to_string(), |m| m.display_name().to_string())
}

/// An all-reduce algorithm in the learner's words ("ring" / "halka").
pub fn algorithm_name(lang: Lang, algorithm: tplab_engine::collectives::Algorithm) -> String {
    t(lang, &format!("alg-{}", algorithm.name()))
}

/// A phase of a collective's plan in the learner's words.
pub fn phase_name(lang: Lang, phase: tplab_engine::collectives::Phase) -> String {
    t(lang, &format!("phase-{}", phase.name()))
}

/// The engine's error for an invalid configuration in the learner's language (the rule in
/// words, not the engine's `heads % tp == 0`; a suggestion list in words, not a debug list).
pub fn config_error_text(lang: Lang, err: &ConfigError) -> String {
    let n = |v: usize| v.to_string();
    let a = |pairs: &[(&str, String)], id: &str| t_args(lang, id, pairs);
    match err {
        ConfigError::HiddenNotDivisibleByHeads { hidden, heads, .. } => a(
            &[("hidden", n(*hidden)), ("heads", n(*heads))],
            "err-hidden-heads",
        ),
        ConfigError::Zero { field } => a(&[("field", field.to_string())], "err-zero"),
        ConfigError::OverLimit { field, value, max } => a(
            &[
                ("field", field.to_string()),
                ("value", n(*value)),
                ("max", n(*max)),
            ],
            "err-over-limit",
        ),
        ConfigError::TpOutOfRange { tp, max } => {
            a(&[("tp", n(*tp)), ("max", n(*max))], "err-tp-range")
        }
        ConfigError::HeadsNotDivisible { heads, tp, valid } => a(
            &[
                ("heads", n(*heads)),
                ("tp", n(*tp)),
                ("valid", list_words(lang, valid)),
            ],
            "err-heads-tp",
        ),
        ConfigError::FfnNotDivisible { ffn, tp, valid } => a(
            &[
                ("ffn", n(*ffn)),
                ("tp", n(*tp)),
                ("valid", list_words(lang, valid)),
            ],
            "err-ffn-tp",
        ),
        ConfigError::TooLarge {
            needed_bytes,
            limit_bytes,
        } => a(
            &[
                ("needed", crate::i18n::bytes(lang, *needed_bytes)),
                ("limit", crate::i18n::bytes(lang, *limit_bytes)),
            ],
            "err-too-large",
        ),
        ConfigError::SeqNotDivisible { seq, tp, valid } => a(
            &[
                ("seq", n(*seq)),
                ("tp", n(*tp)),
                ("valid", list_words(lang, valid)),
            ],
            "err-seq-tp",
        ),
        ConfigError::KvHeadsNotDivisor {
            heads,
            kv_heads,
            valid,
        } => a(
            &[
                ("heads", n(*heads)),
                ("kv", n(*kv_heads)),
                ("valid", list_words(lang, valid)),
            ],
            "err-kv-heads",
        ),
        ConfigError::KvHeadsNotSplittable {
            kv_heads,
            tp,
            valid,
        } => a(
            &[
                ("kv", n(*kv_heads)),
                ("tp", n(*tp)),
                ("valid", list_words(lang, valid)),
            ],
            "err-kv-tp",
        ),
        ConfigError::DtypeNotExecutable { dtype } => {
            a(&[("dtype", dtype.to_string())], "err-dtype")
        }
        // The 2^52 guard, and whatever the engine adds later: its own sentence.
        _ => err.to_string(),
    }
}

/// Draws the engine's error for an invalid configuration with a fix as buttons: the nearest
/// valid TP sizes for a TP that does not divide, the valid head counts for a hidden size the
/// heads do not divide. Returns the configuration the learner picked, if any.
pub fn config_error_ui(ui: &mut egui::Ui, err: &ConfigError, config: &Config) -> Option<Config> {
    let lang = lang(ui);
    let mut picked = None;
    ui.colored_label(
        ui.visuals().error_fg_color,
        t_args(
            lang,
            "invalid-choice",
            &[("error", config_error_text(lang, err))],
        ),
    );
    if let ConfigError::HiddenNotDivisibleByHeads { suggestions, .. } = err {
        if !suggestions.is_empty() {
            ui.horizontal_wrapped(|ui| {
                ui.label(t_args(
                    lang,
                    "valid-heads",
                    &[("list", list_words(lang, suggestions))],
                ));
                for &h in suggestions {
                    let text = t_args(lang, "use-heads", &[("heads", h.to_string())]);
                    if ui.button(text).clicked() {
                        let mut c = Config {
                            heads: h,
                            ..config.clone()
                        };
                        // Keep the KV heads only if they still divide the heads.
                        if c.kv_heads.is_some_and(|k| !h.is_multiple_of(k)) {
                            c.kv_heads = None;
                        }
                        picked = Some(c);
                    }
                }
            });
        }
        return picked;
    }
    let nearest = config.nearest_valid_tp();
    if !nearest.is_empty() && config.heads > 0 && config.ffn > 0 {
        ui.horizontal_wrapped(|ui| {
            ui.label(t_args(
                lang,
                "nearest-tp",
                &[(
                    "list",
                    nearest
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                )],
            ));
            for tp in nearest {
                let text = t_args(lang, "use-tp", &[("tp", tp.to_string())]);
                if ui.button(text).clicked() {
                    picked = Some(Config {
                        tp,
                        ..config.clone()
                    });
                }
            }
        });
    }
    picked
}

/// The scenario's plan and trace; for an invalid configuration, the engine's error and its fixes
/// drawn instead (a fix the learner picks is applied) and `None`.
pub fn derived_or_fixes<'a>(ui: &mut egui::Ui, scenario: &'a mut Scenario) -> Option<&'a Derived> {
    if let Err(err) = scenario.derived() {
        let config = scenario.config().clone();
        if let Some(c) = config_error_ui(ui, err, &config) {
            scenario.set_config(c);
        }
        return None;
    }
    scenario.derived().ok()
}

/// A text shape for a batch of shapes (`painter.extend`), anchored at `pos`.
pub fn text_shape(
    painter: &egui::Painter,
    pos: egui::Pos2,
    anchor: egui::Align2,
    text: impl ToString,
    size: f32,
    color: egui::Color32,
) -> egui::Shape {
    let galley = painter.layout_no_wrap(text.to_string(), egui::FontId::proportional(size), color);
    let rect = anchor.anchor_size(pos, galley.size());
    egui::Shape::galley(rect.min, galley, color)
}

/// Gives a painted area an accessible label (screen readers, kittest queries).
pub fn a11y_label(resp: &egui::Response, text: &str) {
    resp.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Figure, true, text));
}

/// In a wrapping row: starts the next row unless `width` points still fit in this one (so that
/// what follows, that many points wide, stays together).
pub fn keep_on_one_row(ui: &mut egui::Ui, width: f32) {
    if ui.available_size_before_wrap().x < width && ui.cursor().left() > ui.max_rect().left() {
        ui.end_row();
        // The new row as tall as a field, so that a label starting it sits on the fields' line.
        ui.allocate_exact_size(
            egui::vec2(0.0, ui.spacing().interact_size.y),
            egui::Sense::hover(),
        );
    }
}

#[cfg(test)]
mod axis_tests {
    use super::*;

    #[test]
    fn ticks_of_1_2_5_steps_print_their_value() {
        assert_eq!(step_decimals(0.5), 1);
        assert_eq!(step_decimals(0.2), 1);
        assert_eq!(step_decimals(0.1), 1);
        assert_eq!(step_decimals(0.05), 2);
        assert_eq!(step_decimals(0.01), 2);
        assert_eq!(step_decimals(1.0), 0);
        assert_eq!(step_decimals(20.0), 0);
        assert_eq!(step_decimals(f64::NAN), 0);
        assert_eq!(nice_step(0.13), 0.2);
        assert_eq!(nice_step(0.2), 0.2);
        assert_eq!(nice_step(0.21), 0.5);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(0.0), 1.0);
    }

    /// The values a grid labels on an axis of `bounds` drawn `points` tall: egui_plot labels a
    /// mark when its step is more than 20 points apart.
    fn labelled(
        spacer: &dyn Fn(egui_plot::GridInput) -> Vec<egui_plot::GridMark>,
        bounds: (f64, f64),
        points: f64,
    ) -> Vec<f64> {
        let per_point = (bounds.1 - bounds.0) / points;
        spacer(egui_plot::GridInput {
            bounds,
            base_step_size: per_point * 8.0,
        })
        .iter()
        .filter(|m| m.step_size / per_point > 20.0)
        .map(|m| m.value)
        .collect()
    }

    #[test]
    fn a_short_axis_keeps_several_labelled_values() {
        // The token-time charts: about 100 points of plot, 0 to 0.95 ms or, with a slow first
        // token, 0 to 5.5 ms. egui_plot's powers of ten labelled 0 alone on both.
        let default = egui_plot::log_grid_spacer(10);
        assert_eq!(labelled(&default, (0.0, 0.95), 100.0), vec![0.0]);
        assert_eq!(labelled(&default, (0.0, 5.5), 100.0), vec![0.0]);
        let nice = nice_grid(30.0);
        assert_eq!(labelled(&nice, (0.0, 0.95), 100.0), vec![0.0, 0.5]);
        assert_eq!(labelled(&nice, (0.0, 5.5), 100.0), vec![0.0, 2.0, 4.0]);
    }
}
