//! Words, not code, wherever a learner reads (issue 22, item 6): every view of
//! [`tplab::app::all_views`], in English and in Turkish, is walked as a learner sees it (the
//! walkthrough stepped through a whole layer and through the numbers layer, each algorithm's
//! rounds in the Collectives view, every lesson's Show me targets), every accessible text is
//! read, and none may be code: a dotted op name (`attn.core`, `mlp.f.bwd`), a snake_case
//! identifier (`bias_residual`), a known code string (`heads % tp`, `-> [`, a file-name label
//! `h768-a12-…`), or, in Turkish, an English word from the app's own vocabulary ("round",
//! "ring", "Show me", a preset's English name). The collectives keep their English names in
//! Turkish (lessons/README.md's glossary): `all-reduce` is Turkish text.

use egui_kittest::kittest::{By, NodeT, Queryable};
use egui_kittest::Harness;
use std::collections::BTreeSet;
use tplab::lab::ShowMe;
use tplab::TplabApp;
use tplab_lessons::Lang;

/// Dotted words that are not op names: abbreviations, file names and addresses a view may
/// show on purpose.
const DOTTED_ALLOWED: &[&str] = &[
    "e.g",
    "i.e",
    // Files the learner is told to load or install (the Planner, the GPU view).
    "config.json",
    "libcuda.so.1",
    "libcublas.so.13",
    "libnvrtc.so.13",
    "libnccl.so",
    "libnccl.so.2",
];

/// Underscored words that are mathematics, not code: the lessons' bias vectors and their
/// gradients, written as the lessons write the weights (`W_qkv`, `W_out`).
const SNAKE_ALLOWED: &[&str] = &["b_qkv", "b_out", "db_qkv", "db_out"];

/// Code that must never reach a learner, in any language (compared lower-cased).
const CODE_STRINGS: &[&str] = &[
    "bias_residual",
    "tensor_parallel_size",
    "heads % tp",
    "-> [",
    "h768-a12",
    "step view",
];

/// English words of the app's own vocabulary that Turkish mode must say in Turkish, whole words,
/// compared lower-cased, in every view.
const ENGLISH_TERMS: &[&str] = &[
    "show me",
    "step",
    "steps",
    "round",
    "rounds",
    "ring",
    "tree",
    "direct",
    "recursive",
    "halving",
    "doubling",
    "partial sum",
    "columns",
    "rows",
    "replicated",
    "next",
    "previous",
    "play",
    "pause",
    "forward",
    "backward",
    "tiny",
    "gpt2-small",
    "lesson",
    "layer",
    "memory",
    "finished",
];

/// Each view's own further terms (its controls and captions in English).
fn view_terms(view: &str) -> &'static [&'static str] {
    match view {
        "collectives" => &["chunk", "chunks", "fold-in", "fold-out", "broadcast"],
        "playground" => &["preset", "heads", "hidden"],
        "timeline" => &["compute", "communication"],
        "quiz" => &["question", "answer", "check", "exam"],
        "serve" => &["tokens per second", "sample"],
        "pipeline" => &[
            "stage",
            "stages",
            "micro-batch",
            "micro-batches",
            "bubble",
            "schedule",
            "chunk",
            "peak",
            "idle",
            "weight gradient",
        ],
        "cluster" => &[
            "node", "nodes", "stage", "replica", "unused", "heads", "links",
        ],
        "moe" => &[
            "expert", "experts", "router", "capacity", "dropped", "gate", "gates", "dispatch",
            "combine", "rows", "kept",
        ],
        _ => &[],
    }
}

/// The collective names Turkish keeps in English (the glossary), removed before the English
/// words are looked for ("reduce" in "all-reduce" is not an English word in Turkish text).
const KEPT_IN_ENGLISH: &[&str] = &[
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "send/recv",
];

/// The hardware catalogue's and the Planner's keys that a learner must read as names
/// (`a100-80gb` is "A100 80GB", `ib-ndr-400` "InfiniBand NDR 400 Gb/s", `gpt3-175b` "GPT-3
/// 175B"): every GPU, link and model preset whose key is not a word of its own display name
/// (`h200` is "H200").
fn catalogue_keys() -> Vec<String> {
    let cat = tplab_engine::capacity::hardware::Catalogue::default();
    let gpus = cat.gpus.iter().map(|g| (g.name.clone(), g.display_name()));
    let links = cat.links.iter().map(|l| (l.name.clone(), l.display_name()));
    let models = tplab_engine::capacity::models::ModelPreset::ALL
        .into_iter()
        .map(|m| (m.name().to_string(), m.display_name()));
    gpus.chain(links)
        .chain(models)
        .filter(|(key, shown)| !has_word(&shown.to_lowercase(), key))
        .map(|(key, _)| key)
        .collect()
}

