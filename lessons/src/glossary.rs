//! One Turkish term per concept, across the lessons, the quiz and the app (the glossary of
//! `lessons/README.md`), and a finder for the variants the glossary rejects.
//!
//! Matching is on whole words, lower-cased the Turkish way (`I` -> `ı`, `İ` -> `i`), so a
//! rejected stem is caught with any suffix (`balon`, `balonu`, `balonlu`) while words that only
//! begin the same way are not: `başına` ("per") is not `başlık` ("head"), `girdiğini` ("that
//! entered") is not `girdi` ("input"), `yazılım yığını` (the software stack) is not `yığın`
//! (a batch). Code is skipped: Markdown fences and `inline code`, Fluent `{ $placeables }`.

/// One concept: its English name, the Turkish term to use, and the variants refused.
#[derive(Debug, Clone, Copy)]
pub struct Term {
    /// The concept, in English.
    pub concept: &'static str,
    /// The Turkish term the course uses.
    pub use_tr: &'static str,
    /// The refused variants, as the README's glossary lists them.
    pub rejected: &'static str,
    /// Whether `word` (with the words before and after it, lower case, "" at the ends) is a
    /// rejected variant.
    matches: fn(prev: &str, word: &str, next: &str) -> bool,
}

/// The glossary. `lessons/README.md` lists the same terms (a test checks it).
pub const GLOSSARY: &[Term] = &[
    Term {
        concept: "LM head",
        use_tr: "dil modeli kafası",
        rejected: "dil modeli başlığı, LM başlığı",
        matches: |prev, w, _| (prev == "lm" || prev == "modeli") && w.starts_with("başl"),
    },
    Term {
        concept: "(attention) head",
        use_tr: "kafa (KV kafası, sorgu kafası)",
        rejected: "başlık, baş",
        matches: |prev, w, _| {
            let baslik = w.starts_with("başlı")
                && !w.starts_with("başlıca") // "main"
                && !w.starts_with("başlıy"); // "begins"
            let bas = matches!(prev, "kv" | "sorgu" | "dikkat" | "anahtar" | "değer")
                && w.starts_with("baş");
            baslik || bas
        },
    },
    Term {
        concept: "token",
        use_tr: "token (token'lar)",
        rejected: "belirteç",
        matches: |_, w, _| {
            w.starts_with("belirteç") || (w.starts_with("belirtec") && !w.starts_with("belirtecek"))
        },
    },
    Term {
        concept: "batch",
        use_tr: "parti (mikro parti)",
        rejected: "yığın (kept only for the software stack: yazılım yığını)",
        matches: |prev, w, _| w.starts_with("yığın") && prev != "yazılım",
    },
    Term {
        concept: "input",
        use_tr: "giriş",
        rejected: "girdi",
        matches: |_, w, _| w.starts_with("girdi") && !w.starts_with("girdiğ"),
    },
    Term {
        concept: "projection",
        use_tr: "projeksiyon",
        rejected: "izdüşüm",
        matches: |_, w, _| w.starts_with("izdüşüm"),
    },
    Term {
        concept: "pipeline bubble",
        use_tr: "boşluk (ardışık düzen boşluğu)",
        rejected: "balon",
        matches: |_, w, _| w.starts_with("balon"),
    },
    Term {
        concept: "serving (inference)",
        use_tr: "çıkarım",
        rejected: "sunum (kept only for presenter mode: Sunum modu)",
        matches: |_, w, next| w.starts_with("sunum") && !next.starts_with("mod"),
    },
    Term {
        concept: "interleaved",
        use_tr: "dönüşümlü",
        rejected: "iç içe",
        matches: |prev, w, _| prev == "iç" && w == "içe",
    },
    Term {
        concept: "one-shot (all-reduce)",
        use_tr: "tek adımlı",
        rejected: "tek atımlık",
        matches: |_, w, _| w.starts_with("atımlı"),
    },
    Term {
        concept: "where data is kept",
        use_tr: "bulunur, tutulur",
        rejected: "yaşar",
        matches: |_, w, _| matches!(w, "yaşar" | "yaşıyor" | "yaşayan" | "yaşadığı"),
    },
    Term {
        concept: "pipeline (parallelism)",
        use_tr: "ardışık düzen",
        rejected: "pipeline (allowed once as a gloss after ardışık düzen)",
        // Also the English view title a Show me description glosses after the Turkish one:
        // `Ardışık düzen görünümü (Pipeline)`.
        matches: |prev, w, _| w == "pipeline" && prev != "düzen" && prev != "görünümü",
    },
    Term {
        concept: "optimizer",
        use_tr: "optimize edici",
        rejected: "optimizer",
        matches: |_, w, _| w.starts_with("optimizer"),
    },
    Term {
        concept: "iteration",
        use_tr: "yineleme",
        rejected: "iterasyon",
        matches: |_, w, _| w.starts_with("iterasyon"),
    },
    Term {
        concept: "recursive doubling",
        use_tr: "ikiye katlama",
        rejected: "ikileme",
        matches: |_, w, _| w.starts_with("ikileme"),
    },
    Term {
        concept: "padding row",
        use_tr: "dolgu satırı",
        rejected: "doldurma satırı",
        matches: |_, w, next| w == "doldurma" && next.starts_with("satır"),
    },
    Term {
        concept: "the Verify view",
        use_tr: "Doğrulama görünümü",
        rejected: "Verify görünümü",
        matches: |_, w, next| w == "verify" && next.starts_with("görünüm"),
    },
    Term {
        concept: "rank (one GPU of a group)",
        use_tr: "rank",
        rejected: "sıra",
        // `sıralar üzerinden ortalama` for "mean over ranks"; `sıra` alone is also "order".
        matches: |_, w, next| w.starts_with("sıralar") && next.starts_with("üzerinden"),
    },
    Term {
        concept: "output (a tensor)",
        use_tr: "çıktı (çıkış only in çıkış projeksiyonu, çıkış katmanı)",
        rejected: "çıkış",
        matches: |_, w, next| {
            w.starts_with("çıkış")
                && !next.starts_with("proj") // projeksiyonu, or "proj." in a strip's box
                && !next.starts_with("katman")
        },
    },
    Term {
        concept: "decode (generating one token)",
        use_tr: "token üretimi (decode)",
        rejected: "kod çözme (reads as decryption)",
        matches: |prev, w, _| prev == "kod" && w.starts_with("çöz"),
    },
    Term {
        concept: "Mixture of Experts",
        use_tr: "Uzmanların Karması (MoE), as the guide says",
        rejected: "uzmanlar karışımı",
        matches: |prev, w, _| prev.starts_with("uzman") && w.starts_with("karışım"),
    },
    Term {
        concept: "(security, observability) gaps",
        use_tr: "eksiklikler",
        rejected: "boşluklar (boşluk is the pipeline bubble)",
        matches: |prev, w, _| prev.starts_with("gözlemlenebilirlik") && w.starts_with("boşluk"),
    },
    Term {
        concept: "device mesh",
        use_tr: "cihaz ızgarası (mesh)",
        rejected: "ağ (ağ is the network)",
        matches: |prev, w, next| {
            matches!(w, "ağ" | "ağı" | "ağın")
                && (prev == "cihaz" || next.starts_with("eksen") || next.starts_with("boyut"))
        },
    },
    Term {
        concept: "guardrail (a label)",
        use_tr: "önlem",
        rejected: "korkuluk",
        matches: |_, w, _| w.starts_with("korkuluk"),
    },
    Term {
        concept: "a unit of time in a schedule",
        use_tr: "birim süre",
        rejected: "tık",
        matches: |_, w, _| matches!(w, "tık" | "tıklık" | "tıkta" | "tıkı"),
    },
    Term {
        concept: "tiles (covers exactly)",
        use_tr: "tam olarak kaplar, paylaşır",
        rejected: "döşer",
        matches: |_, w, _| w.starts_with("döşe"),
    },
    Term {
        concept: "plain multi-head attention",
        use_tr: "klasik çok kafalı dikkat",
        rejected: "düz çok kafalı dikkat",
        matches: |prev, w, _| prev == "düz" && w == "çok",
    },
    Term {
        concept: "identity (f forward, g backward)",
        use_tr: "birim dönüşüm, birim işlem (identity)",
        rejected: "birim alone",
        matches: |prev, w, next| {
            matches!(w, "birim" | "birimdir")
                && !next.starts_with("dönüşüm")
                && !next.starts_with("işlem")
                && (matches!(prev, "geçişte" | "f" | "g" | "kopyalar" | "reduce" | "önce")
                    || next == "identity")
        },
    },
    Term {
        concept: "bias (of a linear layer)",
        use_tr: "bias (bias'ı, bias gradyanı), a loanword as token is",
        rejected: "yanlılık, sapma terimi, ön yargı",
        matches: |prev, w, next| {
            w.starts_with("yanlılı")
                || (w.starts_with("sapma")
                    && (next.starts_with("terim") || next.starts_with("vektör")))
                || (prev == "ön" && w.starts_with("yargı"))
        },
    },
    Term {
        concept: "vocabulary, hidden size, padding multiple",
        use_tr: "sözlük (boyutu), gizli boyut, doldurma katı",
        rejected: "vocab, hidden, granularity",
        matches: |_, w, _| matches!(w, "vocab" | "hidden" | "granularity"),
    },
];

