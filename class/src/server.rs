//! The class server: axum on tokio, bound to the address the teacher chooses.
//!
//! - `GET /ws`: the class's WebSocket (see [`crate::protocol`]);
//! - `GET /api/export.csv`, `GET /api/export.json`: the class's results, with the teacher's
//!   secret as `Authorization: Bearer …`;
//! - `GET /healthz`: `ok`;
//! - anything else: the web edition's files from `dist/` (precompressed `.br`/`.gz` siblings
//!   when present, compressed on the fly otherwise, with `Cache-Control`), or a page saying how to
//!   build it.
//!
//! The limits of the threat model (`docs/class.md`) live here: frame size, a message rate and a
//! connection count per address, failed joins and wrong secrets per address, a join deadline, an
//! idle timeout, a bounded send queue per connection. A refused frame gets an `error` frame and
//! is logged ([`Incident`]); nothing a device sends can stop the server.

use crate::error::{ClassError, Refusal};
use crate::plans;
use crate::protocol::{ClientMsg, ErrorCode, ServerMsg, PROTOCOL_VERSION};
use crate::room::{Out, Room, To};
use crate::store::Store;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch, Notify};

mod guard;
pub use guard::{Guard, Peer};

/// The limits a class runs under (the defaults suit a lecture hall).
#[derive(Debug, Clone)]
pub struct Limits {
    /// A text frame larger than this gets a `too_large` error frame.
    pub max_message_bytes: usize,
    /// A frame larger than this closes the connection (the WebSocket layer refuses to buffer it).
    pub max_frame_bytes: usize,
    /// Open connections from one address (joined devices; the sockets of one address, HTTP
    /// included, are capped at four times this, at least 64).
    pub connections_per_address: usize,
    /// Open connections in all (sockets: twice this).
    pub max_connections: usize,
    /// Messages per second from one address, sustained …
    pub messages_per_second: f64,
    /// … and in a burst.
    pub burst: f64,
    /// Refused messages after which a flooding connection is closed.
    pub flood_close_after: u32,
    /// Wrong join codes from one address before it may not try again (for `attempt_window`).
    pub join_attempts: u32,
    /// Wrong teacher secrets from one address before it may not try again.
    pub teacher_attempts: u32,
    pub attempt_window: Duration,
    /// A connection that has not joined (or shown the teacher's secret) by then is closed.
    pub join_deadline: Duration,
    /// A connection silent this long (no message, no pong) is closed; a socket the server waits
    /// to read from, silent this long, too.
    pub idle_timeout: Duration,
    /// A socket must have sent its first request's headers in full by then (browsers send them
    /// at once): a request trickled in byte by byte cannot hold a socket.
    pub first_request: Duration,
    /// The server pings each connection this often.
    pub ping_every: Duration,
    /// Messages waiting for one slow device; past this it is disconnected (it reconnects).
    pub send_queue: usize,
    pub max_students: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: crate::protocol::MAX_MESSAGE_BYTES,
            max_frame_bytes: 64 * 1024,
            connections_per_address: 8,
            max_connections: 2000,
            messages_per_second: 10.0,
            burst: 30.0,
            flood_close_after: 100,
            join_attempts: 10,
            teacher_attempts: 5,
            attempt_window: Duration::from_secs(600),
            join_deadline: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(90),
            first_request: Duration::from_secs(10),
            ping_every: Duration::from_secs(25),
            send_queue: 512,
            max_students: 1000,
        }
    }
}

/// How to run a class.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// Where `classes.sqlite` lives.
    pub data_dir: PathBuf,
    /// The web edition's files (`dist/`), if built.
    pub dist: Option<PathBuf>,
    pub anonymous: bool,
    /// End a class left running and start a new one (else it is resumed).
    pub new_class: bool,
    pub limits: Limits,
    /// Write incidents (refused frames) to stderr.
    pub log_stderr: bool,
    /// The teacher's issuer key (`tplab cert keygen`): a pass of the exam in class earns a
    /// certificate signed with it. `None`: the exam is graded, no certificate is issued.
    pub issuer_key: Option<PathBuf>,
}

impl ServerConfig {
    pub fn new(bind: SocketAddr, data_dir: PathBuf) -> Self {
        Self {
            bind,
            data_dir,
            dist: None,
            anonymous: false,
            new_class: false,
            limits: Limits::default(),
            log_stderr: false,
            issuer_key: None,
        }
    }
}

/// A refused frame, logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    pub addr: IpAddr,
    pub code: ErrorCode,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Pending,
    Student(u32),
    Teacher,
}

