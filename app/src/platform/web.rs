//! The web edition: eframe's web runner on a canvas, downloads instead of folders, the browser's
//! file picker, progress and certificates in local storage.
//!
//! The runner itself, which holds the app, is the shell's (`crate::app::web`).

use super::Picked;
use std::cell::RefCell;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tplab_quiz::cert::{Certificate, IssuerKey};
use tplab_quiz::progress::{learner_slug, Loaded, Progress};
use wasm_bindgen::prelude::*;

/// A browser has a file picker.
pub const CAN_PICK_FILES: bool = true;

/// Local-storage key prefix of a learner's progress (the desktop's `learners/<slug>.json`).
const LEARNER_PREFIX: &str = "tplab/learners/";
/// Local-storage key prefix of a certificate's JSON record.
const CERT_PREFIX: &str = "tplab/certificates/";

pub(crate) fn js_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| {
            e.dyn_ref::<js_sys::Error>()
                .map(|e| String::from(e.message()))
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

pub(crate) fn window() -> Result<web_sys::Window, String> {
    web_sys::window().ok_or_else(|| "no window: not running in a page".to_string())
}

pub(crate) fn document() -> Result<web_sys::Document, String> {
    window()?
        .document()
        .ok_or_else(|| "no document in this window".to_string())
}

fn local_storage() -> Result<web_sys::Storage, String> {
    window()?
        .local_storage()
        .map_err(|e| js_text(&e))?
        .ok_or_else(|| {
            "this browser keeps no local storage for the page (private mode?): \
             progress cannot be saved; allow site data for this page"
                .to_string()
        })
}

/// Offers `bytes` as a download named `name` (`dir` is the desktop's folder, unused here);
/// returns the name (the caller words it in the learner's language).
pub fn save_file(_dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<String> {
    download(name, bytes).map_err(anyhow::Error::msg)?;
    Ok(name.to_string())
}

/// Starts a browser download of `bytes` as `name`.
pub fn download(name: &str, bytes: &[u8]) -> Result<(), String> {
    let array = js_sys::Uint8Array::from(bytes);
    let parts = js_sys::Array::of1(&array);
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime_of(name));
    let blob = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &opts)
        .map_err(|e| js_text(&e))?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(|e| js_text(&e))?;
    let doc = document()?;
    let a: web_sys::HtmlAnchorElement = doc
        .create_element("a")
        .map_err(|e| js_text(&e))?
        .dyn_into()
        .map_err(|_| "not an anchor element".to_string())?;
    a.set_href(&url);
    a.set_download(name);
    a.click();
    // The click has handed the blob to the download; the URL is not needed any more.
    web_sys::Url::revoke_object_url(&url).map_err(|e| js_text(&e))?;
    Ok(())
}

fn mime_of(name: &str) -> &'static str {
    if name.ends_with(".png") {
        "image/png"
    } else if name.ends_with(".json") {
        "application/json"
    } else if name.ends_with(".csv") {
        "text/csv"
    } else {
        "application/octet-stream"
    }
}

/// A file the learner is picking in the browser's file picker.
pub struct PickedFile {
    slot: Arc<Mutex<Option<Picked>>>,
}

impl PickedFile {
    /// The file's name and text once read, or why it could not be; `None` while the picker is
    /// open (a cancelled picker stays `None`).
    pub fn poll(&mut self) -> Option<Picked> {
        self.slot.lock().ok()?.take()
    }
}