/// Maximal runs of characters that can make a dotted or snake_case name.
fn runs(text: &str, also: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' || also.contains(&c) {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn code_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

/// Dotted op names in `text` (`\b[a-z_]+\.[a-z_]+(\.[a-z_]+)*\b`): two neighbouring parts of a
/// dotted run made of lower-case letters and underscores only.
fn dotted_names(text: &str) -> Vec<String> {
    runs(text, &['.'])
        .into_iter()
        .map(|r| r.trim_matches('.').to_string())
        .filter(|r| {
            let parts: Vec<&str> = r.split('.').collect();
            parts.windows(2).any(|w| code_word(w[0]) && code_word(w[1]))
                && !DOTTED_ALLOWED.iter().any(|a| r.eq_ignore_ascii_case(a))
        })
        .collect()
}

/// snake_case identifiers in `text` (`\b[a-z]+_[a-z_]+\b`).
fn snake_names(text: &str) -> Vec<String> {
    runs(text, &[])
        .into_iter()
        .filter(|w| {
            code_word(w)
                && w.starts_with(|c: char| c.is_ascii_lowercase())
                && w.find('_').is_some_and(|i| i + 1 < w.len())
                && !SNAKE_ALLOWED.contains(&w.as_str())
        })
        .collect()
}

/// `term` as a whole word (or words) of `lower`.
fn has_word(lower: &str, term: &str) -> bool {
    let word_char = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut from = 0;
    while let Some(i) = lower[from..].find(term) {
        let start = from + i;
        let end = start + term.len();
        let before = lower[..start].chars().next_back();
        let after = lower[end..].chars().next();
        // A Turkish suffix after an apostrophe ("ring'i") still makes the English word.
        if !before.is_some_and(word_char) && !after.is_some_and(word_char) {
            return true;
        }
        from = end;
    }
    false
}

/// What is wrong with one text a learner reads in `view`, in `lang`.
fn problems(text: &str, lang: Lang, view: &str) -> Vec<String> {
    let mut found = Vec::new();
    for d in dotted_names(text) {
        found.push(format!("dotted name `{d}`"));
    }
    for s in snake_names(text) {
        found.push(format!("snake_case `{s}`"));
    }
    let lower = text.to_lowercase();
    for c in CODE_STRINGS {
        if lower.contains(c) {
            found.push(format!("code `{c}`"));
        }
    }
    // A command line the learner types keeps the keys (`tplab serve --model llama3-70b`).
    if !lower.contains("tplab ") {
        for key in catalogue_keys() {
            if has_word(&lower, &key) {
                found.push(format!("catalogue key `{key}`"));
            }
        }
    }
    if lang == Lang::Tr {
        let mut plain = lower.clone();
        for k in KEPT_IN_ENGLISH {
            plain = plain.replace(k, " ");
        }
        for term in ENGLISH_TERMS.iter().chain(view_terms(view)) {
            if has_word(&plain, term) {
                found.push(format!("English `{term}`"));
            }
        }
    }
    found
}

/// Every accessible text on screen now: labels, values and descriptions.
fn screen_texts(harness: &Harness<'static, TplabApp>) -> Vec<String> {
    let mut out = Vec::new();
    for node in harness.query_all(By::new()) {
        let n = node.accesskit_node();
        for t in [n.label(), n.value(), n.description()]
            .into_iter()
            .flatten()
        {
            if !t.trim().is_empty() {
                out.push(t);
            }
        }
    }
    out
}

/// Collects what is wrong on screen into `found` as "view: problem in «text»" (once each).
struct Walk {
    harness: Harness<'static, TplabApp>,
    lang: Lang,
    found: BTreeSet<String>,
    texts_read: usize,
}

impl Walk {
    fn new(lang: Lang) -> Self {
        // Tall: what a scroll area would hide below the window is laid out and read too.
        let mut harness = Harness::builder()
            .with_size([1600.0, 3000.0])
            .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), TplabApp::default());
        tplab::i18n::set_lang(&harness.ctx, lang);
        harness.run_steps(2);
        Self {
            harness,
            lang,
            found: BTreeSet::new(),
            texts_read: 0,
        }
    }

    fn read(&mut self, what: &str) {
        let view = self.harness.state().active_id();
        for text in screen_texts(&self.harness) {
            self.texts_read += 1;
            for p in problems(&text, self.lang, view) {
                let short: String = text.chars().take(140).collect();
                self.found
                    .insert(format!("{:?} {what}: {p} in «{short}»", self.lang));
            }
        }
    }

    fn open(&mut self, view: &str) {
        assert!(self.harness.state_mut().select(view), "no view {view}");
        self.harness.run_steps(3);
    }

    fn press_through(&mut self, what: &str, presses: usize) {
        for _ in 0..presses {
            self.harness.key_press(egui::Key::PageDown);
            self.harness.run_steps(1);
            self.read(what);
        }
    }
}

