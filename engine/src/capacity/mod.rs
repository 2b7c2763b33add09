//! Capacity: the hardware catalogue ([`hardware`]), the cost model ([`cost`]), memory per GPU
//! ([`memory`]), model presets and Hugging Face config import ([`models`]), the layout
//! planner ([`planner`]), today's training stack as switches ([`stack`]) and NCCL's collective
//! tuner as nccl-tests reports it ([`nccl`]); the defaults every command shares ([`defaults`]).

pub mod cost;
pub mod defaults;
pub mod hardware;
pub mod memory;
pub mod models;
pub mod moe_cost;
pub mod nccl;
pub mod planner;
pub mod stack;