/// Opens the browser's file picker for text files matching `accept` (e.g. `.json`); the text
/// arrives through [`PickedFile::poll`] and `ctx` is repainted then.
pub fn pick_text_file(ctx: &egui::Context, accept: &str) -> PickedFile {
    let slot = Arc::new(Mutex::new(None));
    let picked = PickedFile {
        slot: Arc::clone(&slot),
    };
    let set = {
        let ctx = ctx.clone();
        move |r: Picked| {
            if let Ok(mut s) = slot.lock() {
                *s = Some(r);
            }
            ctx.request_repaint();
        }
    };
    let input = match document().and_then(|d| {
        d.create_element("input")
            .map_err(|e| js_text(&e))?
            .dyn_into::<web_sys::HtmlInputElement>()
            .map_err(|_| "not an input element".to_string())
    }) {
        Ok(i) => i,
        Err(e) => {
            set(Err(e));
            return picked;
        }
    };
    input.set_type("file");
    input.set_accept(accept);
    let on_change = {
        let input = input.clone();
        Closure::once(move || {
            let Some(file) = input.files().and_then(|f| f.get(0)) else {
                return;
            };
            let name = file.name();
            wasm_bindgen_futures::spawn_local(async move {
                let text = wasm_bindgen_futures::JsFuture::from(file.text()).await;
                set(match text {
                    Ok(t) => t
                        .as_string()
                        .map(|t| (name.clone(), t))
                        .ok_or_else(|| format!("{name} is not text")),
                    Err(e) => Err(format!("cannot read {name}: {}", js_text(&e))),
                });
            });
        })
    };
    input.set_onchange(Some(on_change.as_ref().unchecked_ref()));
    // The input lives as long as the page may call back into it.
    on_change.forget();
    input.click();
    picked
}

/// A text fetched with a bearer token (the class export), by the browser's `fetch`.
pub struct Fetch {
    slot: Arc<Mutex<Option<Result<String, String>>>>,
}

impl Fetch {
    /// The body once it has arrived, or why it did not.
    pub fn poll(&mut self) -> Option<Result<String, String>> {
        self.slot.lock().ok()?.take()
    }
}

/// GETs `url` with `Authorization: Bearer <token>`; `ctx` is repainted when it arrives.
pub fn fetch_text(ctx: &egui::Context, url: &str, token: &str) -> Fetch {
    let slot = Arc::new(Mutex::new(None));
    let fetch = Fetch {
        slot: Arc::clone(&slot),
    };
    let (url, token, ctx) = (url.to_string(), token.to_string(), ctx.clone());
    wasm_bindgen_futures::spawn_local(async move {
        let result = async {
            let headers = web_sys::Headers::new().map_err(|e| js_text(&e))?;
            headers
                .set("Authorization", &format!("Bearer {token}"))
                .map_err(|e| js_text(&e))?;
            let init = web_sys::RequestInit::new();
            init.set_method("GET");
            init.set_headers(&headers);
            let promise = window()?.fetch_with_str_and_init(&url, &init);
            let response: web_sys::Response = wasm_bindgen_futures::JsFuture::from(promise)
                .await
                .map_err(|e| format!("cannot reach the class server: {}", js_text(&e)))?
                .dyn_into()
                .map_err(|_| "the answer is not a response".to_string())?;
            let text =
                wasm_bindgen_futures::JsFuture::from(response.text().map_err(|e| js_text(&e))?)
                    .await
                    .map_err(|e| js_text(&e))?
                    .as_string()
                    .unwrap_or_default();
            if response.status() != 200 {
                return Err(format!(
                    "the class server answered {}: {}",
                    response.status(),
                    text.trim()
                ));
            }
            Ok(text)
        }
        .await;
        if let Ok(mut s) = slot.lock() {
            *s = Some(result);
        }
        ctx.request_repaint();
    });
    fetch
}

/// What opens lesson `order` on this platform, to copy and share: this page's address with
/// `?lesson=N` (the web edition reads it at start).
pub fn lesson_link(order: u32) -> String {
    let page = window().ok().and_then(|w| {
        let l = w.location();
        Some(format!("{}{}", l.origin().ok()?, l.pathname().ok()?))
    });
    format!("{}?lesson={order}", page.unwrap_or_default())
}

/// The page's origin (`http://192.168.1.20:8036`) and its fragment without the `#`: where a
/// class link opened the web edition.
pub fn page_origin_and_fragment() -> Option<(String, String)> {
    let location = window().ok()?.location();
    let origin = location.origin().ok()?;
    let hash = location.hash().ok().unwrap_or_default();
    Some((origin, hash.trim_start_matches('#').to_string()))
}

/// A browser gives no path for a dropped file: uploads go through [`pick_text_file`].
pub fn dropped_path(_ctx: &egui::Context) -> Option<std::path::PathBuf> {
    None
}

