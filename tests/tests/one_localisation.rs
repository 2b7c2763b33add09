//! One localisation mechanism (issue 24, item 13): every user-facing Turkish string is a Fluent
//! message (`lessons/i18n/tr/*.ftl`) or lesson and quiz-bank content (`lessons/content/`,
//! `quiz/banks/`), never a string literal in Rust; and numbers are written by one formatter,
//! `tplab_lessons::i18n`.
//!
//! The scan reads the library and app sources (not their tests: a test may well assert Turkish
//! output) and lists every string or character literal holding a letter only Turkish uses here
//! (ğ ü ş ı ö ç and capitals). What may stay is allow-listed below, each with its reason.

use std::path::{Path, PathBuf};

/// Source trees scanned: everything shipped (test modules excluded, see [`test_modules`]).
const SCANNED: [&str; 5] = [
    "engine/src",
    "kernels/src",
    "lessons/src",
    "quiz/src",
    "app/src",
];

/// Files that are test code as a whole (declared `#[cfg(test)] mod …;`).
const TEST_ONLY_FILES: [&str; 1] = ["lessons/src/numbers.rs"];

/// Turkish literals that are not text for a learner to read, by file and literal.
const ALLOWED: [(&str, &str, &str); 24] = [
    // An Open Badges credential is one signed document read by badge viewers outside tplab: its
    // achievement carries both languages at once, in the credential itself.
    (
        "quiz/src/badge.rs",
        "*",
        "a signed credential's text in both languages",
    ),
    // A language is named in its own language in the language switch, and typed so on the
    // command line (`--lang türkçe`).
    ("lessons/src/lang.rs", "Türkçe", "the language's own name"),
    (
        "lessons/src/lang.rs",
        "türkçe",
        "a spelling `--lang` accepts",
    ),
    // The suffix rules: a Fluent message cannot see how a number is read aloud ("6'ya", "3'e").
    (
        "lessons/src/i18n.rs",
        "sıfır",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "üç",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "dört",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "beş",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "altı",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "kırk",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "altmış",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "yetmiş",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "yüz",
        "digit names for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "aıoueiöü",
        "the vowels, for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "aıou",
        "the back vowels, for suffix harmony",
    ),
    (
        "lessons/src/i18n.rs",
        "çfhkpsşt",
        "the voiceless consonants, for suffix harmony",
    ),
    // Learner names become ASCII file names: the transliteration table.
    (
        "quiz/src/progress.rs",
        "ş",
        "transliterating a learner's name",
    ),
    (
        "quiz/src/progress.rs",
        "ğ",
        "transliterating a learner's name",
    ),
    (
        "quiz/src/progress.rs",
        "ı",
        "transliterating a learner's name",
    ),
    (
        "quiz/src/progress.rs",
        "ü",
        "transliterating a learner's name",
    ),
    (
        "quiz/src/progress.rs",
        "ö",
        "transliterating a learner's name",
    ),
    (
        "quiz/src/progress.rs",
        "ç",
        "transliterating a learner's name",
    ),
    // The tiny model generates text in its training alphabet: the default prompt is model
    // input, not a label.
    (
        "app/src/views/serve.rs",
        "Tensor paralelliği",
        "the tiny model's default prompt",
    ),
    (
        "app/src/cli/serve.rs",
        "Tensor paralelliği",
        "the tiny model's default prompt",
    ),
    // Rejected and preferred Turkish terms: the glossary is a rule set over Turkish text.
    (
        "lessons/src/glossary.rs",
        "*",
        "the Turkish glossary's terms and patterns",
    ),
];

