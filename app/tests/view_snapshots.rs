//! Every view as a learner at a desk sees it (1280×720, English, light) and as a class sees it on
//! a projector (1920×1080 pixels, Turkish, dark, presenter mode: 1.6× zoom, the navigation in one
//! row on top), rendered on the CPU (wgpu on Mesa's llvmpipe) and compared with the PNGs under
//! `tests/snapshots/`. Regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test
//! view_snapshots`; to look at every size, language and theme, run the `all_views` example.
//!
//! Work that runs off the UI thread is shown before it starts (Precision, Vocabulary, Train,
//! Serve), except Verify and the Planner, which start by themselves and are waited for. The
//! Collectives view is shown paused on its first round (it moves only while playing). Left out:
//! the GPU view (it shows the machine's CUDA libraries) and the Quiz (it draws its questions at
//! random; its snapshots are the exam's, `tests/exam.rs`).
//!
//! Behaviour of the Planner's config.json upload and of the Collectives' stepping is tested
//! here too, below the snapshots.

mod common;
use common::{gl_harness, press, shot_name, snapshot_options, wait_for};
use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotResults};
use tplab::app::{ThemeChoice, SIDE_BAR_WIDTH};
use tplab::lab::planner;
use tplab::lab::View;
use tplab::views::planner::Planner;
use tplab::TplabApp;
use tplab_engine::capacity::models::{ModelError, ModelPreset};
use tplab_lessons::Lang;

const VIEWS: [&str; 12] = [
    "playground",
    "step",
    "collectives",
    "timeline",
    "memory",
    "verify",
    "precision",
    "vocab",
    "train",
    "serve",
    "planner",
    "lessons",
];

/// One view at `size` window pixels; masks what depends on the machine.
fn shot(
    results: &mut SnapshotResults,
    view: &str,
    (w, h): (f32, f32),
    lang: Lang,
    theme: ThemeChoice,
    presenter: bool,
) {
    let mut app = TplabApp::default();
    app.set_theme(theme);
    app.shared.presenter = presenter;
    assert!(app.select(view), "no view {view}");
    let mut harness = common::gl_harness_pixels(app, (w, h), lang, view);
    common::settle_view(&mut harness, view);
    if !presenter {
        // The side bar lists every view, and views are added over time.
        harness.mask(egui::Rect::from_min_max(
            egui::pos2(0.0, 0.0),
            egui::pos2(SIDE_BAR_WIDTH + 2.0, h),
        ));
    }
    let name = format!("view_{}", shot_name(view, (w, h), lang, theme, presenter));
    harness.snapshot_options(&name, &snapshot_options());
    results.extend_harness(&mut harness);
}

#[test]
fn every_view_at_a_desk_and_on_a_projector() {
    let mut results = SnapshotResults::new();
    for view in VIEWS {
        shot(
            &mut results,
            view,
            (1280.0, 720.0),
            Lang::En,
            ThemeChoice::Light,
            false,
        );
        shot(
            &mut results,
            view,
            (1920.0, 1080.0),
            Lang::Tr,
            ThemeChoice::Dark,
            true,
        );
    }
    results.unwrap();
}

/// meta-llama/Meta-Llama-3-8B's `config.json`, as Hugging Face serves it.
const LLAMA3_8B_CONFIG: &str = r#"{
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.40.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
}
"#;

/// The planner's ranked layouts for these inputs, as (label, iteration seconds).
fn ranked(inputs: &planner::PlannerInputs) -> Vec<(String, f64)> {
    let r = planner::run_planner(inputs).expect("the planner runs");
    r.plan
        .ranked
        .iter()
        .map(|it| (it.layout.label(), it.iteration_time_s))
        .collect()
}

/// A Planner after "Load config.json…" read Llama 3 8B's config.
fn llama_planner() -> Planner {
    let mut p = Planner::default();
    p.load_config("config.json", LLAMA3_8B_CONFIG)
        .expect("a real config.json loads");
    p
}

