//! A counting proxy: an HTTP/1.1 forwarder on loopback that counts what passes through it, so
//! a test can assert the requests and bytes a query costs as the server sees them (the requests
//! of every process that talks to the server: the test's own client, the tool, a cluster's
//! executors).
//!
//! Bytes are forwarded as they arrive, in both directions, and parsed on the side (each piece
//! counted before it is passed on, so a response a client has read is counted): a parsing
//! mistake can miscount, never stall or change the exchange. Each connection's
//! requests are parsed for their method, target and body framing (`Content-Length` or
//! chunked); the responses, in the same order, for their status and body framing (no body
//! for `HEAD`, 1xx, 204 and 304). SigV4 signatures stay valid: the `Host` header the client
//! signed reaches the server unchanged.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the clients of a counted server asked of it and got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerCounts {
    /// Requests of every method.
    pub requests: u64,
    /// `GET`s of objects (whole, or a range of one).
    pub gets: u64,
    /// Of those, the ones with a `Range` header.
    pub range_gets: u64,
    /// `HEAD`s.
    pub heads: u64,
    /// Listings (`GET` of the bucket with `list-type`).
    pub lists: u64,
    /// `PUT`s and `POST`s (uploads, multipart parts and their completion).
    pub writes: u64,
    /// Body bytes of the responses to object `GET`s: the object data served.
    pub object_bytes: u64,
    /// Body bytes of every response (object data, listings' XML, errors).
    pub bytes_out: u64,
    /// Body bytes of every request (uploads).
    pub bytes_in: u64,
}

/// The kind of a request, as its response is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    ObjectGet,
    Head,
    Other,
}

