//! Element types the engine computes in.
//!
//! The CPU reference and the virtual-GPU executor are generic over [`Element`] (`f32`, `f64`).
//! [`DType`] is the run-time name of a precision, used by configs, exports and the cost model
//! (which also knows the 2-byte types `bf16` and `f16` that the GPU executor may use).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A floating-point type the CPU engine computes in.
pub trait Element:
    ndarray::NdFloat + Default + Send + Sync + fmt::Debug + fmt::Display + 'static
{
    /// The matching run-time dtype.
    const DTYPE: DType;
    /// Convert from `f64` (rounding to nearest).
    fn from_f64(v: f64) -> Self;
    /// Widen to `f64` (exact).
    fn to_f64(self) -> f64;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// A precision by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    #[default]
    F32,
    F64,
    Bf16,
    F16,
}

impl DType {
    /// Every dtype, in the order the UI lists them.
    pub const ALL: [DType; 4] = [DType::F32, DType::F64, DType::Bf16, DType::F16];

    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F64 => 8,
            DType::F32 => 4,
            DType::Bf16 | DType::F16 => 2,
        }
    }

    /// Machine epsilon (distance from 1.0 to the next representable value).
    pub fn epsilon(self) -> f64 {
        match self {
            DType::F64 => f64::EPSILON,
            DType::F32 => f64::from(f32::EPSILON),
            DType::Bf16 => 2f64.powi(-7),
            DType::F16 => 2f64.powi(-10),
        }
    }

    /// Whether the CPU engine can execute in this dtype (the 2-byte types are cost-model only).
    pub fn cpu_executable(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// Lower-case name: `f32`, `f64`, `bf16`, `f16`.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::Bf16 => "bf16",
            DType::F16 => "f16",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "fp32" | "float32" => Ok(DType::F32),
            "f64" | "fp64" | "float64" => Ok(DType::F64),
            "bf16" | "bfloat16" => Ok(DType::Bf16),
            "f16" | "fp16" | "float16" | "half" => Ok(DType::F16),
            other => Err(format!(
                "unknown dtype '{other}'; expected one of: f32, f64, bf16, f16"
            )),
        }
    }
}
