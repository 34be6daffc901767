//! One client's HTTP/1.1 connection, as a distinct client machine would hold it:
//! with keep-alive, opened before the run, reused for every request, reopened
//! after an error or when the server closed it while idle; with
//! `--connections per-request`, a new one for every attempt, which asks the
//! server to close it (`Connection: close`). Each connection opened during the
//! run reports how long its handshake took, and a timeout that passes while the
//! connection is still being made is a connect timeout, not a request's.
//!
//! The exchange is one fixed request (`POST /requests` with a JSON body and a
//! `Content-Length`) and one reply parsed with `httparse`, on a buffer the
//! connection keeps. hyper's client, which the rest of the crate uses for the
//! server's endpoints, costs a dispatcher task, a channel and some 16 KiB per
//! connection; at 10,000 clients that was most of the load generator's CPU and
//! memory, and the figures it measures should not depend on it. Replies must
//! carry a `Content-Length` (system-simulator's always do); chunked replies count
//! as I/O errors.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hyper::header::HeaderValue;
use simulator_api::bodies::REQUEST_KEY_HEADER;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::plan::Body;
use crate::reporting::outcome::Failure;
use simulator_api::Reply;

/// Room for a reply in one read; a longer one grows the buffer.
const READ_BUFFER_BYTES: usize = 1024;
/// A reply head longer than this is not system-simulator's: give up on it.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// A reply body longer than this is not system-simulator's either.
const MAX_BODY_BYTES: usize = 1024 * 1024;
const MAX_HEADERS: usize = 32;

/// A client's connection.
#[derive(Debug)]
pub struct Connection {
    addr: SocketAddr,
    /// The local address to connect from; `None` lets the kernel choose.
    bind: Option<IpAddr>,
    stream: Option<TcpStream>,
    /// Everything of the request but the body's length and the body.
    head: Vec<u8>,
    /// The request as sent last, reused while its body stays the same.
    request: Vec<u8>,
    request_body: Option<Body>,
    reply: Vec<u8>,
    /// A new connection for every attempt (`--connections per-request`).
    per_request: bool,
    /// Each element's bytes sent, not its size (`--send bytes`).
    bytes: bool,
    /// Set while a connect is under way, so a timeout then is told apart.
    connecting: bool,
    /// The last attempt's new connection's handshake, until taken.
    connected_in: Option<Duration>,
}

/// The request's head up to its body's length: `Connection: close` when the
/// connection is the request's alone, and the element's bytes or its size.
fn request_head(host: &HeaderValue, close: bool, bytes: bool) -> Vec<u8> {
    let mut head = b"POST /requests HTTP/1.1\r\nhost: ".to_vec();
    head.extend_from_slice(host.as_bytes());
    if close {
        head.extend_from_slice(b"\r\nconnection: close");
    }
    head.extend_from_slice(match bytes {
        true => b"\r\ncontent-type: application/octet-stream\r\ncontent-length: ".as_slice(),
        false => b"\r\ncontent-type: application/json\r\ncontent-length: ",
    });
    head
}

/// An element's bytes: the same for every element of a size, so that a retry
/// sends what its first attempt sent, and not all zeros, which a server could
/// keep in pages it never touched.
fn element_bytes(size: usize) -> impl Iterator<Item = u8> {
    (0..size).map(|i| (i % 251) as u8)
}

impl Connection {
    /// `host` is the `Host` header, as [`simulator_api::client::resolve`] checked it.
    pub fn new(addr: SocketAddr, host: HeaderValue) -> Self {
        Self {
            addr,
            bind: None,
            stream: None,
            head: request_head(&host, false, false),
            request: Vec::new(),
            request_body: None,
            reply: Vec::with_capacity(READ_BUFFER_BYTES),
            per_request: false,
            bytes: false,
            connecting: false,
            connected_in: None,
        }
    }

