//! `tplab lessons`: list, print and check the lessons and quiz banks.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tplab_lessons::{Catalog, Diagnostics, Lang};
use tplab_quiz::bank::Bank;
use tplab_quiz::exam::Exam;

/// Flags of `tplab lessons`.
#[derive(Args, Debug, Clone)]
pub struct LessonsArgs {
    #[command(subcommand)]
    pub command: LessonsCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub enum LessonsCommand {
    /// Validate every lesson, question bank and the exam; exit non-zero on any problem.
    Check {
        /// Check a content folder on disk (index.toml, en/, tr/) instead of the built-in lessons.
        #[arg(long)]
        content: Option<PathBuf>,
        /// Check bank files on disk (*.toml; exam.toml is the exam) instead of the built-in ones.
        #[arg(long)]
        banks: Option<PathBuf>,
    },
    /// List the lessons in order.
    List {
        #[arg(long, default_value = "en")]
        lang: Lang,
    },
    /// Print one lesson (by number or slug) as Markdown.
    Show {
        lesson: String,
        #[arg(long, default_value = "en")]
        lang: Lang,
    },
}

pub fn run(args: LessonsArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        LessonsCommand::Check { content, banks } => check(content.as_deref(), banks.as_deref()),
        LessonsCommand::List { lang } => {
            let cat = embedded()?;
            for l in &cat.lessons {
                println!("{:2}. {:<26} {}", l.order, l.slug, l.title.get(lang));
            }
            Ok(ExitCode::SUCCESS)
        }
        LessonsCommand::Show { lesson, lang } => {
            let cat = embedded()?;
            let found = cat
                .lessons
                .iter()
                .find(|l| l.slug == lesson || lesson.parse::<u32>().ok() == Some(l.order));
            let Some(l) = found else {
                bail!("no lesson '{lesson}'; `tplab lessons list` shows the numbers and slugs");
            };
            println!("{}", l.body.get(lang));
            for t in &l.show_me {
                let label = t.label.as_ref().map(|x| x.get(lang)).unwrap_or_default();
                let show_me = tplab::i18n::t(lang, "show-me");
                println!("{show_me}: {label} — {}", t.describe_in(lang));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn as_refs(v: &[(String, String)]) -> Vec<(&str, &str)> {
    v.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect()
}

fn embedded() -> anyhow::Result<Catalog> {
    Catalog::embedded().map_err(|d| anyhow::anyhow!("the built-in lessons are invalid:\n{d}"))
}

/// Reads every `.md`/`.toml` file under `root`, paths relative to it.
fn read_tree(root: &Path) -> anyhow::Result<Vec<(String, String)>> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) -> anyhow::Result<()> {
        for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let p = e?.path();
            if p.is_dir() {
                walk(&p, root, out)?;
            } else if matches!(p.extension().and_then(|x| x.to_str()), Some("md" | "toml")) {
                let rel = p
                    .strip_prefix(root)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = std::fs::read_to_string(&p)
                    .with_context(|| format!("reading {}", p.display()))?;
                out.push((rel, text));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, root, &mut out)?;
    out.sort();
    Ok(out)
}

/// Every problem in the lessons, the banks and the exam.
pub fn check_all(
    lesson_files: &[(&str, &str)],
    bank_files: &[(&str, &str)],
    exam_file: (&str, &str),
) -> (Diagnostics, String) {
    let mut diags = Diagnostics::default();
    let mut summary = Vec::new();
    let mut per_lesson = String::new();
    let catalog = match Catalog::from_files(lesson_files.iter().copied()) {
        Ok(c) => {
            let targets = c.show_me_targets().count();
            summary.push(format!(
                "{} lessons × {} languages, {targets} Show me targets",
                c.lessons.len(),
                Lang::ALL.len()
            ));
            Some(c)
        }
        Err(d) => {
            diags.extend(d);
            None
        }
    };
    match Bank::from_files(bank_files.iter().copied(), catalog.as_ref()) {
        Ok(bank) => {
            summary.push(format!(
                "{} questions in {} banks",
                bank.questions.len(),
                bank_files.len()
            ));
            if let Some(cat) = catalog.as_ref() {
                per_lesson = per_lesson_lines(&bank, cat, &mut diags);
            }
            match Exam::from_text(exam_file.0, exam_file.1, &bank) {
                Ok(e) => summary.push(format!(
                    "exam {}: {} questions a sitting from a pool of {}, pass mark {}%",
                    e.version,
                    e.length,
                    e.pool_size(),
                    e.pass_percent
                )),
                Err(d) => diags.extend(d),
            }
        }
        Err(d) => diags.extend(d),
    }
    (diags, format!("{}{per_lesson}", summary.join("; ")))
}

/// The questions of every lesson, one line each (bank questions + generated kinds), and a
/// problem for each lesson with fewer than [`coverage::MIN_PER_LESSON`].
fn per_lesson_lines(bank: &Bank, catalog: &Catalog, diags: &mut Diagnostics) -> String {
    use tplab_quiz::coverage;
    let mut out = String::from("\nquestions per lesson (bank + generated kinds):");
    for c in coverage::questions_per_lesson(bank, catalog) {
        let kinds: Vec<&str> = c.generated.iter().map(|k| k.name()).collect();
        out.push_str(&format!(
            "\n  {:2}. {:<24} {:2} = {} + {}{}",
            c.order,
            c.slug,
            c.total(),
            c.bank,
            kinds.len(),
            if kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", kinds.join(", "))
            }
        ));
        if c.total() < coverage::MIN_PER_LESSON {
            diags.push(tplab_lessons::Diagnostic::new(
                "quiz",
                None,
                format!(
                    "lesson {} ({}) has {} question(s); every lesson needs at least {} (bank or generated)",
                    c.order,
                    c.slug,
                    c.total(),
                    coverage::MIN_PER_LESSON
                ),
            ));
        }
    }
    out
}

fn check(content: Option<&Path>, banks: Option<&Path>) -> anyhow::Result<ExitCode> {
    let lesson_files: Vec<(String, String)> = match content {
        Some(dir) => read_tree(dir)?,
        None => tplab_lessons::embedded_files()
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
    };
    let (bank_files, exam_file): (Vec<(String, String)>, (String, String)) = match banks {
        Some(dir) => {
            let mut all = read_tree(dir)?;
            let pos = all
                .iter()
                .position(|(p, _)| p == "exam.toml")
                .with_context(|| format!("no exam.toml in {}", dir.display()))?;
            let exam = all.remove(pos);
            (all, exam)
        }
        None => (
            tplab_quiz::bank::EMBEDDED
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            (
                tplab_quiz::exam::EMBEDDED.0.to_string(),
                tplab_quiz::exam::EMBEDDED.1.to_string(),
            ),
        ),
    };
    let (lf, bf) = (as_refs(&lesson_files), as_refs(&bank_files));
    let (diags, summary) = check_all(&lf, &bf, (&exam_file.0, &exam_file.1));
    if diags.is_empty() {
        println!("lessons check: ok — {summary}");
        Ok(ExitCode::SUCCESS)
    } else {
        eprint!(
            "{}",
            tplab_engine::text::escape_unsafe_keep_lines(&diags.to_string())
        );
        eprintln!("lessons check: {} problem(s)", diags.len());
        Ok(ExitCode::FAILURE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Files = Vec<(&'static str, &'static str)>;

    fn shipped() -> (Files, Files) {
        (
            tplab_lessons::embedded_files().to_vec(),
            tplab_quiz::bank::EMBEDDED.to_vec(),
        )
    }

    #[test]
    fn shipped_content_passes() {
        let (l, b) = shipped();
        let (d, summary) = check_all(&l, &b, tplab_quiz::exam::EMBEDDED);
        assert!(d.is_empty(), "{d}");
        assert!(summary.contains("16 lessons"), "{summary}");
        // The count of questions per lesson, one line per lesson.
        assert!(
            summary.contains("questions per lesson (bank + generated kinds):"),
            "{summary}"
        );
        assert!(summary.contains("10. vocab-parallel"), "{summary}");
        assert_eq!(summary.matches("\n  ").count(), 16, "{summary}");
    }

    #[test]
    fn a_lesson_without_questions_is_a_problem() {
        let (l, _) = shipped();
        let (d, _) = check_all(&l, &[("faq.toml", tplab_quiz::bank::EMBEDDED[0].1)], ("exam.toml", "version = \"exam-v2\"\npass_percent = 80\nlength = 2\ngenerated = 1\ngenerated_variants = 2\n"));
        let text = d.to_string();
        assert!(
            text.contains("lesson 10 (vocab-parallel) has 0 question(s)"),
            "{text}"
        );
    }

    #[test]
    fn malformed_bank_reports_file_and_line() {
        let (l, mut b) = shipped();
        let bad = "[[question]]\nid = \"x\"\nkind = \"single\"\nprompt = { en = \"P\" }\n";
        b.push(("broken.toml", bad));
        let (d, _) = check_all(&l, &b, tplab_quiz::exam::EMBEDDED);
        let text = d.to_string();
        assert!(text.starts_with("broken.toml:4: "), "{text}");
        assert!(text.contains("missing field `tr`"), "{text}");
    }
}
