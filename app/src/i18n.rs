//! UI strings from Fluent files (`app/i18n/<lang>/<area>.ftl`: `main`, `views`, `capacity`,
//! `web`, `cli`, `pipeline`), and the learner's language, kept in egui's persisted memory so it survives a
//! restart. Every area file of one language goes into that language's bundle; an id defined twice
//! is a load error.

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use std::sync::OnceLock;
use tplab_lessons::Lang;

/// One Fluent file per language and area.
macro_rules! ftl {
    ($lang:expr, $code:literal, $area:literal) => {
        (
            $lang,
            concat!($code, "/", $area, ".ftl"),
            include_str!(concat!("../i18n/", $code, "/", $area, ".ftl")),
        )
    };
}

/// The Fluent sources compiled into the binary: (language, file, text).
pub const SOURCES: [(Lang, &str, &str); 12] = [
    ftl!(Lang::En, "en", "main"),
    ftl!(Lang::En, "en", "views"),
    ftl!(Lang::En, "en", "capacity"),
    ftl!(Lang::En, "en", "web"),
    ftl!(Lang::En, "en", "cli"),
    ftl!(Lang::En, "en", "pipeline"),
    ftl!(Lang::Tr, "tr", "main"),
    ftl!(Lang::Tr, "tr", "views"),
    ftl!(Lang::Tr, "tr", "capacity"),
    ftl!(Lang::Tr, "tr", "web"),
    ftl!(Lang::Tr, "tr", "cli"),
    ftl!(Lang::Tr, "tr", "pipeline"),
];

/// One bundle per language.
pub struct I18n {
    bundles: Vec<(Lang, FluentBundle<FluentResource>)>,
}

impl I18n {
    /// Parses the embedded `.ftl` files; an error names the file and what is wrong.
    pub fn load() -> Result<Self, String> {
        let mut bundles = Vec::new();
        for lang in Lang::ALL {
            let id = lang
                .code()
                .parse()
                .map_err(|e| format!("language id {lang}: {e}"))?;
            let mut b = FluentBundle::new_concurrent(vec![id]);
            // No Unicode isolation marks around arguments: plain text for labels and tests.
            b.set_use_isolating(false);
            for (_, file, src) in SOURCES.iter().filter(|(l, _, _)| *l == lang) {
                let res = FluentResource::try_new(src.to_string())
                    .map_err(|(_, errs)| format!("i18n/{file}: {errs:?}"))?;
                b.add_resource(res)
                    .map_err(|errs| format!("i18n/{file}: {errs:?}"))?;
            }
            bundles.push((lang, b));
        }
        Ok(Self { bundles })
    }

    /// The message `id` in `lang` with `args`; falls back to English, then to the id itself.
    pub fn format(&self, lang: Lang, id: &str, args: &[(&str, String)]) -> String {
        self.format_fluent(lang, id, &Self::fluent_args(args))
    }

    /// [`Self::format`] with one argument a number, `(name, value)`, for Fluent's plural
    /// variants (`{ $n -> [one] … *[other] … }`; a string argument never matches `[one]`).
    pub fn format_count(
        &self,
        lang: Lang,
        id: &str,
        count: (&str, u64),
        args: &[(&str, String)],
    ) -> String {
        let mut fargs = Self::fluent_args(args);
        fargs.set(count.0, FluentValue::from(count.1));
        self.format_fluent(lang, id, &fargs)
    }

    fn fluent_args<'a>(args: &[(&'a str, String)]) -> FluentArgs<'a> {
        let mut fargs = FluentArgs::new();
        for (k, v) in args {
            fargs.set(*k, FluentValue::from(v.clone()));
        }
        fargs
    }

    fn format_fluent(&self, lang: Lang, id: &str, fargs: &FluentArgs<'_>) -> String {
        for l in [lang, Lang::En] {
            let Some((_, b)) = self.bundles.iter().find(|(bl, _)| *bl == l) else {
                continue;
            };
            if let Some(pattern) = b.get_message(id).and_then(|m| m.value()) {
                let mut errors = Vec::new();
                return b
                    .format_pattern(pattern, Some(fargs), &mut errors)
                    .into_owned();
            }
        }
        id.to_string()
    }

    /// Message ids defined for `lang`.
    pub fn ids(&self, lang: Lang) -> Vec<String> {
        SOURCES
            .iter()
            .filter(|(l, _, _)| *l == lang)
            .flat_map(|(_, _, src)| src.lines())
            .filter_map(|l| {
                let (id, _) = l.split_once('=')?;
                let id = id.trim();
                (!id.is_empty() && !l.starts_with('#') && !l.starts_with(' '))
                    .then(|| id.to_string())
            })
            .collect()
    }
}

static I18N: OnceLock<Option<I18n>> = OnceLock::new();

/// The message `id` in `lang` (the id itself if the Fluent files could not be loaded).
pub fn t(lang: Lang, id: &str) -> String {
    t_args(lang, id, &[])
}

/// The message `id` in `lang` with arguments, one of them a number `(name, value)` for a
/// plural variant (`{ $n -> [one] … *[other] … }`).
pub fn t_count(lang: Lang, id: &str, count: (&str, u64), args: &[(&str, String)]) -> String {
    match I18N.get_or_init(|| I18n::load().ok()) {
        Some(i) => i.format_count(lang, id, count, args),
        None => id.to_string(),
    }
}

