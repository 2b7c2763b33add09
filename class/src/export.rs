//! A class's results for a gradebook: CSV (one row per student and question, both votes) and
//! JSON (everything: questions with their answers, votes with times, challenges, plans).

use crate::protocol::{QuestionKind, Round, VoteValue, LETTERS};
use crate::room::vote_is_right;
use crate::store::ClassRecord;
use serde_json::json;
use std::collections::HashMap;

/// The CSV's columns: each vote with whether it was right and when (UTC, ISO 8601, as
/// spreadsheets read it), then how many seconds the first vote came after the question.
pub const CSV_HEADER: &str = "student,name,question,source,prompt,answer,first_vote,first_right,first_at,second_vote,second_right,second_at,seconds_to_first_vote";

/// A time the server stored (milliseconds since 1970, UTC) as ISO 8601: `2026-12-06T11:42:54.123Z`.
pub fn iso_time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| format!("{t:.3}"))
}

/// One CSV field: quoted when it holds a comma, quote or line break, and with a leading `'`
/// when a spreadsheet would read it as a formula (a student's name is untrusted input).
pub fn csv_field(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn vote_text(kind: &QuestionKind, v: &VoteValue) -> String {
    match (kind, v) {
        (QuestionKind::Choice { .. }, VoteValue::Choice { choice }) => LETTERS
            .get(*choice as usize)
            .map_or_else(|| choice.to_string(), |l| l.to_string()),
        (_, VoteValue::Numeric { value }) => format!("{value}"),
        (_, VoteValue::Choice { choice }) => choice.to_string(),
    }
}

fn answer_text(kind: &QuestionKind) -> String {
    match kind {
        QuestionKind::Choice { answer, .. } => {
            vote_text(kind, &VoteValue::Choice { choice: *answer })
        }
        QuestionKind::Numeric {
            answer, tolerance, ..
        } => {
            if *tolerance > 0.0 {
                format!("{answer} ± {tolerance}")
            } else {
                format!("{answer}")
            }
        }
    }
}

/// One row per student and question (every student, every question: an empty vote is a vote
/// not cast).
pub fn csv(c: &ClassRecord) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for q in &c.questions {
        let mut votes: HashMap<(u32, Round), (&VoteValue, i64)> = HashMap::new();
        for v in &q.votes {
            votes.insert((v.student, v.round), (&v.vote, v.at_ms));
        }
        for st in &c.students {
            let mut row = vec![
                st.id.to_string(),
                csv_field(&st.name),
                q.id.to_string(),
                csv_field(q.spec.source.as_deref().unwrap_or("")),
                csv_field(&q.spec.prompt),
                csv_field(&answer_text(&q.spec.kind)),
            ];
            for r in [Round::First, Round::Second] {
                match votes.get(&(st.id, r)) {
                    Some((v, at)) => {
                        row.push(csv_field(&vote_text(&q.spec.kind, v)));
                        row.push(vote_is_right(&q.spec, v).to_string());
                        row.push(iso_time(*at));
                    }
                    None => row.extend([String::new(), String::new(), String::new()]),
                }
            }
            row.push(
                votes
                    .get(&(st.id, Round::First))
                    .map(|(_, at)| format!("{:.1}", (at - q.posed_ms).max(0) as f64 / 1000.0))
                    .unwrap_or_default(),
            );
            s.push_str(&row.join(","));
            s.push('\n');
        }
    }
    s
}

/// Everything about a class (never the teacher's secret or the students' tokens).
pub fn json(c: &ClassRecord) -> serde_json::Value {
    json!({
        "class": {
            "code": c.code,
            "anonymous": c.anonymous,
            "created_ms": c.created_ms,
            "ended_ms": c.ended_ms,
        },
        "students": c.students.iter().map(|s| json!({
            "id": s.id, "name": s.name, "joined_ms": s.joined_ms,
        })).collect::<Vec<_>>(),
        "questions": c.questions.iter().map(|q| json!({
            "id": q.id,
            "question": q.spec,
            "phase": q.phase,
            "posed_ms": q.posed_ms,
            "votes": q.votes.iter().map(|v| json!({
                "student": v.student,
                "round": v.round,
                "vote": v.vote,
                "right": vote_is_right(&q.spec, &v.vote),
                "at_ms": v.at_ms,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "challenges": c.challenges.iter().map(|(seq, stage)| json!({"seq": seq, "stage": stage})).collect::<Vec<_>>(),
        "plans": c.plans.iter().map(|p| json!({
            "id": p.id,
            "challenge": p.challenge_seq,
            "student": p.student,
            "plan": p.plan,
            "describe": p.describe,
            "group": p.group,
            "refusal": p.refusal,
            "solved": p.solved,
            "stars": p.stars,
            "at_ms": p.at_ms,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_defused() {
        assert_eq!(csv_field("Ada"), "Ada");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(csv_field("-1+2"), "'-1+2");
    }

    #[test]
    fn times_read_as_dates_in_utc() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        // 2026-12-06 11:42:54.123 UTC.
        assert_eq!(iso_time(1_796_557_374_123), "2026-12-06T11:42:54.123Z");
    }
}
