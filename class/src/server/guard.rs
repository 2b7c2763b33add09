//! What every TCP connection to the class server is held to, before HTTP: a cap on the
//! connections open from one address and in all, and a read deadline. The WebSocket's own
//! limits ([`super::Limits`]) count joined devices; these count sockets, so that a device
//! sending a request one byte at a time (or never finishing its headers) cannot keep sockets
//! open until the server runs out of file descriptors.
//!
//! - A connection over either cap is closed as soon as it is accepted.
//! - A connection that sends nothing for [`Guard::read_idle`] while the server waits to read
//!   is closed. A joined device reads the server's pings and answers them within that time,
//!   so only a stalled or idle socket goes.
//! - A connection whose first request has not arrived in full within [`Guard::first_request`]
//!   is closed (a request trickled in byte by byte never completes).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};

/// The caps and deadlines of [`GuardedListener`].
#[derive(Debug, Clone)]
pub struct Guard {
    /// Sockets open from one address (HTTP and WebSocket together).
    pub per_address: usize,
    /// Sockets open in all.
    pub total: usize,
    /// A socket the server is waiting to read from, silent this long, is closed.
    pub read_idle: Duration,
    /// A socket that has not sent the end of its first request's headers by then is closed.
    pub first_request: Duration,
}

/// The address of the device at the other end, for handlers (`ConnectInfo<Peer>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer(pub SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, GuardedListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, GuardedListener>) -> Self {
        Peer(*stream.remote_addr())
    }
}

#[derive(Default)]
struct Counts {
    by_address: Mutex<HashMap<IpAddr, usize>>,
    open: AtomicUsize,
}

/// A TCP listener that holds every connection to [`Guard`].
pub struct GuardedListener {
    inner: TcpListener,
    guard: Guard,
    counts: Arc<Counts>,
}

impl GuardedListener {
    pub fn new(inner: TcpListener, guard: Guard) -> Self {
        Self {
            inner,
            guard,
            counts: Arc::default(),
        }
    }

    /// Takes a slot for `ip`, or `None` where a cap is reached.
    fn admit(&self, ip: IpAddr) -> Option<Slot> {
        let mut by = self
            .counts
            .by_address
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let n = by.entry(ip).or_insert(0);
        if *n >= self.guard.per_address
            || self.counts.open.load(Ordering::Relaxed) >= self.guard.total
        {
            return None;
        }
        *n += 1;
        self.counts.open.fetch_add(1, Ordering::Relaxed);
        Some(Slot {
            ip,
            counts: self.counts.clone(),
        })
    }
}

/// One connection's place in the counts, given back when the connection closes.
struct Slot {
    ip: IpAddr,
    counts: Arc<Counts>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut by = self
            .counts
            .by_address
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = by.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                by.remove(&self.ip);
            }
        }
        self.counts.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl axum::serve::Listener for GuardedListener {
    type Io = GuardedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.inner.accept().await {
                Ok(x) => x,
                Err(_) => {
                    // Out of file descriptors or a reset before accept: wait and go on (as
                    // axum's own listener does).
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            // Over a cap: dropping the stream closes it.
            if let Some(slot) = self.admit(addr.ip()) {
                let _ = stream.set_nodelay(true);
                return (GuardedStream::new(stream, slot, &self.guard), addr);
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A TCP stream under its read deadlines.
pub struct GuardedStream {
    inner: TcpStream,
    _slot: Slot,
    read_idle: Duration,
    /// When the stream is closed if nothing arrives: reset by every read while the first
    /// request's headers are complete.
    deadline: Pin<Box<Sleep>>,
    /// The first request's deadline, until its headers' end (`\r\n\r\n`) has been read.
    first_request: Option<Instant>,
    /// The last bytes read, to find `\r\n\r\n` across reads.
    tail: [u8; 3],
}

impl GuardedStream {
    fn new(inner: TcpStream, slot: Slot, guard: &Guard) -> Self {
        let now = Instant::now();
        let first = now + guard.first_request;
        Self {
            inner,
            _slot: slot,
            read_idle: guard.read_idle,
            deadline: Box::pin(tokio::time::sleep_until(first.min(now + guard.read_idle))),
            first_request: Some(first),
            tail: [0; 3],
        }
    }

    /// Notes `bytes` read: the headers' end, and the next deadline.
    fn saw(&mut self, bytes: &[u8]) {
        if let Some(first) = self.first_request {
            let mut window = self.tail.to_vec();
            window.extend_from_slice(bytes);
            if window.windows(4).any(|w| w == b"\r\n\r\n") {
                self.first_request = None;
            } else {
                let keep = window.len().min(3);
                self.tail = [0; 3];
                self.tail[3 - keep..].copy_from_slice(&window[window.len() - keep..]);
                let idle = Instant::now() + self.read_idle;
                self.deadline.as_mut().reset(first.min(idle));
                return;
            }
        }
        let idle = Instant::now() + self.read_idle;
        self.deadline.as_mut().reset(idle);
    }
}

impl AsyncRead for GuardedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let filled = &buf.filled()[before..];
                if !filled.is_empty() {
                    self.saw(filled);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the connection sent nothing in time",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for GuardedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
