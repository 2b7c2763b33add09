//! Languages and text given in each of them.

use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// A language the lessons and quizzes ship in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    En,
    Tr,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Tr];

    /// `en` or `tr` (also the content folder name).
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Tr => "tr",
        }
    }

    /// The language's own name.
    pub fn native_name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::Tr => "Türkçe",
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// An unknown language code.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown language '{0}'; expected one of: en, tr")]
pub struct LangParseError(pub String);

impl std::str::FromStr for Lang {
    type Err = LangParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "en" | "english" => Ok(Lang::En),
            "tr" | "turkish" | "türkçe" | "turkce" => Ok(Lang::Tr),
            other => Err(LangParseError(other.to_string())),
        }
    }
}

/// A text in every shipped language.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Localized {
    pub en: String,
    pub tr: String,
}

impl Localized {
    pub fn new(en: impl Into<String>, tr: impl Into<String>) -> Self {
        Self {
            en: en.into(),
            tr: tr.into(),
        }
    }

    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::Tr => &self.tr,
        }
    }

    /// The languages whose text is empty (after trimming).
    pub fn missing(&self) -> Vec<Lang> {
        Lang::ALL
            .into_iter()
            .filter(|&l| self.get(l).trim().is_empty())
            .collect()
    }
}