/// Letters that only Turkish text has in this workspace (German ü/ö and French ç do not occur
/// in the English strings).
fn turkish(s: &str) -> bool {
    s.chars().any(|c| "ğüşıöçĞÜŞİÖÇ".contains(c))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The char ranges of `#[cfg(test)] mod … { … }` blocks in `code` (source whose comments and
/// literals are blanked, so braces inside them do not count).
fn test_modules(code: &[char]) -> Vec<(usize, usize)> {
    let text: String = code.iter().collect();
    let mut out = Vec::new();
    for (byte_at, _) in text.match_indices("#[cfg(test)]") {
        let at = text[..byte_at].chars().count();
        let after: String = code[at + 12..].iter().collect();
        let rest = after.trim_start();
        if !rest.starts_with("mod ") {
            continue;
        }
        let Some(open) = code[at..].iter().position(|&ch| ch == '{' || ch == ';') else {
            continue;
        };
        let mut i = at + open;
        if code[i] == ';' {
            continue; // `mod x;`: a test-only file, listed in TEST_ONLY_FILES
        }
        let mut depth = 0;
        while i < code.len() {
            match code[i] {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        out.push((at, i));
    }
    out
}

/// The Turkish-scannable literals of shipped code: every literal outside test modules.
fn shipped_literals(src: &str) -> Vec<(usize, String)> {
    let (lits, blanked) = literals(src);
    let tests = test_modules(&blanked);
    lits.into_iter()
        .filter(|(_, at, _)| !tests.iter().any(|(a, b)| (*a..=*b).contains(at)))
        .map(|(line, _, s)| (line, s))
        .collect()
}

/// Every string and character literal of Rust source `src`, with its line and char position:
/// comments skipped, escapes and raw strings (`r#"…"#`) handled, lifetimes (`'a`) told from
/// characters. Also the source with comments and literals blanked out.
fn literals(src: &str) -> (Vec<(usize, usize, String)>, Vec<char>) {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let (mut i, mut line) = (0, 1);
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        match c[i] {
            '\n' => {
                line += 1;
                i += 1;
            }
            '/' if c.get(i + 1) == Some(&'/') => {
                let from = i;
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
                spans.push((from, i));
            }
            '/' if c.get(i + 1) == Some(&'*') => {
                let from = i;
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(c[i] == '\n');
                        i += 1;
                    }
                }
                spans.push((from, i));
            }
            'r' if (i == 0 || !ident(c[i - 1]) || c[i - 1] == 'b')
                && matches!(c.get(i + 1), Some('#' | '"')) =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while c.get(j) == Some(&'#') {
                    hashes += 1;
                    j += 1;
                }
                if c.get(j) != Some(&'"') {
                    i += 1;
                    continue;
                }
                let start_line = line;
                let mut s = String::new();
                j += 1;
                while j < c.len() {
                    if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
                        break;
                    }
                    line += usize::from(c[j] == '\n');
                    s.push(c[j]);
                    j += 1;
                }
                out.push((start_line, i, s));
                spans.push((i, j + 1 + hashes));
                i = j + 1 + hashes;
            }
            '"' => {
                let start_line = line;
                let mut s = String::new();
                let mut j = i + 1;
                while j < c.len() && c[j] != '"' {
                    if c[j] == '\\' {
                        s.push(c[j]);
                        j += 1;
                    }
                    if let Some(&ch) = c.get(j) {
                        line += usize::from(ch == '\n');
                        s.push(ch);
                    }
                    j += 1;
                }
                out.push((start_line, i, s));
                spans.push((i, j + 1));
                i = j + 1;
            }
            '\'' => {
                // A character literal: 'x' or an escape '\n', '\u{…}'; otherwise a lifetime.
                if c.get(i + 1) == Some(&'\\') {
                    let mut j = i + 2;
                    while j < c.len() && c[j] != '\'' {
                        j += 1;
                    }
                    out.push((line, i, c[i + 1..j].iter().collect()));
                    spans.push((i, j + 1));
                    i = j + 1;
                } else if c.get(i + 2) == Some(&'\'') {
                    out.push((line, i, c[i + 1].to_string()));
                    spans.push((i, i + 3));
                    i += 3;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    let mut blanked = c.clone();
    for (a, b) in spans {
        for ch in blanked.iter_mut().take(b.min(c.len())).skip(a) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    }
    (out, blanked)
}

fn allowed(file: &str, literal: &str) -> bool {
    ALLOWED
        .iter()
        .any(|(f, l, _)| file == *f && (*l == "*" || literal == *l))
}

#[test]
fn the_scanner_finds_literals_and_skips_comments() {
    let src = "// 'ş' in a comment\nlet a = \"Göster\"; /* \"Kafa\" ğ */ let b: &'a str = r#\"x \"ş\" y\"#;\nlet c = 'ç'; let d = '\\'';\n";
    let found: Vec<(usize, String)> = shipped_literals(src)
        .into_iter()
        .filter(|(_, s)| turkish(s))
        .collect();
    assert_eq!(
        found,
        [
            (2, "Göster".to_string()),
            (2, "x \"ş\" y".to_string()),
            (3, "ç".to_string())
        ]
    );
    // A test module is skipped, braces in its strings notwithstanding; code after it is not.
    let src =
        "fn a() {}\n#[cfg(test)]\nmod tests {\n fn t() { \"ş}\" }\n}\nconst B: &str = \"ğ\";\n";
    assert_eq!(shipped_literals(src), [(6, "ğ".to_string())]);
}

#[test]
fn no_turkish_string_literal_outside_fluent_and_content() {
    let root = root();
    let mut files = Vec::new();
    for dir in SCANNED {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 50,
        "found {} Rust files under {root:?}",
        files.len()
    );
    let mut problems = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for path in &files {
        let rel = path
            .strip_prefix(&root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        if TEST_ONLY_FILES.contains(&rel.as_str()) {
            continue;
        }
        let src = std::fs::read_to_string(path).unwrap_or_default();
        for (line, lit) in shipped_literals(&src) {
            if !turkish(&lit) {
                continue;
            }
            match ALLOWED
                .iter()
                .position(|(f, l, _)| rel == *f && (*l == "*" || lit == *l))
            {
                Some(k) => used[k] = true,
                None => problems.push(format!("{rel}:{line}: {lit:?}")),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "Turkish text belongs in lessons/i18n/tr/*.ftl (a message id, looked up with \
         tplab_lessons::i18n::t / msg), not in Rust:\n{}",
        problems.join("\n")
    );
    // Every allowance still allows something (a stale entry would hide nothing but mislead).
    let stale: Vec<String> = ALLOWED
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|((f, l, why), _)| format!("{f}: {l:?} ({why})"))
        .collect();
    assert!(stale.is_empty(), "unused allowances:\n{}", stale.join("\n"));
    assert!(allowed("lessons/src/lang.rs", "Türkçe"));
}

/// The number formatter is `tplab_lessons::i18n` (`num`, `number`, `percent`, `num_text`,
/// `bytes`, `sci`); the four it replaced are gone: the quiz's `format_number` / `format_fixed`
/// / `localize`, the app's own `num_text`, the lessons tests' `dec` / `int` / `percent`, and the
/// ad-hoc `replace('.', ",")` that turned a decimal point into a Turkish comma.
#[test]
fn one_number_formatter() {
    let root = root();
    let mut files = Vec::new();
    for dir in SCANNED
        .iter()
        .chain(&["app/tests", "quiz/tests", "tests/tests"])
    {
        rust_files(&root.join(dir), &mut files);
    }
    let owner = "lessons/src/i18n.rs";
    let mut problems = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        if rel == owner || rel == "tests/tests/one_localisation.rs" {
            continue;
        }
        let src = std::fs::read_to_string(path).unwrap_or_default();
        for (n, line) in src.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for needle in [
                "fn format_number(",
                "fn format_fixed(",
                "fn localize(",
                "fn num_text(",
                "fn number_marks(",
                "fn dec(",
                "fn percent(",
                "replace('.', \",\")",
                "replace(\".\", \",\")",
            ] {
                if code.contains(needle) {
                    problems.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "numbers are written by {owner} only:\n{}",
        problems.join("\n")
    );
    let owner_src = std::fs::read_to_string(root.join(owner)).unwrap_or_default();
    for f in [
        "pub fn num(",
        "pub fn number(",
        "pub fn percent(",
        "pub fn num_text(",
    ] {
        assert!(owner_src.contains(f), "{owner} defines {f}");
    }
}
