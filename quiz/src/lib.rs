//! tplab-quiz
