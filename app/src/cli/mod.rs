pub mod cert;
pub mod gpu;
pub mod lessons;
pub mod memory;
pub mod plan;
pub mod quiz;
pub mod run;
