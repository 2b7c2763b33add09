//! The app's views: one file per view, each a plain state struct behind the small
//! [`crate::lab::View`] trait. A view reads the lab state ([`crate::lab::Shared`]), draws with
//! [`crate::widgets`] and changes the state through its actions; it never imports another view.
//!
//! # Adding a view
//! 1. Create `views/<name>.rs` with `pub struct <Name>` deriving `Default`, `Serialize` and
//!    `Deserialize` (with `#[serde(default)]`), so its state survives a restart.
//! 2. `impl View for <Name>`: [`crate::lab::View::id`] is a stable lower-case id (used for
//!    persistence and by "Show me" targets such as `{ view = "step", tp = 4, event = "mlp.g" }`),
//!    `title` is the side-bar label, `ui` draws. Optional: `logic` advances time (it runs before
//!    `ui` and draws nothing), `show_me` jumps to a target, `save`/`load` keep state (use
//!    [`crate::lab::save_json`]/[`crate::lab::load_json`]).
//! 3. Add `pub mod <name>;` below and one line in the shell's list of views
//!    ([`crate::app::all_views`]).

pub mod class;
pub mod class_student;
pub mod cluster;
pub mod collectives;
pub mod design;
// The CUDA executor is the desktop's; the web edition explains that (gpu_notice).
#[cfg(not(target_arch = "wasm32"))]
pub mod gpu;
#[cfg(target_arch = "wasm32")]
pub mod gpu_notice;
pub mod lessons;
pub mod memory;
pub mod moe;
pub mod pipeline;
pub mod planner;
pub mod playground;
pub mod precision;
pub mod quiz;
pub mod serve;
pub mod step;
pub mod timeline;
pub mod train;
pub mod verify;
pub mod vocab;
