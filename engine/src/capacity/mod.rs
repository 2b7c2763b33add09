//! Capacity: the hardware catalogue ([`hardware`]), the cost model ([`cost`]), memory per GPU
//! ([`memory`]), model presets and Hugging Face config import ([`models`]), and the layout
//! planner ([`planner`]).

pub mod cost;
pub mod hardware;
pub mod memory;
pub mod models;
pub mod planner;