/// A rejected variant found in Turkish text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// 1-based line.
    pub line: usize,
    /// The word as written (lower case).
    pub word: String,
    pub concept: &'static str,
    pub use_tr: &'static str,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: '{}' for {}: write '{}' (the glossary in lessons/README.md)",
            self.line, self.word, self.concept, self.use_tr
        )
    }
}

/// Rejected variants in plain text (a title, a label, a question).
pub fn rejected_in_text(text: &str) -> Vec<Rejected> {
    scan(
        text.lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.to_string())),
    )
}

/// Rejected variants in Markdown, outside fenced code blocks and `inline code`.
pub fn rejected_in_markdown(text: &str) -> Vec<Rejected> {
    let mut prose = Vec::new();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            prose.push((i + 1, strip_between(line, '`', '`')));
        }
    }
    scan(prose)
}

/// Rejected variants in a Fluent file's messages, outside comments and `{ placeables }`.
pub fn rejected_in_fluent(text: &str) -> Vec<Rejected> {
    let mut values = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        // The message's value: after `id =` on its first line, the whole of a continuation line.
        let value = match line.split_once('=') {
            Some((_, v)) if line.starts_with(|c: char| c.is_alphanumeric() || c == '-') => v,
            _ => line,
        };
        let value = strip_between(&strip_between(value, '{', '}'), '`', '`');
        values.push((i + 1, value));
    }
    scan(values)
}

