pub mod cert;
pub mod gpu;
pub mod lessons;
pub mod memory;
pub mod plan;
pub mod precision;
pub mod quiz;
pub mod run;
