//! The desktop: files in folders, the quiz's file store, the CUDA executor.

use super::Picked;
use std::path::Path;
use tplab_quiz::cert::{self, Certificate, IssuerKey};
use tplab_quiz::progress::{Loaded, Progress, Store};

/// The desktop has no file picker: files are named on the command line, or a view asks for a
/// path (the Planner's config.json: a path field, or a file dropped onto the window).
pub const CAN_PICK_FILES: bool = false;

/// Writes `bytes` to `dir/name` atomically (temporary file, fsync, rename); returns where (the
/// caller words it in the learner's language).
/// What opens lesson `order` on this platform, to copy and share: the command line.
pub fn lesson_link(order: u32) -> String {
    format!("tplab --lesson {order}")
}

pub fn save_file(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<String> {
    let path = dir.join(name);
    tplab_quiz::progress::write_atomic(&path, bytes)?;
    Ok(path.display().to_string())
}

/// A file the learner picks; never on the desktop (see [`CAN_PICK_FILES`]).
pub struct PickedFile;

impl PickedFile {
    /// The file's name and text once read, or why it could not be.
    pub fn poll(&mut self) -> Option<Picked> {
        Some(Err("choosing a file is only offered in the web edition; \
                  pass the file on the command line instead"
            .to_string()))
    }
}

/// Opens the platform's file picker for text files matching `accept` (e.g. `.json`).
pub fn pick_text_file(_ctx: &egui::Context, _accept: &str) -> PickedFile {
    PickedFile
}

/// The path of a file dropped onto the window this frame, if any (the first of several).
pub fn dropped_path(ctx: &egui::Context) -> Option<std::path::PathBuf> {
    ctx.input(|i| i.raw.dropped_files.first().map(|f| f.path().to_path_buf()))
}

/// Where a learner's quiz progress and certificates are kept: the data folder
/// (`TPLAB_DATA_DIR`), under the progress file's lock.
pub struct LearnerStore {
    store: Store,
}

impl LearnerStore {
    pub fn open() -> Result<Self, String> {
        Store::from_env()
            .map(|store| Self { store })
            .map_err(|e| e.to_string())
    }

    /// The issuer key the exam signs with, if one is configured.
    pub fn issuer(&self) -> Result<Option<IssuerKey>, String> {
        cert::configured_issuer(None, &self.store)
            .map(|k| k.map(|(k, _)| k))
            .map_err(|e| format!("{e:#}"))
    }

    /// Applies `change` to the learner's saved progress (see `Store::update`).
    pub fn update(&self, name: &str, change: impl FnOnce(&mut Progress)) -> Result<Loaded, String> {
        self.store.update(name, change).map_err(|e| e.to_string())
    }

    /// Writes the certificate's JSON and PNG into the certificates folder; returns the PNG's
    /// path.
    ///
    /// A certificate signed with this machine's issuer key also gets its Open Badges 3.0
    /// credential (`practical`: the sitting's design-lab part), baked into the PNG and written
    /// beside it as `.jwt`, as `tplab cert issue` writes it: a badge viewer or openbadgeslib
    /// verifies it without tplab.
    pub fn save_certificate(
        &self,
        c: &Certificate,
        practical: Option<bool>,
    ) -> Result<String, String> {
        let key = self.issuer()?;
        let jwt = match key {
            Some(key) => tplab_quiz::badge::issue(
                c,
                &key,
                &tplab_quiz::badge::Subject {
                    email: None,
                    practical,
                    issued_at_s: tplab_quiz::unix_now_s(),
                },
            )?,
            None => None,
        };
        let dir = self.store.certificates_dir();
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        c.write_with_badge(&dir, jwt.as_deref())
            .map(|(_, png, _)| png.display().to_string())
            .map_err(|e| format!("{e:#}"))
    }
}

/// The desktop's side bar has no platform section (the web edition's holds progress export and
/// import).
#[derive(Default)]
pub struct SideBar;

impl SideBar {
    pub fn ui(&mut self, _ui: &mut egui::Ui) {}
}

/// Largest lab file read (the design lab's progress and the walkthrough's answers: a few KiB).
const MAX_LAB_FILE_BYTES: u64 = 4 << 20;

fn lab_path() -> Result<std::path::PathBuf, String> {
    Store::from_env()
        .map(|s| s.root().join("lab.json"))
        .map_err(|e| e.to_string())
}

/// Writes the lab file (`lab.json` in the data folder) atomically: a kill at any moment leaves
/// the old file or the new one.
pub fn save_lab_file(json: &str) -> Result<(), String> {
    let path = lab_path()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the data folder {}: {e}", dir.display()))?;
    }
    tplab_quiz::progress::write_atomic(&path, json.as_bytes()).map_err(|e| e.to_string())
}

/// The lab file's text, `None` if there is none; a regular file of at most 4 MiB.
pub fn load_lab_file() -> Result<Option<String>, String> {
    use tplab_engine::capacity::models::{read_input_bytes, InputFileError};
    let path = lab_path()?;
    match read_input_bytes(&path, "lab", MAX_LAB_FILE_BYTES) {
        Ok(b) => String::from_utf8(b)
            .map(Some)
            .map_err(|_| format!("{} is not UTF-8 text; it was left as it is", path.display())),
        Err(InputFileError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// A text fetched over HTTP with a bearer token (the class export), on a thread of its own.
pub struct Fetch {
    rx: std::sync::mpsc::Receiver<Result<String, String>>,
}

impl Fetch {
    /// The body once it has arrived, or why it did not.
    pub fn poll(&mut self) -> Option<Result<String, String>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(std::sync::mpsc::TryRecvError::Empty) => None,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                Some(Err("the download stopped before it finished".to_string()))
            }
        }
    }
}

/// GETs `url` (`http://host:port/path`) with `Authorization: Bearer <token>`; the frame is
/// repainted when the answer arrives. Plain HTTP/1.0 on the room's network (the class server
/// speaks nothing else).
pub fn fetch_text(ctx: &egui::Context, url: &str, token: &str) -> Fetch {
    let (tx, rx) = std::sync::mpsc::channel();
    let (url, token, ctx) = (url.to_string(), token.to_string(), ctx.clone());
    std::thread::spawn(move || {
        let _ = tx.send(http_get(&url, &token));
        ctx.request_repaint();
    });
    Fetch { rx }
}

fn http_get(url: &str, token: &str) -> Result<String, String> {
    use std::io::{Read, Write};
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: only http:// addresses can be fetched"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = std::net::ToSocketAddrs::to_socket_addrs(host)
        .map_err(|e| format!("{host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}: no address"))?;
    let timeout = std::time::Duration::from_secs(10);
    let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("cannot reach the class server at {host}: {e}"))?;
    stream.set_read_timeout(Some(timeout)).ok();
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    stream
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading the answer: {e}"))?;
    let text = String::from_utf8_lossy(&bytes);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("the class server's answer has no body")?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!(
            "the class server answered {status}: {}",
            body.trim()
        ));
    }
    Ok(body.to_string())
}