enum Outgoing {
    Text(Utf8Bytes),
    Close(u16, &'static str),
}

struct Conn {
    role: Role,
    ip: IpAddr,
    tx: mpsc::Sender<Outgoing>,
    kill: Arc<Notify>,
}

struct AddrState {
    conns: usize,
    tokens: f64,
    refill_at: Instant,
    refused: u32,
    last_rate_error: Option<Instant>,
    failed_joins: u32,
    failed_teacher: u32,
    window_start: Instant,
}

impl AddrState {
    fn new(limits: &Limits) -> Self {
        Self {
            conns: 0,
            tokens: limits.burst,
            refill_at: Instant::now(),
            refused: 0,
            last_rate_error: None,
            failed_joins: 0,
            failed_teacher: 0,
            window_start: Instant::now(),
        }
    }

    fn roll_window(&mut self, limits: &Limits) {
        if self.window_start.elapsed() > limits.attempt_window {
            self.failed_joins = 0;
            self.failed_teacher = 0;
            self.window_start = Instant::now();
        }
    }
}

struct Inner {
    room: Room,
    conns: HashMap<u64, Conn>,
    exam: crate::exam::ExamDesk,
}

struct Hub {
    inner: Mutex<Inner>,
    addrs: Mutex<HashMap<IpAddr, AddrState>>,
    limits: Limits,
    next_conn: AtomicU64,
    open: AtomicU64,
    incidents: Mutex<VecDeque<Incident>>,
    incident_count: AtomicU64,
    log_stderr: bool,
    ended: watch::Sender<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not take the class down with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

const MAX_INCIDENTS_KEPT: usize = 1000;

impl Hub {
    fn incident(&self, addr: IpAddr, code: ErrorCode, detail: impl Into<String>) {
        let detail: String = detail.into();
        let detail: String = detail.chars().take(300).collect();
        if self.log_stderr {
            eprintln!(
                "class: refused a frame from {addr}: {code}: {}",
                tplab_engine::text::escape_unsafe(&detail)
            );
        }
        self.incident_count.fetch_add(1, Ordering::Relaxed);
        let mut log = lock(&self.incidents);
        if log.len() >= MAX_INCIDENTS_KEPT {
            log.pop_front();
        }
        log.push_back(Incident { addr, code, detail });
    }

    /// Sends `outs` from connection `caller`'s point of view. Call with `inner` locked, so that
    /// every device sees the messages in the order the room made them.
    fn deliver(&self, inner: &mut Inner, caller: u64, outs: Vec<Out>) {
        let mut slow = Vec::new();
        for o in outs {
            let text = match serde_json::to_string(&o.msg) {
                Ok(t) => Utf8Bytes::from(t),
                Err(_) => continue,
            };
            for (&id, c) in &inner.conns {
                let wanted = match o.to {
                    To::Caller => id == caller,
                    To::Teachers => c.role == Role::Teacher,
                    To::Students => matches!(c.role, Role::Student(_)),
                    To::Student(s) => c.role == Role::Student(s),
                    To::All => c.role != Role::Pending,
                };
                // A full queue is a device too far behind; a closed one is a socket already
                // going away (its connection task removes it).
                if wanted
                    && matches!(
                        c.tx.try_send(Outgoing::Text(text.clone())),
                        Err(mpsc::error::TrySendError::Full(_))
                    )
                {
                    slow.push(id);
                }
            }
        }
        for id in slow {
            if let Some(c) = inner.conns.get(&id) {
                self.incident(
                    c.ip,
                    ErrorCode::Internal,
                    "a device fell too far behind (send queue full): disconnected; it reconnects",
                );
                c.kill.notify_one();
            }
        }
    }

    fn reply(&self, inner: &mut Inner, caller: u64, msg: ServerMsg) {
        self.deliver(
            inner,
            caller,
            vec![Out {
                to: To::Caller,
                msg,
            }],
        );
    }

    fn refuse(&self, inner: &mut Inner, caller: u64, ip: IpAddr, r: Refusal) {
        self.incident(ip, r.code, r.message.clone());
        self.reply(inner, caller, r.to_msg());
    }

