//! `tplab quiz`: the question banks in the terminal with instant feedback and saved progress;
//! `--exam` for the certificate exam.
//!
//! Reads answers line by line from stdin (a terminal or a pipe); end of input stops and keeps
//! what was answered. The exam draws a fresh sitting from its pool (the seed is recorded), shows
//! no verdict until the last answer, then scores it, saves the result to progress, and only then
//! writes the certificate (signed when an issuer key is configured).

use anyhow::{bail, Context};
use clap::Args;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use tplab::i18n::{t, t_args};
use tplab_quiz::bank::{Bank, Question, QuestionKind};
use tplab_quiz::cert::{self, Certificate};
use tplab_quiz::exam::{attempt_seed, fresh_seed, Exam};
use tplab_quiz::grade::{self, Presentation, Response};
use tplab_quiz::progress::{AnswerRecord, ExamRecord, Store};
use tplab_quiz::{civil_date, unix_now_s, Lang};

/// The most practice questions one run asks.
pub const MAX_COUNT: usize = 200;

/// Flags of `tplab quiz`.
#[derive(Args, Debug, Clone)]
pub struct QuizArgs {
    /// Language of the questions: en or tr.
    #[arg(long, default_value = "en")]
    pub lang: Lang,
    /// Take the certificate exam (a fresh draw every sitting; pass mark 80%).
    #[arg(long)]
    pub exam: bool,
    /// Learner name: progress is saved under it (required for a certificate; asked if missing).
    #[arg(long)]
    pub name: Option<String>,
    /// Practice questions to ask, 1 to 200 (not with --exam).
    #[arg(long)]
    pub count: Option<usize>,
    /// Seed for the practice questions, generated numbers and choice order (default: random).
    /// Not with --exam: every sitting draws new questions.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only questions of this lesson (slug, see `tplab lessons list`; not with --exam).
    #[arg(long)]
    pub lesson: Option<String>,
    /// Issuer secret key the exam signs the certificate with (default: $TPLAB_ISSUER_KEY, else
    /// issuer.key in the data folder; unsigned if there is none).
    #[arg(long)]
    pub issuer_key: Option<PathBuf>,
    /// The learner's email, for the Open Badges 3.0 credential the exam issues with a signed
    /// certificate: only its salted SHA-256 hash goes into it (needs an issuer key).
    #[arg(long)]
    pub email: Option<String>,
}

pub fn run(args: QuizArgs) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout().lock();
    let store = Store::from_env()?;
    run_with(&args, &mut input, &mut out, &store, fresh_seed())
}

/// Flags that make no sense together or numbers out of range: the rule and the fix.
fn check_args(args: &QuizArgs) -> anyhow::Result<()> {
    if let Some(n) = args.count {
        if args.exam {
            bail!("--count does not apply to --exam (a sitting has the exam's own length); drop --count");
        }
        if !(1..=MAX_COUNT).contains(&n) {
            bail!("--count {n}: ask for 1 to {MAX_COUNT} practice questions, e.g. --count 10");
        }
    }
    if args.exam && args.seed.is_some() {
        bail!("--seed does not apply to --exam: every sitting draws new questions; drop --seed");
    }
    if args.exam && args.lesson.is_some() {
        bail!("--lesson does not apply to --exam, which covers every lesson; drop --lesson");
    }
    if !args.exam && args.issuer_key.is_some() {
        bail!("--issuer-key only applies to --exam (it signs the certificate)");
    }
    if let Some(email) = &args.email {
        if !args.exam {
            bail!("--email only applies to --exam (it identifies the learner in the certificate's Open Badges credential)");
        }
        tplab_quiz::badge::check_email(email).map_err(|e| {
            anyhow::anyhow!("--email: {e}; give the address the badge should be verified against, or drop --email")
        })?;
    }
    Ok(())
}

