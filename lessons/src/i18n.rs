//! The one owner of translated text: the Fluent bundles of every language, the functions that
//! look a message up ([`t`], [`t_args`], [`t_count`], [`msg`]) and the one number formatter
//! ([`num`], [`number`], [`num_text`], [`bytes`], [`sci`], [`percent`]).
//!
//! Every user-facing string of the workspace lives in `lessons/i18n/<lang>/<area>.ftl` (`main`,
//! `views`, `capacity`, `web`, `cli` for the app; `quiz` for generated questions, grading and the
//! certificate; `lessons` for Show me descriptions), embedded at build time. Lessons and quiz
//! banks are content in both languages already (Markdown and TOML) and stay where they are. Every
//! area file of one language goes into that language's bundle; an id defined twice is a load
//! error, and both languages define the same ids in the same order (a test).

use crate::{Lang, Localized};
use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use std::sync::OnceLock;

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
pub const SOURCES: [(Lang, &str, &str); 20] = [
    ftl!(Lang::En, "en", "main"),
    ftl!(Lang::En, "en", "views"),
    ftl!(Lang::En, "en", "capacity"),
    ftl!(Lang::En, "en", "web"),
    ftl!(Lang::En, "en", "cli"),
    ftl!(Lang::En, "en", "quiz"),
    ftl!(Lang::En, "en", "lessons"),
    ftl!(Lang::En, "en", "pipeline"),
    ftl!(Lang::En, "en", "moe"),
    ftl!(Lang::En, "en", "class"),
    ftl!(Lang::Tr, "tr", "main"),
    ftl!(Lang::Tr, "tr", "views"),
    ftl!(Lang::Tr, "tr", "capacity"),
    ftl!(Lang::Tr, "tr", "web"),
    ftl!(Lang::Tr, "tr", "cli"),
    ftl!(Lang::Tr, "tr", "quiz"),
    ftl!(Lang::Tr, "tr", "lessons"),
    ftl!(Lang::Tr, "tr", "pipeline"),
    ftl!(Lang::Tr, "tr", "moe"),
    ftl!(Lang::Tr, "tr", "class"),
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
        self.format_fluent(lang, id, &fluent_args(args))
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
        let mut fargs = fluent_args(args);
        fargs.set(count.0, FluentValue::from(count.1));
        self.format_fluent(lang, id, &fargs)
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

    /// Whether `lang`'s bundle defines `id`.
    pub fn has(&self, lang: Lang, id: &str) -> bool {
        self.bundles
            .iter()
            .any(|(l, b)| *l == lang && b.has_message(id))
    }

    /// Message ids defined for `lang`, in file order.
    pub fn ids(&self, lang: Lang) -> Vec<String> {
        SOURCES
            .iter()
            .filter(|(l, _, _)| *l == lang)
            .flat_map(|(_, _, src)| ids_of(src))
            .collect()
    }
}

/// The message ids one Fluent source defines, in order.
pub fn ids_of(src: &str) -> Vec<String> {
    src.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with(' '))
        .filter_map(|l| {
            let (id, _) = l.split_once('=')?;
            let id = id.trim();
            (!id.is_empty()).then(|| id.to_string())
        })
        .collect()
}

fn fluent_args<'a>(args: &[(&'a str, String)]) -> FluentArgs<'a> {
    let mut fargs = FluentArgs::new();
    for (k, v) in args {
        fargs.set(*k, FluentValue::from(v.clone()));
    }
    fargs
}

static I18N: OnceLock<Option<I18n>> = OnceLock::new();

/// The loaded bundles (`None` if the embedded Fluent files do not parse: a test keeps them
/// parsing, and every lookup then falls back to the id).
pub fn bundles() -> Option<&'static I18n> {
    I18N.get_or_init(|| I18n::load().ok()).as_ref()
}

/// The message `id` in `lang` (the id itself if the Fluent files could not be loaded).
pub fn t(lang: Lang, id: &str) -> String {
    t_args(lang, id, &[])
}

/// The message `id` in `lang` with arguments.
pub fn t_args(lang: Lang, id: &str, args: &[(&str, String)]) -> String {
    match bundles() {
        Some(i) => i.format(lang, id, args),
        None => id.to_string(),
    }
}

/// The message `id` in `lang` with arguments, one of them a number `(name, value)` for a
/// plural variant (`{ $n -> [one] … *[other] … }`).
pub fn t_count(lang: Lang, id: &str, count: (&str, u64), args: &[(&str, String)]) -> String {
    match bundles() {
        Some(i) => i.format_count(lang, id, count, args),
        None => id.to_string(),
    }
}