/// The file the "Load config.json…" button reads goes through `Planner::load_config`: the real
/// Llama 3 8B config plans exactly as the Llama 3 8B preset (same shape from the engine's
/// importer), and the view then shows the file as the model.
#[test]
fn a_hugging_face_config_json_plans_for_its_model() {
    let p = llama_planner();
    let spec = p.inputs.model_spec();
    assert_eq!(
        (
            spec.layers,
            spec.hidden,
            spec.heads,
            spec.kv_heads,
            spec.ffn
        ),
        (32, 4096, 32, 8, 14336)
    );
    assert_eq!(spec.params(), ModelPreset::Llama3_8b.spec().params());
    let preset = planner::PlannerInputs {
        model: ModelPreset::Llama3_8b,
        ..Default::default()
    };
    let from_file = ranked(&p.inputs);
    assert!(!from_file.is_empty(), "Llama 3 8B fits on 64 A100s");
    assert_eq!(from_file, ranked(&preset));
    // The plan differs from the default model's (GPT-3 175B): the file's model was used.
    assert_ne!(from_file, ranked(&planner::PlannerInputs::default()));

    // The view plans for it and names it.
    let mut app = TplabApp::default();
    assert!(app.select("planner"));
    let state = p.save().expect("planner state");
    assert!(app.load_view_state("planner", &state));
    let mut harness = gl_harness(app, 1280.0, 720.0);
    wait_for(&mut harness, &["Why the winner wins"]);
    harness.get_by_label_contains("config.json: 32 layers, hidden 4096, 32 heads (8 KV)");
}

/// A bad file keeps the model planned for and says, in the learner's language, which rule it
/// breaks and what to do; nothing panics.
#[test]
fn a_bad_config_json_says_why_in_the_learners_language() {
    let mut p = llama_planner();
    let before = p.inputs.clone();
    let missing = LLAMA3_8B_CONFIG.replace("\"num_hidden_layers\": 32,", "");
    let e = p.load_config("config.json", &missing).unwrap_err();
    assert!(matches!(e, ModelError::MissingKey { .. }), "{e}");
    assert_eq!(p.inputs, before, "a bad file changes nothing");
    let en = p.config_error(Lang::En).expect("an error is shown");
    assert!(
        en.contains("'num_hidden_layers'") && en.contains("add it"),
        "{en}"
    );
    let tr = p.config_error(Lang::Tr).expect("an error is shown");
    assert!(
        tr.contains("'num_hidden_layers'") && tr.contains("anahtarı yok") && tr.contains("ekleyin"),
        "{tr}"
    );
    assert!(tr.contains("transformer bloğu sayısı"), "{tr}");
    for (text, rule) in [
        ("{not json", "geçerli bir JSON değil"),
        ("[1, 2]", "JSON nesnesi"),
        (
            &LLAMA3_8B_CONFIG.replace("\"hidden_size\": 4096", "\"hidden_size\": -1"),
            "negatif olmayan bir tam sayı",
        ),
        (
            &LLAMA3_8B_CONFIG.replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"),
            "32 sorgu kafası 5 KV kafasına gruplanamıyor",
        ),
        (&" ".repeat(2 << 20), "baytlık sınırın üstünde"),
    ] {
        assert!(p.load_config("config.json", text).is_err());
        let tr = p.config_error(Lang::Tr).expect("an error is shown");
        assert!(tr.contains(rule), "{tr} lacks {rule}");
        assert_eq!(p.inputs, before);
    }
    // A good file again clears the error.
    p.load_config("config.json", LLAMA3_8B_CONFIG)
        .expect("a real config.json loads");
    assert_eq!(p.config_error(Lang::Tr), None);
}

/// The Planner in Turkish after "config.json yükle…", the path `typed` and "Oku", as a learner
/// at a desk does it.
fn planner_reading(typed: &str) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    assert!(app.select("planner"));
    let mut harness = gl_harness(app, 1280.0, 720.0);
    tplab::i18n::set_lang(&harness.ctx, Lang::Tr);
    harness.run_steps(3);
    harness.get_by_label("config.json yükle…").click();
    harness.run_steps(2);
    harness.get_by_label("config.json dosyasının yolu").focus();
    harness.run_steps(1);
    harness
        .get_by_label("config.json dosyasının yolu")
        .type_text(typed);
    harness.run_steps(1);
    harness.get_by_label("Oku").click();
    harness.run_steps(2);
    harness
}

