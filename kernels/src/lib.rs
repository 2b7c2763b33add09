//! tplab-kernels