/// A running proxy to `127.0.0.1:upstream`; stopped on drop (open connections end when either
/// side closes).
pub(crate) struct Proxy {
    port: u16,
    counts: Arc<Mutex<ServerCounts>>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub(crate) fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("cannot bind the proxy's port");
        let port = listener
            .local_addr()
            .expect("a bound socket has an address")
            .port();
        let counts = Arc::new(Mutex::new(ServerCounts::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (counts.clone(), stop.clone());
        std::thread::Builder::new()
            .name("s3-proxy".into())
            .spawn(move || {
                for client in listener.incoming() {
                    if s.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(client) = client else { continue };
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                        // The server is gone: the client sees its connection closed.
                        continue;
                    };
                    connect(client, server, c.clone());
                }
            })
            .expect("cannot start the proxy's thread");
        Proxy { port, counts, stop }
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn counts(&self) -> ServerCounts {
        *self.counts.lock().unwrap()
    }

    pub(crate) fn reset(&self) {
        *self.counts.lock().unwrap() = ServerCounts::default();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Forwards `client` <-> `server` on two threads, counting into `counts`.
fn connect(client: TcpStream, server: TcpStream, counts: Arc<Mutex<ServerCounts>>) {
    let kinds = Arc::new(Mutex::new(VecDeque::new()));
    let pairs = [
        (client.try_clone(), server.try_clone(), Side::Request),
        (server.try_clone(), client.try_clone(), Side::Response),
    ];
    for (from, to, side) in pairs {
        let (Ok(from), Ok(to)) = (from, to) else {
            return;
        };
        let mut parser = Parser::new(side, kinds.clone(), counts.clone());
        let _ = std::thread::Builder::new()
            .name("s3-proxy-conn".into())
            .spawn(move || pump(from, to, &mut parser));
    }
}

/// Copies `from` to `to` until either ends, feeding the parser what passes.
fn pump(mut from: TcpStream, mut to: TcpStream, parser: &mut Parser) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Counted before it is passed on: once a client has read a response, it is counted.
        parser.feed(&buf[..n]);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Request,
    Response,
}

/// Where the parser is in the current message.
#[derive(Debug)]
enum State {
    /// Collecting a head, up to its blank line.
    Head(Vec<u8>),
    /// `n` body bytes left.
    Body(u64),
    /// A chunk-size line being read.
    ChunkSize(Vec<u8>),
    /// `n` bytes of chunk data, then its CRLF (counted in `n` as 2 extra, not as body).
    ChunkData { data: u64, crlf: u64 },
    /// Trailer lines after the last chunk, up to a blank line (`line` is the current one).
    Trailers(Vec<u8>),
    /// The body runs to the end of the connection.
    ToEof,
}

struct Parser {
    side: Side,
    state: State,
    kinds: Arc<Mutex<VecDeque<Kind>>>,
    counts: Arc<Mutex<ServerCounts>>,
    /// The kind of the response being read.
    current: Kind,
}

impl Parser {
    fn new(
        side: Side,
        kinds: Arc<Mutex<VecDeque<Kind>>>,
        counts: Arc<Mutex<ServerCounts>>,
    ) -> Parser {
        Parser {
            side,
            state: State::Head(Vec::new()),
            kinds,
            counts,
            current: Kind::Other,
        }
    }

    fn body_bytes(&self, n: u64) {
        let mut c = self.counts.lock().unwrap();
        match self.side {
            Side::Request => c.bytes_in += n,
            Side::Response => {
                c.bytes_out += n;
                if self.current == Kind::ObjectGet {
                    c.object_bytes += n;
                }
            }
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Head(head) => {
                    // The head ends at the first CRLF CRLF; look across the seam with what
                    // was collected.
                    let before = head.len();
                    head.extend_from_slice(bytes);
                    let from = before.saturating_sub(3);
                    match head[from..].windows(4).position(|w| w == b"\r\n\r\n") {
                        Some(i) => {
                            let end = from + i + 4;
                            let used = end - before;
                            let text = String::from_utf8_lossy(&head[..end]).into_owned();
                            bytes = &bytes[used..];
                            self.state = self.head_done(&text);
                        }
                        None => return,
                    }
                }
                State::Body(left) => {
                    let n = (*left).min(bytes.len() as u64);
                    *left -= n;
                    let done = *left == 0;
                    bytes = &bytes[n as usize..];
                    self.body_bytes(n);
                    if done {
                        self.state = State::Head(Vec::new());
                    }
                }
                State::ChunkSize(line) => match bytes.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        line.extend_from_slice(&bytes[..i]);
                        bytes = &bytes[i + 1..];
                        let text = String::from_utf8_lossy(line);
                        let hex = text.trim().split(';').next().unwrap_or("").trim();
                        let size = u64::from_str_radix(hex, 16).unwrap_or(0);
                        self.state = if size == 0 {
                            State::Trailers(Vec::new())
                        } else {
                            State::ChunkData {
                                data: size,
                                crlf: 2,
                            }
                        };
                    }
                    None => {
                        line.extend_from_slice(bytes);
                        return;
                    }
                },
                State::ChunkData { data, crlf } => {
                    if *data > 0 {
                        let n = (*data).min(bytes.len() as u64);
                        *data -= n;
                        bytes = &bytes[n as usize..];
                        self.body_bytes(n);
                    } else {
                        let n = (*crlf).min(bytes.len() as u64);
                        *crlf -= n;
                        bytes = &bytes[n as usize..];
                        if *crlf == 0 {
                            self.state = State::ChunkSize(Vec::new());
                        }
                    }
                }
                State::Trailers(line) => match bytes.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        line.extend_from_slice(&bytes[..i]);
                        bytes = &bytes[i + 1..];
                        let blank = line.iter().all(|b| b.is_ascii_whitespace());
                        line.clear();
                        if blank {
                            self.state = State::Head(Vec::new());
                        }
                    }
                    None => {
                        line.extend_from_slice(bytes);
                        return;
                    }
                },
                State::ToEof => {
                    self.body_bytes(bytes.len() as u64);
                    return;
                }
            }
        }
    }

    /// Counts a complete head and returns the state its body starts in.
    fn head_done(&mut self, head: &str) -> State {
        let mut lines = head.split("\r\n");
        let first = lines.next().unwrap_or("");
        let mut length = None;
        let mut chunked = false;
        let mut range = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            match name.as_str() {
                "content-length" => length = value.parse::<u64>().ok(),
                "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
                "range" => range = true,
                _ => {}
            }
        }
        let framed = |length: Option<u64>, chunked: bool, otherwise: State| {
            if chunked {
                State::ChunkSize(Vec::new())
            } else {
                match length {
                    Some(0) => State::Head(Vec::new()),
                    Some(n) => State::Body(n),
                    None => otherwise,
                }
            }
        };
        match self.side {
            Side::Request => {
                let mut parts = first.split_whitespace();
                let method = parts.next().unwrap_or("");
                let target = parts.next().unwrap_or("");
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                // Path-style addressing: `/bucket/key...`; a key is what follows the bucket.
                let has_key = path
                    .trim_start_matches('/')
                    .split_once('/')
                    .is_some_and(|(_, key)| !key.is_empty());
                let kind = {
                    let mut c = self.counts.lock().unwrap();
                    c.requests += 1;
                    match method {
                        "GET" if has_key && !query.contains("list-type") => {
                            c.gets += 1;
                            if range {
                                c.range_gets += 1;
                            }
                            Kind::ObjectGet
                        }
                        "GET" => {
                            if query.contains("list-type") || !has_key {
                                c.lists += 1;
                            }
                            Kind::Other
                        }
                        "HEAD" => {
                            c.heads += 1;
                            Kind::Head
                        }
                        "PUT" | "POST" => {
                            c.writes += 1;
                            Kind::Other
                        }
                        _ => Kind::Other,
                    }
                };
                self.kinds.lock().unwrap().push_back(kind);
                // A request without a length has no body.
                framed(length, chunked, State::Head(Vec::new()))
            }
            Side::Response => {
                let status: u16 = first
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                if (100..200).contains(&status) {
                    // An interim answer: the request's final response follows.
                    return State::Head(Vec::new());
                }
                self.current = self
                    .kinds
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or(Kind::Other);
                if self.current == Kind::Head || status == 204 || status == 304 {
                    return State::Head(Vec::new());
                }
                framed(length, chunked, State::ToEof)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(side: Side, kinds: &[Kind], pieces: &[&[u8]]) -> (ServerCounts, Vec<Kind>) {
        let q = Arc::new(Mutex::new(kinds.iter().copied().collect::<VecDeque<_>>()));
        let counts = Arc::new(Mutex::new(ServerCounts::default()));
        let mut p = Parser::new(side, q.clone(), counts.clone());
        for piece in pieces {
            p.feed(piece);
        }
        let left = q.lock().unwrap().iter().copied().collect();
        let c = *counts.lock().unwrap();
        (c, left)
    }

    /// Every split of `whole` into two pieces parses as the whole does.
    fn every_split(side: Side, kinds: &[Kind], whole: &[u8]) -> (ServerCounts, Vec<Kind>) {
        let once = parse(side, kinds, &[whole]);
        for i in 0..whole.len() {
            assert_eq!(
                parse(side, kinds, &[&whole[..i], &whole[i..]]),
                once,
                "split at {i}"
            );
        }
        once
    }

    #[test]
    fn requests_are_counted_by_kind_and_bodies_skipped() {
        let stream = b"GET /npy/t/a.npz HTTP/1.1\r\nhost: x\r\nrange: bytes=0-9\r\n\r\n\
            HEAD /npy/t/a.npz HTTP/1.1\r\nhost: x\r\n\r\n\
            GET /npy?list-type=2&prefix=t%2F HTTP/1.1\r\nhost: x\r\n\r\n\
            PUT /npy/t/b.npy HTTP/1.1\r\ncontent-length: 5\r\n\r\nGET /\
            POST /npy/t/c.npy?uploads HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n\
            3\r\nabc\r\n0\r\n\r\n\
            GET /npy/t/a.npz HTTP/1.1\r\n\r\n";
        let (c, kinds) = every_split(Side::Request, &[], stream);
        assert_eq!(
            c,
            ServerCounts {
                requests: 6,
                gets: 2,
                range_gets: 1,
                heads: 1,
                lists: 1,
                writes: 2,
                bytes_in: 8,
                ..ServerCounts::default()
            }
        );
        use Kind::*;
        assert_eq!(kinds, [ObjectGet, Head, Other, Other, Other, ObjectGet]);
    }

    #[test]
    fn responses_count_object_bytes_of_gets_only() {
        use Kind::*;
        let stream = b"HTTP/1.1 206 Partial Content\r\ncontent-length: 10\r\n\r\n0123456789\
            HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n\
            HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n<a/>\r\n0\r\nx: y\r\n\r\n\
            HTTP/1.1 100 Continue\r\n\r\n\
            HTTP/1.1 204 No Content\r\n\r\n\
            HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc";
        let (c, left) = every_split(
            Side::Response,
            &[ObjectGet, Head, Other, Other, ObjectGet],
            stream,
        );
        assert_eq!((c.object_bytes, c.bytes_out), (13, 17));
        assert_eq!(c.requests, 0);
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn forwards_and_counts_a_live_exchange() {
        // An upstream that answers each request head with a 5-byte body.
        let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
        let up = upstream.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut s, _) = upstream.accept().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            let mut answered = 0;
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
                let heads = seen.windows(4).filter(|w| w == b"\r\n\r\n").count();
                while answered < heads {
                    s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")
                        .unwrap();
                    answered += 1;
                }
            }
        });
        let proxy = Proxy::start(up);
        let mut c = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
        c.write_all(b"GET /npy/k HTTP/1.1\r\n\r\nGET /npy?list-type=2 HTTP/1.1\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        let want = 2 * b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello".len();
        let mut buf = [0u8; 1024];
        while got.len() < want {
            let n = c.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "the proxy closed early: {:?}",
                String::from_utf8_lossy(&got)
            );
            got.extend_from_slice(&buf[..n]);
        }
        let counts = proxy.counts();
        assert_eq!((counts.requests, counts.gets, counts.lists), (2, 1, 1));
        assert_eq!((counts.object_bytes, counts.bytes_out), (5, 10));
        proxy.reset();
        assert_eq!(proxy.counts(), ServerCounts::default());
    }
}
