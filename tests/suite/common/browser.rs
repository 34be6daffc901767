//! A real browser for the page tests: Debian's `chromium`, headless, driven over
//! WebDriver by its `chromedriver` (`apt-get install chromium chromium-driver`).
//!
//! Written by hand on the harness's own hyper client rather than with fantoccini:
//! the tests use five WebDriver commands (new session, navigate, execute a
//! script, screenshot, end), and fantoccini brings 55 crates (two ICU stacks
//! through `url`) to a CI run that already takes 28 of its 30 minutes.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use hyper::Method;
use serde_json::{json, Value};

use super::{client, send, HttpClient};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Why the browser tests cannot run here, if they cannot.
pub fn missing() -> Option<String> {
    [CHROMIUM, CHROMEDRIVER]
        .iter()
        .find(|p| !std::path::Path::new(p).exists())
        .map(|p| format!("{p} is not installed (apt-get install chromium chromium-driver)"))
}

/// A headless Chromium session; the driver is killed on drop.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: HttpClient,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free loopback port and opens a session with a
    /// window of `width` x `height`.
    pub async fn start(width: u32, height: u32) -> Browser {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let base = format!("http://127.0.0.1:{port}");
        let http = client();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = tokio::time::timeout(
                Duration::from_secs(2),
                http.get(format!("{base}/status").parse().unwrap()),
            )
            .await;
            if matches!(ready, Ok(Ok(_))) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer in 20 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        // The flags this machine's notes give for a closed network: without the
        // background ones Chromium keeps dialling out and being refused.
        let args = vec![
            "--headless=new".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
        }}});
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
            http,
            _profile: profile,
        };
        let created = browser
            .command(Method::POST, "/session", capabilities)
            .await;
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_owned();
        browser
    }

    async fn command(&self, method: Method, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let body = if method == Method::GET {
            String::new()
        } else {
            body.to_string()
        };
        let r = send(
            &self.http,
            method,
            &url,
            &[("content-type", "application/json")],
            body,
        )
        .await;
        let value = r.json();
        assert!(
            r.status.is_success(),
            "WebDriver {path}: {} {}",
            r.status,
            value
        );
        value["value"].clone()
    }

    fn at(&self, path: &str) -> String {
        format!("/session/{}{path}", self.session)
    }

    pub async fn goto(&self, url: &str) {
        self.command(Method::POST, &self.at("/url"), json!({ "url": url }))
            .await;
    }

    /// Runs `script` (a function body: `return ...`) in the page; its value.
    pub async fn eval(&self, script: &str) -> Value {
        self.command(
            Method::POST,
            &self.at("/execute/sync"),
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// The text of the element with `id`, or null when there is none.
    pub async fn text(&self, id: &str) -> String {
        let script =
            format!("const e = document.getElementById({id:?}); return e ? e.textContent : null;");
        self.eval(&script).await.as_str().unwrap_or("").to_owned()
    }

    /// Waits (bounded) until `script` returns true; its last value otherwise.
    pub async fn wait_for(&self, what: &str, script: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if self.eval(script).await == Value::Bool(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the page did not show {what} within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A PNG of the window, written to `path`.
    pub async fn screenshot(&self, path: &std::path::Path) {
        let data = self
            .command(Method::GET, &self.at("/screenshot"), Value::Null)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().expect("base64"))
            .expect("a PNG");
        std::fs::write(path, png).expect("screenshot written");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ending the session closes Chromium (a killed driver would leave it
        // running); Drop cannot await, so the DELETE goes over a plain socket.
        let end = || -> std::io::Result<()> {
            use std::io::{Read, Write};
            let mut socket = std::net::TcpStream::connect(self.base.trim_start_matches("http://"))?;
            socket.set_read_timeout(Some(Duration::from_secs(10)))?;
            write!(
                socket,
                "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                self.session
            )?;
            socket.read_to_end(&mut Vec::new()).map(|_| ())
        };
        let _ = end();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