/// A learner's progress and certificates in the browser's local storage, under the same file
/// format as the desktop's data folder, so a progress file exported here imports there and
/// back. One page's script runs on one thread, so a read-change-write is never interleaved
/// within a tab.
pub struct LearnerStore {
    storage: web_sys::Storage,
}

impl LearnerStore {
    pub fn open() -> Result<Self, String> {
        local_storage().map(|storage| Self { storage })
    }

    /// A browser holds no issuer key: certificates made here are unsigned (`tplab cert verify`
    /// says so). A teacher signs on the desktop.
    pub fn issuer(&self) -> Result<Option<IssuerKey>, String> {
        Ok(None)
    }

    fn key(name: &str) -> Result<String, String> {
        Ok(format!(
            "{LEARNER_PREFIX}{}.json",
            learner_slug(name).map_err(|e| e.to_string())?
        ))
    }

    /// The learner's saved progress, a fresh record if there is none. A record that names
    /// another learner or was written by a newer tplab is refused and left as it is.
    pub fn load(&self, name: &str) -> Result<Loaded, String> {
        let key = Self::key(name)?;
        let text = self.storage.get_item(&key).map_err(|e| js_text(&e))?;
        let progress = match text {
            None => Progress::new(name),
            Some(t) => {
                let p = tplab_quiz::progress::parse(t.as_bytes()).map_err(|e| {
                    format!("the saved progress of '{name}' in this browser cannot be read ({e}); it was left untouched")
                })?;
                if p.learner.trim() != name.trim() {
                    return Err(format!(
                        "the browser's record for '{name}' holds the progress of '{}'; it was left untouched",
                        p.learner
                    ));
                }
                p
            }
        };
        Ok(Loaded {
            progress,
            warnings: Vec::new(),
        })
    }

    fn store(&self, name: &str, p: &Progress) -> Result<(), String> {
        let json = serde_json::to_string_pretty(p).map_err(|e| e.to_string())?;
        self.storage
            .set_item(&Self::key(name)?, &json)
            .map_err(|e| format!("the browser refused to save progress: {}", js_text(&e)))
    }

    /// Applies `change` to the learner's saved progress and saves it.
    pub fn update(&self, name: &str, change: impl FnOnce(&mut Progress)) -> Result<Loaded, String> {
        let mut loaded = self.load(name)?;
        change(&mut loaded.progress);
        loaded.progress.schema = tplab_quiz::progress::SCHEMA;
        self.store(name, &loaded.progress)?;
        Ok(loaded)
    }

    /// Keeps the certificate's record in local storage and downloads its PNG and JSON; returns
    /// the PNG's file name.
    /// (The web edition holds no issuer key: a certificate issued here is unsigned and carries
    /// no credential; `_practical` is the desktop's.)
    pub fn save_certificate(
        &self,
        c: &Certificate,
        _practical: Option<bool>,
    ) -> Result<String, String> {
        let json = c.to_json().map_err(|e| format!("{e:#}"))?;
        let png = c.render_png().map_err(|e| format!("{e:#}"))?;
        self.storage
            .set_item(&format!("{CERT_PREFIX}{}.json", c.file_stem()), &json)
            .map_err(|e| js_text(&e))?;
        let png_name = format!("{}.png", c.file_stem());
        download(&png_name, &png)?;
        download(&format!("{}.json", c.file_stem()), json.as_bytes())?;
        Ok(format!("{png_name} (downloaded)"))
    }

