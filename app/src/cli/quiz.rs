//! `tplab quiz`: the question banks in the terminal, with instant feedback and saved progress.
//!
//! Reads answers line by line from stdin (a terminal or a pipe); end of input stops the quiz and
//! keeps what was answered. `--exam` runs the fixed exam and issues a certificate on a pass.

use anyhow::{bail, Context};
use clap::Args;
use std::io::{BufRead, Write};
use std::process::ExitCode;
use tplab_quiz::bank::{Bank, Question, QuestionKind};
use tplab_quiz::cert::Certificate;
use tplab_quiz::exam::Exam;
use tplab_quiz::grade::{self, Presentation};
use tplab_quiz::progress::{AnswerRecord, ExamRecord, Store};
use tplab_quiz::{civil_date, unix_now_s, Lang};

/// Flags of `tplab quiz`.
#[derive(Args, Debug, Clone)]
pub struct QuizArgs {
    /// Language of the questions: en or tr.
    #[arg(long, default_value = "en")]
    pub lang: Lang,
    /// Take the fixed certificate exam (pass mark 80%).
    #[arg(long)]
    pub exam: bool,
    /// Learner name: progress is saved under it (required for a certificate; asked if missing).
    #[arg(long)]
    pub name: Option<String>,
    /// Practice questions to ask (ignored with --exam).
    #[arg(long, default_value_t = 10)]
    pub count: usize,
    /// Seed for the choice of questions and generated numbers (default: the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only questions of this lesson (slug, see `tplab lessons list`).
    #[arg(long)]
    pub lesson: Option<String>,
}

fn t(lang: Lang, en: &'static str, tr: &'static str) -> &'static str {
    match lang {
        Lang::En => en,
        Lang::Tr => tr,
    }
}

pub fn run(args: QuizArgs) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout().lock();
    let store = Store::from_env()?;
    run_with(&args, &mut input, &mut out, &store)
}

