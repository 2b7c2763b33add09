//! A whole class over real sockets: a teacher and three students run a peer-instruction round
//! and a design-lab challenge; the CSV export has every vote.

mod common;

use common::*;
use serde_json::json;
use tplab_class::protocol::{Dist, PlanGroup, Round, ServerMsg};

#[tokio::test]
async fn a_round_and_a_challenge_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), loose()).await;
    let mut t = Client::teacher(s.addr, &s.secret).await;
    let mut students = Vec::new();
    for name in ["Ada", "Bo", "Cem"] {
        students.push(Client::join(s.addr, &s.code, name).await);
    }
    t.send(choice_question(1)).await;
    // Round 1: B, A, B.
    for ((c, _, _), choice) in students.iter_mut().zip([1, 0, 1]) {
        c.until(|m| matches!(m, ServerMsg::Question { .. })).await;
        c.send(json!({"type": "vote", "question": 1, "choice": choice}))
            .await;
        c.until(|m| matches!(m, ServerMsg::VoteAck { .. })).await;
    }
    for want in 1..=3 {
        match t.until(|m| matches!(m, ServerMsg::Count { .. })).await {
            ServerMsg::Count { answered, .. } => assert_eq!(answered, want),
            _ => unreachable!(),
        }
    }
    t.send(json!({"type": "reveal"})).await;
    match t
        .until(|m| matches!(m, ServerMsg::Distribution { .. }))
        .await
    {
        ServerMsg::Distribution { dist, .. } => {
            assert_eq!(
                dist,
                Dist::Choice {
                    counts: vec![1, 2, 0, 0]
                }
            )
        }
        _ => unreachable!(),
    }
    t.send(json!({"type": "revote", "timer_s": 60})).await;
    for ((c, _, _), choice) in students.iter_mut().zip([1, 1, 1]) {
        match c
            .until(|m| {
                matches!(
                    m,
                    ServerMsg::Question {
                        round: Round::Second,
                        ..
                    }
                )
            })
            .await
        {
            ServerMsg::Question { question, .. } => {
                assert!(question.seconds_left.is_some_and(|s| s <= 60))
            }
            _ => unreachable!(),
        }
        c.send(json!({"type": "vote", "question": 1, "choice": choice}))
            .await;
        c.until(|m| matches!(m, ServerMsg::VoteAck { .. })).await;
    }
    t.send(json!({"type": "reveal"})).await;
    match t
        .until(|m| {
            matches!(
                m,
                ServerMsg::Distribution {
                    round: Round::Second,
                    ..
                }
            )
        })
        .await
    {
        ServerMsg::Distribution {
            dist, first, moves, ..
        } => {
            assert_eq!(
                dist,
                Dist::Choice {
                    counts: vec![0, 3, 0, 0]
                }
            );
            assert_eq!(
                first,
                Some(Dist::Choice {
                    counts: vec![1, 2, 0, 0]
                })
            );
            assert_eq!(moves.unwrap()[0][1], 1, "Bo moved from A to B");
        }
        _ => unreachable!(),
    }
    t.send(json!({"type": "reveal_answer"})).await;
    match t.until(|m| matches!(m, ServerMsg::Answer { .. })).await {
        ServerMsg::Answer { summary, .. } => {
            assert_eq!((summary.wrong_to_right, summary.stayed_right), (1, 2));
        }
        _ => unreachable!(),
    }
    for (c, _, _) in students.iter_mut() {
        c.until(|m| matches!(m, ServerMsg::Answer { .. })).await;
    }

    // The design lab: stage 3 (a whole layer with two forward all-reduces).
    t.send(json!({"type": "push", "target": "design:3", "title": "Design lab"}))
        .await;
    t.send(json!({"type": "set_challenge", "stage": 3})).await;
    let plan =
        |fc1: &str, fc2: &str| json!({"qkv": "columns", "out": "rows", "fc1": fc1, "fc2": fc2});
    // Two students place the collectives by hand and forget the one after fc1 by rows: GeLU
    // reads a partial sum.
    let by_hand = json!({"qkv": "columns", "out": "rows", "fc1": "rows", "fc2": "columns",
        "collectives": [{"after": "attn.out", "kind": "all-reduce"}]});
    let plans = [plan("columns", "rows"), by_hand.clone(), by_hand];
    for ((c, _, _), p) in students.iter_mut().zip(plans) {
        c.until(|m| matches!(m, ServerMsg::Push { .. })).await;
        let seq = match c.until(|m| matches!(m, ServerMsg::Challenge { .. })).await {
            ServerMsg::Challenge { challenge } => challenge.seq,
            _ => unreachable!(),
        };
        c.send(json!({"type": "submit_plan", "challenge": seq, "plan": p}))
            .await;
        match c
            .until(|m| matches!(m, ServerMsg::PlanVerdict { .. }))
            .await
        {
            ServerMsg::PlanVerdict { verdict, .. } => {
                assert_eq!(verdict.solved, verdict.group == PlanGroup::Megatron)
            }
            _ => unreachable!(),
        }
    }
    let room = loop {
        match t.until(|m| matches!(m, ServerMsg::Plans { .. })).await {
            ServerMsg::Plans { room } if room.submitted == 3 => break room,
            _ => continue,
        }
    };
    let count = |g| {
        room.groups
            .iter()
            .find(|c| c.group == g)
            .map_or(0, |c| c.count)
    };
    assert_eq!(
        (count(PlanGroup::Megatron), count(PlanGroup::Refused)),
        (1, 2)
    );
    let top = room.most_common_refusal().unwrap();
    assert_eq!((top.count, top.percent), (2, 67));
    assert!(
        top.rule.contains("GeLU"),
        "the engine's own words: {}",
        top.rule
    );
    // A plan that breaks the challenge's frame is refused with the engine's message.
    let (c, _, _) = &mut students[0];
    c.send(json!({"type": "submit_plan", "challenge": 1, "plan": plan("diagonal", "rows")}))
        .await;
    assert_eq!(c.error_code().await, "bad_plan");

    // The export: one row per student and question, both votes.
    let (status, csv) = http_get(s.addr, "/api/export.csv", Some(&s.secret)).await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], tplab_class::export::CSV_HEADER);
    assert_eq!(lines.len(), 4);
    assert!(
        lines[2].starts_with("2,Bo,1,walkthrough:4,"),
        "{}",
        lines[2]
    );
    assert!(lines[2].contains(",A,false,") && lines[2].contains(",B,true,"));
    // Each vote's time is a UTC date a spreadsheet reads; the last column how long the first
    // vote took, in seconds.
    let fields: Vec<&str> = lines[2].rsplit(',').collect();
    assert!(
        fields[1].ends_with('Z') && fields[1].contains('T') && fields[1].len() == 24,
        "{}",
        lines[2]
    );
    let took: f64 = fields[0].parse().expect("seconds to the first vote");
    assert!((0.0..60.0).contains(&took), "{}", lines[2]);
    let (status, json) = http_get(s.addr, "/api/export.json", Some(&s.secret)).await;
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["questions"][0]["votes"].as_array().map(Vec::len), Some(6));
    assert_eq!(v["plans"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn the_web_edition_is_served_compressed_and_cached() {
    let dir = tempfile::tempdir().unwrap();
    let dist = dir.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    std::fs::write(dist.join("index.html"), "<!doctype html>".repeat(200)).unwrap();
    std::fs::write(dist.join("tplab_bg.wasm"), vec![7u8; 100_000]).unwrap();
    let (n, before, after) = tplab_class::server::precompress(&dist).unwrap();
    assert_eq!(n, 2);
    assert!(after < before / 10, "{before} → {after}");
    let mut c =
        tplab_class::ServerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("data"));
    c.dist = Some(dist);
    let s = tplab_class::start(c).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    sock.write_all(b"GET /tplab_bg.wasm HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br, gzip\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    sock.read_to_end(&mut buf).await.unwrap();
    let head = String::from_utf8_lossy(&buf[..buf.len().min(600)]).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-encoding: br"), "{head}");
    assert!(
        head.contains("cache-control: public, max-age=600"),
        "{head}"
    );
    assert!(buf.len() < 10_000, "{} bytes for a 100 kB file", buf.len());
    let (status, body) = http_get(s.addr, "/healthz", None).await;
    assert_eq!((status, body.as_str()), (200, "ok"));
}