/// The message `id` in `lang` with arguments.
pub fn t_args(lang: Lang, id: &str, args: &[(&str, String)]) -> String {
    match I18N.get_or_init(|| I18n::load().ok()) {
        Some(i) => i.format(lang, id, args),
        None => id.to_string(),
    }
}

fn lang_id() -> egui::Id {
    egui::Id::NULL.with("tplab-language")
}

/// The learner's language (English until chosen).
pub fn current_lang(ctx: &egui::Context) -> Lang {
    ctx.data_mut(|d| *d.get_persisted_mut_or_default::<Lang>(lang_id()))
}

/// Switches the language everywhere, live, and remembers it.
pub fn set_lang(ctx: &egui::Context, lang: Lang) {
    ctx.data_mut(|d| d.insert_persisted(lang_id(), lang));
}

/// An "English | Türkçe" switch; returns the language now in force.
pub fn language_switch(ui: &mut egui::Ui) -> Lang {
    let mut lang = current_lang(ui.ctx());
    ui.horizontal(|ui| {
        ui.label(t(lang, "language"));
        for l in Lang::ALL {
            if ui.selectable_label(lang == l, l.native_name()).clicked() {
                lang = l;
            }
        }
    });
    set_lang(ui.ctx(), lang);
    lang
}

/// `v` with `decimals` decimals as `lang` writes numbers: `1.25` and `12,345.50` in English,
/// `1,25` and `12.345,50` in Turkish (thousands grouped from five integer digits on). Every number a
/// view prints with a fraction goes through here, so Turkish never shows a decimal point.
pub fn num(lang: Lang, v: f64, decimals: usize) -> String {
    tplab_quiz::grade::format_fixed(v, decimals, lang)
}

/// A string the engine formatted in English (`"1.25 GB"`, `"3.5x"`) with its decimal points turned
/// into `lang`'s decimal mark. Only a `.` between two digits changes, and only in Turkish; use it
/// for engine-made quantities, never for names ("Llama 3.1") or code.
pub fn num_text(lang: Lang, s: &str) -> String {
    if lang != Lang::Tr {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let between_digits = i > 0
            && i + 1 < chars.len()
            && chars[i - 1].is_ascii_digit()
            && chars[i + 1].is_ascii_digit();
        out.push(if c == '.' && between_digits { ',' } else { c });
    }
    out
}

/// A byte count as the engine writes it (`1.5 MiB`), with `lang`'s decimal mark.
pub fn bytes(lang: Lang, b: u64) -> String {
    num_text(lang, &tplab_engine::config::human_bytes(b))
}

/// `v` in scientific notation with `decimals` decimals (`1.25e-7`), with `lang`'s decimal mark
/// (`1,25e-7` in Turkish).
pub fn sci(lang: Lang, v: f64, decimals: usize) -> String {
    num_text(lang, &format!("{v:.decimals$e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_take_the_languages_decimal_mark() {
        assert_eq!(num(Lang::En, 1.25, 2), "1.25");
        assert_eq!(num(Lang::Tr, 1.25, 2), "1,25");
        assert_eq!(num(Lang::Tr, 12345.5, 1), "12.345,5");
        assert_eq!(num_text(Lang::Tr, "1.25 GB, 3.5x"), "1,25 GB, 3,5x");
        assert_eq!(num_text(Lang::Tr, "end. 2"), "end. 2");
        assert_eq!(num_text(Lang::En, "1.25 GB"), "1.25 GB");
        assert_eq!(sci(Lang::En, 1.25e-7, 2), "1.25e-7");
        assert_eq!(sci(Lang::Tr, 1.25e-7, 1), "1,2e-7");
    }

    #[test]
    fn both_languages_parse_and_define_the_same_ids() {
        let i = I18n::load().unwrap();
        let (en, tr) = (i.ids(Lang::En), i.ids(Lang::Tr));
        assert!(en.len() >= 20);
        assert_eq!(en, tr);
        // Each area file defines the same ids in both languages, in the same order.
        for (l, file, src) in SOURCES.iter().filter(|(l, _, _)| *l == Lang::En) {
            let tr_file = file.replacen("en/", "tr/", 1);
            let tr_src = SOURCES
                .iter()
                .find(|(tl, f, _)| *tl == Lang::Tr && *f == tr_file)
                .map(|(_, _, s)| *s)
                .unwrap_or_else(|| panic!("{l}: no Turkish twin of {file}"));
            let ids = |s: &str| {
                s.lines()
                    .filter(|x| !x.starts_with('#') && !x.starts_with(' '))
                    .filter_map(|x| x.split_once('=').map(|(k, _)| k.trim().to_string()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(src), ids(tr_src), "{file} and {tr_file}");
        }
        assert_eq!(i.format(Lang::Tr, "show-me", &[]), "Göster");
        assert_eq!(
            i.format(Lang::En, "quiz-wrong", &[("answer", "B".into())]),
            "Not quite. The answer is: B"
        );
        assert_eq!(i.format(Lang::Tr, "no-such-id", &[]), "no-such-id");
    }
}