    /// Every learner's progress kept in this browser: `(file name, JSON)`, the desktop's file
    /// names.
    pub fn learners(&self) -> Result<Vec<(String, String)>, String> {
        let n = self.storage.length().map_err(|e| js_text(&e))?;
        let mut out = Vec::new();
        for i in 0..n {
            let Some(key) = self.storage.key(i).map_err(|e| js_text(&e))? else {
                continue;
            };
            if let Some(file) = key.strip_prefix(LEARNER_PREFIX) {
                if let Some(text) = self.storage.get_item(&key).map_err(|e| js_text(&e))? {
                    out.push((file.to_string(), text));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Downloads every learner's progress file; returns what the side bar says.
    pub fn export(&self, lang: tplab_lessons::Lang) -> Result<String, String> {
        let files = self.learners()?;
        if files.is_empty() {
            return Ok(crate::i18n::t(lang, "web-progress-none"));
        }
        for (file, text) in &files {
            download(&format!("tplab-progress-{file}"), text.as_bytes())?;
        }
        let names: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
        Ok(crate::i18n::t_args(
            lang,
            "web-progress-exported",
            &[("files", names.join(", "))],
        ))
    }

    /// Imports a progress file (the desktop's `learners/<name>.json` or one exported here):
    /// answers, exams and lessons read are added to what this browser holds for that learner,
    /// nothing is removed. Returns what the side bar says.
    pub fn import(&self, text: &str, lang: tplab_lessons::Lang) -> Result<String, String> {
        let incoming = tplab_quiz::progress::parse(text.as_bytes()).map_err(|e| {
            crate::i18n::t_args(lang, "web-progress-invalid", &[("error", e.to_string())])
        })?;
        let name = incoming.learner.clone();
        let mut added = 0usize;
        self.update(&name, |p| added = super::merge(p, incoming))?;
        Ok(crate::i18n::t_args(
            lang,
            "web-progress-imported",
            &[("learner", name), ("added", added.to_string())],
        ))
    }
}

/// The side bar's web section: export and import of the progress file.
#[derive(Default)]
pub struct SideBar {
    picking: Option<PickedFile>,
    status: Option<Result<String, String>>,
}

impl SideBar {
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let lang = crate::i18n::current_lang(ui.ctx());
        let t = |id: &str| crate::i18n::t(lang, id);
        ui.separator();
        ui.label(egui::RichText::new(t("web-progress-title")).small());
        ui.horizontal(|ui| {
            let export = ui
                .small_button(t("web-progress-export"))
                .on_hover_text(t("web-progress-export-hover"));
            super::mark("progress-export", export.rect);
            if export.clicked() {
                self.status = Some(LearnerStore::open().and_then(|s| s.export(lang)));
            }
            let import = ui
                .small_button(t("web-progress-import"))
                .on_hover_text(t("web-progress-import-hover"));
            super::mark("progress-import", import.rect);
            if import.clicked() {
                self.picking = Some(pick_text_file(ui.ctx(), ".json,application/json"));
            }
        });
        if let Some(picked) = self.picking.as_mut().and_then(PickedFile::poll) {
            self.picking = None;
            self.status =
                Some(picked.and_then(|(_, text)| LearnerStore::open()?.import(&text, lang)));
        }
        match &self.status {
            Some(Ok(msg)) => {
                ui.label(egui::RichText::new(msg).small());
            }
            Some(Err(e)) => {
                ui.label(
                    egui::RichText::new(e)
                        .small()
                        .color(ui.visuals().error_fg_color),
                );
            }
            None => {}
        }
    }
}

/// Local-storage key of the lab file (the design lab's progress, the walkthrough's answers).
const LAB_KEY: &str = "tplab/lab";

/// Writes the lab file to the browser's local storage.
pub fn save_lab_file(json: &str) -> Result<(), String> {
    local_storage()?
        .set_item(LAB_KEY, json)
        .map_err(|e| js_text(&e))
}

/// The lab file from the browser's local storage, `None` if there is none.
pub fn load_lab_file() -> Result<Option<String>, String> {
    local_storage()?.get_item(LAB_KEY).map_err(|e| js_text(&e))
}

thread_local! {
    /// Where named controls were last drawn ([`super::mark`]), in CSS pixels.
    static TARGETS: RefCell<std::collections::HashMap<String, egui::Rect>> =
        RefCell::new(std::collections::HashMap::new());
}

pub(super) fn remember_target(name: &str, rect: egui::Rect) {
    TARGETS.with(|t| {
        let mut t = t.borrow_mut();
        match t.get_mut(name) {
            Some(r) => *r = rect,
            None => {
                t.insert(name.to_string(), rect);
            }
        }
    });
}

/// The centre `[x, y]` of the control last drawn under `name` (for the browser test); empty if
/// none was drawn.
#[wasm_bindgen]
pub fn tplab_target(name: &str) -> Vec<f32> {
    TARGETS.with(|t| {
        t.borrow()
            .get(name)
            .map(|r| vec![r.center().x, r.center().y])
            .unwrap_or_default()
    })
}
