//! tplab's desktop app: an eframe window with one view per file under [`views`].
//!
//! The binary's `main` opens it with [`app::run`] when no subcommand is given; the tests and the
//! frame benchmark drive [`app::TplabApp`] headless.

pub mod app;
pub mod background;
pub mod i18n;
pub mod platform;
pub mod views;

#[cfg(not(target_arch = "wasm32"))]
pub use app::run;
pub use app::TplabApp;
