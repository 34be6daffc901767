//! `system-simulator room`: the facilitator's view of a workshop room. One
//! command starts a small server that holds the room in memory (and, with
//! `--state FILE`, in a file it restarts from) and prints the projector's URL,
//! the facilitator's and the line attendees paste. Attendees opt in: their
//! `workshop check` reports to it only when given the room (`seat.rs`).
//!
//! - `board.rs`: the rules (join, report, free) and `view.rs` the board each
//!   viewer may see; no clock, no I/O, tested with the times written out.
//! - `server.rs`: the routes; `auth.rs` who is asking (the key, a token, the
//!   room's own machine) and `refused.rs` how a refusal is answered; `page.rs`
//!   the page; `state_file.rs` the file; `kit.rs` the kit laptops install from
//!   (`--kit DIR`).

pub mod auth;
pub mod board;
pub mod kit;
pub mod page;
pub mod refused;
pub mod seat;
pub mod server;
pub mod state_file;
pub mod view;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use simulator_service::parts::connections::{self, ConnectionPolicy, Limits};
use simulator_service::parts::AcceptFailures;
use tokio_util::sync::CancellationToken;

use board::Room;
use server::{new_secret, now_ms, Shared};

#[derive(Debug, clap::Args)]
pub struct RoomArgs {
    /// Where the room listens. Everything that changes the room needs the
    /// room's password, a seat's token or the facilitator's key.
    #[arg(long, default_value = "0.0.0.0:7900")]
    pub listen: SocketAddr,
    /// The address attendees reach it at, as printed in their line [default:
    /// the address --listen names; listening on every interface, the address
    /// of the one with the default route].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Keep the room in FILE, and start from it when it exists (a restart
    /// shows the same board, and the seats' tokens still report).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// The password attendees join with [default: a new one; a room started
    /// from its --state file keeps its own].
    #[arg(long, env = "ISIM_ROOM_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    /// A seat on one exercise this long without solving it is marked stuck.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub stuck_after: Duration,
    /// Serve the kit in DIR (the folder tools/kit makes) at /kit: the line
    /// the room prints installs it on a laptop from the room alone.
    #[arg(long, value_name = "DIR")]
    pub kit: Option<PathBuf>,
    /// The connections one network address may hold at once: a laptop's page
    /// and checks take a few; past it, a JSON 503. Raise it where many
    /// laptops reach the room through one address (a NAT).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_connections_per_address: u16,
    /// The drill's seed for the room: the board shows it, so every laptop
    /// starts the same draw (`system-simulator drill start --seed SEED`), and
    /// each seat's drill reports to its column (kept in the state file).
    #[arg(long, value_name = "SEED")]
    pub drill_seed: Option<String>,
}

