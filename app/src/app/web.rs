//! The web edition's runner: the app on the page's canvas, opened as the URL's query asks
//! (`?view=playground&tp=2&lang=tr&theme=dark&presenter=1`), and what the browser test reads.

use super::TplabApp;
use crate::platform::web::{document, js_text, window};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;

/// The app as the web runner holds it: [`TplabApp`] plus the page's side bar section, and a
/// `performance.mark("tplab-first-frame")` after the first frame (the benchmark reads it).
pub struct WebApp {
    pub app: TplabApp,
    first_frame_marked: bool,
}

impl eframe::App for WebApp {
    fn logic(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        self.app.logic(ctx);
    }

    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        self.app.ui(ui);
        if !self.first_frame_marked {
            self.first_frame_marked = true;
            if let Some(perf) = web_sys::window().and_then(|w| w.performance()) {
                let _ = perf.mark("tplab-first-frame");
            }
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::App::save(&mut self.app, storage);
    }

    // What `WebRunner::app_mut` needs ([`tplab_tp`], [`tplab_view`]).
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

thread_local! {
    static RUNNER: RefCell<Option<eframe::WebRunner>> = const { RefCell::new(None) };
}

/// What a view saves (its JSON, as the desktop stores it), for the browser test; empty if no
/// view has that id.
#[wasm_bindgen]
pub fn tplab_view_state(id: &str) -> String {
    with_app(|a| a.view_state(id)).flatten().unwrap_or_default()
}

/// The TP of the scenario on screen (for the browser test); 0 before the app started.
#[wasm_bindgen]
pub fn tplab_tp() -> usize {
    with_app(|a| a.shared.scenario.config().tp).unwrap_or(0)
}

/// The id of the view on screen (for the browser test); empty before the app started.
#[wasm_bindgen]
pub fn tplab_view() -> String {
    with_app(|a| a.active_id().to_string()).unwrap_or_default()
}

/// The live class as this page knows it, as JSON (for the browser test): the connection, who
/// is here, the question's phase and counts, this student's votes, the plans; empty before the
/// app started or outside a class.
#[wasm_bindgen]
pub fn tplab_class() -> String {
    with_app(|a| {
        let c = a.shared.class.as_ref()?;
        let s = &c.state;
        let q = s.question.as_ref();
        Some(
            serde_json::json!({
                "status": format!("{:?}", s.status),
                "joined": s.joined,
                "connected": s.connected,
                "me": s.me.as_ref().map(|m| m.1.clone()),
                "question": q.map(|q| q.view.id),
                "phase": q.map(|q| q.view.phase.name()),
                "answered": q.map(|q| q.answered),
                "my_votes": q.map(|q| q.my_votes.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>()),
                "dists": q.map(|q| q.dists.iter().map(|d| format!("{d:?}")).collect::<Vec<_>>()),
                "answered_out": q.is_some_and(|q| q.answer.is_some()),
                "challenge": s.challenge.as_ref().map(|c| c.seq),
                "verdict": s.verdict.as_ref().map(|v| v.group.name()),
                "plans": s.plans.as_ref().map(|p| p.submitted),
            })
            .to_string(),
        )
    })
    .flatten()
    .unwrap_or_default()
}

fn with_app<R>(f: impl FnOnce(&TplabApp) -> R) -> Option<R> {
    RUNNER.with(|r| {
        let runner = r.borrow();
        let app = runner.as_ref()?.app_mut::<WebApp>()?;
        Some(f(&app.app))
    })
}

/// Shows `message` in the page's status line (`<p id="tplab_status">`) and the console.
fn page_status(message: &str, error: bool) {
    if error {
        web_sys::console::error_1(&message.into());
    }
    if let Some(el) = document()
        .ok()
        .and_then(|d| d.get_element_by_id("tplab_status"))
    {
        el.set_text_content(Some(message));
        if !error {
            let _ = el.set_attribute("hidden", "");
        }
    }
}

/// Starts the app on the page's canvas.
pub fn start() {
    eframe::WebLogger::init(log::LevelFilter::Warn).ok();
    let query = window()
        .and_then(|w| w.location().search().map_err(|e| js_text(&e)))
        .unwrap_or_default();
    let url = match super::parse_query(&query) {
        Ok(u) => u,
        Err(e) => {
            page_status(&format!("tplab: {e}"), true);
            return;
        }
    };
    // A class link: `?class=CODE` (a student) or `#teacher=SECRET` (the console), the class
    // server being the page's own origin.
    let mut launch = url.launch.clone();
    if let Some((origin, fragment)) = crate::platform::page_origin_and_fragment() {
        let secret = fragment
            .split('&')
            .find_map(|p| p.strip_prefix("teacher="))
            .map(str::to_string);
        let link = match (&secret, &url.class_code) {
            (Some(s), _) => Some(crate::lab::class::ClassLink::teacher(&origin, s)),
            (None, Some(code)) => Some(crate::lab::class::ClassLink::student(&origin, code)),
            (None, None) => None,
        };
        match link {
            Some(Ok(link)) => {
                if link.is_teacher() {
                    launch.view = Some("class".to_string());
                }
                launch.class = Some(link);
            }
            Some(Err(e)) => {
                page_status(&format!("tplab: {e}"), true);
                return;
            }
            None => {}
        }
    }
    let canvas = match document().and_then(|d| {
        d.get_element_by_id("tplab_canvas")
            .ok_or_else(|| "the page has no <canvas id=\"tplab_canvas\">".to_string())?
            .dyn_into::<web_sys::HtmlCanvasElement>()
            .map_err(|_| "#tplab_canvas is not a canvas".to_string())
    }) {
        Ok(c) => c,
        Err(e) => {
            page_status(&format!("tplab: {e}"), true);
            return;
        }
    };
    let runner = eframe::WebRunner::new();
    RUNNER.with(|r| *r.borrow_mut() = Some(runner.clone()));
    wasm_bindgen_futures::spawn_local(async move {
        let started = runner
            .start(
                canvas,
                eframe::WebOptions::default(),
                Box::new(move |cc| {
                    let mut app = TplabApp::new(cc, &launch);
                    if let Some(tp) = url.tp {
                        app.shared.scenario.set_tp(tp);
                    }
                    if let Some(tp) = url.beside {
                        app.shared.beside.with = crate::lab::beside::Beside::Tp(tp);
                    }
                    Ok(Box::new(WebApp {
                        app,
                        first_frame_marked: false,
                    }))
                }),
            )
            .await;
        match started {
            Ok(()) => page_status("", false),
            Err(e) => page_status(
                &format!(
                    "tplab could not start: {} (the web edition needs WebGL 2)",
                    js_text(&e)
                ),
                true,
            ),
        }
    });
}
