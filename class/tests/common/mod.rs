//! A WebSocket test client that records every frame it receives, and a class server on
//! 127.0.0.1 with a temporary data folder.

#![allow(dead_code)]
// Test helpers: a failed set-up is a failed test.
#![allow(clippy::unwrap_used)]

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use tplab_class::protocol::ServerMsg;
use tplab_class::{Limits, Running, ServerConfig};

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Limits loose enough for many test clients on one address.
pub fn loose() -> Limits {
    Limits {
        connections_per_address: 64,
        messages_per_second: 10_000.0,
        burst: 10_000.0,
        join_attempts: 1000,
        ..Limits::default()
    }
}

pub async fn server(dir: &Path, limits: Limits) -> Running {
    server_on(dir, limits, "127.0.0.1:0".parse().unwrap()).await
}

pub async fn server_on(dir: &Path, limits: Limits, bind: SocketAddr) -> Running {
    let mut c = ServerConfig::new(bind, dir.to_path_buf());
    c.limits = limits;
    tplab_class::start(c).await.unwrap()
}

pub struct Client {
    pub ws: Ws,
    /// Every text frame received, as sent.
    pub frames: Vec<String>,
    pub closed: bool,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
            .await
            .unwrap();
        Client {
            ws,
            frames: Vec::new(),
            closed: false,
        }
    }

    pub async fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string()).await;
    }

    pub async fn send_raw(&mut self, text: &str) {
        self.ws.send(Message::text(text)).await.unwrap();
    }

    /// The next message (5 s at most); `None` once the socket is closed.
    pub async fn next(&mut self) -> Option<ServerMsg> {
        loop {
            let m = tokio::time::timeout(Duration::from_secs(5), self.ws.next())
                .await
                .expect("no frame within 5 s");
            match m {
                Some(Ok(Message::Text(t))) => {
                    self.frames.push(t.to_string());
                    return Some(serde_json::from_str(t.as_str()).unwrap());
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                    self.closed = true;
                    return None;
                }
                Some(Ok(_)) => continue,
            }
        }
    }

    /// Reads until a message matches `pred`, returning it.
    pub async fn until(&mut self, pred: impl Fn(&ServerMsg) -> bool) -> ServerMsg {
        loop {
            match self.next().await {
                Some(m) if pred(&m) => return m,
                Some(_) => continue,
                None => panic!("closed while waiting; frames: {:?}", self.frames),
            }
        }
    }

    /// The next `error` frame's code.
    pub async fn error_code(&mut self) -> String {
        match self.until(|m| matches!(m, ServerMsg::Error { .. })).await {
            ServerMsg::Error { code, .. } => code.name().to_string(),
            _ => unreachable!(),
        }
    }

    pub async fn join(addr: SocketAddr, code: &str, name: &str) -> (Client, u32, String) {
        let mut c = Client::connect(addr).await;
        c.send(json!({"type": "join", "code": code, "name": name}))
            .await;
        match c
            .until(|m| matches!(m, ServerMsg::Welcome { .. } | ServerMsg::Error { .. }))
            .await
        {
            ServerMsg::Welcome { student, token, .. } => (c, student, token),
            other => panic!("join refused: {other:?}"),
        }
    }

    pub async fn teacher(addr: SocketAddr, secret: &str) -> Client {
        let mut c = Client::connect(addr).await;
        c.send(json!({"type": "teacher", "secret": secret})).await;
        c.until(|m| matches!(m, ServerMsg::TeacherWelcome { .. }))
            .await;
        c
    }

    /// Pings and waits for the pong: the server is still answering this socket.
    pub async fn alive(&mut self) -> bool {
        self.send(json!({"type": "ping"})).await;
        loop {
            match self.next().await {
                Some(ServerMsg::Pong) => return true,
                Some(_) => continue,
                None => return false,
            }
        }
    }
}

pub fn choice_question(answer: u32) -> Value {
    json!({"type": "pose", "question": {
        "prompt": "After the all-reduce, what does GPU 2 hold?",
        "source": "walkthrough:4",
        "kind": "choice",
        "choices": ["its partial sum", "the whole sum", "nothing", "GPU 1's sum"],
        "answer": answer,
    }})
}

/// A GET over plain HTTP/1.1: (status, body as text).
pub async fn http_get(addr: SocketAddr, path: &str, bearer: Option<&str>) -> (u16, String) {
    let (status, body) = http_get_bytes_with(addr, path, bearer).await;
    (status, String::from_utf8_lossy(&body).to_string())
}

/// A GET over plain HTTP/1.1 for a binary body: (status, body bytes).
pub async fn http_get_bytes(addr: SocketAddr, path: &str) -> (u16, Vec<u8>) {
    http_get_bytes_with(addr, path, None).await
}

/// A GET over plain HTTP/1.1, with the teacher's secret if given: (status, body bytes).
async fn http_get_bytes_with(addr: SocketAddr, path: &str, bearer: Option<&str>) -> (u16, Vec<u8>) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let auth = bearer
        .map(|b| format!("Authorization: Bearer {b}\r\n"))
        .unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(buf.len());
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, buf[(split + 4).min(buf.len())..].to_vec())
}
