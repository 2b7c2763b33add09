//! The class crate's errors.

use crate::protocol::{ErrorCode, ServerMsg};
use std::fmt;

/// Why the class server could not start or store something.
#[derive(Debug, thiserror::Error)]
pub enum ClassError {
    #[error("cannot use the data folder {path}: {reason}; set TPLAB_DATA_DIR (or --data) to a writable folder")]
    DataDir { path: String, reason: String },
    #[error("the class database failed: {0}")]
    Storage(String),
    #[error(
        "{addr} is already in use (another program, perhaps another class, listens there): choose \
         another port with --port, or stop that program"
    )]
    AddrInUse { addr: String },
    #[error(
        "cannot listen on {addr}: {reason}; use an address of this machine (127.0.0.1 for this \
         machine only, 0.0.0.0 or the Wi-Fi address for a room)"
    )]
    Bind { addr: String, reason: String },
    #[error("no random numbers from the operating system: {0}")]
    Random(String),
    #[error("cannot start the server: {0}")]
    Runtime(String),
    #[error(
        "cannot read the issuer key {path}: {reason}; give the key `tplab cert keygen` wrote, or \
         leave --issuer-key out (the class then issues no certificates)"
    )]
    IssuerKey { path: String, reason: String },
}

/// A refused frame: what goes back to the device as an `error` frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// A failure on the server's side (the database): the device may try again.
    pub fn internal(e: ClassError) -> Self {
        Self::new(
            ErrorCode::Internal,
            format!("the server could not save this ({e}); try again"),
        )
    }

    pub fn to_msg(&self) -> ServerMsg {
        ServerMsg::Error {
            code: self.code,
            message: self.message.clone(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}
