//! A room's worth of load on loopback: the class server in a child process, 300 simulated
//! students (tokio-tungstenite) who vote twice on 10 questions, and the teacher's console.
//! Checks that every vote was acknowledged and counted exactly once (in the teacher's counts and
//! in the export), and prints the p50/p99 time from a vote to the teacher's count and the
//! server's memory per student.
//!
//! ```text
//! cargo run -p tplab-class --example load                 # 300 students, 10 questions
//! cargo run -p tplab-class --example load -- --students 50 --questions 3
//! ```
//!
//! Bounded: at most 500 students and 50 questions, and the whole run gives up after 300 s.
//! Everything stays on 127.0.0.1.

use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use tplab_class::protocol::{Round, ServerMsg};

type Res<T> = Result<T, Box<dyn Error + Send + Sync>>;
type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const MAX_STUDENTS: usize = 500;
const MAX_QUESTIONS: usize = 50;
const CHOICES: u32 = 4;
const DEADLINE: Duration = Duration::from_secs(300);

fn arg(args: &[String], name: &str, default: usize) -> Res<usize> {
    match args.iter().position(|a| a == name) {
        Some(i) => Ok(args
            .get(i + 1)
            .ok_or(format!("{name} needs a number"))?
            .parse()
            .map_err(|_| format!("{name} needs a number"))?),
        None => Ok(default),
    }
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let dir = args.get(i + 1).ok_or("--serve needs a folder")?;
        return serve(dir);
    }
    let students = arg(&args, "--students", 300)?;
    let questions = arg(&args, "--questions", 10)?;
    if students == 0 || students > MAX_STUDENTS || questions == 0 || questions > MAX_QUESTIONS {
        return Err(
            format!("--students 1..={MAX_STUDENTS} and --questions 1..={MAX_QUESTIONS}").into(),
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        tokio::time::timeout(DEADLINE, bench(students, questions))
            .await
            .map_err(|_| format!("gave up after {} s", DEADLINE.as_secs()))?
    })
}

/// The child: a class server on 127.0.0.1 with the per-address limits lifted (every simulated
/// student shares one address), until its stdin closes.
fn serve(dir: &str) -> Res<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut c = tplab_class::ServerConfig::new("127.0.0.1:0".parse()?, dir.into());
        c.limits = tplab_class::Limits {
            connections_per_address: 2 * MAX_STUDENTS + 10,
            messages_per_second: 1e9,
            burst: 1e9,
            ..tplab_class::Limits::default()
        };
        let s = tplab_class::start(c).await?;
        println!("{} {} {}", s.addr, s.code, s.secret);
        std::io::stdout().flush()?;
        // The parent closes our stdin when it is done (or dies).
        tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {
                line.clear();
            }
        })
        .await?;
        s.shutdown().await;
        Ok(())
    })
}

fn rss_kib(pid: u32) -> Res<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .ok_or("no VmRSS")?;
    Ok(line.split_whitespace().nth(1).ok_or("bad VmRSS")?.parse()?)
}

async fn recv(ws: &mut Ws) -> Res<ServerMsg> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => return Ok(serde_json::from_str(t.as_str())?),
            Some(Ok(Message::Close(_))) | None => return Err("socket closed".into()),
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(_)) => {}
        }
    }
}

async fn send(ws: &mut Ws, v: serde_json::Value) -> Res<()> {
    ws.send(Message::text(v.to_string())).await?;
    Ok(())
}

/// When each vote left its student: (question, round, student) → instant.
type Sent = Arc<Mutex<HashMap<(u32, Round, u32), Instant>>>;

fn choice_of(student: u32, question: u32, round: Round) -> u32 {
    // Deterministic and varied: a third of the room changes its mind in round 2.
    let r = if round == Round::Second && student.is_multiple_of(3) {
        1
    } else {
        0
    };
    (student
        .wrapping_mul(2654435761)
        .wrapping_add(question * 7 + r))
        % CHOICES
}