    /// With `yes`, a new connection for every attempt, closed after its reply.
    pub fn per_request(self, yes: bool, host: &HeaderValue) -> Self {
        Self {
            per_request: yes,
            head: request_head(host, yes, self.bytes),
            request_body: None,
            ..self
        }
    }

    /// With `Sending::Bytes`, each element's bytes sent instead of its size.
    pub fn sending(self, send: simulator_api::load::Sending, host: &HeaderValue) -> Self {
        let bytes = send == simulator_api::load::Sending::Bytes;
        Self {
            bytes,
            head: request_head(host, self.per_request, bytes),
            request_body: None,
            ..self
        }
    }

    /// How long the last attempt's new connection took to open, once; `None`
    /// when it went on a connection already open.
    pub fn take_connect_time(&mut self) -> Option<Duration> {
        self.connected_in.take()
    }

    /// Connects from `ip` (port chosen by the kernel) instead of the default address.
    pub fn bound_to(self, ip: Option<IpAddr>) -> Self {
        Self { bind: ip, ..self }
    }

    /// Opens the connection now, so the run's clock starts with every client
    /// connected, as distinct client machines would already be. A failure here is
    /// not counted: the first send tries again and counts its own.
    pub async fn open(&mut self, timeout: Duration) {
        if self.per_request {
            return;
        }
        let _ = tokio::time::timeout(timeout, self.connected()).await;
        self.connecting = false;
        // Made before the run: not one of its handshakes.
        self.connected_in = None;
    }

    /// Sends one request and waits for the reply, at most `timeout`.
    /// Any failure drops the connection: after a timeout its reply may still
    /// arrive and must not be mistaken for the next request's.
    pub async fn send_element(&mut self, body: Body, timeout: Duration) -> Result<Reply, Failure> {
        self.connected_in = None;
        let outcome = match tokio::time::timeout(timeout, self.exchange(body)).await {
            Ok(outcome) => outcome,
            Err(_) if self.connecting => Err(Failure::ConnectTimeout),
            Err(_) => Err(Failure::Timeout),
        };
        self.connecting = false;
        if outcome.is_err() || self.per_request {
            self.stream = None;
        }
        outcome
    }

    async fn exchange(&mut self, body: Body) -> Result<Reply, Failure> {
        self.prepare(body);
        self.connected().await?;
        let stream = self.stream.as_mut().ok_or(Failure::Connect)?;
        stream
            .write_all(&self.request)
            .await
            .map_err(|_| Failure::Io)?;
        let reply = read_reply(stream, &mut self.reply).await?;
        if reply.close {
            self.stream = None;
        }
        if !(200..300).contains(&reply.status) {
            return Err(Failure::Status(reply.status));
        }
        serde_json::from_slice(&self.reply[reply.body]).map_err(|_| Failure::Io)
    }

    /// The request for `body`, built again only when it changes.
    fn prepare(&mut self, sent: Body) {
        if self.request_body == Some(sent) {
            return;
        }
        let body = match (sent.key, self.bytes) {
            (None, false) => format!("{{\"size\":{}}}", sent.size),
            (Some(key), _) => format!("{{\"size\":{},\"key\":{key}}}", sent.size),
            (None, true) => String::new(),
        };
        let length = match self.bytes && sent.key.is_none() {
            true => sent.size as usize,
            false => body.len(),
        };
        // A request that may be retried names itself, the same on every attempt;
        // one that may not sends nothing more (the driver at its fastest).
        let request_key = match sent.request_key {
            Some(key) => format!("{REQUEST_KEY_HEADER}: {key}\r\n"),
            None => String::new(),
        };
        self.request.clear();
        self.request.extend_from_slice(&self.head);
        self.request
            .extend_from_slice(format!("{length}\r\n{request_key}\r\n{body}").as_bytes());
        if self.bytes && sent.key.is_none() {
            self.request.extend(element_bytes(length));
        }
        self.request_body = Some(sent);
    }

