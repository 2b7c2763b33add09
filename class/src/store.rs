//! Every class in SQLite (`classes.sqlite` in the data folder): classes, students, questions,
//! votes, challenges and plans. WAL mode; a vote is acknowledged only after its transaction has
//! committed. A class that was not ended is loaded back as it was ([`Store::open_class`]).

use crate::error::ClassError;
use crate::protocol::{Phase, PlanGroup, QuestionSpec, Round, VoteValue, WirePlan};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// The file in the data folder.
pub const DB_FILE: &str = "classes.sqlite";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS classes (
    id INTEGER PRIMARY KEY,
    code TEXT NOT NULL,
    secret TEXT NOT NULL,
    anonymous INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    ended_ms INTEGER
);
CREATE TABLE IF NOT EXISTS students (
    class_id INTEGER NOT NULL,
    id INTEGER NOT NULL,
    token TEXT NOT NULL,
    name TEXT NOT NULL,
    joined_ms INTEGER NOT NULL,
    PRIMARY KEY (class_id, id)
);
CREATE TABLE IF NOT EXISTS questions (
    class_id INTEGER NOT NULL,
    id INTEGER NOT NULL,
    spec TEXT NOT NULL,
    phase TEXT NOT NULL,
    posed_ms INTEGER NOT NULL,
    deadline_ms INTEGER,
    PRIMARY KEY (class_id, id)
);
CREATE TABLE IF NOT EXISTS votes (
    class_id INTEGER NOT NULL,
    question_id INTEGER NOT NULL,
    student_id INTEGER NOT NULL,
    round INTEGER NOT NULL,
    choice INTEGER,
    value REAL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (class_id, question_id, student_id, round)
);
CREATE TABLE IF NOT EXISTS challenges (
    class_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    stage INTEGER NOT NULL,
    set_ms INTEGER NOT NULL,
    PRIMARY KEY (class_id, seq)
);
CREATE TABLE IF NOT EXISTS plans (
    class_id INTEGER NOT NULL,
    id INTEGER NOT NULL,
    challenge_seq INTEGER NOT NULL,
    student_id INTEGER NOT NULL,
    plan TEXT NOT NULL,
    describe TEXT NOT NULL,
    grp TEXT NOT NULL,
    refusal TEXT,
    solved INTEGER NOT NULL,
    stars INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (class_id, id)
);
";

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// One stored student.
#[derive(Debug, Clone, PartialEq)]
pub struct StudentRow {
    pub id: u32,
    pub token: String,
    pub name: String,
    pub joined_ms: i64,
}

/// One stored question with its votes.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionRow {
    pub id: u32,
    pub spec: QuestionSpec,
    pub phase: Phase,
    pub posed_ms: i64,
    pub deadline_ms: Option<i64>,
    pub votes: Vec<VoteRow>,
}

/// One stored vote.
#[derive(Debug, Clone, PartialEq)]
pub struct VoteRow {
    pub student: u32,
    pub round: Round,
    pub vote: VoteValue,
    pub at_ms: i64,
}

/// One stored plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRow {
    pub id: u32,
    pub challenge_seq: u32,
    pub student: u32,
    pub plan: WirePlan,
    pub describe: String,
    pub group: PlanGroup,
    pub refusal: Option<String>,
    pub solved: bool,
    pub stars: u8,
    pub at_ms: i64,
}

/// A class as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassRecord {
    pub id: i64,
    pub code: String,
    pub secret: String,
    pub anonymous: bool,
    pub created_ms: i64,
    pub ended_ms: Option<i64>,
    pub students: Vec<StudentRow>,
    pub questions: Vec<QuestionRow>,
    /// (seq, stage), in order.
    pub challenges: Vec<(u32, u32)>,
    pub plans: Vec<PlanRow>,
}

/// The database.
pub struct Store {
    conn: Connection,
}

fn db(e: rusqlite::Error) -> ClassError {
    ClassError::Storage(e.to_string())
}

