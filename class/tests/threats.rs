//! The threat model of `docs/class.md`, each point attacked over a real socket on 127.0.0.1.

mod common;

use common::*;
use futures_util::SinkExt;
use serde_json::json;
use std::time::Duration;
use tplab_class::protocol::{Round, ServerMsg};
use tplab_class::Limits;

/// Runs a round as a student sees it, up to (not including) the answer, and returns every
/// frame the student's device received (its token blanked: it is random per run).
#[allow(clippy::unwrap_used)] // a helper of the tests below
async fn student_frames_before_reveal(answer: u32) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), loose()).await;
    let mut t = Client::teacher(s.addr, &s.secret).await;
    let (mut a, _, token) = Client::join(s.addr, &s.code, "Ada").await;
    let (mut b, _, _) = Client::join(s.addr, &s.code, "Bo").await;
    t.send(choice_question(answer)).await;
    a.until(|m| matches!(m, ServerMsg::Question { .. })).await;
    b.until(|m| matches!(m, ServerMsg::Question { .. })).await;
    a.send(json!({"type": "vote", "question": 1, "choice": 0}))
        .await;
    a.until(|m| matches!(m, ServerMsg::VoteAck { .. })).await;
    b.send(json!({"type": "vote", "question": 1, "choice": 2}))
        .await;
    b.until(|m| matches!(m, ServerMsg::VoteAck { .. })).await;
    t.send(json!({"type": "reveal"})).await;
    a.until(|m| matches!(m, ServerMsg::Phase { .. })).await;
    t.send(json!({"type": "revote"})).await;
    a.until(|m| {
        matches!(
            m,
            ServerMsg::Question {
                round: Round::Second,
                ..
            }
        )
    })
    .await;
    a.send(json!({"type": "vote", "question": 1, "choice": 1}))
        .await;
    a.until(|m| matches!(m, ServerMsg::VoteAck { .. })).await;
    t.send(json!({"type": "reveal"})).await;
    a.until(|m| matches!(m, ServerMsg::Phase { .. })).await;
    let before: Vec<String> = a
        .frames
        .iter()
        .map(|f| f.replace(&token, "TOKEN"))
        .collect();
    // And now the answer does arrive, in the one message that carries it.
    t.send(json!({"type": "reveal_answer"})).await;
    match a.until(|m| matches!(m, ServerMsg::Answer { .. })).await {
        ServerMsg::Answer { answer: got, .. } => {
            assert_eq!(
                got,
                tplab_class::protocol::AnswerView::Choice {
                    answer,
                    letter: ["A", "B", "C", "D"][answer as usize].into()
                }
            );
        }
        _ => unreachable!(),
    }
    before
}

#[tokio::test]
async fn the_answer_never_reaches_a_student_before_the_reveal() {
    // The same class with two different right answers: everything a student's device
    // receives before the reveal is byte for byte the same, so it cannot tell the answer.
    let a = student_frames_before_reveal(0).await;
    let b = student_frames_before_reveal(3).await;
    assert!(a.len() >= 7, "{a:?}");
    assert_eq!(a, b);
    for f in &a {
        assert!(!f.contains("\"answer\""), "{f}");
    }
}

#[tokio::test]
async fn teacher_actions_need_the_teachers_secret() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(
        dir.path(),
        Limits {
            teacher_attempts: 3,
            ..loose()
        },
    )
    .await;
    let (mut st, _, _) = Client::join(s.addr, &s.code, "Eve").await;
    // A student replays every teacher frame: each is refused, nothing changes.
    let frames = [
        choice_question(0),
        json!({"type": "reveal"}),
        json!({"type": "revote"}),
        json!({"type": "reveal_answer"}),
        json!({"type": "push", "target": "walkthrough:9"}),
        json!({"type": "set_challenge", "stage": 1}),
        json!({"type": "end_class"}),
    ];
    for f in &frames {
        st.send(f.clone()).await;
        assert_eq!(st.error_code().await, "teacher_only", "{f}");
    }
    // Claiming to be the teacher on a student's socket: refused.
    st.send(json!({"type": "teacher", "secret": s.secret}))
        .await;
    assert_eq!(st.error_code().await, "already_joined");
    // An unjoined socket replaying teacher frames: refused too.
    let mut anon = Client::connect(s.addr).await;
    anon.send(choice_question(0)).await;
    assert_eq!(anon.error_code().await, "teacher_only");
    // Guessing the secret: refused, and after the limit refused without a look …
    for guess in ["", "0000", &s.secret[..63]] {
        let mut g = Client::connect(s.addr).await;
        g.send(json!({"type": "teacher", "secret": guess})).await;
        assert_eq!(g.error_code().await, "bad_secret");
    }
    let mut g = Client::connect(s.addr).await;
    g.send(json!({"type": "teacher", "secret": "1234"})).await;
    assert_eq!(g.error_code().await, "too_many_attempts");
    // … but the right one (256 random bits, which no one guesses) still lets the teacher in:
    // a student behind the teacher's address cannot lock the teacher out.
    let _teacher = Client::teacher(s.addr, &s.secret).await;
    // The export is the teacher's too: without a secret it is refused (and not counted as a
    // guess), a wrong one is refused past the limit, the right one is served.
    let (status, _) = http_get(s.addr, "/api/export.csv", None).await;
    assert_eq!(status, 401);
    let (status, _) = http_get(s.addr, "/api/export.csv", Some("0000")).await;
    assert_eq!(status, 429, "past the limit");
    let (status, _) = http_get(s.addr, "/api/export.csv", Some(&s.secret)).await;
    assert_eq!(status, 200);
    let rec = s.record().unwrap();
    assert!(rec.questions.is_empty(), "no student posed anything");
    assert!(rec.ended_ms.is_none(), "no student ended the class");
    assert!(s.incidents().1 >= 10, "every refusal is logged");
}

