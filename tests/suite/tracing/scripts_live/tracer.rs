//! Running a script through `scripts/trace` from a test, reading what it printed,
//! and the facts about the server a test compares it with (CPU time from /proc,
//! whether a tracer has armed the probes).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::{exited_within, have, is_root, skip_or_fail};

const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/trace");

#[derive(Debug, Clone, Copy)]
pub enum Tool {
    DTrace,
    Bpftrace,
}

impl Tool {
    fn program(self) -> &'static str {
        match self {
            Tool::DTrace => "dtrace",
            Tool::Bpftrace => "bpftrace",
        }
    }

    /// Whether this test can attach the tool; prints why not (or fails under CI).
    pub fn available(self) -> bool {
        let program = self.program();
        if !have(program) {
            let install = match self {
                Tool::DTrace => "../shared/tools/install-dtrace-linux",
                Tool::Bpftrace => "apt-get install bpftrace",
            };
            skip_or_fail(&format!("{program} not installed ({install})"));
            return false;
        }
        if !is_root() {
            skip_or_fail(&format!("attaching {program} needs root"));
            return false;
        }
        true
    }

    fn options(self) -> &'static [&'static str] {
        match self {
            // Timers on an idle vCPU never fire on this project's VMs.
            Tool::DTrace => &["--dtrace", "--keep-cpus-busy"],
            Tool::Bpftrace => &["--bpftrace"],
        }
    }
}

/// A tracer started by `scripts/trace`, which execs it, so the pid is the tracer's.
pub struct Traced {
    child: Child,
    stdout: mpsc::Receiver<String>,
    /// stderr's lines as they come: the stack scripts' banner is there.
    stderr: mpsc::Receiver<String>,
    lines: Vec<String>,
}

