//! Whether a request the admin routes trust by its loopback address alone (no
//! `--admin-token`) really comes from a program on this machine that meant to
//! call this server, and not from a page in the attendee's own browser.
//!
//! A page on any site can make the browser post a form to
//! `http://127.0.0.1:7879/admin/reset`: the connection is loopback, so the
//! address says nothing. Nor does it after DNS rebinding, where the page's own
//! name comes to point at 127.0.0.1. What such a request cannot hide is its
//! `Host` (the page's name, under rebinding) and, from a page, its `Origin`
//! (the page's site, on every POST, PUT and DELETE a browser sends). So, as
//! OWASP advises against both: a `Host` must name this machine by a
//! loopback address or `localhost`, and an `Origin`, where there is one, the
//! same. A request with no `Host` at all is no browser's and passes. curl, the clients, the checks, `ssh -L` and Lima's port forwards all
//! send `Host: 127.0.0.1:PORT` or `localhost:PORT` and pass unchanged.

use std::net::IpAddr;

use axum::http::{header, HeaderMap};

/// Why the request is refused, or `None` when it may be trusted as local.
pub fn refusal(headers: &HeaderMap) -> Option<&'static str> {
    // A browser always sends Host; a request without one (HTTP/1.0, a router
    // called in process) is no page's.
    let host = headers.get(header::HOST).map(|v| v.to_str().unwrap_or(""));
    if host.is_some_and(|h| !names_this_machine(strip_port(h))) {
        return Some(
            "admin routes trust this machine's own clients: the Host header must be \
             127.0.0.1, [::1] or localhost (a page in a browser, or a name rebound to this \
             machine, cannot call them); from elsewhere, configure an admin token",
        );
    }
    match headers.get(header::ORIGIN).map(|v| v.to_str()) {
        None => None,
        Some(Ok(origin)) if origin_is_this_machine(origin) => None,
        Some(_) => Some(
            "admin routes refuse requests made by a page of another site (its Origin \
             header); open the live view from 127.0.0.1 or localhost, or configure an admin token",
        ),
    }
}

/// `HOST` or `HOST:PORT`, `[V6]` or `[V6]:PORT`, without the port.
fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(host, |(inside, _)| inside);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// A loopback address (127.0.0.0/8, ::1) or `localhost` (RFC 6761, which
/// resolves to loopback only; `*.localhost` too).
fn names_this_machine(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `http://HOST[:PORT]` or `https://...` naming this machine.
fn origin_is_this_machine(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false; // `null` (a sandboxed page, a file) included
    };
    !rest.contains('/') && names_this_machine(strip_port(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(*name, value.parse().unwrap());
        }
        h
    }

    #[test]
    fn this_machines_names_pass_and_a_page_or_a_rebound_name_does_not() {
        for host in [
            "127.0.0.1:7879",
            "127.0.0.1",
            "127.1.2.3:80",
            "localhost:7878",
            "LOCALHOST",
            "app.localhost:7879",
            "[::1]:7879",
            "[::1]",
        ] {
            assert_eq!(refusal(&headers(&[("host", host)])), None, "{host}");
        }
        for host in [
            "evil.example:7879",
            "192.168.1.20:7879",
            "127.0.0.1.evil.example",
            "localhost.evil.example:7879",
            "[2001:db8::1]:7879",
            "",
        ] {
            assert!(refusal(&headers(&[("host", host)])).is_some(), "{host}");
        }
        assert_eq!(refusal(&HeaderMap::new()), None, "no Host: no browser's");

        let local = ("host", "127.0.0.1:7879");
        for origin in [
            "http://127.0.0.1:7879",
            "http://localhost:7878",
            "https://[::1]:8443",
        ] {
            assert_eq!(
                refusal(&headers(&[local, ("origin", origin)])),
                None,
                "{origin}"
            );
        }
        for origin in [
            "https://evil.example",
            "http://127.0.0.1.evil.example",
            "null",
            "http://localhost.evil.example:7879",
            "file://",
        ] {
            assert!(
                refusal(&headers(&[local, ("origin", origin)])).is_some(),
                "{origin}"
            );
        }
    }
}
