//! The accept loop's limits on real loopback sockets: a peer that never reads
//! is closed at the write deadline; an address past its most is told so.

use std::convert::Infallible;

use axum::body::Body;
use axum::routing::get;
use bytes::Bytes;
use futures::stream;

use super::*;

fn limits(write_deadline: Duration, per_address: Option<usize>) -> Limits {
    Limits {
        max_connections: 8,
        header_read_timeout: Duration::from_secs(10),
        limit_name: "the test's limit",
        metered: false,
        write_deadline,
        per_address,
    }
}

/// Serves a route whose body never ends on 127.0.0.1; its address and counts.
async fn endless(
    limits: Limits,
) -> (
    std::net::SocketAddr,
    Arc<ConnectionStats>,
    CancellationToken,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().route(
        "/endless",
        get(|| async {
            let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
            Body::from_stream(stream::repeat_with(move || {
                Ok::<_, Infallible>(chunk.clone())
            }))
        }),
    );
    let (stats, stop) = (
        Arc::new(ConnectionStats::default()),
        CancellationToken::new(),
    );
    tokio::spawn(serve(
        listener,
        router,
        limits,
        Arc::new(|| ConnectionPolicy::PLAIN),
        Arc::clone(&stats),
        AcceptFailures::unprobed("the test's listener"),
        stop.clone(),
    ));
    (addr, stats, stop)
}

/// Waits up to `within` for `stats` to show `open` connections.
async fn open_becomes(stats: &ConnectionStats, open: u64, within: Duration) -> bool {
    let until = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < until {
        if stats.snapshot().open == open {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_peer_that_never_reads_is_closed_at_the_write_deadline() {
    let (addr, stats, stop) = endless(limits(Duration::from_millis(300), None)).await;
    let mut peer = TcpStream::connect(addr).await.unwrap();
    peer.write_all(b"GET /endless HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    assert!(open_becomes(&stats, 1, Duration::from_secs(5)).await);
    // The socket's buffers fill at once; then a write waits, and 300 ms later
    // the connection is closed, though its peer is still there.
    assert!(
        open_becomes(&stats, 0, Duration::from_secs(10)).await,
        "a peer that never reads still holds its connection"
    );
    drop(peer);
    stop.cancel();
}

#[tokio::test]
async fn an_address_past_its_most_is_told_and_closed() {
    let (addr, stats, stop) = endless(limits(WRITE_DEADLINE, Some(2))).await;
    let held = [
        TcpStream::connect(addr).await.unwrap(),
        TcpStream::connect(addr).await.unwrap(),
    ];
    assert!(open_becomes(&stats, 2, Duration::from_secs(5)).await);
    let mut third = TcpStream::connect(addr).await.unwrap();
    let mut said = String::new();
    tokio::time::timeout(Duration::from_secs(5), third.read_to_string(&mut said))
        .await
        .expect("told within 5 s")
        .unwrap();
    assert!(
        said.starts_with("HTTP/1.1 503") && said.contains("127.0.0.1 already has 2 connections"),
        "{said}"
    );
    assert_eq!(stats.snapshot().refused, 1);
    drop(held);
    assert!(open_becomes(&stats, 0, Duration::from_secs(5)).await);
    stop.cancel();
}
