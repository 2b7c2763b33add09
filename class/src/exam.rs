//! The certificate exam in class: the server draws each sitting's seed, the student's app
//! shows the questions that seed draws (the same shipped exam on both sides), and the server
//! grades the answers itself. A pass earns a certificate signed with the teacher's issuer key,
//! which never leaves the teacher's machine: the student downloads the signed PNG (with its
//! Open Badges 3.0 credential baked in) from `/api/certificate/<token>.png`.
//!
//! What a student's device could fake, it cannot use: the seed is the server's, the grade is the
//! server's, and a sitting is graded once.

use crate::error::Refusal;
use crate::protocol::{
    ErrorCode, ServerMsg, MAX_EXAM_ANSWERS, MAX_EXAM_ANSWER_CHARS, MAX_EXAM_SITTINGS,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tplab_lessons::Lang;
use tplab_quiz::cert::{Certificate, IssuerKey};
use tplab_quiz::exam::Exam;

/// One student's sittings.
#[derive(Default)]
struct Sittings {
    /// Seeds drawn, in order.
    seeds: Vec<u64>,
    /// The sitting open now (drawn, not yet submitted).
    open: Option<u64>,
    passed: bool,
}

/// The exam's side of a class: open or closed, each student's sittings, the issuer key.
pub struct ExamDesk {
    pub open: bool,
    exam: Result<Exam, String>,
    issuer: Option<std::sync::Arc<IssuerKey>>,
    /// Where issued certificates are written (`<data>/certificates`).
    dir: PathBuf,
    sittings: HashMap<u32, Sittings>,
    submitted: u32,
}

/// What grading a sitting gave: the message for the student, and the teacher's new counts.
pub struct Graded {
    pub result: ServerMsg,
    pub room: ServerMsg,
}

impl ExamDesk {
    pub fn new(issuer: Option<IssuerKey>, data_dir: &Path) -> Self {
        let exam = tplab_quiz::bank::Bank::embedded()
            .map_err(|d| d.to_string())
            .and_then(|b| Exam::embedded(&b).map_err(|d| d.to_string()));
        Self {
            open: false,
            exam,
            issuer: issuer.map(std::sync::Arc::new),
            dir: data_dir.join("certificates"),
            sittings: HashMap::new(),
            submitted: 0,
        }
    }

    fn version(&self) -> String {
        self.exam
            .as_ref()
            .map(|e| e.version.clone())
            .unwrap_or_default()
    }

    /// The `exam` message: open or not, the version, whether a pass earns a certificate.
    pub fn view(&self) -> ServerMsg {
        ServerMsg::Exam {
            open: self.open,
            version: self.version(),
            certificates: self.issuer.is_some(),
        }
    }

    /// The teacher's counts.
    pub fn room(&self) -> ServerMsg {
        ServerMsg::ExamRoom {
            started: self.sittings.values().map(|s| s.seeds.len() as u32).sum(),
            submitted: self.submitted,
            passed: self.sittings.values().filter(|s| s.passed).count() as u32,
        }
    }

    /// Teacher: opens or closes the exam.
    pub fn set_open(&mut self, open: bool) -> Result<(), Refusal> {
        if let Err(e) = &self.exam {
            return Err(Refusal::new(
                ErrorCode::Internal,
                format!("the shipped exam does not load: {e}"),
            ));
        }
        self.open = open;
        Ok(())
    }

    /// A student starts a sitting: a fresh seed, at most [`MAX_EXAM_SITTINGS`] per class.
    pub fn start(&mut self, student: u32) -> Result<ServerMsg, Refusal> {
        if !self.open {
            return Err(closed());
        }
        let s = self.sittings.entry(student).or_default();
        if let Some(seed) = s.open {
            // The same sitting again (a reload): its questions, not a fresh draw.
            return Ok(ServerMsg::ExamSitting {
                seed,
                version: self.version(),
            });
        }
        if s.seeds.len() as u32 >= MAX_EXAM_SITTINGS {
            return Err(Refusal::new(
                ErrorCode::BadExam,
                format!(
                    "a student sits the exam at most {MAX_EXAM_SITTINGS} times in a class: \
                     study the lessons it named and sit it in the next class"
                ),
            ));
        }
        let seed = tplab_quiz::exam::fresh_seed();
        s.seeds.push(seed);
        s.open = Some(seed);
        Ok(ServerMsg::ExamSitting {
            seed,
            version: self.version(),
        })
    }

    /// Checks a submission before the (slow) grading: the student's open sitting, bounded
    /// answers, a known language. Closes the sitting (it is graded once).
    pub fn take(
        &mut self,
        student: u32,
        seed: u64,
        lang: &str,
        answers: &[Option<String>],
    ) -> Result<(Exam, Lang), Refusal> {
        let exam = self.exam.clone().map_err(|e| {
            Refusal::new(
                ErrorCode::Internal,
                format!("the shipped exam does not load: {e}"),
            )
        })?;
        let lang: Lang = lang.parse().map_err(|_| {
            Refusal::new(
                ErrorCode::BadExam,
                format!(
                    "'{}' is not a language of the course: en or tr",
                    lang.escape_debug()
                ),
            )
        })?;
        if answers.len() > MAX_EXAM_ANSWERS {
            return Err(bad("too many answers for a sitting"));
        }
        if answers
            .iter()
            .flatten()
            .any(|a| a.chars().count() > MAX_EXAM_ANSWER_CHARS)
        {
            return Err(bad(&format!(
                "an answer is at most {MAX_EXAM_ANSWER_CHARS} characters"
            )));
        }
        let s = self.sittings.entry(student).or_default();
        if s.open != Some(seed) {
            return Err(Refusal::new(
                ErrorCode::BadExam,
                "that is not your open sitting (it was graded already, or never started): \
                 start the exam again",
            ));
        }
        s.open = None;
        self.submitted += 1;
        Ok((exam, lang))
    }

    /// Grades a sitting (off the async threads: it renders a PNG), and issues the certificate
    /// for a pass when the class has an issuer key and the student a name.
    pub fn grade(
        exam: &Exam,
        issuer: Option<&IssuerKey>,
        dir: &Path,
        name: Option<&str>,
        seed: u64,
        lang: Lang,
        answers: &[Option<String>],
    ) -> ServerMsg {
        let mut sitting = exam.sitting(seed);
        for (i, text) in answers.iter().enumerate().take(sitting.questions.len()) {
            let Some(text) = text else { continue };
            let (q, p) = (&sitting.questions[i], &sitting.presentations[i]);
            if let Ok(r) = tplab_quiz::grade::parse_response(q, p, text, lang) {
                sitting.answer(i, r);
            }
        }
        let submitted = sitting.submit(lang);
        let score = submitted.score;
        let (certificate, note) = if !score.passed {
            (None, None)
        } else {
            match (issuer, name) {
                (None, _) => (
                    None,
                    Some(
                        "this class issues no certificates (the teacher started it without an \
                         issuer key)"
                            .to_string(),
                    ),
                ),
                (Some(_), None) => (
                    None,
                    Some("a certificate names its holder: this class is anonymous".to_string()),
                ),
                (Some(key), Some(name)) => {
                    match issue(exam, key, dir, name, seed, lang, score.whole_percent()) {
                        Ok(path) => (Some(path), None),
                        Err(e) => (None, Some(format!("no certificate: {e}"))),
                    }
                }
            }
        };
        ServerMsg::ExamResult {
            correct: score.correct as u32,
            total: score.total as u32,
            percent: score.whole_percent(),
            passed: score.passed,
            certificate,
            note,
        }
    }

    /// The teacher's issuer key, shared with the grading thread.
    pub fn issuer(&self) -> Option<std::sync::Arc<IssuerKey>> {
        self.issuer.clone()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records a graded sitting's pass.
    pub fn record(&mut self, student: u32, result: &ServerMsg) {
        if let ServerMsg::ExamResult { passed: true, .. } = result {
            self.sittings.entry(student).or_default().passed = true;
        }
    }
}

/// Writes the signed certificate (PNG with the OB 3.0 credential baked in) under a random
/// name; returns its download path.
fn issue(
    exam: &Exam,
    key: &IssuerKey,
    dir: &Path,
    name: &str,
    seed: u64,
    lang: Lang,
    percent: u32,
) -> Result<String, String> {
    let now = tplab_quiz::unix_now_s();
    let c = Certificate::issue(
        name,
        &tplab_quiz::civil_date(now),
        percent,
        &exam.version,
        seed,
        lang,
        Some(key),
    )
    .map_err(|e| e.to_string())?;
    let jwt = tplab_quiz::badge::issue(
        &c,
        key,
        &tplab_quiz::badge::Subject {
            email: None,
            practical: None,
            issued_at_s: now,
        },
    )?;
    let png = c
        .render_png_with(jwt.as_deref())
        .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut token = [0u8; 16];
    getrandom::fill(&mut token).map_err(|e| e.to_string())?;
    let file: String = token.iter().map(|b| format!("{b:02x}")).collect::<String>() + ".png";
    tplab_quiz::progress::write_atomic(&dir.join(&file), &png).map_err(|e| e.to_string())?;
    Ok(format!("/api/certificate/{file}"))
}

/// A certificate file's name as the download path gives it: 32 lowercase hex digits and
/// `.png`, nothing else (no path can be named).
pub fn certificate_file(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".png")?;
    (stem.len() == 32
        && stem
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then_some(name)
}

fn closed() -> Refusal {
    Refusal::new(
        ErrorCode::BadExam,
        "the exam is not open: wait for the teacher to open it",
    )
}

fn bad(why: &str) -> Refusal {
    Refusal::new(
        ErrorCode::BadExam,
        format!("{why}: send the sitting's answers"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_files_are_hex_names_only() {
        assert!(certificate_file("0123456789abcdef0123456789abcdef.png").is_some());
        for bad in [
            "../0123456789abcdef0123456789abcdef.png",
            "0123456789ABCDEF0123456789abcdef.png",
            "0123456789abcdef0123456789abcde.png",
            "0123456789abcdef0123456789abcdef.json",
            "0123456789abcdef0123456789abcdef.png/",
        ] {
            assert!(certificate_file(bad).is_none(), "{bad}");
        }
    }
}