/// Key presses that walk the whole trace of `cfg` in the walkthrough (one per round of a
/// collective, one per other step).
fn walk_presses(cfg: &tplab_engine::config::Config) -> usize {
    use tplab_engine::{collectives::CollectiveKind, trace::EventKind};
    let trace = tplab_engine::block::program::schedule(cfg).expect("Megatron's plan propagates");
    tplab::lab::walk::walk_steps(&trace)
        .iter()
        .map(|s| match trace.events[s.first_event].kind {
            EventKind::Collective {
                kind, algorithm, ..
            } if kind != CollectiveKind::Identity => {
                let e = &trace.events[s.first_event];
                tplab_engine::collectives::plan(
                    kind,
                    algorithm,
                    e.ranks.len(),
                    e.output[0] * e.output[1],
                    cfg.dtype.size_bytes(),
                )
                .map_or(1, |p| p.step_count().max(1))
            }
            _ => 1,
        })
        .sum()
}

fn walk_everything(lang: Lang) -> Walk {
    let mut w = Walk::new(lang);
    let ids: Vec<&str> = tplab::app::all_views().iter().map(|v| v.id()).collect();
    for id in &ids {
        w.open(id);
        w.read(id);
    }
    // A TP the heads cannot use: the error and its fixes.
    w.harness.state_mut().shared.scenario.set_tp(8);
    w.open("playground");
    w.read("playground (TP 8)");
    w.harness.state_mut().shared.scenario.set_tp(4);
    // The walkthrough, through a whole layer (its rounds too), then the numbers layer.
    w.open("step");
    let cfg = tplab_engine::config::Config {
        layers: 1,
        ..w.harness.state().shared.scenario.config().clone()
    };
    w.harness
        .state_mut()
        .shared
        .scenario
        .set_config(cfg.clone());
    w.harness.run_steps(2);
    w.press_through("step", walk_presses(&cfg));
    let numbers = tplab::views::step::numbers_config();
    w.harness
        .state_mut()
        .shared
        .scenario
        .set_config(numbers.clone());
    assert!(w
        .harness
        .state_mut()
        .load_view_state("step", r#"{"numbers":true,"position":0.0}"#));
    w.harness.run_steps(3);
    w.read("step (numbers)");
    w.press_through("step (numbers)", walk_presses(&numbers));
    // Each algorithm's rounds in the Collectives view, on 4 GPUs.
    w.harness
        .state_mut()
        .shared
        .scenario
        .set_config(tplab_engine::config::Config::default());
    for algorithm in ["ring", "recursive-halving-doubling", "tree", "direct"] {
        let state = format!(r#"{{"algorithm":"{algorithm}","ranks":4,"position":0.0}}"#);
        assert!(w.harness.state_mut().load_view_state("collectives", &state));
        w.open("collectives");
        w.read("collectives");
        w.press_through("collectives", 7);
    }
    // The Pipeline view's chart, hovered boxes aside, for every schedule (its question first),
    // and every cluster the Cluster view draws.
    w.open("pipeline");
    w.read("pipeline (question)");
    for schedule in ["gpipe", "1f1b", "interleaved", "zb-h1"] {
        let state =
            format!(r#"{{"schedule":"{schedule}","stages":4,"microbatches":8,"predict":false}}"#);
        assert!(w.harness.state_mut().load_view_state("pipeline", &state));
        w.open("pipeline");
        w.read(&format!("pipeline ({schedule})"));
    }
    let refused = r#"{"schedule":"interleaved","stages":4,"microbatches":6,"predict":false}"#;
    assert!(w.harness.state_mut().load_view_state("pipeline", refused));
    w.open("pipeline");
    w.read("pipeline (interleaved, 6 micro-batches)");
    for preset in tplab_lessons::CLUSTERS {
        for color_by in ["tp", "stage", "replica"] {
            let state = format!(r#"{{"preset":"{preset}","color_by":"{color_by}"}}"#);
            assert!(w.harness.state_mut().load_view_state("cluster", &state));
            w.open("cluster");
            w.read(&format!("cluster ({preset})"));
        }
    }
    // Verify's finished run (it starts when the view opens; the walk waits for its verdict):
    // the scenario, the worst tensor and the collectives in words.
    w.harness
        .state_mut()
        .shared
        .scenario
        .set_config(tplab_engine::config::Config::default());
    w.open("verify");
    let verdict = tplab::i18n::t(w.lang, "vf-passed");
    let verdict = verdict.split(':').next().unwrap_or_default().to_string();
    let started = std::time::Instant::now();
    while w.harness.query_by_label_contains(&verdict).is_none() {
        assert!(
            started.elapsed().as_secs() < 300,
            "Verify's run did not finish in 300 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
        w.harness.run_steps(1);
    }
    w.read("verify (finished)");
    // The MoE view: every step of each preset (the dispatch's question first), and a refusal.
    for preset in tplab::views::moe::Preset::ALL {
        for step in 0..tplab::views::moe::STEPS {
            let mut view = tplab::views::moe::Moe::with_preset(preset);
            view.position = step as f32;
            view.predict = step == tplab::views::moe::DISPATCH_STEP;
            let json = serde_json::to_string(&view).expect("the view's state serialises");
            assert!(w.harness.state_mut().load_view_state("moe", &json));
            w.open("moe");
            w.read(&format!("moe ({preset:?}, step {})", step + 1));
        }
    }
    for refused in [
        r#"{"ep":3}"#,
        r#"{"etp":3}"#,
        r#"{"experts":2,"ep":2,"top_k":3}"#,
    ] {
        assert!(w.harness.state_mut().load_view_state("moe", refused));
        w.open("moe");
        w.read("moe (refused)");
    }
    // Every lesson's Show me targets, as the buttons open them.
    let catalog = tplab_lessons::Catalog::embedded().expect("the embedded lessons load");
    let targets: Vec<ShowMe> = catalog.show_me_targets().map(|(_, t)| t.clone()).collect();
    for target in &targets {
        w.harness.state_mut().show_me(target);
        w.harness.run_steps(3);
        let what = format!("show me {}", target.view.name());
        w.read(&what);
    }
    w
}

#[test]
fn the_checks_find_code_and_english_in_sample_text() {
    // The patterns themselves: each finds what it is for and nothing in good sentences.
    assert_eq!(dotted_names("attn.g -> [128, 768]"), ["attn.g"]);
    assert_eq!(dotted_names("at mlp.f.bwd."), ["mlp.f.bwd"]);
    assert!(dotted_names("0.5 GiB, e.g. a ring. Next").is_empty());
    assert_eq!(snake_names("the bias_residual op"), ["bias_residual"]);
    assert!(snake_names("GPU_0 and __init and all-reduce, W_qkv and b_qkv").is_empty());
    assert!(problems("sum of 4 partial sums", Lang::En, "step").is_empty());
    assert!(!problems("Tur 3 / 6 · ring", Lang::Tr, "collectives").is_empty());
    assert!(problems("Tur 3 / 6 · all-reduce'u", Lang::Tr, "collectives").is_empty());
    assert!(!problems("heads % tp == 0", Lang::En, "playground").is_empty());
    // Catalogue keys, not names: in both languages, and only the keys.
    assert_eq!(catalogue_keys().len(), 24, "{:?}", catalogue_keys());
    for key in [
        "GPU: a100-80gb",
        "ib-ndr-400 between nodes",
        "gpt3-175b on 64 GPUs",
    ] {
        for lang in [Lang::En, Lang::Tr] {
            assert!(!problems(key, lang, "planner").is_empty(), "{key}");
        }
    }
    for name in [
        "A100 80GB",
        "InfiniBand NDR 400 Gb/s",
        "GPT-3 175B",
        "H200, NVLink 4",
    ] {
        assert!(problems(name, Lang::En, "planner").is_empty(), "{name}");
    }
    assert!(problems("tplab plan --model gpt3-175b", Lang::En, "lessons").is_empty());
}

#[test]
fn every_view_in_english_and_turkish_shows_words_not_code() {
    let mut report = Vec::new();
    for lang in [Lang::En, Lang::Tr] {
        let w = walk_everything(lang);
        // The walk read the app, not an empty screen.
        assert!(w.texts_read > 2000, "{lang:?}: {} texts read", w.texts_read);
        report.extend(w.found);
    }
    assert!(
        report.is_empty(),
        "{} things a learner reads are code or English:\n{}",
        report.len(),
        report.join("\n")
    );
}
