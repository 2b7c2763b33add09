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
