//! The keyboard reaches everything a learner needs: challenge 1 of the design lab solved and the
//! walkthrough stepped to the first all-reduce with key events only (Tab to move the focus, Enter
//! or Space to press, the arrow keys to step); no click, no pointer.

mod common;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::Harness;
use tplab::lab::ShowMe;
use tplab::TplabApp;
use tplab_engine::block::design::{challenge, NamedPlan, Split, Weight};
use tplab_lessons::{Lang, View};

fn label(h: &Harness<'static, TplabApp>) -> Option<String> {
    h.query_all_by(|n| n.is_focused())
        .next()
        .and_then(|n| n.accesskit_node().label())
}

/// Tabs until the focus is on `target` (at most 400 presses), then presses Enter.
fn tab_to_and_press(h: &mut Harness<'static, TplabApp>, target: &str) {
    tab_to_and_press_with(h, target, egui::Key::Enter);
}

/// Tabs until the focus is on `target`, then presses `key` (Enter or Space: both press a
/// focused button; Space plays the walkthrough only when nothing has the focus).
fn tab_to_and_press_with(h: &mut Harness<'static, TplabApp>, target: &str, key: egui::Key) {
    for _ in 0..400 {
        if label(h).as_deref() == Some(target) {
            h.key_press(key);
            h.run_steps(3);
            return;
        }
        h.key_press(egui::Key::Tab);
        h.run_steps(1);
    }
    panic!(
        "Tab never reached \"{target}\" (last focus: {:?})",
        label(h)
    );
}

fn matrix(w: Weight, s: Split) -> String {
    format!(
        "{} · {}",
        tplab::widgets::plan::weight_words(Lang::En, w),
        tplab::widgets::plan::split_words(Lang::En, s)
    )
}

#[test]
fn challenge_one_is_solved_and_the_walkthrough_stepped_with_the_keyboard_only() {
    let mut app = TplabApp::default();
    // The lesson link opens the challenge (as `tplab --challenge 1` does); from there, keys.
    app.show_me(&ShowMe {
        view: View::Design,
        challenge: Some(1),
        ..Default::default()
    });
    let mut h = Harness::builder()
        .with_size([1600.0, 1000.0])
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    tplab::i18n::set_lang(&h.ctx, Lang::En);
    h.run_steps(3);
    let c = challenge::stage(1).unwrap_or_else(|e| panic!("{e}"));
    let want = NamedPlan::Megatron.plan();
    for w in [Weight::Fc1, Weight::Fc2] {
        let mut s = c.start.split(w);
        // fc1's matrix is pressed with Enter, fc2's with Space.
        let key = match w {
            Weight::Fc1 => egui::Key::Enter,
            _ => egui::Key::Space,
        };
        while s != want.split(w) {
            tab_to_and_press_with(&mut h, &matrix(w, s), key);
            s = match s {
                Split::Replicate => Split::Columns,
                Split::Columns => Split::Rows,
                Split::Rows => Split::Replicate,
            };
        }
    }
    assert_eq!(
        h.state().shared.design.plan().split(Weight::Fc2),
        Split::Rows
    );
    tab_to_and_press_with(&mut h, "Check my plan", egui::Key::Space);
    assert!(
        h.query_all_by_label_contains("Solved ★★★").next().is_some(),
        "challenge 1 is solved from the keyboard"
    );
    // The walkthrough, from the keyboard: the arrow keys step to the first all-reduce.
    tab_to_and_press(&mut h, "Step through my plan");
    assert_eq!(h.state().active_id(), "step");
    let mut reached = false;
    for _ in 0..40 {
        if h.query_all_by_label_contains("all-reduce over 2 GPUs")
            .next()
            .is_some()
        {
            reached = true;
            break;
        }
        // A question on the way is answered from the keyboard too: Tab to its first choice.
        if h.query_by_label("Skip for now (asked again at the end of the layer)")
            .is_some()
        {
            tab_to_and_press(&mut h, "Skip for now (asked again at the end of the layer)");
            continue;
        }
        h.key_press(egui::Key::ArrowRight);
        h.run_steps(2);
    }
    assert!(reached, "the arrow keys reach the first all-reduce");
}

/// Tab reaches a control and the screen shows where: a ring in the focus colour around it, in
/// both themes and in presenter mode (counted in the rendered pixels just outside the control).
#[test]
fn the_focus_ring_shows_where_tab_went_in_both_themes_and_on_a_projector() {
    use tplab::app::ThemeChoice;
    for (theme, presenter) in [
        (ThemeChoice::Light, false),
        (ThemeChoice::Dark, false),
        (ThemeChoice::Dark, true),
    ] {
        let mut app = TplabApp::default();
        app.set_theme(theme);
        app.shared.presenter = presenter;
        app.show_me(&ShowMe {
            view: View::Design,
            challenge: Some(1),
            ..Default::default()
        });
        let mut h = common::gl_harness_pixels(app, (1280.0, 720.0), Lang::En, "focus ring");
        let target = matrix(Weight::Fc1, Split::Replicate);
        for _ in 0..400 {
            if label(&h).as_deref() == Some(target.as_str()) {
                break;
            }
            h.key_press(egui::Key::Tab);
            h.run_steps(1);
        }
        assert_eq!(
            label(&h).as_deref(),
            Some(target.as_str()),
            "Tab reaches fc1"
        );
        h.run_steps(2);
        let rect = h
            .query_all_by(|n| n.is_focused())
            .next()
            .map(|n| n.rect())
            .expect("a focused control");
        let image = h.render().unwrap_or_else(|e| panic!("{e}"));
        let ppp = h.ctx.pixels_per_point();
        let ink = tplab::widgets::focus_ink(theme == ThemeChoice::Dark);
        // The ring is drawn 2 to 4 points outside the control: look along its top edge there.
        let y = ((rect.top() - 3.0) * ppp).round() as u32;
        let (x0, x1) = (
            (rect.left() * ppp) as u32,
            ((rect.right() * ppp) as u32).min(image.width() - 1),
        );
        let near = |p: &image::Rgba<u8>| {
            let [r, g, b, _] = p.0;
            let [ir, ig, ib, _] = ink.to_array();
            (i32::from(r) - i32::from(ir)).abs() < 40
                && (i32::from(g) - i32::from(ig)).abs() < 40
                && (i32::from(b) - i32::from(ib)).abs() < 40
        };
        let ringed = (x0..x1)
            .filter(|&x| (y.saturating_sub(1)..=y + 1).any(|y| near(image.get_pixel(x, y))))
            .count();
        let width = (x1 - x0) as usize;
        assert!(
            ringed * 10 >= width * 8,
            "{theme:?} presenter {presenter}: the focus colour on {ringed} of {width} pixels \
             above the focused control"
        );
        if presenter {
            h.snapshot_options(
                "keyboard_focus_ring_presenter_dark",
                &common::snapshot_options(),
            );
        }
    }
}