/// An argument of [`msg`]: text the same in every language, or written each language's way.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// The same text in every language (an integer as Rust prints it, a name, a formula).
    Same(String),
    /// A number written by [`number`]: grouped thousands, the language's decimal mark.
    Number(f64),
    /// A number with exactly this many decimals, written by [`num`].
    Fixed(f64, usize),
    /// Text already given in each language.
    Text(Localized),
}

impl Arg {
    /// `v` written by [`number`] (`589,824` / `589.824`, `0.25` / `0,25`).
    pub fn number(v: impl Into<f64>) -> Self {
        Arg::Number(v.into())
    }

    /// An integer written by [`number`] (grouped from five digits on).
    pub fn int(v: u64) -> Self {
        Arg::Number(v as f64)
    }

    /// `v` with `decimals` decimals, written by [`num`].
    pub fn fixed(v: f64, decimals: usize) -> Self {
        Arg::Fixed(v, decimals)
    }

    /// The message `id` with `args`, in each language.
    pub fn msg(id: &str, args: &[(&str, Arg)]) -> Self {
        Arg::Text(msg(id, args))
    }

    /// The argument in `lang`.
    pub fn in_lang(&self, lang: Lang) -> String {
        match self {
            Arg::Same(s) => s.clone(),
            Arg::Number(v) => number(lang, *v),
            Arg::Fixed(v, d) => num(lang, *v, *d),
            Arg::Text(l) => l.get(lang).to_string(),
        }
    }
}

macro_rules! same_arg {
    ($($t:ty),*) => {$(
        impl From<$t> for Arg {
            fn from(v: $t) -> Self {
                Arg::Same(v.to_string())
            }
        }
    )*};
}
same_arg!(usize, u64, u32, i64, &str, String, char);

impl From<Localized> for Arg {
    fn from(v: Localized) -> Self {
        Arg::Text(v)
    }
}

impl From<&Localized> for Arg {
    fn from(v: &Localized) -> Self {
        Arg::Text(v.clone())
    }
}

/// The message `id` with `args` in every language, each argument written that language's way
/// (what a generated question, a grade or a certificate is made of).
pub fn msg(id: &str, args: &[(&str, Arg)]) -> Localized {
    let in_lang = |lang: Lang| {
        let args: Vec<(&str, String)> = args.iter().map(|(k, a)| (*k, a.in_lang(lang))).collect();
        t_args(lang, id, &args)
    };
    Localized::new(in_lang(Lang::En), in_lang(Lang::Tr))
}

// ---------------------------------------------------------------------------------------------
// Numbers: the one formatter.

/// The decimal mark and the thousands separator of `lang`: English `.` and `,`, Turkish `,` and
/// `.` (TDK: "589.824" is five hundred eighty-nine thousand, "1,5" is one and a half).
pub fn number_marks(lang: Lang) -> (char, char) {
    match lang {
        Lang::En => ('.', ','),
        Lang::Tr => (',', '.'),
    }
}

/// A number as `lang` writes it: at most 4 decimals, no spurious `.0`, the locale's decimal mark
/// (`43.75`, `43,75`) and, from five integer digits on, its thousands separator (`589,824`,
/// `589.824`; four-digit numbers stay ungrouped, as TDK and most style guides recommend). The
/// quiz's `parse_number` reads every output back.
pub fn number(lang: Lang, v: f64) -> String {
    let plain = if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    localize(&plain, lang, 5)
}

/// `v` with exactly `decimals` decimals as `lang` writes numbers: `1.25` and `12,345.50` in
/// English, `1,25` and `12.345,50` in Turkish (thousands grouped from five integer digits on).
/// Every number shown with a fraction goes through here, so Turkish never shows a decimal point.
pub fn num(lang: Lang, v: f64, decimals: usize) -> String {
    localize(&format!("{v:.decimals$}"), lang, 5)
}

/// An integer with every thousand grouped, as the lessons' prose writes counts: `3,200` /
/// `3.200`, `327,680` / `327.680` (unlike [`number`], which leaves four digits ungrouped).
pub fn grouped(lang: Lang, n: u64) -> String {
    localize(&n.to_string(), lang, 4)
}

/// A percentage with `decimals` decimals as `lang` writes it: `85%` / `%85`, `12.5%` / `%12,5`.
pub fn percent(lang: Lang, p: f64, decimals: usize) -> String {
    let n = num(lang, p, decimals);
    match lang {
        Lang::En => format!("{n}%"),
        Lang::Tr => format!("%{n}"),
    }
}