/// On the desktop the button opens a path field: the path of a config.json plans for its
/// model; a path that is not there says so in Turkish, naming the fix.
#[test]
fn the_desktop_reads_a_config_json_from_a_typed_path() {
    let dir = std::env::temp_dir().join(format!("tplab-planner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = dir.join("config.json");
    std::fs::write(&path, LLAMA3_8B_CONFIG).expect("the config is written");

    let harness = planner_reading(&dir.join("absent.json").display().to_string());
    harness.get_by_label_contains("absent.json: bulunamadı; yolu denetleyin");

    let mut harness = planner_reading(&path.display().to_string());
    wait_for(&mut harness, &["Kazanan neden kazanır"]);
    harness.get_by_label_contains("config.json: 32 katman, gizli boyut 4096");
    let state: serde_json::Value = serde_json::from_str(
        &harness
            .state()
            .view_state("planner")
            .expect("planner state"),
    )
    .expect("planner state is JSON");
    assert_eq!(state["inputs"]["custom"]["spec"]["layers"], 32);
    std::fs::remove_dir_all(&dir).ok();
}

/// Collectives: before round 1, then each arrow or clicker press is exactly one round and
/// pauses, round k drawn as the walkthrough draws it (its messages, the cells after them);
/// Space plays, and playing on from the last round starts again.
#[test]
fn collectives_count_rounds_from_one_and_one_press_is_one_round() {
    let mut app = TplabApp::default();
    assert!(app.select("collectives"));
    let mut harness = gl_harness(app, 1280.0, 720.0);
    harness.run_steps(3);
    harness.get_by_label_contains("Before round 1 · ");
    // Five presses in one frame: five rounds.
    for _ in 0..5 {
        harness.key_press(egui::Key::ArrowRight);
    }
    harness.run_steps(1);
    harness.get_by_label_contains("Round 5 of 6 · all-gather");
    // Then one press, one round: to the end (the full sum everywhere), past it (it stays), back
    // one, and Home to the start.
    for (key, shown) in [
        (egui::Key::PageDown, "All 6 rounds done"),
        (egui::Key::ArrowRight, "All 6 rounds done"),
        (egui::Key::PageUp, "Round 5 of 6 · "),
        (egui::Key::ArrowLeft, "Round 4 of 6 · "),
        (egui::Key::Home, "Before round 1 · "),
    ] {
        press(&mut harness, key, 1);
        harness.get_by_label_contains(shown);
        if shown.starts_with("All") {
            harness.get_by_label_contains("What each GPU holds after it: GPU 0: 0+1+2+3");
        }
    }
}

/// The Timeline at TP 12 on a 1280×720 projector: a legend of twelve GPUs would cover the bars,
/// so a key above the plot names compute, communication and the backward pass, and the rows are
/// named on the axis.
#[test]
fn the_timeline_at_tp_12_on_a_projector_keys_instead_of_a_legend() {
    let mut app = TplabApp::default();
    app.shared.presenter = true;
    let cfg = tplab_engine::config::Config {
        tp: 12,
        ..tplab_engine::config::Preset::Gpt2Small.config()
    };
    app.shared.scenario.set_config(cfg);
    assert!(app.select("timeline"));
    let mut harness = common::gl_harness_pixels(app, (1280.0, 720.0), Lang::En, "timeline");
    common::settle_view(&mut harness, "timeline");
    harness.get_by_label("compute (in each GPU's colour)");
    assert!(
        harness.query_by_label("GPU 11 compute").is_none(),
        "no legend line per GPU at TP 12 on a projector"
    );
    let name = format!(
        "view_timeline_tp12_{}",
        shot_name(
            "timeline",
            (1280.0, 720.0),
            Lang::En,
            ThemeChoice::Light,
            true
        )
        .trim_start_matches("timeline_")
    );
    harness.snapshot_options(&name, &snapshot_options());
}
