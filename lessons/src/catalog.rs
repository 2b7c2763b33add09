//! The lesson index (`index.toml`) and the Markdown files it names.

use crate::diag::{Diagnostic, Diagnostics};
use crate::english::{english_in_markdown, english_in_prose};
use crate::glossary::{rejected_in_markdown, rejected_in_text};
use crate::lang::{Lang, Localized};
use crate::showme::ShowMe;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use toml::Spanned;

/// Name of the index file inside the content root.
pub const INDEX_FILE: &str = "index.toml";

/// How to fix English found in Turkish text.
const ENGLISH_FIX: &str =
    "translate it, or put code, identifiers and quoted English UI text in `backticks`";

/// One lesson in every language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lesson {
    /// Stable id, also the file name's slug (`NN-slug.md`).
    pub slug: String,
    /// Position in the course, 1-based.
    pub order: u32,
    pub title: Localized,
    /// Markdown body per language.
    pub body: Localized,
    pub show_me: Vec<ShowMe>,
}

impl Lesson {
    /// File name inside a language folder, e.g. `03-mlp-split.md`.
    pub fn file_name(&self) -> String {
        file_name(self.order, &self.slug)
    }
}

fn file_name(order: u32, slug: &str) -> String {
    format!("{order:02}-{slug}.md")
}

