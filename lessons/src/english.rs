//! Finds English left in Turkish text: a list of common English words that a Turkish sentence
//! never needs. Technical terms the Turkish lessons keep in English (all-reduce, all-gather,
//! reduce-scatter, GPU, NVLink, token, bias, ...) are not in it, and code is skipped: fenced
//! blocks, `inline code` and link targets.
//!
//! The list holds only words that are not also Turkish words or loanwords (so no "a", "an",
//! "at", "on", "it", "not", "but", "model", "token", "bias"): any hit is English prose.

/// Common English words that never belong in Turkish prose (lower case).
pub const ENGLISH_WORDS: &[&str] = &[
    "the", "and", "of", "with", "that", "this", "these", "those", "which", "who", "is", "are",
    "was", "were", "be", "been", "being", "has", "have", "had", "does", "do", "did", "from",
    "into", "onto", "each", "every", "for", "only", "when", "where", "why", "how", "what", "then",
    "than", "also", "because", "after", "before", "between", "across", "inside", "outside",
    "there", "their", "they", "its", "we", "you", "your", "our", "can", "cannot", "must", "should",
    "would", "will", "same", "more", "less", "most", "such", "other", "very", "just", "about",
    "over", "under", "while", "whole", "both", "by", "or", "to", "in", "so", "all", "one", "two",
    "three", "four", "per", "split", "splits", "layer", "layers", "weight", "weights", "head",
    "heads", "forward", "backward", "pass", "step", "steps", "sum", "sums", "see", "show", "press",
    "here", "memory", "through", "without", "within", "gives", "needs", "holds", "runs", "sends",
];

/// One English word found, with its 1-based line in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnglishWord {
    pub line: usize,
    pub word: String,
}

/// The English words in Markdown `text`, outside fenced code blocks, inline code and link
/// targets.
pub fn english_in_markdown(text: &str) -> Vec<EnglishWord> {
    let mut found = Vec::new();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for word in english_in_prose(&strip_code_and_links(line)) {
            found.push(EnglishWord { line: i + 1, word });
        }
    }
    found
}

/// The English words of one line of plain text (a title or a button caption).
pub fn english_in_prose(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| ENGLISH_WORDS.contains(&w.as_str()))
        .collect()
}

/// `line` without its `code spans` and the `(target)` of `[text](target)` links.
fn strip_code_and_links(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
            continue;
        }
        if in_code {
            continue;
        }
        if c == ']' && chars.peek() == Some(&'(') {
            // Skip the link target up to its closing parenthesis.
            for t in chars.by_ref() {
                if t == ')' {
                    break;
                }
            }
            out.push(' ');
            continue;
        }
        out.push(c);
    }
    out
}

/// Lower-case words: runs of letters and digits, with inner hyphens kept (`all-reduce` is one
/// word); an apostrophe ends a word and drops its Turkish suffix (`GPU'ya` is `gpu`).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut suffix = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let next_is_word = chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if c.is_alphanumeric() {
            if !suffix {
                cur.extend(c.to_lowercase());
            }
        } else if c == '-' && !cur.is_empty() && !suffix && next_is_word {
            cur.push('-');
        } else if (c == '\'' || c == '’') && !cur.is_empty() && next_is_word {
            suffix = true;
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            suffix = false;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_sentence_is_found_turkish_is_not() {
        let en = english_in_prose("The partial sums are added on every GPU.");
        assert_eq!(en, ["the", "sums", "are", "every"]);
        let tr = english_in_prose(
            "Tek bir all-reduce kısmi toplamları ekler; GPU'ya düşen bias'ı bir kez ekleyin.",
        );
        assert!(tr.is_empty(), "{tr:?}");
    }

    #[test]
    fn code_and_links_are_skipped() {
        let md =
            "# Başlık\n\nBkz. `the sum of all` ve [ders](the-link).\n\n```text\nY = the X\n```\n\
                  Sonra this satır.\n";
        let found = english_in_markdown(md);
        assert_eq!(
            found,
            [EnglishWord {
                line: 8,
                word: "this".into()
            }]
        );
    }

    #[test]
    fn hyphenated_terms_and_suffixes_are_single_words() {
        assert_eq!(
            words("all-reduce'u, reduce-scatter ve GPU'nun; in-place -x"),
            ["all-reduce", "reduce-scatter", "ve", "gpu", "in-place", "x"]
        );
    }
}
