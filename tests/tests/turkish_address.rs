//! The app's Turkish addresses the learner as *siz*, as the lessons do (the rule is written at
//! the top of lessons/i18n/tr/views.ftl): a control's own label is a bare command ("Oynat",
//! "Baştan başla"); every other message uses -(y)In imperatives and -(I)nIz possessives. This
//! scans every message of lessons/i18n/tr/*.ftl for the *sen* forms the app used to have.

use std::path::Path;

/// Words that only address one person as *sen*: anywhere, labels included.
const SEN_WORDS: [&str; 9] = [
    "sen",
    "senin",
    "sana",
    "seni",
    "senden",
    "kendin",
    "adın",
    "tahminin",
    "ilerlemenle",
];

/// *Sen* imperatives (bare verb stems): allowed as a control's own label, never in a sentence.
const SEN_IMPERATIVES: [&str; 33] = [
    "tıkla",
    "dene",
    "bak",
    "böl",
    "yerleştir",
    "işaretle",
    "aç",
    "ekle",
    "kaldır",
    "topla",
    "gör",
    "gel",
    "izle",
    "bul",
    "yap",
    "tut",
    "say",
    "söyle",
    "düzelt",
    "onar",
    "seç",
    "kullan",
    "dön",
    "koyma",
    "sor",
    "gönder",
    "göster",
    "başla",
    "çalıştır",
    "denetle",
    "karşılaştır",
    "değiştir",
    "bırak",
];

/// Two-word *sen* imperatives ("tahmin et" where *siz* says "tahmin edin").
const SEN_PHRASES: [[&str; 2]; 3] = [["tahmin", "et"], ["kontrol", "et"], ["devam", "et"]];

/// Whether `c` belongs to a word (letters and the apostrophe of a suffix: "GPU'ları" is one).
fn word_char(c: char) -> bool {
    c.is_alphabetic() || c == '\'' || c == '’'
}

/// `text`'s words, lower-cased.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !word_char(c))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `text` with every `open … close` span replaced by a space.
fn strip(text: &str, open: char, close: char) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    for c in text.chars() {
        if c == open {
            depth += 1;
            out.push(' ');
        } else if c == close && depth > 0 {
            depth -= 1;
        } else if depth == 0 {
            out.push(c);
        }
    }
    out
}

/// A control's own label: at most eight words outside parentheses and no sentence punctuation
/// (an ordinal's dot, "1. ders", is not one).
fn is_label(text: &str) -> bool {
    let outside = strip(text, '(', ')');
    let chars: Vec<char> = outside.chars().collect();
    let punctuation = chars.iter().enumerate().any(|(i, &c)| {
        matches!(c, '?' | '!' | ';') || (c == '.' && !(i > 0 && chars[i - 1].is_ascii_digit()))
    });
    !punctuation && words(&outside).len() <= 8
}

/// The *sen* forms in one message's value (its placeables already removed).
fn sen_forms(text: &str) -> Vec<String> {
    let ws = words(text);
    let mut found: Vec<String> = ws
        .iter()
        .filter(|w| SEN_WORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    if !is_label(text) {
        found.extend(
            ws.iter()
                .filter(|w| SEN_IMPERATIVES.contains(&w.as_str()))
                .cloned(),
        );
        for pair in ws.windows(2) {
            if SEN_PHRASES
                .iter()
                .any(|p| pair[0] == p[0] && pair[1] == p[1])
            {
                found.push(format!("{} {}", pair[0], pair[1]));
            }
        }
    }
    found
}

/// Every message of a Fluent file: (line, id, value with continuation lines, placeables and
/// comments removed).
fn messages(text: &str) -> Vec<(usize, String, String)> {
    let mut out: Vec<(usize, String, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let starts_message = line.starts_with(|c: char| c.is_ascii_alphanumeric());
        match line.split_once('=') {
            Some((id, value)) if starts_message => {
                out.push((i + 1, id.trim().to_string(), value.to_string()));
            }
            _ => {
                if let Some(last) = out.last_mut() {
                    last.2.push(' ');
                    last.2.push_str(line.trim());
                }
            }
        }
    }
    for m in &mut out {
        m.2 = strip(&m.2, '{', '}');
    }
    out
}

#[test]
fn the_scanner_tells_sen_from_siz() {
    assert!(sen_forms("Oynat").is_empty());
    assert!(sen_forms("Baştan başla").is_empty());
    assert!(
        sen_forms("Sayılar katmanını kullan (4 token, gizli boyut 8, 2 kafa, TP 2)").is_empty()
    );
    assert!(sen_forms("1. dersle başla").is_empty());
    assert_eq!(
        sen_forms("Tahmin et: GPU 0 kaç bayt gönderecek?"),
        ["tahmin et"]
    );
    assert!(sen_forms("Tahmin edin: GPU 0 kaç bayt gönderecek?").is_empty());
    assert_eq!(
        sen_forms("Bir matrisi seçmek için üzerine tıkla: tamamı ya da sütunları."),
        ["tıkla"]
    );
    assert!(
        sen_forms("Bir matrisi seçmek için üzerine tıklayın: tamamı ya da sütunları.").is_empty()
    );
    assert_eq!(sen_forms("GPU'da senin planın"), ["senin"]);
    assert!(sen_forms("GPU'da sizin planınız").is_empty());
    assert_eq!(sen_forms("Önce satırları, sonra sütunları dene."), ["dene"]);
    // Word boundaries: inside other words and suffixed words nothing is found.
    assert!(sen_forms("Her GPU kendine ait kafaları tutar; bakar, bölünür, açıklar.").is_empty());
    assert!(sen_forms("Değerler, GPU'ları böler ve kullanılır; bulunur.").is_empty());
}

#[test]
fn turkish_messages_address_the_learner_as_siz() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lessons/i18n/tr");
    let mut problems = Vec::new();
    let mut files = 0;
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("lessons/i18n/tr") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "ftl") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).expect("a Fluent file");
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        for (line, id, value) in messages(&text) {
            count += 1;
            for form in sen_forms(&value) {
                problems.push(format!("{name}:{line}: {id}: \"{form}\" (sen)"));
            }
        }
    }
    assert!(files >= 5, "found {files} Fluent files in {dir:?}");
    assert!(count > 500, "read only {count} messages");
    assert!(
        problems.is_empty(),
        "the app addresses the learner as siz (rule at the top of tr/views.ftl):\n{}",
        problems.join("\n")
    );
}
