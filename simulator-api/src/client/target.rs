//! Where the server is: a target's `http://HOST:PORT` resolved once, for the
//! client's calls and the driver's connections alike.

use std::net::SocketAddr;

use hyper::header::HeaderValue;

/// Why a target cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("target `{0}` must look like http://HOST:PORT (https is not supported)")]
    Malformed(String),
    #[error("cannot resolve {0}: {1}")]
    Resolve(String, std::io::Error),
}

/// Resolves `http://host:port` once, so clients connect without DNS on every
/// retry; returns the address and the `Host` header to send.
pub async fn resolve(target: &str) -> Result<(SocketAddr, HeaderValue), TargetError> {
    let authority = target
        .strip_prefix("http://")
        .map(|rest| rest.trim_end_matches('/'))
        .filter(|a| !a.is_empty() && !a.contains('/'))
        .ok_or_else(|| TargetError::Malformed(target.to_owned()))?;
    let host =
        HeaderValue::from_str(authority).map_err(|_| TargetError::Malformed(target.to_owned()))?;
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let addr = tokio::net::lookup_host(&with_port)
        .await
        .map_err(|e| TargetError::Resolve(with_port.clone(), e))?
        .next()
        .ok_or_else(|| TargetError::Malformed(target.to_owned()))?;
    Ok((addr, host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn targets_must_be_plain_http() {
        assert!(resolve("https://127.0.0.1:1").await.is_err());
        assert!(resolve("127.0.0.1:1").await.is_err());
        assert!(resolve("http://127.0.0.1:1/x").await.is_err());
        let (addr, host) = resolve("http://127.0.0.1:7878/").await.unwrap();
        assert_eq!(
            (addr.port(), host.to_str().unwrap()),
            (7878, "127.0.0.1:7878")
        );
    }
}
