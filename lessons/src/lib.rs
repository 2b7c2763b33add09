//! tplab-lessons