pub async fn run(args: RoomArgs) -> anyhow::Result<()> {
    let room = match &args.state {
        Some(path) => state_file::read(path)?,
        None => None,
    };
    let restarted = room.is_some();
    let mut room = room.unwrap_or_else(|| Room::new(new_secret(), new_password(), now_ms()));
    if let Some(password) = &args.password {
        anyhow::ensure!(
            !password.is_empty() && !password.contains(['/', ' ']),
            "--password: one word without '/' or spaces (it goes in a URL)"
        );
        room.password.clone_from(password);
    }
    if let Some(seed) = &args.drill_seed {
        anyhow::ensure!(
            !seed.is_empty()
                && seed.len() <= simulator_api::trail::TRAIL_TEXT_MAX
                && seed.chars().all(|c| c.is_ascii_graphic()),
            "--drill-seed: one word of printable characters, at most {} bytes",
            simulator_api::trail::TRAIL_TEXT_MAX
        );
        room.drill_seed = Some(seed.clone());
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let bound = listener.local_addr()?;
    let url = args.url.clone().unwrap_or_else(|| default_url(bound));
    let kit = match &args.kit {
        Some(dir) => Some(kit::Kit::open(dir, &url)?),
        None => None,
    };
    print_banner(&args, &room, bound, &url, restarted);
    if let Some(kit) = &kit {
        print_kit(kit, &url);
    }
    let shared = Shared::new(room, args.stuck_after, args.state.clone());
    let keeper = tokio::spawn(keep(shared.clone()));
    let app = server::routes(shared.clone()).merge(kit::routes(kit));
    let stop = CancellationToken::new();
    tokio::spawn({
        let (stop, closed) = (stop.clone(), shared.closed.clone());
        async move {
            simulator_service::server::shutdown_signal().await;
            closed.cancel(); // the boards' streams end, so their connections drain
            stop.cancel();
        }
    });
    // The server's own accept loop: a head deadline and a connection limit,
    // which axum's `serve` has not (serving/connections.rs says why).
    let mut serving = tokio::spawn(connections::serve(
        listener,
        app,
        connection_limits(usize::from(args.max_connections_per_address)),
        Arc::new(|| ConnectionPolicy::PLAIN),
        Arc::default(),
        AcceptFailures::unprobed("the room's listener"),
        stop.clone(),
    ));
    tokio::select! {
        _ = &mut serving => {}
        () = stop.cancelled() => {
            let _ = tokio::time::timeout(DRAIN_LIMIT, serving).await;
        }
    }
    shared.closed.cancel();
    keeper.await.context("the state file's keeper")??;
    Ok(())
}

/// Connections the room serves at once: 500 seats with a page and a check
/// each, the projector and the facilitator. The next gets a JSON 503 and is
/// closed. Lowered where the descriptor limit, raised to its hard limit at
/// start, is lower.
pub const MAX_CONNECTIONS: usize = 2_048;
/// A connection sends a whole request head within this of opening or of its
/// last reply, or it is closed: a socket that sends half a request and waits
/// holds a slot this long at most.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(10);
/// How long the connections open at shutdown may take to finish.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// The room's connection limits, its descriptor limit raised first.
fn connection_limits(per_address: usize) -> Limits {
    let raised = simulator_service::os::raise_limit();
    // Descriptors beside the connections: the state file, the kit's files, stdio.
    let fits = raised.map_or(MAX_CONNECTIONS, |d| {
        usize::try_from(d.limit)
            .unwrap_or(usize::MAX)
            .saturating_sub(64)
            .max(16)
    });
    Limits {
        max_connections: MAX_CONNECTIONS.min(fits),
        header_read_timeout: HEAD_DEADLINE,
        limit_name: "the room's connection limit",
        metered: false,
        write_deadline: connections::WRITE_DEADLINE,
        per_address: Some(per_address),
    }
}

/// Writes the room to its state file within a second of each change (the
/// reports of a second are one write) and once more at shutdown.
async fn keep(shared: Arc<Shared>) -> anyhow::Result<()> {
    let Some(path) = shared.state_file.clone() else {
        return Ok(());
    };
    let mut changes = shared.changes.subscribe();
    // Off the room's one thread: the write ends in an fsync.
    let write = |shared: &Shared| {
        let room = shared
            .room
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let path = path.clone();
        async move {
            tokio::task::spawn_blocking(move || state_file::write(&path, &room))
                .await
                .context("the state file's writer")?
        }
    };
    write(&shared).await?;
    loop {
        tokio::select! {
            () = shared.closed.cancelled() => return write(&shared).await,
            changed = changes.changed() => {
                if changed.is_err() {
                    return write(&shared).await;
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        changes.mark_unchanged();
        if let Err(e) = write(&shared).await {
            tracing::warn!("the room's state file: {e:#}");
        }
    }
}

/// A password a facilitator can read out: two short words of letters and
/// digits no one confuses (no 0/O, 1/l).
fn new_password() -> String {
    const LETTERS: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let word = |n| {
        (0..n)
            .map(|_| LETTERS[rand::random_range(0..LETTERS.len())] as char)
            .collect::<String>()
    };
    format!("{}-{}", word(4), word(4))
}

/// The URL attendees' laptops reach the room at: the address it bound, where it
/// bound one (loopback included); listening on every interface, the address of
/// the one that holds the default route, which is the one the room's network
/// reaches (the host's name, which this used before, resolves to `localhost` on
/// macOS and to nothing on many classroom networks); the host's name only where
/// there is no default route.
fn default_url(bound: SocketAddr) -> String {
    if !bound.ip().is_unspecified() {
        return format!("http://{bound}");
    }
    if let Some(ip) = default_route_address(bound.is_ipv6()) {
        return format!("http://{}", SocketAddr::new(ip, bound.port()));
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("http://{host}:{}", bound.port())
}

/// The URL a browser on the room's own machine reaches it at over loopback
/// (the facilitator's view needs no key there), where it listens on one.
fn this_machine_url(bound: SocketAddr) -> Option<String> {
    let ip: std::net::IpAddr = match bound.ip() {
        ip if ip.is_loopback() => ip,
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        _ => return None,
    };
    Some(format!("http://{}", SocketAddr::new(ip, bound.port())))
}

/// This machine's address on the interface of its default route: a UDP socket
/// "connected" to a documentation address (TEST-NET-1, RFC 5737; RFC 3849's for
/// IPv6) takes the route's source address. A UDP connect sends nothing: the
/// kernel only looks the route up. None without a default route.
fn default_route_address(v6: bool) -> Option<std::net::IpAddr> {
    let (local, remote) = match v6 {
        true => ("[::]:0", "[2001:db8::1]:9"),
        false => ("0.0.0.0:0", "192.0.2.1:9"),
    };
    let socket = std::net::UdpSocket::bind(local).ok()?;
    socket.connect(remote).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
}

/// The banner, printed whole: a room whose stdout reader has gone (`room |
/// head`, a closed terminal) goes on serving (`print_listing` takes a broken
/// pipe as the reader's choice; `println!` would panic and end the room).
fn print_banner(args: &RoomArgs, room: &Room, bound: SocketAddr, url: &str, restarted: bool) {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "room: listening on {bound}");
    let _ = match (&args.state, restarted) {
        (Some(path), true) => writeln!(
            out,
            "  restarted from {} ({} seats)",
            path.display(),
            room.seat_count()
        ),
        (Some(path), false) => writeln!(out, "  kept in {}", path.display()),
        (None, _) => writeln!(
            out,
            "  in memory only (--state FILE keeps it across a restart)"
        ),
    };
    let _ = writeln!(
        out,
        "projector (the totals; every row once you reveal the board):"
    );
    let _ = writeln!(out, "  {url}/room?as=projector");
    let _ = writeln!(
        out,
        "facilitator (every row, reveal, CSV; keep it off the projector):"
    );
    if let Some(here) = this_machine_url(bound) {
        let _ = writeln!(out, "  on this machine, no key: {here}/room?as=facilitator");
    }
    let _ = writeln!(
        out,
        "  elsewhere: {url}/room/login with the key {}",
        room.key
    );
    let _ = writeln!(out, "attendees paste, each with a seat name of their own:");
    let _ = writeln!(
        out,
        "  export ISIM_ROOM={url}/join/{} ISIM_SEAT=your-name",
        room.password
    );
    let _ = writeln!(
        out,
        "and every `workshop check` they run reports to the room."
    );
    if let Some(seed) = &room.drill_seed {
        let _ = writeln!(out, "the drill: each laptop runs `system-simulator drill start --seed {seed}`, and its `drill report` fills the drill column.");
    }
    let _ = simulator_service::os::print_listing(&out);
}

/// The kit's lines, printed whole as the banner is.
fn print_kit(kit: &kit::Kit, url: &str) {
    let archives: Vec<&str> = kit
        .files
        .iter()
        .filter_map(|f| f.name.strip_suffix(".tar.gz"))
        .collect();
    let text = format!(
        "laptops install the kit ({}) with:\n  curl -fsS {url}/kit/install.sh | sh\n  (without curl: wget -qO- {url}/kit/install.sh | sh)\nthen `system-simulator doctor`, after the line above, shows each laptop's readiness on the board.\n",
        archives.join(", ")
    );
    let _ = simulator_service::os::print_listing(&text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_join_line_names_an_address_another_laptop_can_reach() {
        let at = |a: &str| default_url(a.parse().unwrap());
        assert_eq!(at("127.0.0.1:7900"), "http://127.0.0.1:7900");
        assert_eq!(at("192.168.1.20:7900"), "http://192.168.1.20:7900");
        let every = at("0.0.0.0:7900");
        assert!(
            !every.contains("0.0.0.0") && every.ends_with(":7900"),
            "{every}"
        );
        // On a machine with a default route, its interface's address; without
        // one (nothing but loopback), the host's name stands in.
        match default_route_address(false) {
            Some(ip) => assert_eq!(every, format!("http://{ip}:7900")),
            None => eprintln!("no default route here: {every}"),
        }
    }
}
