//! The HTTP/1.1 server behind `sched_d --metrics`.
//!
//! It lives inside the daemon, so no client may take what the daemon needs: one poll loop
//! holds every connection that is still sending its request (an idle client costs a
//! descriptor, not a thread); at most [`Limits::max_connections`] are held, a new one closing
//! the one that has waited longest; each has [`Limits::request_timeout`] to send its request;
//! running out of descriptors (`EMFILE`, `ENFILE`) closes the held connections or, with none
//! to close, pauses accepting, and never ends the server. Complete requests go to a fixed
//! pool of workers, which answer and close (`Connection: close`: a scraper opens one
//! connection per scrape, and a connection kept open would be one more to hold).

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A request as the handler sees it: its method and its path without the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
}

/// An answer: the server adds `Content-Length` and `Connection: close`, and leaves the body
/// out when the request was `HEAD`.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type", content_type.to_string())],
            body: body.into(),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: &str) -> Response {
        self.headers.push((name, value.to_string()));
        self
    }
}

pub type Handler = dyn Fn(&Request) -> Response + Send + Sync;

#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections held while they send their request.
    pub max_connections: usize,
    /// How long a connection may take to send its request.
    pub request_timeout: Duration,
    /// Threads answering requests.
    pub workers: usize,
    /// The longest request head read (request line and headers).
    pub max_head_bytes: usize,
}

