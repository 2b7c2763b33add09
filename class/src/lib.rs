//! tplab's live class: students join from their own devices, predict, design and vote; the
//! teacher sees the room.
//!
//! - [`protocol`]: the JSON messages over one WebSocket (always built; the app's client on the
//!   desktop and the web shares it);
//! - with the `engine` feature: [`wire`] (a plan from the wire to the engine and back);
//! - with the `server` feature (default, with `engine`): [`room`] (the Peer Instruction state machine),
//!   [`store`] (SQLite), [`plans`] (the design lab's plans, checked and grouped by the engine),
//!   [`export`] (CSV and JSON) and [`server`] (axum HTTP + WebSocket, the limits of the threat
//!   model in `docs/class.md`).

pub mod protocol;
#[cfg(feature = "engine")]
pub mod wire;

#[cfg(feature = "server")]
pub mod error;
#[cfg(feature = "server")]
pub mod exam;
#[cfg(feature = "server")]
pub mod export;
#[cfg(feature = "server")]
pub mod plans;
#[cfg(feature = "server")]
pub mod room;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod store;

#[cfg(feature = "server")]
pub use error::{ClassError, Refusal};
#[cfg(feature = "server")]
pub use server::{serve_blocking, start, Limits, Running, ServerConfig, Stopped};
