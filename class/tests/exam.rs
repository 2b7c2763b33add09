//! The certificate exam in class, over real sockets: the server draws the sitting, grades the
//! answers itself (once), and signs a pass's certificate with the teacher's issuer key; the
//! student downloads the PNG and it verifies, Open Badges credential included. Closed exams,
//! other students' sittings, a second submission, the attempts' limit and a name the student
//! never typed get no certificate.

// Test set-up: a failed one is a failed test.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use serde_json::json;
use tplab_class::protocol::{ServerMsg, MAX_EXAM_SITTINGS};
use tplab_class::ServerConfig;
use tplab_quiz::bank::{Bank, QuestionKind};
use tplab_quiz::cert::{IssuerKey, Verdict};
use tplab_quiz::exam::Exam;
use tplab_quiz::Lang;

/// The right answer to every question of the sitting `seed` draws, as a student types it.
fn right_answers(seed: u64) -> Vec<Option<String>> {
    let exam = Exam::embedded(&Bank::embedded().unwrap()).unwrap();
    let sitting = exam.sitting(seed);
    sitting
        .questions
        .iter()
        .zip(&sitting.presentations)
        .map(|(q, p)| {
            Some(match &q.kind {
                QuestionKind::Numeric { answer, .. } => format!("{answer}"),
                _ => tplab_quiz::grade::expected_answer(q, p, Lang::En),
            })
        })
        .collect()
}

async fn sitting(c: &mut Client) -> u64 {
    c.send(json!({"type": "start_exam"})).await;
    match c
        .until(|m| matches!(m, ServerMsg::ExamSitting { .. } | ServerMsg::Error { .. }))
        .await
    {
        ServerMsg::ExamSitting { seed, .. } => seed,
        other => panic!("no sitting: {other:?}"),
    }
}

async fn submit(c: &mut Client, seed: u64, answers: &[Option<String>]) -> ServerMsg {
    c.send(json!({"type": "submit_exam", "seed": seed, "lang": "en", "answers": answers}))
        .await;
    c.until(|m| matches!(m, ServerMsg::ExamResult { .. } | ServerMsg::Error { .. }))
        .await
}

#[tokio::test]
async fn the_server_grades_the_exam_and_signs_a_pass_with_the_teachers_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = IssuerKey::generate().unwrap();
    let key_path = dir.path().join("issuer.key");
    std::fs::write(&key_path, key.to_file_text()).unwrap();
    // Owner-only, as `tplab cert keygen` writes it (a key others can read is refused).
    std::fs::set_permissions(
        &key_path,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let mut config = ServerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("class"));
    config.limits = loose();
    config.issuer_key = Some(key_path);
    let s = tplab_class::start(config).await.unwrap();
    let mut t = Client::teacher(s.addr, &s.secret).await;
    let (mut ada, _, _) = Client::join(s.addr, &s.code, "Ada Lovelace").await;
    let (mut anon, _, _) = Client::join(s.addr, &s.code, "").await;

    // Closed: no sitting; a student cannot open it.
    ada.send(json!({"type": "start_exam"})).await;
    assert_eq!(ada.error_code().await, "bad_exam");
    ada.send(json!({"type": "open_exam", "open": true})).await;
    assert_eq!(ada.error_code().await, "teacher_only");
    t.send(json!({"type": "open_exam", "open": true})).await;
    match ada.until(|m| matches!(m, ServerMsg::Exam { .. })).await {
        ServerMsg::Exam {
            open, certificates, ..
        } => assert!(open && certificates),
        _ => unreachable!(),
    }

    // The sitting is the server's; asking again gives the same one.
    let seed = sitting(&mut ada).await;
    assert_eq!(sitting(&mut ada).await, seed, "a reload keeps the sitting");
    // Another seed is not this student's sitting.
    let answers = right_answers(seed);
    match submit(&mut ada, seed ^ 1, &answers).await {
        ServerMsg::Error { code, .. } => assert_eq!(code.name(), "bad_exam"),
        other => panic!("{other:?}"),
    }
    // The right answers: a pass, and a certificate to download.
    let path = match submit(&mut ada, seed, &answers).await {
        ServerMsg::ExamResult {
            passed: true,
            percent: 100,
            certificate: Some(path),
            ..
        } => path,
        other => panic!("{other:?}"),
    };
    // Graded once.
    match submit(&mut ada, seed, &answers).await {
        ServerMsg::Error { code, .. } => assert_eq!(code.name(), "bad_exam"),
        other => panic!("{other:?}"),
    }
    let (status, png) = http_get_bytes(s.addr, &path).await;
    assert_eq!(status, 200, "{path}");
    match tplab_quiz::cert::check(&png, Some(&key.public())) {
        Verdict::Signed {
            cert,
            badge: Some(claims),
            ..
        } => {
            assert_eq!(cert.name, "Ada Lovelace");
            assert_eq!(cert.score_percent, 100);
            assert_eq!(cert.sitting_seed, seed);
            assert_eq!(claims.name, "Ada Lovelace");
        }
        other => panic!("the certificate does not verify: {other:?}"),
    }
    // Nothing else under the server can be named as a certificate.
    for bad in [
        "/api/certificate/..%2Fclasses.sqlite",
        "/api/certificate/00000000000000000000000000000000.png",
        "/api/certificate/issuer.key",
    ] {
        assert_eq!(http_get_bytes(s.addr, bad).await.0, 404, "{bad}");
    }
    match t
        .until(|m| matches!(m, ServerMsg::ExamRoom { passed: 1, .. }))
        .await
    {
        ServerMsg::ExamRoom {
            started, submitted, ..
        } => assert_eq!((started, submitted), (1, 1)),
        _ => unreachable!(),
    }

    // A student who typed no name passes without a certificate, and is told why.
    let seed = sitting(&mut anon).await;
    match submit(&mut anon, seed, &right_answers(seed)).await {
        ServerMsg::ExamResult {
            passed: true,
            certificate: None,
            note: Some(note),
            ..
        } => assert!(note.contains("name"), "{note}"),
        other => panic!("{other:?}"),
    }
    // Wrong answers: not passed, no certificate; and the attempts run out.
    for _ in 1..MAX_EXAM_SITTINGS {
        let seed = sitting(&mut anon).await;
        match submit(&mut anon, seed, &[]).await {
            ServerMsg::ExamResult {
                passed: false,
                certificate: None,
                ..
            } => {}
            other => panic!("{other:?}"),
        }
    }
    anon.send(json!({"type": "start_exam"})).await;
    assert_eq!(anon.error_code().await, "bad_exam");
}

#[tokio::test]
async fn without_an_issuer_key_the_exam_is_graded_and_no_certificate_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), loose()).await;
    let mut t = Client::teacher(s.addr, &s.secret).await;
    let (mut ada, _, _) = Client::join(s.addr, &s.code, "Ada Lovelace").await;
    t.send(json!({"type": "open_exam", "open": true})).await;
    match ada.until(|m| matches!(m, ServerMsg::Exam { .. })).await {
        ServerMsg::Exam { certificates, .. } => assert!(!certificates),
        _ => unreachable!(),
    }
    let seed = sitting(&mut ada).await;
    match submit(&mut ada, seed, &right_answers(seed)).await {
        ServerMsg::ExamResult {
            passed: true,
            certificate: None,
            note: Some(note),
            ..
        } => assert!(note.contains("issuer key"), "{note}"),
        other => panic!("{other:?}"),
    }
}