/// Every lesson, in course order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Catalog {
    pub lessons: Vec<Lesson>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIndex {
    #[serde(default)]
    lesson: Vec<Spanned<RawLesson>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLesson {
    slug: String,
    order: u32,
    title: Localized,
    #[serde(default)]
    show_me: Vec<Spanned<ShowMe>>,
}

impl Catalog {
    /// The lessons compiled into the binary.
    pub fn embedded() -> Result<Self, Diagnostics> {
        Self::from_files(crate::embedded_files().iter().copied())
    }

    /// Loads lessons from `(path relative to the content root, text)` pairs and checks them all:
    /// the index parses, every lesson has a non-empty Markdown file per language that starts with
    /// a `# ` heading and closes its code fences, no file is left out of the index, orders and
    /// slugs are unique, and every "Show me" target is valid for the engine.
    pub fn from_files<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, Diagnostics> {
        let files: BTreeMap<&str, &str> = files.into_iter().collect();
        let mut diags = Diagnostics::default();
        let Some(index_text) = files.get(INDEX_FILE) else {
            diags.push(Diagnostic::new(
                INDEX_FILE,
                None,
                "the lesson index is missing; create content/index.toml with [[lesson]] tables",
            ));
            return Err(diags);
        };
        let raw: RawIndex = match toml::from_str(index_text) {
            Ok(r) => r,
            Err(e) => {
                diags.push(Diagnostic::from_toml(INDEX_FILE, index_text, &e));
                return Err(diags);
            }
        };
        let at = |offset: usize, msg: String| Diagnostic::at(INDEX_FILE, index_text, offset, msg);
        let mut lessons = Vec::new();
        let mut orders = BTreeSet::new();
        let mut slugs = BTreeSet::new();
        let mut expected_files = BTreeSet::new();
        for spanned in &raw.lesson {
            let start = spanned.span().start;
            let l = spanned.get_ref();
            if l.slug.is_empty()
                || !l
                    .slug
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            {
                diags.push(at(
                    start,
                    format!(
                        "lesson slug '{}' must be non-empty lower-case ASCII letters, digits and '-'",
                        l.slug
                    ),
                ));
            }
            if l.order == 0 || !orders.insert(l.order) {
                diags.push(at(
                    start,
                    format!(
                        "lesson '{}' has order {}: orders must be unique and start at 1",
                        l.slug, l.order
                    ),
                ));
            }
            if !slugs.insert(l.slug.clone()) {
                diags.push(at(start, format!("lesson slug '{}' is used twice", l.slug)));
            }
            for lang in l.title.missing() {
                diags.push(at(
                    start,
                    format!("lesson '{}' has no {lang} title", l.slug),
                ));
            }
            for r in rejected_in_text(&l.title.tr) {
                diags.push(at(
                    start,
                    format!("lesson '{}': Turkish title: {r}", l.slug),
                ));
            }
            for word in english_in_prose(&l.title.tr) {
                diags.push(at(
                    start,
                    format!(
                        "lesson '{}': English word '{word}' in the Turkish title; {ENGLISH_FIX}",
                        l.slug
                    ),
                ));
            }
            for t in &l.show_me {
                if let Err(e) = t.get_ref().validate() {
                    diags.push(at(t.span().start, format!("lesson '{}': {e}", l.slug)));
                }
                if let Some(label) = &t.get_ref().label {
                    for d in t.get_ref().disagreements(&label.en) {
                        diags.push(at(
                            t.span().start,
                            format!(
                                "lesson '{}': Show me '{}' does not open what it says: {d}",
                                l.slug, label.en
                            ),
                        ));
                    }
                }
                // A label is read by the learner: the trace's op names (`attn.g`) are code.
                if let Some(label) = &t.get_ref().label {
                    for (lang, text) in [("English", &label.en), ("Turkish", &label.tr)] {
                        if let Some(code) = dotted_op_name(text) {
                            diags.push(at(
                                t.span().start,
                                format!(
                                    "lesson '{}': the {lang} Show me label names the op '{code}' \
                                     as the code does; say it in words (\"the attention's g\")",
                                    l.slug
                                ),
                            ));
                        }
                    }
                }
                let tr_label = t.get_ref().label.as_ref().map(|x| x.tr.as_str());
                for r in rejected_in_text(tr_label.unwrap_or_default()) {
                    diags.push(at(
                        t.span().start,
                        format!("lesson '{}': Turkish Show me label: {r}", l.slug),
                    ));
                }
                for word in english_in_prose(tr_label.unwrap_or_default()) {
                    diags.push(at(
                        t.span().start,
                        format!(
                            "lesson '{}': English word '{word}' in a Turkish Show me label; {ENGLISH_FIX}",
                            l.slug
                        ),
                    ));
                }
            }
            let name = file_name(l.order, &l.slug);
            let mut body = Localized::default();
            for lang in Lang::ALL {
                let path = format!("{}/{name}", lang.code());
                expected_files.insert(path.clone());
                match files.get(path.as_str()) {
                    None => diags.push(at(
                        start,
                        format!(
                            "lesson '{}' has no {lang} text: create content/{path}",
                            l.slug
                        ),
                    )),
                    Some(text) => {
                        check_markdown(&path, text, &mut diags);
                        if lang == Lang::Tr {
                            for r in rejected_in_markdown(text) {
                                diags.push(Diagnostic::new(
                                    path.as_str(),
                                    Some(r.line),
                                    format!(
                                        "'{}' for {}: write '{}' (the glossary in lessons/README.md)",
                                        r.word, r.concept, r.use_tr
                                    ),
                                ));
                            }
                            for w in english_in_markdown(text) {
                                diags.push(Diagnostic::new(
                                    path.as_str(),
                                    Some(w.line),
                                    format!(
                                        "English word '{}' in Turkish text; {ENGLISH_FIX}",
                                        w.word
                                    ),
                                ));
                            }
                        }
                        match lang {
                            Lang::En => body.en = text.to_string(),
                            Lang::Tr => body.tr = text.to_string(),
                        }
                    }
                }
            }
            lessons.push(Lesson {
                slug: l.slug.clone(),
                order: l.order,
                title: l.title.clone(),
                body,
                show_me: l.show_me.iter().map(|t| t.get_ref().clone()).collect(),
            });
        }
        if raw.lesson.is_empty() {
            diags.push(Diagnostic::new(
                INDEX_FILE,
                None,
                "the index lists no [[lesson]]",
            ));
        }
        for path in files.keys() {
            if path.ends_with(".md") && !expected_files.contains(*path) {
                diags.push(Diagnostic::new(
                    *path,
                    None,
                    "this file is not in index.toml (its name must be NN-slug.md of a listed lesson, in en/ or tr/)",
                ));
            }
        }
        if !diags.is_empty() {
            return Err(diags);
        }
        lessons.sort_by_key(|l| l.order);
        Ok(Self { lessons })
    }

    /// A lesson by slug.
    pub fn get(&self, slug: &str) -> Option<&Lesson> {
        self.lessons.iter().find(|l| l.slug == slug)
    }

    /// Every "Show me" target of every lesson.
    pub fn show_me_targets(&self) -> impl Iterator<Item = (&Lesson, &ShowMe)> {
        self.lessons
            .iter()
            .flat_map(|l| l.show_me.iter().map(move |t| (l, t)))
    }
}

/// A trace op name as the code writes it (`attn.g`, `mlp.f.bwd`, `ce.sum`) inside `text`.
fn dotted_op_name(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || "(),;:'\"’".contains(c))
        .find(|w| {
            ["attn.", "mlp.", "ce.", "embed.", "lm_head."]
                .iter()
                .any(|p| w.starts_with(p) && w.len() > p.len())
        })
        .map(str::to_string)
}