    async fn on_text(self: &Arc<Self>, id: u64, ip: IpAddr, text: &str) -> bool {
        let cost = if text.contains("\"submit_plan\"") {
            5.0
        } else {
            1.0
        };
        match self.rate_check(ip, cost) {
            RateVerdict::Go => {}
            RateVerdict::Quiet => return true,
            RateVerdict::Tell => {
                let mut inner = lock(&self.inner);
                self.refuse(
                    &mut inner,
                    id,
                    ip,
                    Refusal::new(
                        ErrorCode::RateLimited,
                        format!(
                            "too many messages from this address (at most {} a second): slow down",
                            self.limits.messages_per_second
                        ),
                    ),
                );
                return true;
            }
            RateVerdict::Close => {
                let mut inner = lock(&self.inner);
                self.refuse(
                    &mut inner,
                    id,
                    ip,
                    Refusal::new(
                        ErrorCode::RateLimited,
                        "this connection kept flooding the server and is closed",
                    ),
                );
                return false;
            }
        }
        if text.len() > self.limits.max_message_bytes {
            let mut inner = lock(&self.inner);
            self.refuse(
                &mut inner,
                id,
                ip,
                Refusal::new(
                    ErrorCode::TooLarge,
                    format!(
                        "a message is at most {} bytes; this one has {}: send less",
                        self.limits.max_message_bytes,
                        text.len()
                    ),
                ),
            );
            return true;
        }
        let msg: ClientMsg = match serde_json::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                let mut inner = lock(&self.inner);
                let why: String = e.to_string().chars().take(200).collect();
                self.refuse(
                    &mut inner,
                    id,
                    ip,
                    Refusal::new(
                        ErrorCode::BadFrame,
                        format!("not a class message ({why}): see docs/class.md for the messages"),
                    ),
                );
                return true;
            }
        };
        if let ClientMsg::SubmitPlan { challenge, plan } = msg {
            return self.on_plan(id, ip, challenge, plan).await;
        }
        if let ClientMsg::SubmitExam {
            seed,
            lang,
            answers,
        } = msg
        {
            return self.on_exam(id, ip, seed, lang, answers).await;
        }
        let mut inner = lock(&self.inner);
        let Some(role) = inner.conns.get(&id).map(|c| c.role) else {
            return false;
        };
        let result: Result<Vec<Out>, Refusal> = match (role, msg) {
            (_, ClientMsg::Ping) => Ok(vec![Out {
                to: To::Caller,
                msg: ServerMsg::Pong,
            }]),
            (Role::Pending, ClientMsg::Join { code, name, token }) => {
                // A device coming back with its token is not guessing the code: the limit on
                // wrong codes from an address (a whole room behind one NAT) does not hold it.
                let returning = token.as_deref().is_some_and(|t| inner.room.knows_token(t));
                let left = if returning {
                    Ok(())
                } else {
                    self.attempts_left(ip, false)
                };
                if let Err(r) = left {
                    Err(r)
                } else {
                    match inner.room.join(&code, name.as_deref(), token.as_deref()) {
                        Ok((student, mut outs)) => {
                            if let Some(c) = inner.conns.get_mut(&id) {
                                c.role = Role::Student(student);
                            }
                            // The exam, when it is open, after the welcome.
                            if inner.exam.open {
                                outs.push(Out {
                                    to: To::Caller,
                                    msg: inner.exam.view(),
                                });
                            }
                            Ok(outs)
                        }
                        Err(r) => {
                            if r.code == ErrorCode::BadCode {
                                self.failed_attempt(ip, false);
                            }
                            Err(r)
                        }
                    }
                }
            }
            (Role::Pending, ClientMsg::Teacher { secret }) => {
                // The secret is 256 random bits: no one guesses it, so the right one is always
                // let in (a student behind the teacher's NAT trying secrets cannot lock the
                // teacher out); the limit only quiets wrong ones.
                if inner.room.is_teacher_secret(&secret) {
                    if let Some(c) = inner.conns.get_mut(&id) {
                        c.role = Role::Teacher;
                    }
                    Ok(vec![
                        Out {
                            to: To::Caller,
                            msg: ServerMsg::TeacherWelcome {
                                protocol: PROTOCOL_VERSION,
                                room: inner.room.room_view(),
                            },
                        },
                        Out {
                            to: To::Caller,
                            msg: inner.exam.view(),
                        },
                        Out {
                            to: To::Caller,
                            msg: inner.exam.room(),
                        },
                    ])
                } else if let Err(r) = self.attempts_left(ip, true) {
                    Err(r)
                } else {
                    self.failed_attempt(ip, true);
                    Err(Refusal::new(
                        ErrorCode::BadSecret,
                        "that is not this class's teacher secret: open the console with the link \
                         `tplab class` printed",
                    ))
                }
            }
            (_, ClientMsg::Join { .. } | ClientMsg::Teacher { .. }) => Err(Refusal::new(
                ErrorCode::AlreadyJoined,
                "this connection has already joined: open a new one to join again",
            )),
            (Role::Teacher, m) if m.is_teacher_action() => match m {
                ClientMsg::Pose { question } => inner.room.pose(question),
                ClientMsg::Reveal => inner.room.reveal(),
                ClientMsg::Revote { timer_s } => inner.room.revote(timer_s),
                ClientMsg::RevealAnswer => inner.room.reveal_answer(),
                ClientMsg::Push { target, title } => inner.room.push(target, title),
                ClientMsg::SetChallenge { stage } => inner.room.set_challenge(stage),
                ClientMsg::OpenExam { open } => inner.exam.set_open(open).map(|()| {
                    vec![
                        Out {
                            to: To::All,
                            msg: inner.exam.view(),
                        },
                        Out {
                            to: To::Teachers,
                            msg: inner.exam.room(),
                        },
                    ]
                }),
                ClientMsg::EndClass => inner.room.end(),
                _ => Ok(Vec::new()),
            },
            (_, m) if m.is_teacher_action() => Err(Refusal::new(
                ErrorCode::TeacherOnly,
                "only the teacher's console may do this: students vote and submit plans",
            )),
            (
                Role::Student(s),
                ClientMsg::Vote {
                    question,
                    choice,
                    value,
                },
            ) => inner.room.vote(s, question, choice, value),
            (Role::Student(s), ClientMsg::StartExam) => inner.exam.start(s).map(|sitting| {
                vec![
                    Out {
                        to: To::Caller,
                        msg: sitting,
                    },
                    Out {
                        to: To::Teachers,
                        msg: inner.exam.room(),
                    },
                ]
            }),
            (Role::Teacher, ClientMsg::StartExam) => Err(Refusal::new(
                ErrorCode::NotJoined,
                "the teacher's console does not sit the exam: join as a student on another device",
            )),
            (Role::Teacher, ClientMsg::Vote { .. }) => Err(Refusal::new(
                ErrorCode::NotJoined,
                "the teacher's console does not vote: join as a student on another device",
            )),
            (Role::Pending, _) => Err(Refusal::new(
                ErrorCode::NotJoined,
                "join the class first: send `join` with the class's code",
            )),
            (_, _) => Ok(Vec::new()),
        };
        let ended = inner.room.ended;
        match result {
            Ok(outs) => self.deliver(&mut inner, id, outs),
            Err(r) => self.refuse(&mut inner, id, ip, r),
        }
        if ended {
            self.close_all(&mut inner);
        }
        true
    }