/// The quiz over any input and output (tests feed it a byte slice). `sitting_seed` is the
/// exam's draw when `--exam` is given, and the practice seed when `--seed` is not.
pub fn run_with(
    args: &QuizArgs,
    input: &mut impl BufRead,
    out: &mut impl Write,
    store: &Store,
    sitting_seed: u64,
) -> anyhow::Result<ExitCode> {
    check_args(args)?;
    let lang = args.lang;
    let bank =
        Bank::embedded().map_err(|d| anyhow::anyhow!("the question banks are invalid:\n{d}"))?;
    let mut name = args.name.clone();
    if args.exam && name.is_none() {
        write!(out, "{} ", t(lang, "cli-quiz-name-prompt"))?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 || line.trim().is_empty() {
            bail!("the exam needs a name for the certificate; pass --name NAME");
        }
        name = Some(line.trim().to_string());
    }
    if let Some(n) = &name {
        let loaded = store.load(n)?;
        for w in &loaded.warnings {
            eprintln!(
                "warning: {}",
                tplab_engine::text::escape_unsafe_keep_lines(w)
            );
        }
    }
    if args.exam {
        let name = name.unwrap_or_default();
        return exam(args, &bank, &name, input, out, store, sitting_seed);
    }
    let seed = args.seed.unwrap_or(sitting_seed);
    let count = args.count.unwrap_or(10);
    let questions = tplab_quiz::practice_set(&bank, args.lesson.as_deref(), count, seed)
        .map_err(anyhow::Error::msg)?;
    let total = questions.len();
    let (mut asked, mut correct) = (0, 0);
    for (i, q) in questions.iter().enumerate() {
        let pres = Presentation::new(q, attempt_seed(seed, i));
        let Some(response) = ask(out, input, lang, q, &pres, i, total)? else {
            break;
        };
        let g = grade::grade(q, &pres, &response, lang);
        asked += 1;
        if g.correct {
            correct += 1;
        }
        feedback(out, lang, q, g.correct, &g.expected, &g.feedback)?;
        if let Some(n) = &name {
            // Saved after every answer, under the lock: a quiz killed half-way keeps what was
            // answered, and another session's answers are kept too.
            store.update(n, |p| {
                p.lang = Some(lang);
                p.answers.push(AnswerRecord {
                    question_id: q.id.clone(),
                    correct: g.correct,
                    lang,
                    exam: false,
                    at_unix_s: unix_now_s(),
                });
            })?;
        }
    }
    writeln!(
        out,
        "{}",
        score_line(lang, correct, asked, grade::score_percent(correct, asked))
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Shows question `i` and reads an answer, asking again while it cannot be read. `None` at the
/// end of input.
fn ask(
    out: &mut impl Write,
    input: &mut impl BufRead,
    lang: Lang,
    q: &Question,
    pres: &Presentation,
    i: usize,
    total: usize,
) -> anyhow::Result<Option<Response>> {
    writeln!(out, "[{}/{}] {}", i + 1, total, q.prompt(lang))?;
    for (label, text) in pres.lines(q, lang) {
        writeln!(out, "  {label}) {text}")?;
    }
    writeln!(out, "{}", hint(q, lang))?;
    loop {
        write!(out, "> ")?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(out, "\n{}", t(lang, "cli-quiz-end-of-input"))?;
            return Ok(None);
        }
        match grade::parse_response(q, pres, &line, lang) {
            Ok(r) => return Ok(Some(r)),
            Err(e) => writeln!(out, "  {}", e.message(lang))?,
        }
    }
}

fn feedback(
    out: &mut impl Write,
    lang: Lang,
    q: &Question,
    correct: bool,
    expected: &str,
    choice_feedback: &[String],
) -> anyhow::Result<()> {
    if correct {
        writeln!(out, "{}", t(lang, "cli-quiz-correct"))?;
    } else {
        let wrong = t_args(
            lang,
            "cli-quiz-wrong",
            &[("expected", expected.to_string())],
        );
        writeln!(out, "{wrong}")?;
        // Why each wrongly chosen (or missed) choice fails, labelled as shown.
        for f in choice_feedback {
            writeln!(out, "  {f}")?;
        }
    }
    writeln!(out, "  {}", q.explanation(lang))?;
    if let Some(s) = &q.show_me {
        let target = s.describe_in(lang);
        writeln!(
            out,
            "  {}",
            t_args(lang, "cli-quiz-show-me", &[("target", target)])
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// The topics a failed sitting names, one line each, with the lesson to read.
fn revisit(
    out: &mut impl Write,
    lang: Lang,
    topics: &[tplab_quiz::exam::Revisit],
) -> anyhow::Result<()> {
    writeln!(out, "{}", t(lang, "cli-quiz-revisit"))?;
    let catalog = tplab_lessons::Catalog::embedded().ok();
    for topic in topics {
        let counts = [
            ("missed", topic.missed.to_string()),
            ("asked", topic.asked.to_string()),
        ];
        let line = match &topic.lesson {
            Some(slug) => {
                let title = catalog
                    .as_ref()
                    .and_then(|c| c.get(slug))
                    .map_or_else(|| slug.clone(), |l| l.title.get(lang).to_string());
                let mut args = counts.to_vec();
                args.push(("title", title));
                args.push(("slug", slug.clone()));
                t_args(lang, "cli-quiz-revisit-lesson", &args)
            }
            None => t_args(lang, "cli-quiz-revisit-other", &counts),
        };
        writeln!(out, "  {line}")?;
    }
    writeln!(out)?;
    Ok(())
}

fn exam(
    args: &QuizArgs,
    bank: &Bank,
    name: &str,
    input: &mut impl BufRead,
    out: &mut impl Write,
    store: &Store,
    seed: u64,
) -> anyhow::Result<ExitCode> {
    let lang = args.lang;
    cert::check_name(name.trim()).map_err(|e| {
        anyhow::anyhow!("{e}; the certificate shows the name exactly as given to --name")
    })?;
    let issuer = cert::configured_issuer(args.issuer_key.as_deref(), store)?;
    if args.email.is_some() && issuer.is_none() {
        bail!(
            "--email goes into the certificate's Open Badges 3.0 credential, which is issued only \
             with a signed certificate, and no issuer key is configured; make one with `tplab \
             cert keygen` (or pass --issuer-key FILE), or drop --email"
        );
    }
    let exam = Exam::embedded(bank).map_err(|d| anyhow::anyhow!("the exam is invalid:\n{d}"))?;
    let mut sitting = exam.sitting(seed);
    let total = sitting.questions.len();
    let header = t_args(
        lang,
        "cli-quiz-exam-header",
        &[
            ("version", exam.version.clone()),
            ("total", total.to_string()),
            ("pass", exam.pass_percent.to_string()),
        ],
    );
    writeln!(out, "{header}\n")?;
    for i in 0..total {
        let (q, pres) = (&sitting.questions[i], &sitting.presentations[i]);
        let Some(r) = ask(out, input, lang, q, pres, i, total)? else {
            writeln!(out, "{}", t(lang, "cli-quiz-exam-unfinished"))?;
            return Ok(ExitCode::FAILURE);
        };
        sitting.answer(i, r);
        writeln!(out)?;
    }
    let done = sitting.submit(lang);
    if done.score.passed {
        writeln!(out, "{}", t(lang, "cli-quiz-review"))?;
        for (i, (q, r)) in sitting.questions.iter().zip(&done.review).enumerate() {
            write!(out, "[{}/{total}] ", i + 1)?;
            writeln!(out, "{}", q.prompt(lang))?;
            feedback(out, lang, q, r.correct, &r.expected, &r.feedback)?;
        }
    } else {
        // A failed sitting names what to study, not the answers: a script that fails on
        // purpose must not collect them (the practice quiz gives full feedback).
        revisit(out, lang, &done.revisit(&sitting.questions))?;
    }
    let score = done.score;
    writeln!(
        out,
        "{}",
        score_line(lang, score.correct, score.total, score.score_percent)
    )?;
    let at = unix_now_s();
    let certificate = if score.passed {
        Some(Certificate::issue(
            name,
            &civil_date(at),
            score.whole_percent(),
            &exam.version,
            seed,
            lang,
            issuer.as_ref().map(|(k, _)| k),
        )?)
    } else {
        None
    };
    // The result is saved before the certificate is written: a folder that cannot take the
    // certificate loses no pass.
    let record = ExamRecord::new(&exam.version, &score, at, seed, certificate.as_ref());
    store
        .update(name, |p| {
            p.lang = Some(lang);
            for (q, r) in sitting.questions.iter().zip(&done.review) {
                p.answers.push(AnswerRecord {
                    question_id: q.id.clone(),
                    correct: r.correct,
                    lang,
                    exam: true,
                    at_unix_s: at,
                });
            }
            p.exams.push(record);
        })
        .context("saving the exam result")?;
    let Some(c) = certificate else {
        let pass = exam.pass_percent.to_string();
        writeln!(
            out,
            "{}",
            t_args(lang, "cli-quiz-not-passed", &[("pass", pass)])
        )?;
        return Ok(ExitCode::FAILURE);
    };
    // The Open Badges 3.0 credential, with a signed certificate.
    let badge = match &issuer {
        Some((k, _)) => tplab_quiz::badge::issue(
            &c,
            k,
            &tplab_quiz::badge::Subject {
                email: args.email.as_deref(),
                practical: done.practical(),
                issued_at_s: at,
            },
        )
        .map_err(|e| anyhow::anyhow!("issuing the Open Badges credential: {e}"))?,
        None => None,
    };
    let dir = store.certificates_dir();
    let (json, png, jwt) = c
        .write_with_badge(&dir, badge.as_deref())
        .with_context(|| {
            format!(
            "your pass (certificate ID {}) is saved in your progress, but the certificate could \
             not be written to {}; make that folder writable and sit the exam again, or set \
             TPLAB_DATA_DIR to a writable folder",
            c.id,
            dir.display()
        )
        })?;
    let signed = match &issuer {
        Some((k, path)) => t_args(
            lang,
            "cli-quiz-signed",
            &[
                ("fingerprint", k.public().fingerprint()),
                ("path", path.display().to_string()),
            ],
        ),
        None => t(lang, "cli-quiz-unsigned"),
    };
    let jwt = jwt
        .map(|p| format!("\n  {}", p.display()))
        .unwrap_or_default();
    writeln!(
        out,
        "{}\n  {}\n  {}{jwt}\n{signed}\n{}",
        t_args(lang, "cli-quiz-passed", &[("id", c.id.clone())]),
        png.display(),
        json.display(),
        t(lang, "cli-quiz-verify-hint"),
    )?;
    Ok(ExitCode::SUCCESS)
}

fn hint(q: &Question, lang: Lang) -> String {
    let s = match &q.kind {
        QuestionKind::Single { .. } => t(lang, "cli-quiz-hint-single"),
        QuestionKind::Multiple { .. } => t(lang, "cli-quiz-hint-multiple"),
        QuestionKind::Numeric { unit, .. } => {
            let unit = unit
                .as_ref()
                .map(|u| format!(" [{}]", u.get(lang)))
                .unwrap_or_default();
            let format = grade::number_format_hint(lang).to_string();
            t_args(
                lang,
                "cli-quiz-hint-numeric",
                &[("unit", unit), ("format", format)],
            )
        }
        QuestionKind::Ordering { .. } => t(lang, "cli-quiz-hint-ordering"),
    };
    format!("  {s}")
}

/// `Score: 7/10 (70%)`; Turkish writes the percent sign first (`%70`).
fn score_line(lang: Lang, correct: usize, total: usize, percent: f64) -> String {
    t_args(
        lang,
        "cli-quiz-score",
        &[
            ("correct", correct.to_string()),
            ("total", total.to_string()),
            ("percent", format!("{percent:.0}")),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_quiz::cert::{IssuerKey, Verdict};
    use tplab_quiz::grade::expected_answer;

    fn args(exam: bool, name: Option<&str>) -> QuizArgs {
        QuizArgs {
            lang: Lang::Tr,
            exam,
            name: name.map(str::to_string),
            count: (!exam).then_some(3),
            seed: (!exam).then_some(5),
            lesson: None,
            issuer_key: None,
            email: None,
        }
    }

    /// What a learner who knows the answer types, in `lang`.
    fn right_answer(q: &Question, p: &Presentation, lang: Lang) -> String {
        match q.kind {
            QuestionKind::Numeric { answer, .. } => {
                tplab_lessons::i18n::num_text(lang, &format!("{answer}"))
            }
            _ => expected_answer(q, p, lang),
        }
    }

    /// A fresh data folder, removed when dropped.
    struct TempDir(std::path::PathBuf);

    impl TempDir {
        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn temp_store() -> (TempDir, Store) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tplab-cli-quiz-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let store = Store::at(&dir);
        (TempDir(dir), store)
    }

    fn all_right(seed: u64, lang: Lang) -> String {
        let bank = Bank::embedded().unwrap();
        let s = Exam::embedded(&bank).unwrap().sitting(seed);
        s.questions
            .iter()
            .zip(&s.presentations)
            .map(|(q, p)| right_answer(q, p, lang) + "\n")
            .collect()
    }

    #[test]
    fn practice_from_piped_input_gives_feedback_and_saves() {
        let (_dir, store) = temp_store();
        let a = args(false, Some("Deniz"));
        let bank = Bank::embedded().unwrap();
        let qs = tplab_quiz::practice_set(&bank, None, 3, 5).unwrap();
        let p0 = Presentation::new(&qs[0], attempt_seed(5, 0));
        // The first answer is right, then a line that cannot be read, then end of input.
        let input = format!("{}\n???\n", right_answer(&qs[0], &p0, Lang::Tr));
        let mut out = Vec::new();
        run_with(&a, &mut input.as_bytes(), &mut out, &store, 0).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("✔ Doğru!"), "{text}");
        assert!(text.contains("giriş bitti"), "{text}");
        assert!(text.contains("Puan: 1/1"), "{text}");
        let saved = store.load("Deniz").unwrap().progress;
        assert_eq!(saved.answers.len(), 1);
        assert!(saved.answers[0].correct);
    }

    /// The terminal quiz's words come from the Fluent files (cli.ftl) in both languages, with
    /// the percent sign where each language puts it.
    #[test]
    fn practice_speaks_each_language_from_the_fluent_files() {
        let (_dir, store) = temp_store();
        let bank = Bank::embedded().unwrap();
        let qs = tplab_quiz::practice_set(&bank, None, 3, 5).unwrap();
        let p0 = Presentation::new(&qs[0], attempt_seed(5, 0));
        for (lang, words) in [
            (
                Lang::En,
                [
                    "✔ Correct!",
                    "Score: 1/1 (100%)",
                    "(end of input: stopping)",
                ],
            ),
            (
                Lang::Tr,
                ["✔ Doğru!", "Puan: 1/1 (%100)", "(giriş bitti: duruluyor)"],
            ),
        ] {
            let a = QuizArgs {
                lang,
                ..args(false, None)
            };
            let input = format!("{}\n", right_answer(&qs[0], &p0, lang));
            let mut out = Vec::new();
            run_with(&a, &mut input.as_bytes(), &mut out, &store, 0).unwrap();
            let text = String::from_utf8(out).unwrap();
            for w in words {
                assert!(text.contains(w), "{lang:?}: {w} in {text}");
            }
            // No message id leaks through (an id missing from a language shows itself).
            assert!(!text.contains("cli-quiz-"), "{text}");
        }
    }

    #[test]
    fn absurd_numbers_and_flag_mixes_are_refused_with_the_fix() {
        let (_dir, store) = temp_store();
        for (a, needle) in [
            (
                QuizArgs {
                    count: Some(0),
                    ..args(false, None)
                },
                "--count 0: ask for 1 to 200",
            ),
            (
                QuizArgs {
                    count: Some(usize::MAX),
                    ..args(false, None)
                },
                "ask for 1 to 200",
            ),
            (
                QuizArgs {
                    count: Some(5),
                    ..args(true, Some("A"))
                },
                "--count does not apply to --exam",
            ),
            (
                QuizArgs {
                    seed: Some(1),
                    ..args(true, Some("A"))
                },
                "every sitting draws new questions",
            ),
        ] {
            let err = run_with(&a, &mut "".as_bytes(), &mut Vec::new(), &store, 0).unwrap_err();
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn exam_shows_no_verdict_before_the_end_and_issues_a_signed_certificate() {
        let (dir, store) = temp_store();
        let key = IssuerKey::from_seed([3; 32]);
        let key_path = dir.path().join("teacher.key");
        tplab_quiz::progress::write_atomic_private(&key_path, key.to_file_text().as_bytes(), false)
            .unwrap();
        let seed = 11;
        let input = format!("Ece Yılmaz\n{}", all_right(seed, Lang::Tr));
        let mut out = Vec::new();
        let a = QuizArgs {
            issuer_key: Some(key_path),
            email: Some("ece@example.org".into()),
            ..args(true, None)
        };
        let code = run_with(&a, &mut input.as_bytes(), &mut out, &store, seed).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(code, ExitCode::SUCCESS, "{text}");
        // A pass shows the whole review.
        let review = text.find("— Değerlendirme —").expect("a review");
        assert!(
            !text[..review].contains("✔") && !text[..review].contains("✘"),
            "no verdict before submission"
        );
        assert!(text.contains("Geçtiniz!"), "{text}");
        let p = store.load("Ece Yılmaz").unwrap().progress;
        assert_eq!(p.exams[0].seed, Some(seed));
        assert_eq!(p.answers.iter().filter(|a| a.exam).count(), 20);
        let id = p.exams[0].certificate_id.clone().unwrap();
        for ext in ["json", "png"] {
            let f = store
                .certificates_dir()
                .join(format!("tplab-certificate-{id}.{ext}"));
            match cert::verify_file(&f, Some(&key.public())).unwrap() {
                Verdict::Signed {
                    cert,
                    fingerprint,
                    badge,
                } => {
                    assert_eq!(cert.name, "Ece Yılmaz");
                    assert_eq!(cert.score_percent, 100);
                    assert_eq!(cert.sitting_seed, seed);
                    assert_eq!(fingerprint, key.public().fingerprint());
                    // The PNG carries the Open Badges credential too; the JSON record does not.
                    assert_eq!(badge.is_some(), ext == "png", "{ext}");
                }
                v => panic!("{v:?}"),
            }
        }
        // The credential alone, with the email's salted hash and every answer right (so the
        // practical part, when drawn, is solved).
        let jwt = store
            .certificates_dir()
            .join(format!("tplab-certificate-{id}.jwt"));
        assert!(text.contains(&jwt.display().to_string()), "{text}");
        let v = cert::verify_file(&jwt, Some(&key.public())).unwrap();
        let claims = v.badge().expect("a credential");
        assert!(claims.email_matches("ece@example.org"));
        assert_eq!(claims.name, "Ece Yılmaz");
        assert_ne!(claims.practical, Some(false));
    }

    #[test]
    fn an_email_needs_an_exam_an_issuer_key_and_the_shape_of_an_address() {
        let (_dir, store) = temp_store();
        let run = |a: QuizArgs| {
            let mut out = Vec::new();
            run_with(&a, &mut "".as_bytes(), &mut out, &store, 1)
                .map(|_| ())
                .map_err(|e| format!("{e:#}"))
        };
        let e = run(QuizArgs {
            email: Some("ece@example.org".into()),
            ..args(false, Some("Ece"))
        })
        .unwrap_err();
        assert!(e.contains("--email only applies to --exam"), "{e}");
        let e = run(QuizArgs {
            email: Some("not an email".into()),
            ..args(true, Some("Ece"))
        })
        .unwrap_err();
        assert!(e.contains("--email") && e.contains("U+0020"), "{e}");
        let e = run(QuizArgs {
            email: Some("ece@example.org".into()),
            ..args(true, Some("Ece"))
        })
        .unwrap_err();
        assert!(e.contains("tplab cert keygen"), "{e}");
    }

    #[test]
    fn a_fail_is_saved_and_a_retake_draws_new_questions() {
        let (_dir, store) = temp_store();
        let a = QuizArgs {
            lang: Lang::En,
            ..args(true, Some("Can"))
        };
        let bank = Bank::embedded().unwrap();
        let exam = Exam::embedded(&bank).unwrap();
        let s = exam.sitting(1);
        // A wrong but readable answer to every question.
        let wrong: String = s
            .questions
            .iter()
            .zip(&s.presentations)
            .map(|(q, p)| {
                let right = expected_answer(q, p, Lang::En);
                match q.kind {
                    QuestionKind::Numeric { answer, .. } => {
                        format!("{}\n", if answer == 0.0 { 1.0 } else { 0.0 })
                    }
                    QuestionKind::Ordering { ref items } => {
                        // The displayed order is never the solution.
                        let shown: Vec<String> = (0..items.len())
                            .map(|p| char::from(b'A' + p as u8).to_string())
                            .collect();
                        shown.join(" ") + "\n"
                    }
                    _ => format!("{}\n", if right.starts_with('A') { "B" } else { "A" }),
                }
            })
            .collect();
        let mut out = Vec::new();
        let code = run_with(&a, &mut wrong.as_bytes(), &mut out, &store, 1).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(code, ExitCode::FAILURE, "{text}");
        assert!(text.contains("A retake draws new questions"), "{text}");
        // A failed sitting names topics, and shows no answer.
        assert!(text.contains("— Topics to revisit —"), "{text}");
        assert!(text.contains("missed: "), "{text}");
        assert!(!text.contains("The answer is"), "{text}");
        assert!(!text.contains("✘") && !text.contains("✔"), "{text}");
        let p = store.load("Can").unwrap().progress;
        assert_eq!(p.exams.len(), 1);
        assert!(!p.exams[0].passed);
        assert_eq!(p.exams[0].certificate_id, None);
        assert_eq!(p.exams[0].seed, Some(1));
        let ids = |seed| -> std::collections::BTreeSet<String> {
            exam.draw(seed).into_iter().map(|q| q.id).collect()
        };
        assert!(2 * ids(1).intersection(&ids(2)).count() < exam.length);
    }

    #[test]
    fn a_pass_is_saved_even_when_the_certificate_cannot_be_written() {
        let (_dir, store) = temp_store();
        // A file where the certificates folder should be: nothing can be written in it.
        std::fs::create_dir_all(store.root()).unwrap();
        std::fs::write(store.certificates_dir(), b"not a folder").unwrap();
        let seed = 5;
        let mut out = Vec::new();
        let err = run_with(
            &args(true, Some("Ada")),
            &mut all_right(seed, Lang::Tr).as_bytes(),
            &mut out,
            &store,
            seed,
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("is saved in your progress"),
            "{err:#}"
        );
        let p = store.load("Ada").unwrap().progress;
        assert!(p.exams[0].passed, "the pass is kept");
        assert!(p.exams[0].certificate_id.is_some());
    }

    #[test]
    fn exam_needs_a_clean_name() {
        let (_dir, store) = temp_store();
        let err = run_with(
            &args(true, None),
            &mut "".as_bytes(),
            &mut Vec::new(),
            &store,
            0,
        )
        .unwrap_err();
        assert!(err.to_string().contains("--name"));
        let err = run_with(
            &args(true, Some("Mallory\u{202E}yrollaM")),
            &mut "".as_bytes(),
            &mut Vec::new(),
            &store,
            0,
        )
        .unwrap_err();
        assert!(err.to_string().contains("U+202E"), "{err}");
    }

    #[test]
    fn the_exam_refuses_a_public_key_a_garbage_key_and_a_readable_key() {
        let (dir, store) = temp_store();
        let key = IssuerKey::from_seed([4; 32]);
        let secret = dir.path().join("teacher.key");
        let public = dir.path().join("teacher.key.pub");
        tplab_quiz::progress::write_key_pair(
            (&secret, key.to_file_text().as_bytes()),
            (&public, key.public().to_file_text().as_bytes()),
            false,
        )
        .unwrap();
        let garbage = dir.path().join("garbage.key");
        tplab_quiz::progress::write_atomic_private(&garbage, b"not a key\n", false).unwrap();
        let run_exam = |k: &std::path::Path| {
            let a = QuizArgs {
                issuer_key: Some(k.to_path_buf()),
                lang: Lang::En,
                ..args(true, Some("Ece"))
            };
            let mut out = Vec::new();
            let r = run_with(&a, &mut "".as_bytes(), &mut out, &store, 1);
            (
                r.map_err(|e| format!("{e:#}")),
                String::from_utf8(out).unwrap(),
            )
        };
        let (r, out) = run_exam(&public);
        let e = r.unwrap_err();
        assert!(
            e.contains("it is a public key") && e.ends_with(&secret.display().to_string()),
            "{e}"
        );
        assert!(out.is_empty(), "no question is asked: {out}");
        let (r, _) = run_exam(&garbage);
        let e = r.unwrap_err();
        assert!(
            e.contains("not a tplab secret key file") && e.contains("tplab cert keygen"),
            "{e}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
            let (r, _) = run_exam(&secret);
            let e = r.unwrap_err();
            assert!(e.contains("chmod 600"), "{e}");
        }
        assert!(
            store.load("Ece").unwrap().progress.exams.is_empty(),
            "nothing sat"
        );
    }
}