/// A string formatted in English (`"1.25 GB"`, `"3.5x"`, an engine's quantity) with its decimal
/// points turned into `lang`'s decimal mark. Only a `.` between two digits changes, and only in
/// Turkish; use it for engine-made quantities, never for names ("Llama 3.1") or code.
pub fn num_text(lang: Lang, s: &str) -> String {
    let (dec, _) = number_marks(lang);
    if dec == '.' {
        return s.to_string();
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let between_digits = i > 0
            && i + 1 < chars.len()
            && chars[i - 1].is_ascii_digit()
            && chars[i + 1].is_ascii_digit();
        out.push(if c == '.' && between_digits { dec } else { c });
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

/// Rewrites a number Rust printed (`-1234567.25`) with `lang`'s marks, grouping thousands from
/// `group_from` integer digits on.
fn localize(plain: &str, lang: Lang, group_from: usize) -> String {
    if !plain
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == '-')
    {
        return plain.to_string(); // inf, NaN or an exponent: leave as Rust writes it
    }
    let (dec, grp) = number_marks(lang);
    let (sign, rest) = match plain.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", plain),
    };
    let (int, frac) = match rest.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (rest, None),
    };
    let mut out = String::from(sign);
    if int.len() >= group_from {
        for (k, c) in int.chars().enumerate() {
            if k > 0 && (int.len() - k).is_multiple_of(3) {
                out.push(grp);
            }
            out.push(c);
        }
    } else {
        out.push_str(int);
    }
    if let Some(f) = frac {
        out.push(dec);
        out.push_str(f);
    }
    if out == "-0" {
        out = "0".into();
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Turkish suffixes on numbers. A Fluent message cannot see how a number is read aloud, and the
// vowel of a suffix follows the last word read ("6'ya", "3'e"): these rules, not words, are the
// one piece of Turkish grammar kept in code.

/// The last word of `n` read aloud in Turkish, which decides its suffixes' vowels.
fn tr_last_word(n: u64) -> &'static str {
    // Allowed Turkish literals (the source-scan test lists this file): the digits' names.
    const UNITS: [&str; 10] = [
        "sıfır", "bir", "iki", "üç", "dört", "beş", "altı", "yedi", "sekiz", "dokuz",
    ];
    const TENS: [&str; 10] = [
        "", "on", "yirmi", "otuz", "kırk", "elli", "altmış", "yetmiş", "seksen", "doksan",
    ];
    if n == 0 {
        UNITS[0]
    } else if !n.is_multiple_of(10) {
        UNITS[(n % 10) as usize]
    } else if !n.is_multiple_of(100) {
        TENS[((n / 10) % 10) as usize]
    } else if !n.is_multiple_of(1000) {
        "yüz"
    } else if !n.is_multiple_of(1_000_000) {
        "bin"
    } else {
        "milyon"
    }
}

/// `(back vowel?, ends in a vowel?, ends in a voiceless consonant?)` of a Turkish word.
fn tr_sounds(word: &str) -> (bool, bool, bool) {
    const VOWELS: &str = "aıoueiöü";
    let back = word
        .chars()
        .rev()
        .find(|c| VOWELS.contains(*c))
        .is_some_and(|c| "aıou".contains(c));
    let last = word.chars().last().unwrap_or('a');
    (back, VOWELS.contains(last), "çfhkpsşt".contains(last))
}

/// `n` with the Turkish dative suffix: `6'ya`, `3'e`, `2'ye`, `10'a`.
pub fn tr_dative(n: u64) -> String {
    let (back, vowel, _) = tr_sounds(tr_last_word(n));
    let y = if vowel { "y" } else { "" };
    format!("{n}'{y}{}", if back { "a" } else { "e" })
}

/// `n` with the Turkish ablative suffix: `8'den`, `4'ten`, `6'dan`, `3'ten`.
pub fn tr_ablative(n: u64) -> String {
    let (back, _, hard) = tr_sounds(tr_last_word(n));
    format!(
        "{n}'{}{}n",
        if hard { "t" } else { "d" },
        if back { "a" } else { "e" }
    )
}

/// `n` in each language with a suffix Turkish needs: `n` in English, [`tr_dative`] in Turkish.
pub fn dative(n: u64) -> Arg {
    Arg::Text(Localized::new(n.to_string(), tr_dative(n)))
}