impl Limits {
    /// For the daemon: 64 connections, or a quarter of the descriptors the process may open
    /// when that is fewer, so that clients never hold most of them.
    pub fn for_daemon() -> Limits {
        let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map_or(1024, |(soft, _)| soft);
        Limits {
            max_connections: usize::try_from(soft / 4).unwrap_or(64).clamp(4, 64),
            request_timeout: Duration::from_secs(10),
            workers: 2,
            max_head_bytes: 8192,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot serve on {addr}: {source}")]
    Bind { addr: String, source: io::Error },
    #[error("cannot start the HTTP server: {0}")]
    Start(io::Error),
}

/// Serves `handler` on `addr` until the process ends; the address it listens on.
pub fn serve(addr: &str, limits: Limits, handler: Arc<Handler>) -> Result<SocketAddr, ServeError> {
    let bind_error = |source| ServeError::Bind {
        addr: addr.to_string(),
        source,
    };
    let listener = TcpListener::bind(addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    let (jobs, queue) = std::sync::mpsc::sync_channel(limits.max_connections.max(1));
    let queue = Arc::new(Mutex::new(queue));
    for n in 0..limits.workers.max(1) {
        let queue = queue.clone();
        let handler = handler.clone();
        std::thread::Builder::new()
            .name(format!("http-worker-{n}"))
            .spawn(move || work(&queue, handler.as_ref()))
            .map_err(ServeError::Start)?;
    }
    std::thread::Builder::new()
        .name("http".into())
        .spawn(move || hold_connections(&listener, &limits, &jobs))
        .map_err(ServeError::Start)?;
    Ok(local)
}

/// A connection that has not sent all of its request head yet.
struct Pending {
    stream: TcpStream,
    head: Vec<u8>,
    deadline: Instant,
}

enum Progress {
    Waiting(Pending),
    Complete(TcpStream, Vec<u8>),
    TooLarge(TcpStream),
    Closed,
}

/// Running out of descriptors, for the process or the system.
fn is_descriptor_shortage(e: &io::Error) -> bool {
    e.raw_os_error()
        .is_some_and(|n| n == Errno::EMFILE as i32 || n == Errno::ENFILE as i32)
}

/// The poll loop: accepts, reads request heads, hands complete ones to the workers.
fn hold_connections(
    listener: &TcpListener,
    limits: &Limits,
    jobs: &SyncSender<(TcpStream, Vec<u8>)>,
) {
    let mut held: VecDeque<Pending> = VecDeque::new();
    let mut backoff = Duration::ZERO;
    let mut accept_again: Option<Instant> = None;
    loop {
        let now = Instant::now();
        held.retain_mut(|p| {
            if p.deadline > now {
                return true;
            }
            refuse(&mut p.stream, 408);
            false
        });
        if accept_again.is_some_and(|t| t <= now) {
            accept_again = None;
        }
        let accepting = accept_again.is_none();
        let wake = held.iter().map(|p| p.deadline).chain(accept_again).min();
        let timeout = wake.map_or(PollTimeout::NONE, |t| {
            PollTimeout::try_from(t.saturating_duration_since(now) + Duration::from_millis(1))
                .unwrap_or(PollTimeout::MAX)
        });
        let ready: Vec<bool> = {
            let mut fds = Vec::with_capacity(held.len() + 1);
            if accepting {
                fds.push(PollFd::new(listener.as_fd(), PollFlags::POLLIN));
            }
            fds.extend(
                held.iter()
                    .map(|p| PollFd::new(p.stream.as_fd(), PollFlags::POLLIN)),
            );
            match poll(&mut fds, timeout) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics server: poll failed");
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            }
            fds.iter()
                .map(|f| f.revents().is_some_and(|r| !r.is_empty()))
                .collect()
        };
        let (listener_ready, conn_ready) = if accepting {
            (ready[0], &ready[1..])
        } else {
            (false, &ready[..])
        };
        let before: Vec<Pending> = held.drain(..).collect();
        for (p, readable) in before.into_iter().zip(conn_ready.iter().copied()) {
            if readable {
                take(read_more(p, limits), &mut held, jobs);
            } else {
                held.push_back(p);
            }
        }
        if !listener_ready {
            continue;
        }
        // Bounded, so that a flood of connections does not starve the reads.
        for _ in 0..limits.max_connections.max(1) {
            match listener.accept() {
                Ok((stream, _)) => {
                    backoff = Duration::ZERO;
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    if held.len() >= limits.max_connections.max(1) {
                        held.pop_front();
                    }
                    let p = Pending {
                        stream,
                        head: Vec::new(),
                        deadline: Instant::now() + limits.request_timeout,
                    };
                    // The request often came with the connection.
                    take(read_more(p, limits), &mut held, jobs);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) => {}
                Err(e) if is_descriptor_shortage(&e) => {
                    // What this server holds is the first thing to give back: its oldest
                    // connection has had the longest to send its request.
                    if held.pop_front().is_some() {
                        continue;
                    }
                    if backoff.is_zero() {
                        tracing::warn!(error = %e, "metrics server: out of descriptors, accepting again later");
                    }
                    backoff =
                        (backoff * 2).clamp(Duration::from_millis(50), Duration::from_secs(1));
                    accept_again = Some(Instant::now() + backoff);
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics server: accept failed");
                    accept_again = Some(Instant::now() + Duration::from_millis(100));
                    break;
                }
            }
        }
    }
}

fn take(progress: Progress, held: &mut VecDeque<Pending>, jobs: &SyncSender<(TcpStream, Vec<u8>)>) {
    match progress {
        Progress::Waiting(p) => held.push_back(p),
        Progress::Complete(stream, head) => match jobs.try_send((stream, head)) {
            Ok(()) => {}
            Err(
                TrySendError::Full((mut stream, _)) | TrySendError::Disconnected((mut stream, _)),
            ) => refuse(&mut stream, 503),
        },
        Progress::TooLarge(mut stream) => refuse(&mut stream, 431),
        Progress::Closed => {}
    }
}

fn read_more(mut p: Pending, limits: &Limits) -> Progress {
    let mut chunk = [0u8; 4096];
    loop {
        match p.stream.read(&mut chunk) {
            Ok(0) => return Progress::Closed,
            Ok(n) => {
                p.head.extend_from_slice(&chunk[..n]);
                if head_end(&p.head).is_some() {
                    return Progress::Complete(p.stream, p.head);
                }
                if p.head.len() > limits.max_head_bytes {
                    return Progress::TooLarge(p.stream);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Waiting(p),
            Err(_) => return Progress::Closed,
        }
    }
}

/// Where the head ends (after its empty line), if it has.
fn head_end(bytes: &[u8]) -> Option<usize> {
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4);
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    crlf.into_iter().chain(lf).min()
}

/// The request line of `head`: `None` when it is not HTTP/1.x in origin form.
pub fn parse_request(head: &[u8]) -> Option<Request> {
    let end = head.iter().position(|&b| b == b'\n')?;
    let line = std::str::from_utf8(&head[..end])
        .ok()?
        .trim_end_matches('\r');
    let mut words = line.split(' ');
    let (method, target, version) = (words.next()?, words.next()?, words.next()?);
    let is_token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    if words.next().is_some()
        || !is_token(method)
        || !target.starts_with('/')
        || !version.starts_with("HTTP/1.")
    {
        return None;
    }
    let path = target.split(['?', '#']).next().unwrap_or(target);
    Some(Request {
        method: method.to_string(),
        path: path.to_string(),
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

fn encode(response: &Response, with_body: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        response.body.len()
    ));
    let mut bytes = out.into_bytes();
    if with_body {
        bytes.extend_from_slice(&response.body);
    }
    bytes
}

/// Answers `status` with no body, as far as the socket takes it without waiting.
fn refuse(stream: &mut TcpStream, status: u16) {
    let _ = stream.write_all(&encode(&Response::new(status, "text/plain", ""), false));
}

fn work(queue: &Mutex<Receiver<(TcpStream, Vec<u8>)>>, handler: &Handler) {
    loop {
        let job = match queue.lock() {
            Ok(q) => q.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        let Ok((stream, head)) = job else {
            return;
        };
        answer(stream, &head, handler);
    }
}

fn answer(mut stream: TcpStream, head: &[u8], handler: &Handler) {
    let (response, with_body) = match parse_request(head) {
        None => (Response::new(400, "text/plain", "bad request\n"), true),
        Some(request) => {
            let response =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&request)))
                    .unwrap_or_else(|_| Response::new(500, "text/plain", "internal error\n"));
            (response, request.method != "HEAD")
        }
    };
    if stream.set_nonblocking(false).is_err()
        || stream
            .set_write_timeout(Some(Duration::from_secs(10)))
            .is_err()
    {
        return;
    }
    if stream.write_all(&encode(&response, with_body)).is_err() {
        return;
    }
    // Closing with unread bytes (a request body) would reset the connection and could lose
    // the answer: read what is left, for a second at most.
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = io::copy(&mut (&stream).take(64 * 1024), &mut io::sink());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        let get = parse_request(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(
            get,
            Some(Request {
                method: "GET".into(),
                path: "/metrics".into()
            })
        );
        assert_eq!(
            parse_request(b"FOO / HTTP/1.0\n\n").map(|r| r.method),
            Some("FOO".to_string())
        );
        for bad in [
            &b"GET /metrics\r\n\r\n"[..],
            b"GET  /metrics HTTP/1.1\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"GET / HTTP/2\r\n\r\n",
            b"G(T / HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(parse_request(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_new_connection_closes_the_oldest_idle_one_beyond_the_limit() {
        let limits = Limits {
            max_connections: 2,
            request_timeout: Duration::from_secs(60),
            workers: 1,
            max_head_bytes: 64,
        };
        let handler: Arc<Handler> =
            Arc::new(|r: &Request| Response::new(200, "text/plain", r.path.clone()));
        let addr = serve("127.0.0.1:0", limits, handler).expect("serve");
        let mut idle: Vec<TcpStream> = (0..3)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        idle[0]
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut rest = Vec::new();
        idle[0]
            .read_to_end(&mut rest)
            .expect("the oldest is closed");
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /x HTTP/1.1\r\n\r\n").expect("send");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("read");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\n/x"), "{text}");
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(&[b'a'; 100]).expect("send");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("read");
        assert!(text.starts_with("HTTP/1.1 431 "), "{text}");
    }
}
