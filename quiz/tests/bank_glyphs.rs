//! Every character of every question (banks and generated kinds, both languages, prompts,
//! choices, feedback, explanations, units) can be drawn by the app's text font, Ubuntu-Light
//! (egui's default proportional font; egui-icons also checked). The emoji fallbacks are left
//! out on purpose: question text should not depend on an emoji font. A missing glyph would show
//! as a box in the Quiz view, or panic the app's kittest tests.

use ab_glyph::{Font, FontRef};
use tplab_quiz::bank::Bank;
use tplab_quiz::generate::{self, GenKind};
use tplab_quiz::{Lang, Question, QuestionKind};

fn texts(q: &Question) -> Vec<String> {
    let mut out = Vec::new();
    for lang in Lang::ALL {
        out.push(q.prompt(lang).to_string());
        out.push(q.explanation(lang).to_string());
        for (i, c) in q.choices().iter().enumerate() {
            out.push(c.get(lang).to_string());
            if let Some(f) = q.choice_feedback(i, lang) {
                out.push(f.to_string());
            }
        }
        match &q.kind {
            QuestionKind::Ordering { items } => {
                out.extend(items.iter().map(|i| i.get(lang).to_string()))
            }
            QuestionKind::Numeric { unit: Some(u), .. } => out.push(u.get(lang).to_string()),
            _ => {}
        }
    }
    out
}

#[test]
fn every_question_character_has_a_glyph() {
    let fonts: Vec<FontRef<'static>> = [
        epaint_default_fonts::UBUNTU_LIGHT,
        epaint_default_fonts::EGUI_ICONS,
    ]
    .into_iter()
    .map(|bytes| FontRef::try_from_slice(bytes).expect("egui's bundled fonts parse"))
    .collect();
    let mut questions = Bank::embedded().expect("shipped banks load").questions;
    for kind in GenKind::ALL {
        questions.extend((0..40).map(|seed| generate::generate(kind, seed)));
    }
    let mut missing = std::collections::BTreeMap::<char, String>::new();
    for q in &questions {
        for t in texts(q) {
            for c in t.chars().filter(|c| !c.is_whitespace()) {
                if fonts.iter().all(|f| f.glyph_id(c).0 == 0) {
                    missing.entry(c).or_insert_with(|| q.id.clone());
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "characters no installed font can draw (char: first question using it): {missing:?}"
    );
}