/// `n` in each language with a suffix Turkish needs: `n` in English, [`tr_ablative`] in
/// Turkish.
pub fn ablative(n: u64) -> Arg {
    Arg::Text(Localized::new(n.to_string(), tr_ablative(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_take_the_languages_marks() {
        assert_eq!(num(Lang::En, 1.25, 2), "1.25");
        assert_eq!(num(Lang::Tr, 1.25, 2), "1,25");
        assert_eq!(num(Lang::Tr, 12345.5, 1), "12.345,5");
        assert_eq!(num(Lang::Tr, 1_048_576.0, 2), "1.048.576,00");
        assert_eq!(num_text(Lang::Tr, "1.25 GB, 3.5x"), "1,25 GB, 3,5x");
        assert_eq!(num_text(Lang::Tr, "end. 2"), "end. 2");
        assert_eq!(num_text(Lang::En, "1.25 GB"), "1.25 GB");
        assert_eq!(sci(Lang::En, 1.25e-7, 2), "1.25e-7");
        assert_eq!(sci(Lang::Tr, 1.25e-7, 1), "1,2e-7");
        assert_eq!(number(Lang::Tr, 589_824.0), "589.824");
        assert_eq!(number(Lang::En, 589_824.0), "589,824");
        assert_eq!(number(Lang::Tr, 43.75), "43,75");
        assert_eq!(number(Lang::En, 43.75), "43.75");
        assert_eq!(number(Lang::Tr, 1536.0), "1536");
        assert_eq!(number(Lang::Tr, 1_048_576.5), "1.048.576,5");
        assert_eq!(number(Lang::En, -12_345.0), "-12,345");
        assert_eq!(number(Lang::Tr, 0.328125), "0,3281");
        assert_eq!(number(Lang::En, -0.00001), "0");
        assert_eq!(grouped(Lang::En, 3200), "3,200");
        assert_eq!(grouped(Lang::Tr, 327_680), "327.680");
        assert_eq!(grouped(Lang::Tr, 320), "320");
        assert_eq!(percent(Lang::En, 85.0, 0), "85%");
        assert_eq!(percent(Lang::Tr, 12.5, 1), "%12,5");
        assert_eq!(bytes(Lang::Tr, 3 * 1024 * 1024 / 2), "1,5 MiB");
    }

    #[test]
    fn turkish_suffixes_follow_the_last_word_read() {
        let dat: Vec<String> = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 20, 40, 100, 1000]
            .into_iter()
            .map(tr_dative)
            .collect();
        assert_eq!(
            dat,
            [
                "1'e", "2'ye", "3'e", "4'e", "5'e", "6'ya", "7'ye", "8'e", "9'a", "10'a", "12'ye",
                "16'ya", "20'ye", "40'a", "100'e", "1000'e"
            ]
        );
        let abl: Vec<String> = [1, 2, 3, 4, 5, 6, 8, 9, 10, 16, 40, 60]
            .into_iter()
            .map(tr_ablative)
            .collect();
        assert_eq!(
            abl,
            [
                "1'den", "2'den", "3'ten", "4'ten", "5'ten", "6'dan", "8'den", "9'dan", "10'dan",
                "16'dan", "40'tan", "60'tan"
            ]
        );
        assert_eq!(dative(6).in_lang(Lang::En), "6");
        assert_eq!(dative(6).in_lang(Lang::Tr), "6'ya");
        assert_eq!(ablative(4).in_lang(Lang::Tr), "4'ten");
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
            assert_eq!(ids_of(src), ids_of(tr_src), "{file} and {tr_file}");
        }
        assert_eq!(i.format(Lang::Tr, "show-me", &[]), "Göster");
        assert_eq!(
            i.format(Lang::En, "quiz-wrong", &[("answer", "B".into())]),
            "Not quite. The answer is: B"
        );
        assert_eq!(i.format(Lang::Tr, "no-such-id", &[]), "no-such-id");
        assert!(i.has(Lang::Tr, "show-me") && !i.has(Lang::Tr, "no-such-id"));
    }

    #[test]
    fn a_message_is_made_in_every_language_with_its_numbers() {
        let m = msg(
            "gen-kv-why",
            &[
                ("layers", 80usize.into()),
                ("pergpu", 2usize.into()),
                ("hd", 128usize.into()),
                ("bytes", Arg::int(81_920)),
                ("answer", Arg::number(80.5)),
            ],
        );
        assert!(m.en.ends_with("= 81,920 bytes = 80.5 KiB."), "{}", m.en);
        assert!(m.tr.ends_with("= 81.920 bayt = 80,5 KiB."), "{}", m.tr);
    }
}
