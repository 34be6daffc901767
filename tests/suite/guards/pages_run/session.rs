//! A page's terminal for tests/suite/guards/pages_run.rs: one bash, in a network namespace of
//! its own (so the pages' fixed ports 7878 and 7879 are free and nothing else on
//! the machine answers them), fed the page's commands one by one as a person
//! would type them. Variables set by one command stay for the next.
//!
//! Each command's stdout, stderr and exit status land in files of the session's
//! directory; the test polls for the status file with a deadline, so a command that
//! hangs fails the test with what it printed instead of hanging it. Everything the
//! session started is killed with its process group when the session ends.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// What a finished command left.
#[derive(Debug)]
pub struct Done {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// A command left running in the background (a server, a load).
#[derive(Debug, Clone)]
pub struct Job {
    pub pid: u32,
    pub command: String,
    n: usize,
}

#[derive(Debug)]
pub struct Session {
    bash: Child,
    stdin: ChildStdin,
    dir: PathBuf,
    n: usize,
}

impl Session {
    /// A bash in a new network namespace with its loopback up, working in `cwd`,
    /// with `path` first on PATH.
    pub fn start(cwd: &Path, path: &str, dir: PathBuf) -> Session {
        use std::os::unix::process::CommandExt;
        std::fs::create_dir_all(&dir).unwrap();
        let mut bash = Command::new("unshare")
            .args(["--net", "bash", "--noprofile", "--norc", "-s"])
            .current_dir(cwd)
            .env("PATH", path)
            .env_remove("SIMULATOR_MAX_DURATION")
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(dir.join("session.out")).unwrap())
            .stderr(std::fs::File::create(dir.join("session.err")).unwrap())
            .process_group(0)
            .spawn()
            .expect("start unshare --net bash");
        let stdin = bash.stdin.take().unwrap();
        let mut session = Session {
            bash,
            stdin,
            dir,
            n: 0,
        };
        let up = session.run("ip link set lo up", None, Duration::from_secs(10));
        assert_eq!(up.code, 0, "loopback in the new namespace: {up:?}");
        session
    }

    fn file(&self, n: usize, ext: &str) -> PathBuf {
        self.dir.join(format!("{n}.{ext}"))
    }

    fn send(&mut self, script: &str) {
        self.stdin
            .write_all(script.as_bytes())
            .and_then(|()| self.stdin.flush())
            .expect("the session's bash is gone");
    }

    fn cap(max_duration: Option<&str>) -> String {
        match max_duration {
            Some(cap) => format!("export SIMULATOR_MAX_DURATION={cap}\n"),
            None => "unset SIMULATOR_MAX_DURATION\n".into(),
        }
    }

    /// Runs `command` in the foreground with `SIMULATOR_MAX_DURATION` set to
    /// `max_duration`; fails the test if it is not done `within`.
    pub fn run(&mut self, command: &str, max_duration: Option<&str>, within: Duration) -> Done {
        self.n += 1;
        let n = self.n;
        let (out, err, rc) = (self.file(n, "out"), self.file(n, "err"), self.file(n, "rc"));
        let script = format!(
            "{}{{\n{command}\n}} > {} 2> {} < /dev/null; echo $? > {}.tmp; mv {}.tmp {}\n",
            Self::cap(max_duration),
            out.display(),
            err.display(),
            rc.display(),
            rc.display(),
            rc.display()
        );
        self.send(&script);
        let deadline = Instant::now() + within;
        loop {
            if let Ok(code) = std::fs::read_to_string(&rc) {
                return Done {
                    code: code.trim().parse().unwrap_or(-1),
                    stdout: std::fs::read_to_string(&out).unwrap_or_default(),
                    stderr: std::fs::read_to_string(&err).unwrap_or_default(),
                };
            }
            assert!(
                Instant::now() < deadline,
                "still running after {within:?}: {command}\nstdout: {}\nstderr: {}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts `command` in the background (as `command &`, its comment dropped so
    /// the `&` is not in it), its output to files.
    pub fn spawn(&mut self, command: &str, max_duration: Option<&str>) -> Job {
        let command = super::blocks::without_comment(command);
        self.n += 1;
        let n = self.n;
        let pid_file = self.file(n, "pid");
        let script = format!(
            "{}{command} > {} 2> {} < /dev/null &\necho $! > {}.tmp; mv {}.tmp {}\n",
            Self::cap(max_duration),
            self.file(n, "out").display(),
            self.file(n, "err").display(),
            pid_file.display(),
            pid_file.display(),
            pid_file.display()
        );
        self.send(&script);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(pid) = std::fs::read_to_string(&pid_file) {
                return Job {
                    pid: pid.trim().parse().expect("a pid from $!"),
                    command: command.to_string(),
                    n,
                };
            }
            assert!(Instant::now() < deadline, "no pid for: {command}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `signal` to a background job and waits for it to end (within 60 s);
    /// its status as `wait` gives it, and everything it printed.
    pub fn stop(&mut self, job: &Job, signal: &str) -> Done {
        let done = self.run(
            &format!(
                "kill -{signal} {pid} 2>/dev/null; wait {pid}",
                pid = job.pid
            ),
            None,
            Duration::from_secs(60),
        );
        Done {
            code: done.code,
            stdout: std::fs::read_to_string(self.file(job.n, "out")).unwrap_or_default(),
            stderr: std::fs::read_to_string(self.file(job.n, "err")).unwrap_or_default(),
        }
    }

    /// What a background job printed so far.
    pub fn printed(&self, job: &Job) -> String {
        let out = std::fs::read_to_string(self.file(job.n, "out")).unwrap_or_default();
        let err = std::fs::read_to_string(self.file(job.n, "err")).unwrap_or_default();
        format!("{out}{err}")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The bash and all it started share its process group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.bash.id())])
            .status();
        let _ = self.bash.wait();
    }
}

/// Whether `pid` catches SIGINT yet (its `SigCgt` mask in /proc), so a Ctrl-C
/// reaches its handler and not the default action.
pub fn catches_sigint(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        })
        .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
}

/// Whether `pid` still runs (not gone, not a zombie waiting for its parent).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after_name = stat.rsplit_once(')')?.1.trim_start().to_string();
            after_name.chars().next()
        })
        .is_some_and(|state| state != 'Z')
}