async fn student(mut ws: Ws, id: u32, questions: u32, sent: Sent) -> Res<u32> {
    let mut acks = 0;
    loop {
        match recv(&mut ws).await? {
            ServerMsg::Question { question, round } => {
                let choice = choice_of(id, question.id, round);
                if let Ok(mut s) = sent.lock() {
                    s.insert((question.id, round, id), Instant::now());
                }
                send(
                    &mut ws,
                    json!({"type": "vote", "question": question.id, "choice": choice}),
                )
                .await?;
            }
            ServerMsg::VoteAck { .. } => acks += 1,
            ServerMsg::Answer { question, .. } if question == questions => return Ok(acks),
            ServerMsg::Error { code, message } => {
                return Err(format!("student {id}: {code}: {message}").into())
            }
            _ => {}
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn bench(n: usize, questions: usize) -> Res<()> {
    let dir = std::env::temp_dir().join(format!("tplab-class-load-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg("--serve")
        .arg(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let result = drive(&mut child, n, questions).await;
    drop(child.stdin.take());
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn drive(child: &mut std::process::Child, n: usize, questions: usize) -> Res<()> {
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().ok_or("no stdout")?).read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let addr: SocketAddr = parts.next().ok_or("no address")?.parse()?;
    let code = parts.next().ok_or("no code")?.to_string();
    let secret = parts.next().ok_or("no secret")?.to_string();
    let url = format!("ws://{addr}/ws");

    let (mut teacher, _) = tokio_tungstenite::connect_async(&url).await?;
    send(&mut teacher, json!({"type": "teacher", "secret": secret})).await?;
    while !matches!(recv(&mut teacher).await?, ServerMsg::TeacherWelcome { .. }) {}
    let rss_before = rss_kib(pid)?;

    let joined_at = Instant::now();
    let mut sockets = Vec::with_capacity(n);
    for i in 0..n {
        let (mut ws, _) = tokio_tungstenite::connect_async(&url).await?;
        send(
            &mut ws,
            json!({"type": "join", "code": code, "name": format!("Student {i}")}),
        )
        .await?;
        let id = loop {
            match recv(&mut ws).await? {
                ServerMsg::Welcome { student, .. } => break student,
                ServerMsg::Error { code, message } => {
                    return Err(format!("join: {code}: {message}").into())
                }
                _ => {}
            }
        };
        sockets.push((id, ws));
    }
    let join_s = joined_at.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_joined = rss_kib(pid)?;

    let sent: Sent = Arc::new(Mutex::new(HashMap::new()));
    let mut tasks = Vec::with_capacity(n);
    for (id, ws) in sockets {
        tasks.push(tokio::spawn(student(
            ws,
            id,
            questions as u32,
            sent.clone(),
        )));
    }

    let started = Instant::now();
    let mut latencies_ms = Vec::with_capacity(2 * n * questions);
    let mut counted: HashMap<(u32, Round), HashSet<u32>> = HashMap::new();
    let mut duplicates = 0usize;
    for q in 1..=questions as u32 {
        send(
            &mut teacher,
            json!({"type": "pose", "question": {
                "prompt": format!("Question {q}: after the all-reduce, what does GPU 2 hold?"),
                "kind": "choice",
                "choices": ["its partial sum", "the whole sum", "nothing", "GPU 1's sum"],
                "answer": 1,
            }}),
        )
        .await?;
        for round in [Round::First, Round::Second] {
            if round == Round::Second {
                send(&mut teacher, json!({"type": "revote"})).await?;
            }
            loop {
                if let ServerMsg::Count {
                    question,
                    round: r,
                    answered,
                    student,
                    ..
                } = recv(&mut teacher).await?
                {
                    let now = Instant::now();
                    if let Some(t) = sent
                        .lock()
                        .ok()
                        .and_then(|s| s.get(&(question, r, student)).copied())
                    {
                        latencies_ms.push(now.duration_since(t).as_secs_f64() * 1e3);
                    }
                    if !counted.entry((question, r)).or_default().insert(student) {
                        duplicates += 1;
                    }
                    if question == q && r == round && answered as usize == n {
                        break;
                    }
                }
            }
            send(&mut teacher, json!({"type": "reveal"})).await?;
        }
        send(&mut teacher, json!({"type": "reveal_answer"})).await?;
    }
    let voting_s = started.elapsed().as_secs_f64();
    let mut acks = 0u32;
    for t in tasks {
        acks += t.await??;
    }
    let rss_after = rss_kib(pid)?;

    // Every vote exactly once: in the teacher's counts …
    let want = 2 * n * questions;
    let mut problems = Vec::new();
    if acks as usize != want {
        problems.push(format!("{acks} acknowledgements, want {want}"));
    }
    if duplicates > 0 {
        problems.push(format!("{duplicates} votes counted twice"));
    }
    for q in 1..=questions as u32 {
        for r in [Round::First, Round::Second] {
            let got = counted.get(&(q, r)).map_or(0, HashSet::len);
            if got != n {
                problems.push(format!(
                    "question {q} {r:?}: {got} students counted, want {n}"
                ));
            }
        }
    }
    // … and in the stored class, with the choices each student sent.
    let export = http_get(addr, "/api/export.json", &secret).await?;
    let v: serde_json::Value = serde_json::from_str(&export)?;
    let mut stored = 0;
    for q in v["questions"]
        .as_array()
        .ok_or("no questions in the export")?
    {
        let qid = q["id"].as_u64().unwrap_or(0) as u32;
        for vote in q["votes"].as_array().ok_or("no votes")? {
            stored += 1;
            let s = vote["student"].as_u64().unwrap_or(0) as u32;
            let r = if vote["round"] == "second" {
                Round::Second
            } else {
                Round::First
            };
            if vote["vote"]["choice"].as_u64() != Some(choice_of(s, qid, r) as u64) {
                problems.push(format!(
                    "question {qid}: student {s}'s {r:?} vote is not what they sent"
                ));
            }
        }
    }
    if stored != want {
        problems.push(format!("{stored} votes stored, want {want}"));
    }

    latencies_ms.sort_by(|a, b| a.total_cmp(b));
    println!("class load benchmark (loopback, server in its own process)");
    println!(
        "  {n} students, {questions} questions × 2 votes = {want} votes; joined in {join_s:.2} s; \
         voting took {voting_s:.2} s ({:.0} votes/s)",
        want as f64 / voting_s
    );
    println!(
        "  vote → teacher's count: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples)",
        percentile(&latencies_ms, 50.0),
        percentile(&latencies_ms, 99.0),
        latencies_ms.last().copied().unwrap_or(f64::NAN),
        latencies_ms.len()
    );
    println!(
        "  server memory: {:.1} MiB before the students, {:.1} MiB with {n} joined, {:.1} MiB \
         after the votes: {:.1} KiB per student",
        rss_before as f64 / 1024.0,
        rss_joined as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        (rss_joined.saturating_sub(rss_before)) as f64 / n as f64
    );
    let p99 = percentile(&latencies_ms, 99.0);
    println!(
        "  every vote acknowledged and counted exactly once: {}",
        if problems.is_empty() { "yes" } else { "NO" }
    );
    println!(
        "  p99 ≤ 200 ms target: {}",
        if p99 <= 200.0 { "met" } else { "MISSED" }
    );
    if !problems.is_empty() {
        return Err(problems.join("; ").into());
    }
    Ok(())
}

async fn http_get(addr: SocketAddr, path: &str, bearer: &str) -> Res<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(
        format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {bearer}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8(buf)?;
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP body")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("export: {}", head.lines().next().unwrap_or("")).into());
    }
    Ok(body.to_string())
}