#[tokio::test]
async fn the_export_needs_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), loose()).await;
    let (status, _) = http_get(s.addr, "/api/export.csv", None).await;
    assert_eq!(status, 401);
    let (status, _) = http_get(s.addr, "/api/export.json", Some("guess")).await;
    assert_eq!(status, 401);
    let (status, body) = http_get(s.addr, "/api/export.json", Some(&s.secret)).await;
    assert_eq!(status, 200);
    assert!(
        !body.contains(&s.secret),
        "the export never holds the secret"
    );
}

#[tokio::test]
async fn many_sockets_of_one_student_count_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), loose()).await;
    let mut t = Client::teacher(s.addr, &s.secret).await;
    let (mut first, id, token) = Client::join(s.addr, &s.code, "Mallory").await;
    t.send(choice_question(1)).await;
    first
        .until(|m| matches!(m, ServerMsg::Question { .. }))
        .await;
    let mut devices = vec![first];
    for _ in 0..5 {
        let mut c = Client::connect(s.addr).await;
        c.send(json!({"type": "join", "code": s.code, "token": token}))
            .await;
        match c.until(|m| matches!(m, ServerMsg::Welcome { .. })).await {
            ServerMsg::Welcome { student, .. } => assert_eq!(student, id),
            _ => unreachable!(),
        }
        devices.push(c);
    }
    for (i, d) in devices.iter_mut().enumerate() {
        for _ in 0..3 {
            d.send(json!({"type": "vote", "question": 1, "choice": i % 4}))
                .await;
        }
    }
    let mut counts = Vec::new();
    for _ in 0..18 {
        match t.until(|m| matches!(m, ServerMsg::Count { .. })).await {
            ServerMsg::Count { answered, .. } => counts.push(answered),
            _ => unreachable!(),
        }
    }
    assert!(counts.iter().all(|&n| n == 1), "{counts:?}");
    let rec = s.record().unwrap();
    assert_eq!(rec.students.len(), 1);
    assert_eq!(rec.questions[0].votes.len(), 1);
}

