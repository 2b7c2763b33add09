//! tplab's app: an eframe window with one view per file under [`views`]. Its layers, each
//! importing only the ones below it (`tests/layers.rs` checks it): [`app`] (the shell) >
//! [`views`] > [`widgets`] > [`lab`] (the lab state, its actions and what is derived from it) >
//! [`platform`] > [`i18n`], [`background`].
//!
//! The binary's `main` opens it with [`app::run`] when no subcommand is given; the tests and the
//! frame benchmark drive [`app::TplabApp`] headless.

pub mod app;
pub mod background;
pub mod i18n;
pub mod lab;
pub mod platform;
pub mod views;
pub mod widgets;

#[cfg(not(target_arch = "wasm32"))]
pub use app::run;
pub use app::TplabApp;