/// `line` with every `open … close` span replaced by a space.
fn strip_between(line: &str, open: char, close: char) -> String {
    let mut out = String::with_capacity(line.len());
    let mut inside = false;
    for c in line.chars() {
        if !inside && c == open {
            inside = true;
            out.push(' ');
        } else if inside && c == close {
            inside = false;
        } else if !inside {
            out.push(c);
        }
    }
    out
}

/// Turkish lower case: dotted and dotless i kept apart.
fn lower_tr(c: char) -> impl Iterator<Item = char> {
    let special = match c {
        'I' => Some('ı'),
        'İ' => Some('i'),
        _ => None,
    };
    special
        .into_iter()
        .chain(c.to_lowercase().filter(move |_| special.is_none()))
        // `İ`.to_lowercase() is "i̇" (i + combining dot): never reached, handled above.
        .filter(|&c| c != '\u{307}')
}

/// Lower-case words of a line: runs of letters and digits; an apostrophe ends a word and drops
/// its suffix (`token'lar` is `token`).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut suffix = false;
    for c in line.chars() {
        if c.is_alphanumeric() {
            if !suffix {
                cur.extend(lower_tr(c));
            }
        } else if (c == '\'' || c == '’') && !cur.is_empty() {
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

/// The rejected variants of `lines` (line number, text); a word's neighbours may be on the
/// lines before and after it (a paragraph wraps: `dil modeli` / `başlığı`).
fn scan(lines: impl IntoIterator<Item = (usize, String)>) -> Vec<Rejected> {
    let ws: Vec<(usize, String)> = lines
        .into_iter()
        .flat_map(|(n, l)| words(&l).into_iter().map(move |w| (n, w)))
        .collect();
    let mut found = Vec::new();
    for (i, (line, w)) in ws.iter().enumerate() {
        let prev = if i > 0 { ws[i - 1].1.as_str() } else { "" };
        let next = ws.get(i + 1).map_or("", |(_, w)| w.as_str());
        if let Some(t) = GLOSSARY.iter().find(|t| (t.matches)(prev, w, next)) {
            found.push(Rejected {
                line: *line,
                word: w.clone(),
                concept: t.concept,
                use_tr: t.use_tr,
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_found(text: &str) -> Vec<String> {
        rejected_in_text(text).into_iter().map(|r| r.word).collect()
    }

    #[test]
    fn rejected_variants_are_found_with_their_suffixes() {
        assert_eq!(
            words_found(
                "12 başlık, KV başlığı, sorgu başlarının, LM başlığı, belirteçler, Belirteci, \
                 yığın, mikro yığında, girdisi, izdüşümü, balonun, Sunumda, iç içe, tek atımlık, \
                 GPU'da yaşar, pipeline aşaması, optimizer, iterasyon, ikileme, doldurma satırı, \
                 Verify görünümü, vocab'ı, hidden, sıralar üzerinden ortalama, fc1 çıkışı, kod \
                 çözme, uzmanlar karışımı, gözlemlenebilirlik boşlukları, o ağ ekseni, Korkuluk:, \
                 bir tık, döşer, düz çok kafalı dikkat, ileri geçişte birim, dil modeli başlığı"
            ),
            [
                "başlık",
                "başlığı",
                "başlarının",
                "başlığı",
                "belirteçler",
                "belirteci",
                "yığın",
                "yığında",
                "girdisi",
                "izdüşümü",
                "balonun",
                "sunumda",
                "içe",
                "atımlık",
                "yaşar",
                "pipeline",
                "optimizer",
                "iterasyon",
                "ikileme",
                "doldurma",
                "verify",
                "vocab",
                "hidden",
                "sıralar",
                "çıkışı",
                "çözme",
                "karışımı",
                "boşlukları",
                "ağ",
                "korkuluk",
                "tık",
                "döşer",
                "çok",
                "birim",
                "başlığı"
            ]
        );
        let lm = rejected_in_text("LM başlığı");
        assert_eq!(lm[0].concept, "LM head", "{lm:?}");
        // Bias stays the loanword; the drift a monitor watches (sapmalar) is another concept.
        assert_eq!(
            words_found("fc1'in yanlılığı, sapma terimi, ön yargısı; hatalar ve sapmalar"),
            ["yanlılığı", "sapma", "yargısı"]
        );
    }

    #[test]
    fn words_that_only_begin_the_same_way_are_not_found() {
        let ok = "GPU başına, katman başına; her GPU bir parçayla başlar ve başlıca iş başlıyor. \
                  Dil modeli kafası, dil modeli kafasının ağırlıkları. Sınava kimin girdiğini. \
                  Çıkış projeksiyonu, çıkış katmanı, çıktı. Sıralar değişir, sırayla. Ağ üzerinden, \
                  ağın bant genişliği. Tıklayın. Birim dönüşüm, birim işlem, 13 birimin 10'u, \
                  doğal birim. Ardışık düzen boşlukları. Uzmanların Karması. Kodu çözümler. \
                  Bugünkü yazılım yığını, yazılım yığınının parçası. Sunum modu (F11). Kalibrasyon \
                  yaşamı. Ardışık düzen (pipeline) paralelliği. Ardışık düzen görünümü (Pipeline). İç yüzey, içeri. Belirtecek. \
                  Doldurma katı 128. Kafa, token'lar, parti, giriş, projeksiyon, boşluk, çıkarım.";
        assert_eq!(words_found(ok), Vec::<String>::new());
    }

    #[test]
    fn turkish_capitals_lower_case_the_turkish_way() {
        assert_eq!(words("BAŞLIK İÇ Işık"), ["başlık", "iç", "ışık"]);
        assert_eq!(words_found("BAŞLIK"), ["başlık"]);
    }

    #[test]
    fn code_and_placeables_are_skipped() {
        let md =
            "Metin `hidden_size` ve `vocab`.\n```text\nhidden = 768\n```\nAma hidden burada.\n";
        let found = rejected_in_markdown(md);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].word.as_str()), (5, "hidden"));
        let ftl = "# hidden in a comment\nvo-intro = gizli boyut { $hidden }, sözlük { $vocab }\n\
                   vo-x = hidden { $n }\n    devam: vocab\n";
        let found: Vec<usize> = rejected_in_fluent(ftl).iter().map(|r| r.line).collect();
        assert_eq!(found, [3, 4]);
    }

    /// The README's glossary names every term (concept and the Turkish to use).
    #[test]
    fn the_readme_lists_the_glossary() {
        let readme = include_str!("../README.md");
        for t in GLOSSARY {
            let row = format!("| {} | {} | {} |", t.concept, t.use_tr, t.rejected);
            assert!(
                readme.contains(&row),
                "lessons/README.md lacks the row {row}"
            );
        }
    }
}
