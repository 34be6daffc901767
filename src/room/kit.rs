//! The kit the room serves (`room --kit DIR`, the folder `tools/kit` makes):
//! its installer with the room's own address filled in, and each file its
//! SHA256SUMS names, so every laptop installs from the room and reaches
//! nothing else. Only the files the sums name are served, by name, from a list
//! read once at start: no path from a request ever reaches the file system.

use std::path::{Path, PathBuf};

use anyhow::Context;
use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

/// The installer's placeholder for where the kit is served from.
const KIT_URL: &str = "@KIT_URL@";

/// A kit read at start.
#[derive(Debug)]
pub struct Kit {
    dir: PathBuf,
    /// `install.sh` with the room's `URL/kit` in place of [`KIT_URL`].
    installer: String,
    /// Each file of SHA256SUMS: its name, its sum and its size.
    pub files: Vec<KitFile>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct KitFile {
    pub name: String,
    pub sha256: String,
    pub bytes: u64,
}

impl Kit {
    /// The kit in `dir`, served at `url/kit`. Every file SHA256SUMS names must
    /// be there, with that sum's size checked now and its sum by the installer.
    pub fn open(dir: &Path, url: &str) -> anyhow::Result<Kit> {
        let sums_path = dir.join("SHA256SUMS");
        let sums = std::fs::read_to_string(&sums_path).with_context(|| {
            format!(
                "--kit {}: no SHA256SUMS (make the kit with tools/kit)",
                dir.display()
            )
        })?;
        let mut files = Vec::new();
        for (n, line) in sums.lines().enumerate() {
            let (sha256, name) = parse_sum(line)
                .with_context(|| format!("{} line {}: {line:?}", sums_path.display(), n + 1))?;
            let bytes = std::fs::metadata(dir.join(name))
                .with_context(|| format!("--kit {}: {name} is missing", dir.display()))?
                .len();
            files.push(KitFile {
                name: name.to_owned(),
                sha256: sha256.to_owned(),
                bytes,
            });
        }
        let installer = std::fs::read_to_string(dir.join("install.sh"))
            .with_context(|| format!("--kit {}: no install.sh", dir.display()))?;
        anyhow::ensure!(
            installer.contains(KIT_URL),
            "--kit {}: install.sh has no {KIT_URL} for the room's address (make the kit with tools/kit)",
            dir.display()
        );
        Ok(Kit {
            dir: dir.to_owned(),
            installer: installer.replace(KIT_URL, &format!("{url}/kit")),
            files,
        })
    }

    /// The archive for `platform` (`linux-x86_64`), if the kit has one.
    pub fn archive_for(&self, platform: &str) -> Option<&KitFile> {
        self.files
            .iter()
            .find(|f| f.name.ends_with(&format!("-{platform}.tar.gz")))
    }
}

/// `SUM  NAME` as sha256sum writes it; a name is one plain file name.
fn parse_sum(line: &str) -> anyhow::Result<(&str, &str)> {
    let (sum, name) = line
        .split_once("  ")
        .context("not `SHA256  NAME` as sha256sum writes it")?;
    anyhow::ensure!(
        sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()),
        "not a SHA-256 sum"
    );
    anyhow::ensure!(
        !name.is_empty()
            && name != "."
            && name != ".."
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
        "a kit's file is a plain name of letters, digits, '.', '_' and '-'"
    );
    Ok((sum, name))
}

/// The kit's routes (`GET /kit`, `/kit/install.sh`, `/kit/{name}`); each
/// says how to serve one where the room has none.
pub fn routes(kit: Option<Kit>) -> Router {
    Router::new()
        .route("/kit", get(listing))
        .route("/kit/install.sh", get(installer))
        .route("/kit/{name}", get(file))
        .with_state(Arc::new(kit))
}

type Served = Arc<Option<Kit>>;

/// `GET /kit/install.sh`: the installer, which fetches from this room.
async fn installer(State(kit): State<Served>) -> Response {
    match kit.as_ref() {
        Some(kit) => (
            [(header::CONTENT_TYPE, "text/x-shellscript; charset=utf-8")],
            kit.installer.clone(),
        )
            .into_response(),
        None => no_kit(),
    }
}

/// `GET /kit/{name}`: a file the kit's sums name (SHA256SUMS itself too).
async fn file(State(kit): State<Served>, UrlPath(name): UrlPath<String>) -> Response {
    let Some(kit) = kit.as_ref() else {
        return no_kit();
    };
    // install.sh has a route of its own (the installer with the room's address).
    let known = name == "SHA256SUMS" || kit.files.iter().any(|f| f.name == name);
    if !known {
        return (
            StatusCode::NOT_FOUND,
            format!("no {name} in this room's kit (GET /kit lists it)\n"),
        )
            .into_response();
    }
    let path = kit.dir.join(&name);
    match tokio::fs::File::open(&path).await {
        Ok(file) => {
            let kind = if name.ends_with(".tar.gz") {
                "application/gzip"
            } else {
                "text/plain; charset=utf-8"
            };
            let length = file.metadata().await.map(|m| m.len()).unwrap_or(0);
            let body = Body::from_stream(tokio_util::io::ReaderStream::new(file));
            (
                [
                    (header::CONTENT_TYPE, kind.to_owned()),
                    (header::CONTENT_LENGTH, length.to_string()),
                ],
                body,
            )
                .into_response()
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the room could not open {name}: {e}\n"),
        )
            .into_response(),
    }
}

/// `GET /kit`: what the kit holds, as JSON.
async fn listing(State(kit): State<Served>) -> Response {
    match kit.as_ref() {
        Some(kit) => axum::Json(&kit.files).into_response(),
        None => no_kit(),
    }
}

fn no_kit() -> Response {
    (
        StatusCode::NOT_FOUND,
        "this room serves no kit (room --kit DIR, the folder tools/kit makes)\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sums_line_names_one_plain_file_or_is_refused() {
        let sum = "a".repeat(64);
        assert_eq!(
            parse_sum(&format!("{sum}  install.sh")).unwrap(),
            (sum.as_str(), "install.sh")
        );
        for bad in [
            format!("{sum}  ../etc/passwd"),
            format!("{sum}  a/b.tar.gz"),
            format!("{sum}  .."),
            format!("{}  x", "g".repeat(64)),
            format!("{sum} x"),
            "abc  x".to_owned(),
        ] {
            assert!(parse_sum(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_installer_served_fetches_from_the_room_and_a_missing_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("install.sh"), "kit='@KIT_URL@'\n").unwrap();
        std::fs::write(
            dir.path()
                .join("system-simulator-0.1.0-linux-x86_64.tar.gz"),
            b"12345",
        )
        .unwrap();
        let sums = format!(
            "{}  system-simulator-0.1.0-linux-x86_64.tar.gz\n{}  install.sh\n",
            "1".repeat(64),
            "2".repeat(64)
        );
        std::fs::write(dir.path().join("SHA256SUMS"), &sums).unwrap();
        let kit = Kit::open(dir.path(), "http://10.0.0.5:7900").unwrap();
        assert_eq!(kit.installer, "kit='http://10.0.0.5:7900/kit'\n");
        assert_eq!(kit.archive_for("linux-x86_64").unwrap().bytes, 5);
        assert!(kit.archive_for("linux-aarch64").is_none());
        std::fs::write(
            dir.path().join("SHA256SUMS"),
            format!("{sums}{}  gone.tar.gz\n", "3".repeat(64)),
        )
        .unwrap();
        let missing = Kit::open(dir.path(), "http://x").unwrap_err();
        assert!(format!("{missing:#}").contains("gone.tar.gz is missing"));
    }
}
