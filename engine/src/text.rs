//! Text from outside files shown safely on a terminal.
//!
//! A string read from a file (a config.json's `model_type`, a hardware file's link name, a
//! certificate's record) may hold control characters: an escape sequence sets a terminal's
//! title or clears its screen, a bidirectional override makes text display as something else.
//! Every such string is shown through [`escape_unsafe`] (one line: each unsafe character as
//! `\u{..}`) or [`escape_unsafe_keep_lines`] (messages, tables and JSON: as `\uXXXX`).

/// Whether `c` is a control, text-direction or invisible formatting character: one that could
/// make text display as something other than what it is (the characters a certificate name may
/// not hold).
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c as u32,
            0x00AD            // soft hyphen
            | 0x061C          // Arabic letter mark
            | 0x180E          // Mongolian vowel separator
            | 0x200B..=0x200F // zero-width space/joiners, LRM, RLM
            | 0x2028..=0x202E // line/paragraph separators, bidi embeddings and overrides
            | 0x2060..=0x2069 // word joiner, invisible operators, bidi isolates
            | 0x206A..=0x206F // deprecated format characters
            | 0xFEFF          // zero-width no-break space
            | 0xFFF9..=0xFFFB // interlinear annotations
            | 0xE0000..=0xE007F // tag characters
        )
}

/// `text` with every [`is_unsafe_char`] written as `\u{..}` (newlines too: one line stays one
/// line).
pub fn escape_unsafe(text: &str) -> String {
    escape(text)
}

/// Whole messages and tables: every [`is_unsafe_char`] but newline and tab written as `\u001b`
/// (four hex digits, a surrogate pair above U+FFFF), the form a JSON string uses, so `--json`
/// output stays valid JSON that decodes to the original text.
pub fn escape_unsafe_keep_lines(text: &str) -> String {
    if !text.chars().any(is_unsafe_char) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe_char(c) && c != '\n' && c != '\t' {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", u));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Words (runs without whitespace) longer than this many characters are shortened in a
/// message by [`shorten_long_words`].
pub const LONGEST_WORD_SHOWN: usize = 120;

/// `text` with every run of non-whitespace longer than [`LONGEST_WORD_SHOWN`] characters cut to
/// its first and last 40 characters and its length: an error that quotes a 5,000-character
/// argument (`--model xxxx…`) names it without echoing it whole, and a long path keeps its start
/// and its file name.
pub fn shorten_long_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4096));
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let n = word.chars().count();
        if n > LONGEST_WORD_SHOWN {
            let head: String = word.chars().take(40).collect();
            let tail: String = word.chars().skip(n - 40).collect();
            out.push_str(&format!("{head}…{tail} ({n} characters)"));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Parses JSON text from outside (a `config.json`), refusing an object that names a key twice:
/// serde_json (and Python's `json`) would keep the last silently, so that
/// `{"num_hidden_layers": 2, …, "num_hidden_layers": 61}` would be read as one of two models
/// without a word.
pub fn parse_json_unique_keys(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::from_str::<UniqueKeys>(text).map(|u| u.0)
}

/// A JSON value whose objects have unique keys (see [`parse_json_unique_keys`]).
struct UniqueKeys(serde_json::Value);

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(v.into()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(v.into()))
    }
    fn visit_str<E>(self, v: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(v.into()))
    }
    fn visit_string<E>(self, v: String) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(v.into()))
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(serde_json::Value::Null))
    }
    fn visit_none<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys(serde_json::Value::Null))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        let mut items = Vec::new();
        while let Some(UniqueKeys(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(UniqueKeys(serde_json::Value::Array(items)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key \"{}\" appears twice in one object; keep one (a reader would \
                     silently take the last)",
                    escape_unsafe(&key)
                )));
            }
            let UniqueKeys(v) = map.next_value()?;
            object.insert(key, v);
        }
        Ok(UniqueKeys(serde_json::Value::Object(object)))
    }
}

fn escape(text: &str) -> String {
    if !text.chars().any(is_unsafe_char) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_with_a_key_twice_is_refused_and_other_json_reads_as_serde_json_does() {
        let twice = r#"{"model_type": "llama", "num_hidden_layers": 2, "num_hidden_layers": 61}"#;
        let e = parse_json_unique_keys(twice).unwrap_err().to_string();
        assert!(e.contains("\"num_hidden_layers\" appears twice"), "{e}");
        let nested = r#"{"text_config": {"a": 1, "a": 1}}"#;
        assert!(
            parse_json_unique_keys(nested).is_err(),
            "nested objects too"
        );
        let ok = r#"{"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": {"a": 1}}"#;
        assert_eq!(
            parse_json_unique_keys(ok).unwrap(),
            serde_json::from_str::<serde_json::Value>(ok).unwrap()
        );
        assert!(parse_json_unique_keys("{\"a\": 1,}").is_err());
    }

    #[test]
    fn long_words_are_shortened_with_their_length_and_the_rest_is_kept() {
        let long = "x".repeat(5000);
        let msg = format!("unknown model preset '{long}'; known presets: gpt3-175b, llama3-8b");
        let shown = shorten_long_words(&msg);
        assert!(shown.len() < 200, "{shown}");
        assert!(shown.contains("(5003 characters)"), "{shown}");
        assert!(shown.starts_with("unknown model preset 'xxx"), "{shown}");
        assert!(
            shown.ends_with(" known presets: gpt3-175b, llama3-8b"),
            "{shown}"
        );
        let path = format!("/home/{}/config.json", "d".repeat(200));
        assert!(
            shorten_long_words(&path).contains("/config.json ("),
            "a path keeps its name"
        );
        let plain = "line one\n  line two, with 'quotes'";
        assert_eq!(shorten_long_words(plain), plain);
    }

    #[test]
    fn escapes_control_and_direction_characters_only() {
        assert_eq!(escape_unsafe("Şule Öztürk 李"), "Şule Öztürk 李");
        assert_eq!(
            escape_unsafe("gpt\u{1b}]0;owned\u{7}\u{1b}[2J"),
            "gpt\\u{1b}]0;owned\\u{7}\\u{1b}[2J"
        );
        assert_eq!(escape_unsafe("a\u{202E}b\nc"), "a\\u{202e}b\\u{a}c");
        assert_eq!(
            escape_unsafe_keep_lines("a\tb\nc\u{1b}\u{9b}\u{E0041}"),
            "a\tb\nc\\u001b\\u009b\\udb40\\udc41"
        );
        // Inside a JSON string the escapes decode back to the original text.
        let json = escape_unsafe_keep_lines("{\"name\":\"x\u{202e}\u{9b}\"}");
        assert_eq!(json, "{\"name\":\"x\\u202e\\u009b\"}");
        let once = escape_unsafe("\u{1b}[31m");
        assert_eq!(escape_unsafe(&once), once, "escaped text is safe");
    }
}