#[tokio::test]
async fn a_restarted_server_keeps_every_vote() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), loose()).await;
    let (code, secret, addr) = (s.code.clone(), s.secret.clone(), s.addr);
    let mut t = Client::teacher(addr, &secret).await;
    let (mut a, id, token) = Client::join(addr, &code, "Ada").await;
    t.send(choice_question(2)).await;
    a.until(|m| matches!(m, ServerMsg::Question { .. })).await;
    a.send(json!({"type": "vote", "question": 1, "choice": 2}))
        .await;
    // Acknowledged only once committed: after the ack, a restart keeps it.
    a.until(|m| matches!(m, ServerMsg::VoteAck { .. })).await;
    s.shutdown().await;
    assert!(a.next().await.is_none(), "the old server closed the socket");
    // Same data folder, same port: the devices reconnect by themselves.
    let s = server_on(dir.path(), loose(), addr).await;
    assert!(s.resumed);
    assert_eq!(
        (s.code.as_str(), s.secret.as_str()),
        (code.as_str(), secret.as_str())
    );
    let mut a = Client::connect(addr).await;
    a.send(json!({"type": "join", "code": code, "token": token}))
        .await;
    match a.until(|m| matches!(m, ServerMsg::Welcome { .. })).await {
        ServerMsg::Welcome {
            student,
            votes,
            question,
            ..
        } => {
            assert_eq!(student, id);
            assert_eq!(votes.len(), 1);
            assert_eq!(question.map(|q| q.id), Some(1));
        }
        _ => unreachable!(),
    }
    let mut t = Client::teacher(addr, &secret).await;
    // The round goes on: the reconnected student's vote is still counted once.
    let (mut b, _, _) = Client::join(addr, &code, "Bo").await;
    b.send(json!({"type": "vote", "question": 1, "choice": 0}))
        .await;
    match t.until(|m| matches!(m, ServerMsg::Count { .. })).await {
        ServerMsg::Count { answered, .. } => assert_eq!(answered, 2),
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn names_are_bounded_and_plain() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), loose()).await;
    let mut c = Client::connect(s.addr).await;
    for bad in ["\u{202E}gnp.exe", "a\u{0}b", "\u{1b}[2J", &"x".repeat(33)] {
        c.send(json!({"type": "join", "code": s.code, "name": bad}))
            .await;
        assert_eq!(c.error_code().await, "bad_name", "{bad:?}");
    }
    c.send(json!({"type": "join", "code": s.code, "name": "Çağrı"}))
        .await;
    match c.until(|m| matches!(m, ServerMsg::Welcome { .. })).await {
        ServerMsg::Welcome { name, .. } => assert_eq!(name, "Çağrı"),
        _ => unreachable!(),
    }
}

#[tokio::test]
async fn size_rate_and_connection_limits_hold() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(
        dir.path(),
        Limits {
            connections_per_address: 4,
            messages_per_second: 5.0,
            burst: 10.0,
            flood_close_after: 50,
            ..Limits::default()
        },
    )
    .await;
    // Oversize: an error frame, and the socket still works.
    let mut c = Client::connect(s.addr).await;
    c.send_raw(&format!(
        "{{\"type\":\"ping\",\"pad\":\"{}\"}}",
        "x".repeat(tplab_class::protocol::MAX_MESSAGE_BYTES + 1)
    ))
    .await;
    assert_eq!(c.error_code().await, "too_large");
    // Past the frame cap the WebSocket layer drops the connection; the server stays up.
    let mut huge = Client::connect(s.addr).await;
    let _ = huge
        .ws
        .send(tokio_tungstenite::tungstenite::Message::text(
            "x".repeat(200_000),
        ))
        .await;
    assert!(huge.next().await.is_none());
    drop(huge);
    // Flooding: past the burst, a rate-limited error frame (once a second, not per message) …
    let mut flood = Client::connect(s.addr).await;
    for _ in 0..30 {
        flood.send(json!({"type": "ping"})).await;
    }
    assert_eq!(flood.error_code().await, "rate_limited");
    // … and a connection that keeps flooding is closed (its unread frames may reset the TCP
    // connection, so only the close is checked).
    for _ in 0..200 {
        let ping = tokio_tungstenite::tungstenite::Message::text(r#"{"type":"ping"}"#);
        if flood.ws.send(ping).await.is_err() {
            break;
        }
    }
    while flood.next().await.is_some() {}
    assert!(flood.closed);
    drop(flood);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // Connections per address: the fifth is refused with an error frame.
    let mut open = vec![c];
    for _ in 0..3 {
        open.push(Client::connect(s.addr).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fifth = Client::connect(s.addr).await;
    assert_eq!(fifth.error_code().await, "too_many_connections");
    assert!(fifth.next().await.is_none());
    // Closing one makes room again; the server answered throughout.
    open.pop();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut again = Client::connect(s.addr).await;
    assert!(again.alive().await);
    assert!(open[0].alive().await);
}

#[tokio::test]
async fn guessing_codes_stops_at_the_limit_and_codes_die_with_the_class() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(
        dir.path(),
        Limits {
            join_attempts: 5,
            ..loose()
        },
    )
    .await;
    let mut t = Client::teacher(s.addr, &s.secret).await;
    let (_first, _, returning_token) = Client::join(s.addr, &s.code, "Ada").await;
    let mut g = Client::connect(s.addr).await;
    for i in 0..5 {
        g.send(json!({"type": "join", "code": format!("AAAA{i:02}")}))
            .await;
        assert_eq!(g.error_code().await, "bad_code");
    }
    g.send(json!({"type": "join", "code": s.code})).await;
    assert_eq!(g.error_code().await, "too_many_attempts");
    // A device coming back with its token is not guessing: it rejoins from the same address.
    let mut back = Client::connect(s.addr).await;
    back.send(json!({"type": "join", "code": s.code, "token": returning_token}))
        .await;
    back.until(|m| matches!(m, ServerMsg::Welcome { .. })).await;
    // The teacher ends the class: every socket is told and closed, the code is dead.
    t.send(json!({"type": "end_class"})).await;
    t.until(|m| matches!(m, ServerMsg::ClassEnded)).await;
    tokio::time::timeout(Duration::from_secs(5), s.ended())
        .await
        .unwrap();
    // (From another address the limit would not apply; here a fresh server on the same data
    // shows the ended class is not resumed and its code joins nothing.)
    let code = s.code.clone();
    s.shutdown().await;
    let s2 = server(dir.path(), loose()).await;
    assert!(!s2.resumed);
    assert_ne!(s2.code, code);
    let mut late = Client::connect(s2.addr).await;
    late.send(json!({"type": "join", "code": code})).await;
    assert_eq!(late.error_code().await, "bad_code");
}

#[tokio::test]
async fn bad_frames_get_an_error_frame_never_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), loose()).await;
    let mut c = Client::connect(s.addr).await;
    let deep = format!("{}{}", "[".repeat(4000), "]".repeat(4000));
    let bad = [
        "not json",
        "{}",
        r#"{"type":"warp"}"#,
        r#"{"type":"join"}"#,
        r#"{"type":"vote","question":"one"}"#,
        r#"{"type":"vote","question":-1,"choice":1}"#,
        "\u{0}\u{1}\u{2}",
        deep.as_str(),
        r#"{"type":"join","code":"x","name":null,"token":{"a":1}}"#,
    ];
    for b in bad {
        c.send_raw(b).await;
        assert_eq!(c.error_code().await, "bad_frame", "{b}");
    }
    c.ws.send(tokio_tungstenite::tungstenite::Message::binary(vec![
        0u8;
        16
    ]))
    .await
    .unwrap();
    assert_eq!(c.error_code().await, "bad_frame");
    // Not joined: a vote is refused with the rule.
    c.send(json!({"type": "vote", "question": 1, "choice": 0}))
        .await;
    assert_eq!(c.error_code().await, "not_joined");
    let mut t = Client::teacher(s.addr, &s.secret).await;
    // Malformed teacher questions are refused, not stored.
    t.send(json!({"type": "pose", "question": {"prompt": "p", "kind": "choice", "choices": ["a"], "answer": 0}}))
        .await;
    assert_eq!(t.error_code().await, "bad_question");
    t.send(
        json!({"type": "pose", "question": {"prompt": "p", "kind": "numeric", "answer": 1e300}}),
    )
    .await;
    assert_eq!(t.error_code().await, "bad_question");
    t.send(json!({"type": "set_challenge", "stage": 99})).await;
    assert_eq!(t.error_code().await, "no_challenge");
    assert!(c.alive().await);
    assert!(t.alive().await);
    let (incidents, n) = s.incidents();
    assert!(n >= 13, "{incidents:?}");
}