fn check_markdown(path: &str, text: &str, diags: &mut Diagnostics) {
    let first = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty());
    match first {
        None => diags.push(Diagnostic::new(path, None, "the file is empty")),
        Some((i, l)) if !l.starts_with("# ") => diags.push(Diagnostic::new(
            path,
            Some(i + 1),
            "a lesson must start with a level-1 heading ('# Title')",
        )),
        Some(_) => {}
    }
    let mut open_fence = None;
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            open_fence = match open_fence {
                None => Some(i + 1),
                Some(_) => None,
            };
        }
    }
    if let Some(line) = open_fence {
        diags.push(Diagnostic::new(
            path,
            Some(line),
            "this code fence (```) is never closed",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = r#"
[[lesson]]
slug = "intro"
order = 1
title = { en = "Intro", tr = "Giriş" }
show_me = [{ view = "step", tp = 4, event = "mlp.g" }]
"#;

    #[test]
    fn shipped_content_is_valid() {
        let cat = match Catalog::embedded() {
            Ok(c) => c,
            Err(d) => panic!("shipped lessons have problems:\n{d}"),
        };
        assert!(cat.lessons.len() >= 10);
        for (i, l) in cat.lessons.iter().enumerate() {
            assert_eq!(l.order as usize, i + 1);
            assert!(!l.show_me.is_empty(), "lesson {} has no Show me", l.slug);
        }
    }

    /// The one-lesson catalog of [`INDEX`]'s shape with `index` as its index.
    fn with_index(index: &str) -> Result<Catalog, Diagnostics> {
        Catalog::from_files([
            (INDEX_FILE, index),
            ("en/01-intro.md", "# Intro\n\ntext\n"),
            ("tr/01-intro.md", "# Giriş\n\nmetin\n"),
        ])
    }

    #[test]
    fn loads_a_small_catalog() {
        let cat = with_index(INDEX).unwrap();
        assert_eq!(cat.lessons[0].body.get(Lang::Tr), "# Giriş\n\nmetin\n");
        assert_eq!(cat.get("intro").unwrap().file_name(), "01-intro.md");
    }

    #[test]
    fn malformed_index_names_file_and_line() {
        let bad = "[[lesson]]\nslug = \"intro\"\norder = \"one\"\n";
        let d = Catalog::from_files([(INDEX_FILE, bad)]).unwrap_err();
        assert_eq!(d.0[0].file, INDEX_FILE);
        assert_eq!(d.0[0].line, Some(3), "{d}");
        assert!(d.0[0].message.contains("expected u32"), "{d}");
    }

    #[test]
    fn unknown_show_me_field_fails_with_its_name_and_line() {
        let index = INDEX.replace(
            "event = \"mlp.g\"",
            "event = \"mlp.g\", sequence_paralel = true",
        );
        let d = with_index(&index).unwrap_err();
        let text = d.to_string();
        assert_eq!(d.0[0].line, Some(6), "{text}");
        assert!(text.contains("unknown field `sequence_paralel`"), "{text}");
        assert!(
            text.contains("sequence_parallel"),
            "the known fields are listed: {text}"
        );
    }

    #[test]
    fn a_show_me_label_with_an_op_name_as_code_fails() {
        let index = INDEX.replace(
            "event = \"mlp.g\"",
            "event = \"mlp.g\", label = { en = \"The ring behind mlp.g\", tr = \"mlp.g'nin halkası\" }",
        );
        let text = with_index(&index).unwrap_err().to_string();
        for lang in ["English", "Turkish"] {
            let want = format!("the {lang} Show me label names the op 'mlp.g'");
            assert!(text.contains(&want), "missing {want:?} in:\n{text}");
        }
        assert_eq!(dotted_op_name("g after the MLP"), None);
    }

    #[test]
    fn english_in_turkish_lessons_titles_and_labels_fails() {
        let index = INDEX
            .replace("tr = \"Giriş\"", "tr = \"The intro\"")
            .replace(
                "event = \"mlp.g\"",
                "event = \"mlp.g\", label = { en = \"g\", tr = \"Show the g\" }",
            );
        let files = [
            (INDEX_FILE, index.as_str()),
            ("en/01-intro.md", "# Intro\n\ntext\n"),
            (
                "tr/01-intro.md",
                "# Giriş\n\nBir all-reduce `the code` toplar.\nEach GPU sends its slice.\n",
            ),
        ];
        let d = Catalog::from_files(files).unwrap_err();
        let text = d.to_string();
        for want in [
            "index.toml:2: lesson 'intro': English word 'the' in the Turkish title",
            "index.toml:6: lesson 'intro': English word 'show' in a Turkish Show me label",
            "tr/01-intro.md:4: English word 'each' in Turkish text",
            "tr/01-intro.md:4: English word 'sends' in Turkish text",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
        // The code span and the kept term (all-reduce) on line 3 pass.
        assert!(!text.contains("tr/01-intro.md:3:"), "{text}");
        // The same words in the English lesson are fine.
        assert!(!text.contains("en/01-intro.md"), "{text}");
    }

    #[test]
    fn semantic_problems_are_all_reported() {
        let index = format!(
            "{INDEX}\n[[lesson]]\nslug = \"two\"\norder = 1\ntitle = {{ en = \"Two\", tr = \"\" }}\nshow_me = [{{ view = \"playground\", tp = 5 }}]\n"
        );
        let files = [
            (INDEX_FILE, index.as_str()),
            ("en/01-intro.md", "# Intro\n```\nunclosed\n"),
            ("tr/01-intro.md", "no heading\n"),
            ("en/09-orphan.md", "# Orphan\n"),
        ];
        let d = Catalog::from_files(files).unwrap_err();
        let text = d.to_string();
        for want in [
            "index.toml:8: lesson 'two' has order 1",
            "index.toml:8: lesson 'two' has no tr title",
            "index.toml:12: lesson 'two': Show me target's scenario is invalid: 12 heads cannot be split over 5 GPUs",
            "lesson 'two' has no en text: create content/en/01-two.md",
            "en/01-intro.md:2: this code fence",
            "tr/01-intro.md:1: a lesson must start with a level-1 heading",
            "en/09-orphan.md: this file is not in index.toml",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
    }
}