impl Store {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path) -> Result<Self, ClassError> {
        std::fs::create_dir_all(dir).map_err(|e| ClassError::DataDir {
            path: dir.display().to_string(),
            reason: e.to_string(),
        })?;
        let path = dir.join(DB_FILE);
        let conn = Connection::open(&path).map_err(|e| ClassError::DataDir {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        #[cfg(unix)]
        {
            // The teacher's secret is in here: only the teacher reads it.
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        }
        Self::init(conn)
    }

    /// A database in memory (tests).
    pub fn in_memory() -> Result<Self, ClassError> {
        Self::init(Connection::open_in_memory().map_err(db)?)
    }

    fn init(conn: Connection) -> Result<Self, ClassError> {
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(db)?;
        // WAL: readers never block the writer; NORMAL: a commit is durable against a crash of
        // the server (the WAL is synced at checkpoints), which is what a class needs.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db)?;
        conn.execute_batch(SCHEMA).map_err(db)?;
        Ok(Self { conn })
    }

    /// The class that was running (not ended), if any.
    pub fn open_class(&self) -> Result<Option<ClassRecord>, ClassError> {
        let id: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM classes WHERE ended_ms IS NULL ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(db)?;
        id.map(|id| self.load(id)).transpose()
    }

    /// The newest class, ended or not.
    pub fn latest_class(&self) -> Result<Option<ClassRecord>, ClassError> {
        let id: Option<i64> = self
            .conn
            .query_row("SELECT id FROM classes ORDER BY id DESC LIMIT 1", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(db)?;
        id.map(|id| self.load(id)).transpose()
    }

    pub fn create_class(
        &self,
        code: &str,
        secret: &str,
        anonymous: bool,
    ) -> Result<i64, ClassError> {
        self.conn
            .execute(
                "INSERT INTO classes (code, secret, anonymous, created_ms) VALUES (?1, ?2, ?3, ?4)",
                params![code, secret, anonymous, now_ms()],
            )
            .map_err(db)?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn end_class(&self, class: i64) -> Result<(), ClassError> {
        self.conn
            .execute(
                "UPDATE classes SET ended_ms = ?2 WHERE id = ?1 AND ended_ms IS NULL",
                params![class, now_ms()],
            )
            .map_err(db)?;
        Ok(())
    }

    pub fn add_student(&self, class: i64, s: &StudentRow) -> Result<(), ClassError> {
        self.conn
            .prepare_cached(
                "INSERT INTO students (class_id, id, token, name, joined_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .and_then(|mut st| st.execute(params![class, s.id, s.token, s.name, s.joined_ms]))
            .map_err(db)?;
        Ok(())
    }

    pub fn add_question(&self, class: i64, q: &QuestionRow) -> Result<(), ClassError> {
        let spec =
            serde_json::to_string(&q.spec).map_err(|e| ClassError::Storage(e.to_string()))?;
        self.conn
            .execute(
                "INSERT INTO questions (class_id, id, spec, phase, posed_ms, deadline_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![class, q.id, spec, q.phase.name(), q.posed_ms, q.deadline_ms],
            )
            .map_err(db)?;
        Ok(())
    }

    pub fn set_phase(
        &self,
        class: i64,
        question: u32,
        phase: Phase,
        deadline_ms: Option<i64>,
    ) -> Result<(), ClassError> {
        self.conn
            .execute(
                "UPDATE questions SET phase = ?3, deadline_ms = ?4 WHERE class_id = ?1 AND id = ?2",
                params![class, question, phase.name(), deadline_ms],
            )
            .map_err(db)?;
        Ok(())
    }

    /// Records (or replaces) a student's vote in a round; returns once committed.
    pub fn record_vote(&self, class: i64, question: u32, v: &VoteRow) -> Result<(), ClassError> {
        let (choice, value) = match v.vote {
            VoteValue::Choice { choice } => (Some(choice), None),
            VoteValue::Numeric { value } => (None, Some(value)),
        };
        self.conn
            .prepare_cached(
                "INSERT INTO votes (class_id, question_id, student_id, round, choice, value, at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                 ON CONFLICT (class_id, question_id, student_id, round) \
                 DO UPDATE SET choice = excluded.choice, value = excluded.value, at_ms = excluded.at_ms",
            )
            .and_then(|mut st| {
                st.execute(params![
                    class,
                    question,
                    v.student,
                    v.round.number(),
                    choice,
                    value,
                    v.at_ms
                ])
            })
            .map_err(db)?;
        Ok(())
    }

    pub fn add_challenge(&self, class: i64, seq: u32, stage: u32) -> Result<(), ClassError> {
        self.conn
            .execute(
                "INSERT INTO challenges (class_id, seq, stage, set_ms) VALUES (?1, ?2, ?3, ?4)",
                params![class, seq, stage, now_ms()],
            )
            .map_err(db)?;
        Ok(())
    }

    pub fn add_plan(&self, class: i64, p: &PlanRow) -> Result<(), ClassError> {
        let plan =
            serde_json::to_string(&p.plan).map_err(|e| ClassError::Storage(e.to_string()))?;
        self.conn
            .prepare_cached(
                "INSERT INTO plans (class_id, id, challenge_seq, student_id, plan, describe, grp, refusal, solved, stars, at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    class,
                    p.id,
                    p.challenge_seq,
                    p.student,
                    plan,
                    p.describe,
                    p.group.name(),
                    p.refusal,
                    p.solved,
                    p.stars,
                    p.at_ms
                ])
            })
            .map_err(db)?;
        Ok(())
    }

    /// Loads a class with everything in it.
    pub fn load(&self, id: i64) -> Result<ClassRecord, ClassError> {
        let c = &self.conn;
        let (code, secret, anonymous, created_ms, ended_ms) = c
            .query_row(
                "SELECT code, secret, anonymous, created_ms, ended_ms FROM classes WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, bool>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, Option<i64>>(4)?,
                    ))
                },
            )
            .map_err(db)?;
        let mut st = c
            .prepare(
                "SELECT id, token, name, joined_ms FROM students WHERE class_id = ?1 ORDER BY id",
            )
            .map_err(db)?;
        let students = st
            .query_map([id], |r| {
                Ok(StudentRow {
                    id: r.get(0)?,
                    token: r.get(1)?,
                    name: r.get(2)?,
                    joined_ms: r.get(3)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(db)?;
        let mut st = c
            .prepare(
                "SELECT id, spec, phase, posed_ms, deadline_ms FROM questions WHERE class_id = ?1 ORDER BY id",
            )
            .map_err(db)?;
        let raw = st
            .query_map([id], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                ))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(db)?;
        let mut questions = Vec::with_capacity(raw.len());
        for (qid, spec, phase, posed_ms, deadline_ms) in raw {
            let spec: QuestionSpec = serde_json::from_str(&spec)
                .map_err(|e| ClassError::Storage(format!("question {qid}: {e}")))?;
            let phase = Phase::parse(&phase)
                .ok_or_else(|| ClassError::Storage(format!("question {qid}: phase {phase:?}")))?;
            questions.push(QuestionRow {
                id: qid,
                spec,
                phase,
                posed_ms,
                deadline_ms,
                votes: Vec::new(),
            });
        }
        let mut st = c
            .prepare(
                "SELECT question_id, student_id, round, choice, value, at_ms FROM votes \
                 WHERE class_id = ?1 ORDER BY question_id, round, student_id",
            )
            .map_err(db)?;
        let votes = st
            .query_map([id], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, u8>(2)?,
                    r.get::<_, Option<u32>>(3)?,
                    r.get::<_, Option<f64>>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(db)?;
        for (qid, student, round, choice, value, at_ms) in votes {
            let round = if round == 2 {
                Round::Second
            } else {
                Round::First
            };
            let vote = match (choice, value) {
                (Some(choice), _) => VoteValue::Choice { choice },
                (None, Some(value)) => VoteValue::Numeric { value },
                (None, None) => continue,
            };
            if let Some(q) = questions.iter_mut().find(|q| q.id == qid) {
                q.votes.push(VoteRow {
                    student,
                    round,
                    vote,
                    at_ms,
                });
            }
        }
        let mut st = c
            .prepare("SELECT seq, stage FROM challenges WHERE class_id = ?1 ORDER BY seq")
            .map_err(db)?;
        let challenges = st
            .query_map([id], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, u32>(1)?)))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(db)?;
        let mut st = c
            .prepare(
                "SELECT id, challenge_seq, student_id, plan, describe, grp, refusal, solved, stars, at_ms \
                 FROM plans WHERE class_id = ?1 ORDER BY id",
            )
            .map_err(db)?;
        let raw = st
            .query_map([id], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, u32>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, Option<String>>(6)?,
                    r.get::<_, bool>(7)?,
                    r.get::<_, u8>(8)?,
                    r.get::<_, i64>(9)?,
                ))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(db)?;
        let mut plans = Vec::with_capacity(raw.len());
        for (pid, challenge_seq, student, plan, describe, grp, refusal, solved, stars, at_ms) in raw
        {
            let plan: WirePlan = serde_json::from_str(&plan)
                .map_err(|e| ClassError::Storage(format!("plan {pid}: {e}")))?;
            let group = PlanGroup::parse(&grp)
                .ok_or_else(|| ClassError::Storage(format!("plan {pid}: group {grp:?}")))?;
            plans.push(PlanRow {
                id: pid,
                challenge_seq,
                student,
                plan,
                describe,
                group,
                refusal,
                solved,
                stars,
                at_ms,
            });
        }
        Ok(ClassRecord {
            id,
            code,
            secret,
            anonymous,
            created_ms,
            ended_ms,
            students,
            questions,
            challenges,
            plans,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::QuestionKind;

    #[test]
    fn a_class_round_trips_through_the_file() -> Result<(), ClassError> {
        let dir = tempfile::tempdir().map_err(|e| ClassError::Storage(e.to_string()))?;
        let id = {
            let s = Store::open(dir.path())?;
            let id = s.create_class("ABCDEF", "secret", false)?;
            s.add_student(
                id,
                &StudentRow {
                    id: 1,
                    token: "t".into(),
                    name: "Ada".into(),
                    joined_ms: 5,
                },
            )?;
            s.add_question(
                id,
                &QuestionRow {
                    id: 1,
                    spec: QuestionSpec {
                        prompt: "p".into(),
                        source: None,
                        kind: QuestionKind::Numeric {
                            answer: 2.0,
                            tolerance: 0.1,
                            unit: None,
                        },
                        timer_s: None,
                        translations: Vec::new(),
                    },
                    phase: Phase::Voting,
                    posed_ms: 6,
                    deadline_ms: None,
                    votes: vec![],
                },
            )?;
            let v = |value| VoteRow {
                student: 1,
                round: Round::First,
                vote: VoteValue::Numeric { value },
                at_ms: 7,
            };
            s.record_vote(id, 1, &v(1.0))?;
            s.record_vote(id, 1, &v(2.0))?;
            id
        };
        let s = Store::open(dir.path())?;
        let c = s
            .open_class()?
            .ok_or(ClassError::Storage("no class".into()))?;
        assert_eq!(c.id, id);
        assert_eq!(c.students.len(), 1);
        assert_eq!(
            c.questions[0].votes.len(),
            1,
            "a second vote replaces the first"
        );
        assert_eq!(
            c.questions[0].votes[0].vote,
            VoteValue::Numeric { value: 2.0 }
        );
        s.end_class(id)?;
        assert!(s.open_class()?.is_none());
        assert!(s.latest_class()?.is_some_and(|c| c.ended_ms.is_some()));
        Ok(())
    }
}