/// The quiz over any input and output (tests feed it a byte slice).
pub fn run_with(
    args: &QuizArgs,
    input: &mut impl BufRead,
    out: &mut impl Write,
    store: &Store,
) -> anyhow::Result<ExitCode> {
    let lang = args.lang;
    let bank =
        Bank::embedded().map_err(|d| anyhow::anyhow!("the question banks are invalid:\n{d}"))?;
    let mut name = args.name.clone();
    if args.exam && name.is_none() {
        write!(
            out,
            "{}",
            t(
                lang,
                "Your name for the certificate: ",
                "Sertifika için adınız: "
            )
        )?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 || line.trim().is_empty() {
            bail!("the exam needs a name for the certificate; pass --name NAME");
        }
        name = Some(line.trim().to_string());
    }
    let mut progress = match &name {
        Some(n) => {
            let loaded = store.load(n)?;
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
            }
            Some(loaded.progress)
        }
        None => None,
    };
    let seed = args.seed.unwrap_or_else(unix_now_s);
    let (questions, exam) = if args.exam {
        let exam =
            Exam::embedded(&bank).map_err(|d| anyhow::anyhow!("the exam is invalid:\n{d}"))?;
        (exam.questions.clone(), Some(exam))
    } else {
        (
            tplab_quiz::practice_set(&bank, args.lesson.as_deref(), args.count, seed)
                .map_err(anyhow::Error::msg)?,
            None,
        )
    };
    if let Some(e) = &exam {
        writeln!(
            out,
            "{} {} — {} {}, {} {}%\n",
            t(lang, "Exam", "Sınav"),
            e.version,
            questions.len(),
            t(lang, "questions", "soru"),
            t(lang, "pass mark", "geçme notu"),
            e.pass_percent
        )?;
    }
    let total = questions.len();
    let mut asked = 0;
    let mut correct = 0;
    'questions: for (i, q) in questions.iter().enumerate() {
        let pres = Presentation::new(
            q,
            if args.exam {
                i as u64
            } else {
                seed.wrapping_add(i as u64)
            },
        );
        writeln!(out, "[{}/{}] {}", i + 1, total, q.prompt(lang))?;
        for (label, text) in pres.lines(q, lang) {
            writeln!(out, "  {label}) {text}")?;
        }
        writeln!(out, "{}", hint(q, lang))?;
        let response = loop {
            write!(out, "> ")?;
            out.flush()?;
            let mut line = String::new();
            if input.read_line(&mut line)? == 0 {
                writeln!(
                    out,
                    "\n{}",
                    t(lang, "(end of input: stopping)", "(girdi bitti: duruluyor)")
                )?;
                break 'questions;
            }
            match grade::parse_response(q, &pres, &line, lang) {
                Ok(r) => break r,
                Err(e) => writeln!(out, "  {e}")?,
            }
        };
        let g = grade::grade(q, &pres, &response, lang);
        asked += 1;
        if g.correct {
            correct += 1;
            writeln!(out, "{}", t(lang, "✔ Correct!", "✔ Doğru!"))?;
        } else {
            writeln!(
                out,
                "{} {}",
                t(
                    lang,
                    "✘ Not quite. The answer is:",
                    "✘ Tam değil. Doğru cevap:"
                ),
                g.expected
            )?;
        }
        writeln!(out, "  {}", q.explanation(lang))?;
        if let Some(s) = &q.show_me {
            writeln!(
                out,
                "  {} {}",
                t(lang, "Show me in the app:", "Uygulamada göster:"),
                s.describe()
            )?;
        }
        writeln!(out)?;
        if let Some(p) = progress.as_mut() {
            p.lang = Some(lang);
            p.answers.push(AnswerRecord {
                question_id: q.id.clone(),
                correct: g.correct,
                lang,
                exam: args.exam,
                at_unix_s: unix_now_s(),
            });
            // Saved after every answer: a quiz killed half-way keeps what was answered.
            store.save(p)?;
        }
    }
    writeln!(
        out,
        "{}: {correct}/{asked} ({:.0}%)",
        t(lang, "Score", "Puan"),
        grade::score_percent(correct, asked)
    )?;
    let Some(exam) = exam else {
        return Ok(ExitCode::SUCCESS);
    };
    if asked < total {
        writeln!(
            out,
            "{}",
            t(
                lang,
                "The exam was not finished, so it is not scored. Run `tplab quiz --exam` again.",
                "Sınav bitirilmedi, bu yüzden puanlanmadı. `tplab quiz --exam` komutunu yeniden çalıştırın."
            )
        )?;
        return Ok(ExitCode::FAILURE);
    }
    let score = exam.score(correct);
    let mut record = ExamRecord {
        version: exam.version.clone(),
        correct: score.correct,
        total: score.total,
        score_percent: score.score_percent,
        passed: score.passed,
        at_unix_s: unix_now_s(),
        certificate_id: None,
    };
    let code = if score.passed {
        let learner = name.as_deref().unwrap_or_default();
        let cert = Certificate::issue(
            learner,
            &civil_date(record.at_unix_s),
            score.score_percent.floor() as u32,
            &exam.version,
        );
        let (json, png) = cert
            .write(&store.certificates_dir(), lang)
            .context("writing the certificate")?;
        record.certificate_id = Some(cert.id.clone());
        writeln!(
            out,
            "{} {}\n  {}\n  {}\n{}",
            t(
                lang,
                "Passed! Certificate ID",
                "Geçtiniz! Sertifika kimliği"
            ),
            cert.id,
            png.display(),
            json.display(),
            t(
                lang,
                "Anyone can check it with: tplab cert verify FILE",
                "Herkes şu komutla doğrulayabilir: tplab cert verify DOSYA"
            ),
        )?;
        ExitCode::SUCCESS
    } else {
        writeln!(
            out,
            "{} {}%.",
            t(
                lang,
                "Not passed yet; the pass mark is",
                "Henüz geçmediniz; geçme notu"
            ),
            exam.pass_percent
        )?;
        ExitCode::FAILURE
    };
    if let Some(p) = progress.as_mut() {
        p.exams.push(record);
        store.save(p)?;
    }
    Ok(code)
}