    fn rate_check(&self, ip: IpAddr, cost: f64) -> RateVerdict {
        let mut addrs = lock(&self.addrs);
        let a = addrs
            .entry(ip)
            .or_insert_with(|| AddrState::new(&self.limits));
        let now = Instant::now();
        let dt = now.duration_since(a.refill_at).as_secs_f64();
        a.refill_at = now;
        a.tokens = (a.tokens + dt * self.limits.messages_per_second).min(self.limits.burst);
        if a.tokens >= cost {
            a.tokens -= cost;
            return RateVerdict::Go;
        }
        a.refused += 1;
        if a.refused > self.limits.flood_close_after {
            a.refused = 0;
            return RateVerdict::Close;
        }
        if a.last_rate_error
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            a.last_rate_error = Some(now);
            RateVerdict::Tell
        } else {
            RateVerdict::Quiet
        }
    }

    fn attempts_left(&self, ip: IpAddr, teacher: bool) -> Result<(), Refusal> {
        let mut addrs = lock(&self.addrs);
        let a = addrs
            .entry(ip)
            .or_insert_with(|| AddrState::new(&self.limits));
        a.roll_window(&self.limits);
        let (n, max) = if teacher {
            (a.failed_teacher, self.limits.teacher_attempts)
        } else {
            (a.failed_joins, self.limits.join_attempts)
        };
        if n >= max {
            return Err(Refusal::new(
                ErrorCode::TooManyAttempts,
                format!(
                    "{n} wrong {} from this address: wait {} minutes, then check it on the projector",
                    if teacher { "secrets" } else { "codes" },
                    self.limits.attempt_window.as_secs().div_ceil(60)
                ),
            ));
        }
        Ok(())
    }

    fn failed_attempt(&self, ip: IpAddr, teacher: bool) {
        let mut addrs = lock(&self.addrs);
        let a = addrs
            .entry(ip)
            .or_insert_with(|| AddrState::new(&self.limits));
        if teacher {
            a.failed_teacher += 1;
        } else {
            a.failed_joins += 1;
        }
    }

    async fn on_plan(
        self: &Arc<Self>,
        id: u64,
        ip: IpAddr,
        seq: u32,
        plan: crate::protocol::WirePlan,
    ) -> bool {
        let (role, current) = {
            let inner = lock(&self.inner);
            let Some(role) = inner.conns.get(&id).map(|c| c.role) else {
                return false;
            };
            (role, inner.room.current_challenge())
        };
        let refusal = |code, msg: String| Refusal::new(code, msg);
        let checked = match (role, current) {
            (Role::Student(s), Some((cur, stage))) if cur == seq => {
                // The engine's check runs off the async threads.
                let res = tokio::task::spawn_blocking(move || {
                    plans::challenge(stage).and_then(|c| plans::check(&c, &plan))
                })
                .await;
                match res {
                    Ok(Ok(c)) => Ok((s, c)),
                    Ok(Err(e)) => Err(refusal(ErrorCode::BadPlan, e)),
                    Err(e) => Err(refusal(
                        ErrorCode::Internal,
                        format!("the plan could not be checked ({e}); try again"),
                    )),
                }
            }
            (Role::Student(_), Some((cur, _))) => Err(refusal(
                ErrorCode::NoChallenge,
                format!(
                    "challenge {seq} is not the current one ({cur}): work on the one on screen"
                ),
            )),
            (Role::Student(_), None) => Err(refusal(
                ErrorCode::NoChallenge,
                "no challenge is set: wait for the teacher's".into(),
            )),
            (Role::Teacher, _) => Err(refusal(
                ErrorCode::NotJoined,
                "the teacher's console does not submit plans".into(),
            )),
            (Role::Pending, _) => Err(refusal(
                ErrorCode::NotJoined,
                "join the class first: send `join` with the class's code".into(),
            )),
        };
        let mut inner = lock(&self.inner);
        let result = checked.and_then(|(s, c)| inner.room.record_plan(s, seq, c));
        match result {
            Ok(outs) => self.deliver(&mut inner, id, outs),
            Err(r) => self.refuse(&mut inner, id, ip, r),
        }
        true
    }

    /// A student's exam answers: checked and the sitting closed under the lock, graded (and
    /// the certificate rendered and signed) off the async threads.
    async fn on_exam(
        self: &Arc<Self>,
        id: u64,
        ip: IpAddr,
        seed: u64,
        lang: String,
        answers: Vec<Option<String>>,
    ) -> bool {
        let taken = {
            let mut inner = lock(&self.inner);
            let Some(role) = inner.conns.get(&id).map(|c| c.role) else {
                return false;
            };
            let taken = match role {
                Role::Student(s) => {
                    inner
                        .exam
                        .take(s, seed, &lang, &answers)
                        .map(|(exam, lang)| {
                            let name = inner.room.certificate_name(s);
                            (s, exam, lang, name)
                        })
                }
                Role::Teacher => Err(Refusal::new(
                    ErrorCode::NotJoined,
                    "the teacher's console does not sit the exam",
                )),
                Role::Pending => Err(Refusal::new(
                    ErrorCode::NotJoined,
                    "join the class first: send `join` with the class's code",
                )),
            };
            match taken {
                Ok(t) => (t, inner.exam.issuer(), inner.exam.dir().to_path_buf()),
                Err(r) => {
                    self.refuse(&mut inner, id, ip, r);
                    return true;
                }
            }
        };
        let ((student, exam, lang, name), key, dir) = taken;
        let graded = tokio::task::spawn_blocking(move || {
            crate::exam::ExamDesk::grade(
                &exam,
                key.as_deref(),
                &dir,
                name.as_deref(),
                seed,
                lang,
                &answers,
            )
        })
        .await;
        let mut inner = lock(&self.inner);
        match graded {
            Ok(result) => {
                inner.exam.record(student, &result);
                let room = inner.exam.room();
                let outs = vec![
                    Out {
                        to: To::Student(student),
                        msg: result,
                    },
                    Out {
                        to: To::Teachers,
                        msg: room,
                    },
                ];
                self.deliver(&mut inner, id, outs);
            }
            Err(e) => self.refuse(
                &mut inner,
                id,
                ip,
                Refusal::new(
                    ErrorCode::Internal,
                    format!("the sitting could not be graded ({e}); tell the teacher"),
                ),
            ),
        }
        true
    }

    fn close_all(&self, inner: &mut Inner) {
        for c in inner.conns.values() {
            let _ = c.tx.try_send(Outgoing::Close(1000, "the class has ended"));
        }
        self.ended.send_replace(true);
    }

    /// Admits a new connection from `ip` (per-address and total caps).
    fn admit(&self, ip: IpAddr) -> Result<(), Refusal> {
        let mut addrs = lock(&self.addrs);
        let a = addrs
            .entry(ip)
            .or_insert_with(|| AddrState::new(&self.limits));
        if a.conns >= self.limits.connections_per_address {
            return Err(Refusal::new(
                ErrorCode::TooManyConnections,
                format!(
                    "at most {} connections from one address: close another tab or device",
                    self.limits.connections_per_address
                ),
            ));
        }
        if self.open.load(Ordering::Relaxed) as usize >= self.limits.max_connections {
            return Err(Refusal::new(
                ErrorCode::TooManyConnections,
                format!(
                    "the server holds {} connections already: try again in a minute",
                    self.limits.max_connections
                ),
            ));
        }
        a.conns += 1;
        self.open.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn release(&self, ip: IpAddr) {
        let mut addrs = lock(&self.addrs);
        if let Some(a) = addrs.get_mut(&ip) {
            a.conns = a.conns.saturating_sub(1);
        }
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

enum RateVerdict {
    Go,
    Quiet,
    Tell,
    Close,
}

async fn ws_route(
    ws: WebSocketUpgrade,
    ConnectInfo(Peer(addr)): ConnectInfo<Peer>,
    State(hub): State<Arc<Hub>>,
) -> Response {
    let limits = &hub.limits;
    // Small buffers: a class's frames are a few hundred bytes, and tungstenite's defaults
    // (128 KiB to read) would cost every student's connection that much.
    ws.max_message_size(limits.max_frame_bytes)
        .max_frame_size(limits.max_frame_bytes)
        .read_buffer_size(4 * 1024)
        .write_buffer_size(4 * 1024)
        .on_upgrade(move |socket| connection(hub, socket, addr.ip()))
}

async fn connection(hub: Arc<Hub>, mut socket: WebSocket, ip: IpAddr) {
    if let Err(r) = hub.admit(ip) {
        hub.incident(ip, r.code, r.message.clone());
        if let Ok(t) = serde_json::to_string(&r.to_msg()) {
            let _ = socket.send(Message::Text(t.into())).await;
        }
        let _ = socket
            .send(Message::Close(Some(CloseFrame {
                code: 1008,
                reason: "too many connections".into(),
            })))
            .await;
        return;
    }
    let id = hub.next_conn.fetch_add(1, Ordering::Relaxed);
    let (tx, rx) = mpsc::channel(hub.limits.send_queue);
    let kill = Arc::new(Notify::new());
    lock(&hub.inner).conns.insert(
        id,
        Conn {
            role: Role::Pending,
            ip,
            tx,
            kill: kill.clone(),
        },
    );
    let (sink, mut stream) = socket.split();
    let writer = tokio::spawn(write_loop(sink, rx, hub.limits.ping_every));
    let opened = Instant::now();
    loop {
        let pending = lock(&hub.inner)
            .conns
            .get(&id)
            .is_none_or(|c| c.role == Role::Pending);
        let wait = if pending {
            hub.limits.join_deadline.saturating_sub(opened.elapsed())
        } else {
            hub.limits.idle_timeout
        };
        let next = tokio::select! {
            _ = kill.notified() => break,
            r = tokio::time::timeout(wait, stream.next()) => r,
        };
        let msg = match next {
            Err(_) => {
                let mut inner = lock(&hub.inner);
                let why = if pending {
                    "no `join` in time: the connection is closed; reconnect and join"
                } else {
                    "no message or pong for too long: the connection is closed; reconnect"
                };
                hub.refuse(&mut inner, id, ip, Refusal::new(ErrorCode::Idle, why));
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                // A frame past max_frame_bytes, or a broken WebSocket: the socket is done.
                hub.incident(ip, ErrorCode::BadFrame, format!("WebSocket error: {e}"));
                break;
            }
            Ok(Some(Ok(m))) => m,
        };
        let go_on = match msg {
            Message::Text(t) => hub.on_text(id, ip, t.as_str()).await,
            Message::Binary(_) => {
                let mut inner = lock(&hub.inner);
                hub.refuse(
                    &mut inner,
                    id,
                    ip,
                    Refusal::new(
                        ErrorCode::BadFrame,
                        "binary frames are not part of the protocol: send JSON text",
                    ),
                );
                true
            }
            Message::Ping(_) | Message::Pong(_) => true,
            Message::Close(_) => false,
        };
        if !go_on {
            break;
        }
    }
    {
        let mut inner = lock(&hub.inner);
        if let Some(c) = inner.conns.remove(&id) {
            if let Role::Student(s) = c.role {
                let outs = inner.room.disconnect(s);
                hub.deliver(&mut inner, id, outs);
            }
        }
    }
    hub.release(ip);
    // The sender is gone with the connection: the writer sends what is queued, closes, ends.
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
}

async fn write_loop(
    mut sink: futures_util::stream::SplitSink<WebSocket, Message>,
    mut rx: mpsc::Receiver<Outgoing>,
    ping_every: Duration,
) {
    let mut ping = tokio::time::interval(ping_every);
    ping.tick().await;
    loop {
        tokio::select! {
            m = rx.recv() => match m {
                Some(Outgoing::Text(t)) => {
                    if sink.send(Message::Text(t)).await.is_err() {
                        break;
                    }
                }
                Some(Outgoing::Close(code, reason)) => {
                    let _ = sink
                        .send(Message::Close(Some(CloseFrame { code, reason: reason.into() })))
                        .await;
                    break;
                }
                None => {
                    let _ = sink.send(Message::Close(None)).await;
                    break;
                }
            },
            _ = ping.tick() => {
                if sink.send(Message::Ping(Default::default())).await.is_err() {
                    break;
                }
            }
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// A certificate the class issued, by the random name its holder was given (only that device
/// learned it); nothing else under the folder can be named.
async fn certificate_route(hub: Arc<Hub>, file: String) -> Response {
    let Some(file) = crate::exam::certificate_file(&file) else {
        return (StatusCode::NOT_FOUND, "no such certificate").into_response();
    };
    let path = lock(&hub.inner).exam.dir().join(file);
    match tokio::fs::read(&path).await {
        Ok(png) => (
            [
                (header::CONTENT_TYPE, "image/png".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"tplab-certificate.png\"".to_string(),
                ),
                (header::CACHE_CONTROL, "no-store".to_string()),
            ],
            png,
        )
            .into_response(),
        Err(_) => (StatusCode::NOT_FOUND, "no such certificate").into_response(),
    }
}

async fn export_route(hub: Arc<Hub>, ip: IpAddr, headers: HeaderMap, json: bool) -> Response {
    let inner = lock(&hub.inner);
    // The right secret is always let in (as on the WebSocket); a request without one is not a
    // guess; wrong ones count, and past the limit are refused without a look.
    let given = bearer(&headers);
    if !given.is_some_and(|s| inner.room.is_teacher_secret(s)) {
        drop(inner);
        if given.is_some() {
            if let Err(r) = hub.attempts_left(ip, true) {
                return (StatusCode::TOO_MANY_REQUESTS, r.message).into_response();
            }
            hub.failed_attempt(ip, true);
        }
        hub.incident(
            ip,
            ErrorCode::BadSecret,
            "export without the teacher's secret",
        );
        return (
            StatusCode::UNAUTHORIZED,
            "the export needs the teacher's secret: send `Authorization: Bearer <secret>`",
        )
            .into_response();
    }
    let rec = match inner.room.store().load(inner.room.class_id) {
        Ok(r) => r,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    };
    drop(inner);
    if json {
        let body = crate::export::json(&rec).to_string();
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    } else {
        (
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"class.csv\"",
                ),
            ],
            crate::export::csv(&rec),
        )
            .into_response()
    }
}

const NO_DIST: &str = "<!doctype html><meta charset=utf-8><title>tplab class</title>\
<p>The class server is running, but the web edition is not built here.</p>\
<p>Build it with <code>scripts/web-build.sh</code> (it writes <code>dist/</code>) and restart \
<code>tplab class</code>; or pass <code>--dist</code> with the folder that holds it.</p>";

fn router(hub: Arc<Hub>, dist: Option<PathBuf>) -> Router {
    use tower_http::compression::{CompressionLayer, CompressionLevel};
    use tower_http::services::ServeDir;
    use tower_http::set_header::SetResponseHeaderLayer;
    let api = Router::new()
        .route("/ws", get(ws_route))
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/api/export.csv",
            get(
                |State(hub): State<Arc<Hub>>,
                 ConnectInfo(Peer(addr)): ConnectInfo<Peer>,
                 headers: HeaderMap| async move {
                    export_route(hub, addr.ip(), headers, false).await
                },
            ),
        )
        .route(
            "/api/export.json",
            get(
                |State(hub): State<Arc<Hub>>,
                 ConnectInfo(Peer(addr)): ConnectInfo<Peer>,
                 headers: HeaderMap| async move {
                    export_route(hub, addr.ip(), headers, true).await
                },
            ),
        )
        .route(
            "/api/certificate/{file}",
            get(
                |State(hub): State<Arc<Hub>>, Path(file): Path<String>| async move {
                    certificate_route(hub, file).await
                },
            ),
        )
        .with_state(hub);
    match dist {
        Some(dir) if dir.join("index.html").is_file() => {
            let files = Router::new()
                .fallback_service(
                    ServeDir::new(dir)
                        .precompressed_br()
                        .precompressed_gzip()
                        .append_index_html_on_directories(true),
                )
                // Files without a precompressed sibling: compressed here, at a quality that
                // keeps a lecture hall's 120 downloads from eating the teacher's CPU.
                .layer(CompressionLayer::new().quality(CompressionLevel::Fastest))
                // Revalidated after ten minutes (Last-Modified: a rebuilt edition is seen).
                .layer(SetResponseHeaderLayer::if_not_present(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=600"),
                ));
            api.fallback_service(files)
        }
        _ => api.fallback(|| async { Html(NO_DIST) }),
    }
}

/// Writes `.br` and `.gz` beside each large text or wasm file of `dist` that lacks a current
/// one (served instead of compressing per request). Returns (files, bytes before, brotli bytes).
pub fn precompress(dist: &std::path::Path) -> std::io::Result<(usize, u64, u64)> {
    use std::io::Write;
    let mut n = 0;
    let mut before = 0;
    let mut after = 0;
    for entry in std::fs::read_dir(dist)? {
        let path = entry?.path();
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            continue;
        };
        if !matches!(ext, "wasm" | "js" | "html" | "css" | "json" | "svg") {
            continue;
        }
        let meta = std::fs::metadata(&path)?;
        if !meta.is_file() || meta.len() < 1024 {
            continue;
        }
        let modified = meta.modified()?;
        let br = path.with_extension(format!("{ext}.br"));
        let gz = path.with_extension(format!("{ext}.gz"));
        let fresh = |p: &std::path::Path| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= modified)
        };
        let data = std::fs::read(&path)?;
        before += data.len() as u64;
        if !fresh(&br) {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 64 * 1024, 9, 22);
                w.write_all(&data)?;
            }
            std::fs::write(&br, &out)?;
        }
        after += std::fs::metadata(&br)?.len();
        if !fresh(&gz) {
            let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            w.write_all(&data)?;
            std::fs::write(&gz, w.finish()?)?;
        }
        n += 1;
    }
    Ok((n, before, after))
}