/// A thread that sends each line of `pipe` as it comes, until its end.
fn lines_of(pipe: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Traced {
    pub fn start(tool: Tool, script: &str, pid: u32, options: &[&str]) -> Traced {
        let mut command = Command::new(TRACE);
        command
            .args(tool.options())
            .args(options)
            .args([script, &pid.to_string()]);
        Self::spawn(command)
    }

    /// Any command that prints a script's output (the tap twins, `trace NAME`).
    pub fn spawn(mut command: Command) -> Traced {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the tracer");
        let stdout = lines_of(child.stdout.take().unwrap());
        let stderr = lines_of(child.stderr.take().unwrap());
        Traced {
            child,
            stdout,
            stderr,
            lines: Vec::new(),
        }
    }

    /// The tracer's pid (`scripts/trace` execs it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The times the kernel skipped one of the tracer's BPF programs because
    /// another BPF program held its CPU: the sum of `recursion_misses` over
    /// the programs it holds open (`/proc/PID/fdinfo`, Linux 5.12 on). A count
    /// short of the kernel's own, with misses here, is the tracer's loss, not
    /// the script's error. None where nothing could be read.
    pub fn bpf_recursion_misses(&self) -> Option<u64> {
        let fds = std::fs::read_dir(format!("/proc/{}/fdinfo", self.pid())).ok()?;
        let mut programs = 0;
        let mut misses = 0;
        for fd in fds.flatten() {
            let Ok(info) = std::fs::read_to_string(fd.path()) else {
                continue;
            };
            if let Some(n) = info
                .lines()
                .find_map(|l| l.strip_prefix("recursion_misses:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                programs += 1;
                misses += n;
            }
        }
        (programs > 0).then_some(misses)
    }

    /// Starts a bundled script and returns once its BEGIN clause has printed: both
    /// tools run BEGIN only after every probe is attached and enabled. bpftrace's
    /// own "Attaching N probes..." comes before that and does not count.
    pub fn start_until_begin(tool: Tool, script: &str, pid: u32, options: &[&str]) -> Traced {
        Self::start(tool, script, pid, options).until_begin()
    }

    /// Returns once the first line of the script's own (its BEGIN's) has printed.
    pub fn until_begin(self) -> Traced {
        let mut traced = self;
        // DTrace takes a few seconds of CPU to compile and attach.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match traced.stdout.recv_timeout(left) {
                Ok(line) => {
                    let begun = !line.starts_with("Attaching ");
                    traced.lines.push(line);
                    if begun {
                        return traced;
                    }
                }
                Err(_) => traced.fail("printed nothing from BEGIN within 90 s"),
            }
        }
    }

    /// Returns once the stack script's banner (its BEGIN's line, which
    /// `scripts/trace` passes to stderr: every probe attached) has printed.
    pub fn until_banner(self) -> Traced {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(": timing pid") || line.contains(": sampling pid") => {
                    return self;
                }
                Ok(_) => {}
                Err(_) => {
                    let mut traced = self;
                    traced.fail("printed no banner within 90 s")
                }
            }
        }
    }

    /// Waits for the next line the script prints from now: for a script with a
    /// line a second, that line holds every event that happened before this
    /// call (earlier lines, already printed, are kept as they are).
    pub fn next_line(&mut self) {
        self.lines.extend(self.stdout.try_iter());
        match self.stdout.recv_timeout(Duration::from_secs(10)) {
            Ok(line) => self.lines.push(line),
            Err(_) => self.fail("printed no line for 10 s"),
        }
    }

    /// The lines it has printed so far that the test has read (`next_line`,
    /// `until_begin`): an index into them marks a moment of the trace.
    pub fn printed(&self) -> &[String] {
        &self.lines
    }

    /// Polls `ready` (bounded) while the tracer is alive.
    pub fn wait_for(&mut self, within: Duration, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + within;
        while !ready() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.fail(&format!("exited with {status} before it was ready"));
            }
            assert!(
                Instant::now() < deadline,
                "tracer not ready within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ctrl-C: the tracer prints its summary and exits; returns all it printed.
    pub fn interrupt(self) -> String {
        self.send_interrupt();
        self.wait_exit(Duration::from_secs(60))
    }

    /// Ctrl-C to a script and its twin at once, then what each printed: one
    /// after another, the second would go on counting while the first exits
    /// (DTrace took 15 s to exit beside the shared tests, and the twin counted
    /// the replies to its own reads of the server all that time).
    pub fn interrupt_together(script: Traced, twin: Traced) -> (String, String) {
        script.send_interrupt();
        twin.send_interrupt();
        let within = Duration::from_secs(60);
        (script.wait_exit(within), twin.wait_exit(within))
    }

    /// Ctrl-C to every one at once, then what each printed, in order.
    pub fn interrupt_all(all: Vec<Traced>) -> Vec<String> {
        for traced in &all {
            traced.send_interrupt();
        }
        let within = Duration::from_secs(60);
        all.into_iter().map(|t| t.wait_exit(within)).collect()
    }

    fn send_interrupt(&self) {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the tracer to end by itself and returns all it printed.
    /// One that has not ended by `within` is killed, and the failure says what
    /// it had printed by then (a seed script under DTrace once ran 120 s past its
    /// `tick-60s` beside the shared tests, and said nothing of why).
    pub fn wait_exit(mut self, within: Duration) -> String {
        let Some(status) = exited_within(&mut self.child, within) else {
            self.fail(&format!("did not exit within {within:?}"));
        };
        let stderr = self.stderr.iter().collect::<Vec<_>>().join("\n");
        self.lines.extend(self.stdout.iter());
        let output = self.lines.join("\n");
        assert!(
            status.success(),
            "tracer failed ({status}):\n{stderr}\n{output}"
        );
        output
    }

    fn fail(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let stderr = self.stderr.try_iter().collect::<Vec<_>>().join("\n");
        self.lines.extend(self.stdout.try_iter());
        let stdout = self.lines.join("\n");
        panic!("the tracer {why}:\n{stderr}\n--- its output so far\n{stdout}");
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The labelled figures of a summary, from either tool's layout:
/// DTrace's `  label        123` and bpftrace's `@map[label]: 123`.
pub fn figures(output: &str) -> BTreeMap<String, u64> {
    let mut found = BTreeMap::new();
    for line in output.lines() {
        let (label, value) = if let Some(rest) = line.strip_prefix('@') {
            let Some((key, value)) = rest.split_once("]: ") else {
                continue;
            };
            let Some((_, label)) = key.split_once('[') else {
                continue;
            };
            (label.to_owned(), value.trim())
        } else if line.starts_with("  ") && !line.trim_start().starts_with(char::is_numeric) {
            let Some((label, value)) = line.trim().rsplit_once(' ') else {
                continue;
            };
            (label.trim().to_owned(), value)
        } else {
            continue;
        };
        if let Ok(value) = value.parse() {
            found.insert(label, value);
        }
    }
    found
}

/// The per-second rows of in-flight: its last four columns (in flight, max in
/// flight, fewest permits free, blocked), with "-" (unknown) as `u64::MAX`.
pub fn rows(output: &str) -> Vec<[u64; 4]> {
    output
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let last = words.get(words.len().checked_sub(4)?..)?;
            let mut row = [0; 4];
            for (cell, word) in row.iter_mut().zip(last) {
                *cell = if *word == "-" {
                    u64::MAX
                } else {
                    word.parse().ok()?
                };
            }
            (words.len() > 4).then_some(row)
        })
        .collect()
}

/// The CPU milliseconds of every cpu-usage line.
pub fn cpu_ms(output: &str) -> u64 {
    output
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [.., ms, "system-simulator"] => ms.parse::<u64>().ok(),
                _ => None,
            }
        })
        .sum()
}

