//! tplab-lessons: the lessons (Markdown in English and Turkish), their index and "Show me" targets.
//!
//! Content lives in `lessons/content/` (`index.toml`, `en/NN-slug.md`, `tr/NN-slug.md`) and is
//! embedded at build time, so the binary works from any directory. [`Catalog::embedded`] loads it;
//! [`Catalog::from_files`] loads any set of files (tests, authors' folders). Loading collects every
//! problem as a [`Diagnostic`] with file, line and message instead of stopping at the first.
//!
//! [`i18n`] owns every translated string of the workspace (Fluent files in `lessons/i18n/`) and
//! the one number formatter.

mod catalog;
mod diag;
pub mod english;
pub mod glossary;
pub mod i18n;
mod lang;
#[cfg(test)]
mod numbers;
mod showme;

pub use catalog::{Catalog, Lesson};
pub use diag::{line_col, Diagnostic, Diagnostics};
pub use lang::{Lang, LangParseError, Localized};
pub use showme::{ShowMe, ShowMeError, View};
pub use showme::{
    CLUSTERS, MOE_LAYERS, PIPELINE_MAX_MICROBATCHES, PIPELINE_MAX_STAGES, PIPELINE_MAX_VIRTUAL,
};
pub use showme::{PLANNER_DEFAULT_GPU, PLANNER_DEFAULT_GPUS, PLANNER_DEFAULT_GPUS_PER_NODE};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// The content files compiled into the binary: `(path relative to content/, text)`.
pub fn embedded_files() -> &'static [(&'static str, &'static str)] {
    embedded::FILES
}