/// Slow requests (a "slowloris"): sockets that never finish their headers are closed at the
/// first-request deadline, sockets over the per-address cap are closed at once, and the server
/// answers a real request throughout and afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::unwrap_used)]
async fn sockets_that_never_finish_a_request_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        connections_per_address: 4, // sockets per address: 4 × 4, at least 64
        // Long enough that the 65th socket is accepted while the 64 are still held, on a slow
        // machine too.
        first_request: Duration::from_secs(3),
        ..Limits::default()
    };
    let s = server(dir.path(), limits).await;
    // 64 sockets hold the address's cap with half a request each.
    let mut slow = Vec::new();
    for _ in 0..64 {
        let mut c = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        slow.push(c);
    }
    // The 65th is closed as soon as it is accepted: its read ends without a byte.
    let mut over = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let _ = over.write_all(b"GET /healthz HTTP/1.1\r\n\r\n").await;
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), over.read_to_end(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "a socket over the cap was served: {read:?} {:?}",
        String::from_utf8_lossy(&buf)
    );
    // At the deadline every slow socket is closed (a read returns end of file or an error) …
    for c in &mut slow {
        let mut b = [0u8; 64];
        let r = tokio::time::timeout(Duration::from_secs(10), c.read(&mut b)).await;
        assert!(
            matches!(r, Ok(Ok(0)) | Ok(Err(_))),
            "a socket that never finished its request is still open: {r:?}"
        );
    }
    drop(slow);
    // … their places are free again, and a whole request is answered.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        http_get(s.addr, "/healthz", None).await,
        (200, "ok".to_string())
    );
}