/// User plus system CPU time of a process, from /proc (10 ms resolution).
pub fn proc_cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which may hold spaces: state is field 3,
    // utime and stime are fields 14 and 15, in clock ticks (100 a second here).
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<u64> = after
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    (fields[11] + fields[12]) * 10
}

/// Whether a tracer has enabled the named isim probes of `pid`: each one's USDT
/// semaphore, a counter in the process that a tracer raises while it listens to
/// that probe, is non-zero.
pub fn probes_armed(pid: u32, probes: &[&str]) -> bool {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let notes = Command::new("readelf")
        .arg("-n")
        .arg(&exe)
        .output()
        .unwrap();
    let notes = String::from_utf8_lossy(&notes.stdout);
    let mut semaphores = Vec::new();
    let (mut provider, mut name) = ("", "");
    for line in notes.lines().map(str::trim) {
        if let Some(p) = line.strip_prefix("Provider: ") {
            provider = p;
        } else if let Some(n) = line.strip_prefix("Name: ") {
            name = n;
        } else if let Some(at) = line.split("Semaphore: 0x").nth(1) {
            if provider == "isim" && probes.contains(&name) {
                semaphores.push(u64::from_str_radix(at.trim(), 16).unwrap());
            }
        }
    }
    assert_eq!(
        semaphores.len(),
        probes.len(),
        "isim semaphores in {}",
        exe.display()
    );
    // A position-independent binary is mapped from address `base` for offset 0.
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let exe_name = exe.to_string_lossy();
    let base = maps
        .lines()
        .find(|l| l.ends_with(exe_name.as_ref()) && l.split_whitespace().nth(2) == Some("00000000"))
        .and_then(|l| u64::from_str_radix(l.split('-').next()?, 16).ok())
        .expect("the binary's first mapping");
    let memory = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    semaphores.iter().all(|at| {
        let mut count = [0u8; 2];
        std::os::unix::fs::FileExt::read_exact_at(&memory, &mut count, base + at).is_ok()
            && u16::from_ne_bytes(count) > 0
    })
}