fn hint(q: &Question, lang: Lang) -> String {
    let s = match (&q.kind, lang) {
        (QuestionKind::Single { .. }, Lang::En) => "(one letter)".to_string(),
        (QuestionKind::Single { .. }, Lang::Tr) => "(bir harf)".to_string(),
        (QuestionKind::Multiple { .. }, Lang::En) => "(every right letter, e.g. A, C)".to_string(),
        (QuestionKind::Multiple { .. }, Lang::Tr) => "(doğru olan her harf, örn. A, C)".to_string(),
        (QuestionKind::Numeric { unit, .. }, _) => {
            let u = unit
                .as_ref()
                .map(|u| format!(" [{}]", u.get(lang)))
                .unwrap_or_default();
            match lang {
                Lang::En => format!("(a number{u})"),
                Lang::Tr => format!("(bir sayı{u})"),
            }
        }
        (QuestionKind::Ordering { .. }, Lang::En) => {
            "(all letters in the right order, e.g. C A B)".to_string()
        }
        (QuestionKind::Ordering { .. }, Lang::Tr) => {
            "(tüm harfler doğru sırada, örn. C A B)".to_string()
        }
    };
    format!("  {s}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_quiz::grade::expected_answer;

    fn args(exam: bool, name: Option<&str>) -> QuizArgs {
        QuizArgs {
            lang: Lang::Tr,
            exam,
            name: name.map(str::to_string),
            count: 3,
            seed: Some(5),
            lesson: None,
        }
    }

    fn right_answer(q: &Question, p: &Presentation) -> String {
        match q.kind {
            QuestionKind::Numeric { answer, .. } => format!("{answer}"),
            _ => expected_answer(q, p, Lang::Tr),
        }
    }

    fn temp_store(tag: &str) -> (std::path::PathBuf, Store) {
        let dir = std::env::temp_dir().join(format!("tplab-cli-quiz-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (dir.clone(), Store::at(dir))
    }

    #[test]
    fn practice_from_piped_input_gives_feedback_and_saves() {
        let (dir, store) = temp_store("practice");
        let a = args(false, Some("Deniz"));
        let bank = Bank::embedded().unwrap();
        let qs = tplab_quiz::practice_set(&bank, None, 3, 5).unwrap();
        // The first answer is right, then a line that cannot be read, then end of input.
        let input = format!(
            "{}\n???\n",
            right_answer(&qs[0], &Presentation::new(&qs[0], 5))
        );
        let mut out = Vec::new();
        run_with(&a, &mut input.as_bytes(), &mut out, &store).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("✔ Doğru!"), "{text}");
        assert!(text.contains("girdi bitti"), "{text}");
        assert!(text.contains("Puan: 1/1"), "{text}");
        let saved = store.load("Deniz").unwrap().progress;
        assert_eq!(saved.answers.len(), 1);
        assert!(saved.answers[0].correct);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn exam_all_right_issues_a_verifiable_certificate() {
        let (dir, store) = temp_store("exam");
        let bank = Bank::embedded().unwrap();
        let exam = Exam::embedded(&bank).unwrap();
        let mut input = String::from("Ece Yılmaz\n");
        for (i, q) in exam.questions.iter().enumerate() {
            input.push_str(&right_answer(q, &Presentation::new(q, i as u64)));
            input.push('\n');
        }
        let mut out = Vec::new();
        let code = run_with(&args(true, None), &mut input.as_bytes(), &mut out, &store).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(code, ExitCode::SUCCESS, "{text}");
        assert!(text.contains("Geçtiniz!"), "{text}");
        let p = store.load("Ece Yılmaz").unwrap().progress;
        let id = p.exams[0].certificate_id.clone().unwrap();
        let json = store
            .certificates_dir()
            .join(format!("tplab-certificate-{id}.json"));
        match tplab_quiz::cert::verify_file(&json).unwrap() {
            tplab_quiz::cert::Verdict::Intact(c) => {
                assert_eq!(c.name, "Ece Yılmaz");
                assert_eq!(c.score_percent, 100);
            }
            v => panic!("{v:?}"),
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn exam_needs_a_name() {
        let (_dir, store) = temp_store("noname");
        let err = run_with(
            &args(true, None),
            &mut "".as_bytes(),
            &mut Vec::new(),
            &store,
        )
        .unwrap_err();
        assert!(err.to_string().contains("--name"));
    }
}
