//! The benchmarks' baseline: the least an axum server can do to answer
//! `POST /requests` as system-simulator does (read the body, reply with the same
//! JSON shape), on the same runtime (`#[tokio::main]`, a worker per core) and the
//! same crates. `tools/bench/server-vs-axum.py` runs it and the real server
//! alternately under the same wrk load; the ratio is what the simulator's request
//! path, probes, counters and limits cost on top of HTTP. Bench-only: not part of
//! the product.
//!
//!     cargo run --release --example bare_axum    # prints its address, as serve does

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use bytes::Bytes;
use serde::Serialize;

/// The body system-simulator answers with.
#[derive(Serialize)]
struct Reply {
    id: u64,
    blocked: bool,
    permit_wait_ns: u64,
}

async fn element(State(next_id): State<Arc<AtomicU64>>, _body: Bytes) -> Json<Reply> {
    Json(Reply {
        id: next_id.fetch_add(1, Ordering::Relaxed),
        blocked: false,
        permit_wait_ns: 0,
    })
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("bare axum listening on http://{}", listener.local_addr()?);
    let app = Router::new()
        .route("/requests", post(element))
        .with_state(Arc::new(AtomicU64::new(1)));
    axum::serve(listener, app).await
}