    async fn connected(&mut self) -> Result<(), Failure> {
        if self.stream.as_ref().is_some_and(closed_by_peer) {
            self.stream = None;
        }
        if self.per_request {
            self.stream = None;
        }
        if self.stream.is_none() {
            self.connecting = true;
            let began = tokio::time::Instant::now();
            let stream = match self.bind {
                None => TcpStream::connect(self.addr).await,
                Some(ip) => connect_from(ip, self.addr).await,
            };
            self.connecting = false;
            let stream =
                stream.map_err(
                    |err| match crate::platform::descriptors::is_out_of_descriptors(&err) {
                        true => Failure::FileLimit,
                        false => Failure::Connect,
                    },
                )?;
            self.connected_in = Some(began.elapsed());
            let _ = stream.set_nodelay(true);
            self.stream = Some(stream);
        }
        Ok(())
    }
}

async fn connect_from(ip: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = match ip {
        IpAddr::V4(_) => TcpSocket::new_v4()?,
        IpAddr::V6(_) => TcpSocket::new_v6()?,
    };
    crate::platform::socket::choose_port_at_connect(&socket);
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(to).await
}

/// Whether an idle connection was closed by the server (a keep-alive timeout, a
/// restart): then the next request goes on a fresh one instead of failing. An
/// idle connection has nothing to read, so anything but "would block" means it
/// is no longer usable.
fn closed_by_peer(stream: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    !matches!(stream.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

/// What `read_reply` found: the status, where the body is in the buffer, and
/// whether the server will close the connection.
struct ReplyHead {
    status: u16,
    body: std::ops::Range<usize>,
    close: bool,
}

/// Reads one reply into `buf`: a head, then exactly `Content-Length` bytes.
async fn read_reply(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<ReplyHead, Failure> {
    buf.clear();
    let (status, head_len, body_len, close) = loop {
        read_some(stream, buf).await?;
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        match response.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let status = response.code.ok_or(Failure::Io)?;
                let mut body_len = None;
                let mut close = false;
                for h in response.headers.iter() {
                    if h.name.eq_ignore_ascii_case("content-length") {
                        let text = std::str::from_utf8(h.value).map_err(|_| Failure::Io)?;
                        body_len = Some(text.trim().parse::<usize>().map_err(|_| Failure::Io)?);
                    } else if h.name.eq_ignore_ascii_case("connection") {
                        close = h.value.eq_ignore_ascii_case(b"close");
                    }
                }
                let body_len = body_len
                    .filter(|&n| n <= MAX_BODY_BYTES)
                    .ok_or(Failure::Io)?;
                break (status, head_len, body_len, close);
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD_BYTES => continue,
            _ => return Err(Failure::Io),
        }
    };
    while buf.len() < head_len + body_len {
        read_some(stream, buf).await?;
    }
    if buf.len() > head_len + body_len {
        // Bytes past the reply: the server is not answering one request at a time.
        return Err(Failure::Io);
    }
    Ok(ReplyHead {
        status,
        body: head_len..head_len + body_len,
        close,
    })
}

/// Appends what the socket has to `buf`; end of stream is a lost connection.
async fn read_some(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), Failure> {
    if buf.capacity() - buf.len() < READ_BUFFER_BYTES / 2 {
        buf.reserve(READ_BUFFER_BYTES);
    }
    match stream.read_buf(buf).await {
        Ok(0) | Err(_) => Err(Failure::Io),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use simulator_api::load::Sending;
    use tokio::net::TcpListener;

    /// What the fake server does with one request.
    enum Answer {
        /// Writes these pieces one after another, flushing each.
        Pieces(Vec<&'static [u8]>),
        /// Answers and then closes the connection.
        ThenClose(&'static [u8]),
    }

    const OK: &[u8] =
        b"HTTP/1.1 200 OK\r\ncontent-length: 48\r\n\r\n{\"id\":7,\"blocked\":true,\"permit_wait_ns\":0,\"x\":1}";

    /// A loopback server answering requests in order with `answers`, on as many
    /// connections as the client opens; returns its address and a count of
    /// connections accepted.
    async fn fake_server(answers: Vec<Answer>) -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        tokio::spawn(async move {
            let mut answers = answers.into_iter();
            'conns: while let Ok((mut socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                loop {
                    // Each request ends with its JSON body's closing brace.
                    let mut request = Vec::new();
                    while request.last() != Some(&b'}') {
                        if socket.read_buf(&mut request).await.unwrap_or(0) == 0 {
                            continue 'conns;
                        }
                    }
                    match answers.next() {
                        Some(Answer::Pieces(pieces)) => {
                            for piece in pieces {
                                socket.write_all(piece).await.unwrap();
                                socket.flush().await.unwrap();
                            }
                        }
                        Some(Answer::ThenClose(reply)) => {
                            socket.write_all(reply).await.unwrap();
                            continue 'conns;
                        }
                        None => return,
                    }
                }
            }
        });
        (addr, accepted)
    }

    fn client(addr: SocketAddr) -> Connection {
        Connection::new(addr, HeaderValue::from_static("test"))
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_request_carries_its_elements_size_or_its_bytes() {
        let host = HeaderValue::from_static("test");
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let body = Body {
            size: 300,
            key: None,
            request_key: Some(9),
        };
        let mut sized = Connection::new(addr, host.clone());
        sized.prepare(body);
        let text = String::from_utf8_lossy(&sized.request).into_owned();
        assert!(
            text.contains("content-type: application/json\r\ncontent-length: 12\r\n"),
            "{text}"
        );
        assert!(
            text.ends_with("isim-request-key: 9\r\n\r\n{\"size\":300}"),
            "{text}"
        );
        let mut bytes = Connection::new(addr, host.clone()).sending(Sending::Bytes, &host);
        bytes.prepare(body);
        let head_end = bytes
            .request
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap()
            + 4;
        let head = String::from_utf8_lossy(&bytes.request[..head_end]).into_owned();
        assert!(
            head.contains("application/octet-stream\r\ncontent-length: 300\r\n"),
            "{head}"
        );
        let element = &bytes.request[head_end..];
        assert_eq!(element.len(), 300);
        // The same bytes for every element of a size: a retry sends its first attempt's.
        assert!(element.iter().copied().eq(element_bytes(300)));
        assert!(element.iter().any(|&b| b != 0));
    }

    #[tokio::test]
    async fn a_bound_connection_leaves_from_its_address() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let to = listener.local_addr().unwrap();
        let from: IpAddr = "127.0.0.3".parse().unwrap();
        let (stream, accepted) = tokio::join!(connect_from(from, to), listener.accept());
        let (_, peer) = accepted.unwrap();
        assert_eq!(peer.ip(), from);
        assert_eq!(stream.unwrap().local_addr().unwrap().ip(), from);
    }

    #[tokio::test]
    async fn a_reply_in_pieces_is_read_whole_and_the_connection_kept() {
        let split = Answer::Pieces(vec![
            b"HTTP/1.1 200 OK\r\ncontent-le",
            b"ngth: 48\r\n\r\n{\"id\":7,",
            b"\"blocked\":true,\"permit_wait_ns\":0,\"x\":1}",
        ]);
        let (addr, accepted) = fake_server(vec![split, Answer::Pieces(vec![OK])]).await;
        let mut c = client(addr);
        for _ in 0..2 {
            let reply = c.send_element(Body::store(10), SECOND).await.unwrap();
            assert_eq!((reply.id, reply.blocked), (7, true));
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "one keep-alive connection"
        );
    }

    #[tokio::test]
    async fn an_error_status_is_counted_and_the_next_request_goes_out() {
        let unavailable = Answer::Pieces(vec![
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\n\r\n{}",
        ]);
        let (addr, accepted) = fake_server(vec![unavailable, Answer::Pieces(vec![OK])]).await;
        let mut c = client(addr);
        assert_eq!(
            c.send_element(Body::store(1), SECOND).await.unwrap_err(),
            Failure::Status(503)
        );
        assert!(c.send_element(Body::store(1), SECOND).await.is_ok());
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "reopened after the failure"
        );
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_reopened_without_an_error() {
        let (addr, accepted) =
            fake_server(vec![Answer::ThenClose(OK), Answer::Pieces(vec![OK])]).await;
        let mut c = client(addr);
        assert!(c.send_element(Body::store(1), SECOND).await.is_ok());
        // Wait until the close has reached this side, as it would during a think time.
        let stream = c.stream.as_ref().unwrap();
        stream.readable().await.unwrap();
        assert!(c.send_element(Body::store(1), SECOND).await.is_ok());
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn replies_this_client_cannot_frame_are_io_errors() {
        let bad: [&'static [u8]; 4] = [
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}trailing",
            b"HTTP/1.1 200 OK\r\ncontent-length: nine\r\n\r\n{}",
            b"NOT HTTP\r\n\r\n",
        ];
        for reply in bad {
            let (addr, _) = fake_server(vec![Answer::Pieces(vec![reply])]).await;
            let got = client(addr).send_element(Body::store(1), SECOND).await;
            assert_eq!(
                got.unwrap_err(),
                Failure::Io,
                "{}",
                String::from_utf8_lossy(reply)
            );
        }
    }

    #[tokio::test]
    async fn per_request_connections_are_new_each_attempt_and_ask_to_be_closed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut heads = Vec::new();
            for _ in 0..2 {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut request = Vec::new();
                while request.last() != Some(&b'}') {
                    socket.read_buf(&mut request).await.unwrap();
                }
                socket.write_all(OK).await.unwrap();
                heads.push(String::from_utf8(request).unwrap());
            }
            heads
        });
        let host = HeaderValue::from_static("test");
        let mut c = client(addr).per_request(true, &host);
        c.open(SECOND).await;
        assert!(c.stream.is_none(), "nothing opened before the run");
        for _ in 0..2 {
            assert!(c.send_element(Body::store(1), SECOND).await.is_ok());
            let took = c.take_connect_time().expect("each attempt connects");
            assert!(took < SECOND, "{took:?}");
            assert_eq!(c.take_connect_time(), None, "taken once");
        }
        for head in server.await.unwrap() {
            assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
        }
    }

    #[tokio::test]
    async fn a_keep_alive_connection_opened_before_the_run_reports_no_handshake() {
        let (addr, _) = fake_server(vec![Answer::Pieces(vec![OK])]).await;
        let mut c = client(addr);
        c.open(SECOND).await;
        assert!(c.send_element(Body::store(1), SECOND).await.is_ok());
        assert_eq!(c.take_connect_time(), None);
    }

    /// A listener that never accepts, with a backlog of one: Linux queues two
    /// connections, then drops the next SYNs, as a full accept queue does.
    #[tokio::test]
    async fn a_timeout_while_the_syn_goes_unanswered_is_a_connect_timeout() {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(1).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut queued = Vec::new();
        let mut c = client(addr);
        let failure = loop {
            let got = c
                .send_element(Body::store(1), Duration::from_millis(200))
                .await;
            match got.unwrap_err() {
                // Connected, queued, never answered: the request's own timeout.
                Failure::Timeout => queued.push(()),
                other => break other,
            }
            assert!(queued.len() <= 4, "the kernel queued more than the backlog");
        };
        assert_eq!(failure, Failure::ConnectTimeout);
        assert_eq!(c.take_connect_time(), None);
        drop(listener);
    }

    #[tokio::test]
    async fn a_missing_reply_is_a_timeout() {
        let (addr, _) = fake_server(vec![Answer::Pieces(vec![b"HTTP/1.1 200 OK\r\n"])]).await;
        let got = client(addr)
            .send_element(Body::store(1), Duration::from_millis(100))
            .await;
        assert_eq!(got.unwrap_err(), Failure::Timeout);
    }
}