/// A running class server.
pub struct Running {
    pub addr: SocketAddr,
    pub code: String,
    pub secret: String,
    /// Whether a class left running was resumed.
    pub resumed: bool,
    hub: Arc<Hub>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// The incidents logged so far (the latest thousand) and how many in all.
    pub fn incidents(&self) -> (Vec<Incident>, u64) {
        (
            lock(&self.hub.incidents).iter().cloned().collect(),
            self.hub.incident_count.load(Ordering::Relaxed),
        )
    }

    /// Waits until the teacher ends the class.
    pub async fn ended(&self) {
        let mut rx = self.hub.ended.subscribe();
        let _ = rx.wait_for(|e| *e).await;
    }

    /// The class as stored (for exports and checks).
    pub fn record(&self) -> Result<crate::store::ClassRecord, ClassError> {
        let inner = lock(&self.hub.inner);
        inner.room.store().load(inner.room.class_id)
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        lock(&self.hub.inner).conns.len()
    }

    /// Stops the server: no new connections, every socket closed (devices reconnect to the next
    /// server on the same data folder).
    pub async fn shutdown(mut self) {
        {
            let inner = lock(&self.hub.inner);
            for c in inner.conns.values() {
                let _ =
                    c.tx.try_send(Outgoing::Close(1012, "the server is restarting"));
                c.kill.notify_one();
            }
        }
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), &mut self.task).await;
        self.task.abort();
    }
}

/// Binds `config.bind`, opens (or resumes) the class in the data folder, and serves it on the
/// current tokio runtime.
pub async fn start(config: ServerConfig) -> Result<Running, ClassError> {
    let store = Store::open(&config.data_dir)?;
    let mut room = Room::open(store, config.anonymous, config.new_class)?;
    room.max_students = config.limits.max_students;
    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrInUse => ClassError::AddrInUse {
                addr: config.bind.to_string(),
            },
            _ => ClassError::Bind {
                addr: config.bind.to_string(),
                reason: e.to_string(),
            },
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| ClassError::Runtime(e.to_string()))?;
    let issuer =
        match &config.issuer_key {
            Some(path) => Some(tplab_quiz::cert::IssuerKey::load(path).map_err(|e| {
                ClassError::IssuerKey {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                }
            })?),
            None => None,
        };
    let (ended, _) = watch::channel(false);
    let code = room.code.clone();
    let secret = room.secret().to_string();
    let resumed = room.resumed;
    let hub = Arc::new(Hub {
        inner: Mutex::new(Inner {
            room,
            conns: HashMap::new(),
            exam: crate::exam::ExamDesk::new(issuer, &config.data_dir),
        }),
        addrs: Mutex::new(HashMap::new()),
        limits: config.limits.clone(),
        next_conn: AtomicU64::new(1),
        open: AtomicU64::new(0),
        incidents: Mutex::new(VecDeque::new()),
        incident_count: AtomicU64::new(0),
        log_stderr: config.log_stderr,
        ended,
    });
    // Sockets are capped and deadlined before HTTP (a request trickled byte by byte, or
    // sockets opened and never used, cannot hold the server's descriptors).
    let limits = &config.limits;
    let listener = guard::GuardedListener::new(
        listener,
        Guard {
            per_address: limits.connections_per_address.saturating_mul(4).max(64),
            total: limits.max_connections.saturating_mul(2),
            read_idle: limits.idle_timeout,
            first_request: limits.first_request,
        },
    );
    let app =
        router(hub.clone(), config.dist.clone()).into_make_service_with_connect_info::<Peer>();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx.await;
            })
            .await;
    });
    Ok(Running {
        addr,
        code,
        secret,
        resumed,
        hub,
        shutdown: Some(tx),
        task,
    })
}

/// How a class server stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// The teacher ended the class.
    Ended,
    /// Ctrl-C: the class stays open and resumes at the next start on the same data folder.
    Interrupted,
}

/// Runs a class on its own tokio runtime until the teacher ends it or Ctrl-C; `on_ready` is
/// called once the address is bound (to print the join address).
pub fn serve_blocking(
    config: ServerConfig,
    on_ready: impl FnOnce(&Running),
) -> Result<Stopped, ClassError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ClassError::Runtime(e.to_string()))?;
    rt.block_on(async {
        let running = start(config).await?;
        on_ready(&running);
        let stopped = tokio::select! {
            _ = running.ended() => Stopped::Ended,
            _ = tokio::signal::ctrl_c() => Stopped::Interrupted,
        };
        if stopped == Stopped::Ended {
            // Let the devices read "class ended" before the sockets go.
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        running.shutdown().await;
        Ok(stopped)
    })
}
