"""What every benchmark in tools/bench/ shares: building, starting a server on a
free loopback port, driving it with wrk, timing a command's CPU and memory, and
the summary each prints: the median of the runs with their min and max, and the
subject's ratio to a baseline measured in the same run, runs alternating so that
drift on a noisy machine hits both alike; and the machine's own limits that each
benchmark prints first (`machine_limits`: cyclictest idle and under load, bare
axum's requests/s), so its ratios read the same on any machine.

Traffic goes only to 127.0.0.1. Needs wrk and GNU time (apt-get install wrk time).
"""

import argparse
import atexit
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASE = os.path.join(ROOT, "target", "release")
SERVER = os.path.join(RELEASE, "system-simulator")
CLIENTS = os.path.join(RELEASE, "sim-clients")
BARE_AXUM = os.path.join(RELEASE, "examples", "bare_axum")



def _cpu_times():
    """The machine's CPU time so far (/proc/stat's first line: user nice system
    idle iowait irq softirq steal ...), in ticks."""
    with open("/proc/stat") as f:
        return [int(v) for v in f.readline().split()[1:]]


def machine_line():
    """The machine a benchmark ran on: the CPU's model and microcode, the
    hypervisor where the guest can see one, the CPUs, the kernel. Figures from
    different machine kinds are never compared (docs/performance.md keeps one
    table per kind)."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    hypervisor = "none seen"
    if "hypervisor" in info.get("flags", "").split():
        hypervisor = "a hypervisor (cpuid)"
        try:
            found = subprocess.run(["systemd-detect-virt", "--vm"], capture_output=True, text=True).stdout.strip()
            hypervisor = found or hypervisor
        except OSError:
            pass
    return (
        f"machine: {info.get('model name', 'unknown CPU')}, microcode {info.get('microcode', '?')}, "
        f"hypervisor {hypervisor}; {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} ours); "
        f"Linux {os.uname().release}; clock {clocksource()}"
    )


def clocksource():
    """The kernel's clocksource. A request reads the clock several times (the
    simulator about 7.7 times, bare axum 2.0: bpftrace uprobes on glibc's
    clock_gettime under wrk, 2026-11-29), through the vDSO at about 21 ns a read
    with `tsc` on a KVM guest; a clocksource the vDSO cannot read (`hpet`,
    `acpi_pm`, or a `kvm-clock` the host marks unstable) makes each read a
    system call, 150 ns or more, and costs the simulator more than its
    baseline. So two hosts that print the same CPU can differ here."""
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


def _report_machine():
    """Printed by every benchmark, as it imports this module: the machine first,
    and at its end the share of the CPUs' time the hypervisor gave to others
    (steal) while it ran, which a noisy VM's figures need beside them."""
    print(machine_line(), flush=True)
    start = _cpu_times()

    def steal():
        now = _cpu_times()
        spent = [b - a for a, b in zip(start, now)]
        total = sum(spent[:8]) or 1
        stolen = spent[7] if len(spent) > 7 else 0
        print(f"machine: steal during the run {100 * stolen / total:.1f} % of the CPUs' time")

    atexit.register(steal)


_report_machine()

# The request path at its cheapest: no simulated delay, permits never short.
ZERO_COST_SERVER = ["--permits", "1000000", "--network-delay", "0", "--persist-latency", "0"]


def arguments(doc, runs=5, seconds=10, connections=64):
    """The options every benchmark takes: --runs, --seconds, --connections (None: no
    such option) and --no-build; add more to the parser it returns."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=runs)
    p.add_argument("--seconds", type=int, default=seconds)
    if connections is not None:
        p.add_argument("--connections", type=int, default=connections)
    p.add_argument("--no-build", action="store_true", help="use the binaries already built")
    return p


def need(*tools):
    for tool in tools:
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing: apt-get install wrk rt-tests time linux-perf")


def build(*cargo_args, target_dir=None):
    """cargo build --release with these arguments (into target_dir if given)."""
    command = ["cargo", "build", "--release", "--locked", *cargo_args]
    if target_dir:
        command += ["--target-dir", target_dir]
    subprocess.run(command, cwd=ROOT, check=True)


def raise_fd_limit(want=None):
    """Soft descriptor limit up to the hard one; with `want`, as root, the hard one
    up to `want` first (children inherit both)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if want and want > hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
            return want
        except (ValueError, OSError):
            pass  # needs CAP_SYS_RESOURCE, which a container may not grant
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def start(command, env=None):
    """Starts a server that prints its http:// address on its first line, with
    `env` added to its environment."""
    for built in (SERVER, CLIENTS, BARE_AXUM):
        if built in command and not os.path.exists(built):
            sys.exit(f"{built} is missing: run without --no-build, or build it first "
                     "(cargo build --release --workspace --bins --examples)")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env={**os.environ, "RUST_LOG": "warn", **(env or {})},
                               preexec_fn=raise_fd_limit)
    first = process.stdout.readline()
    url = re.search(r"http://127\.0\.0\.1:\d+", first)
    if not url:
        process.kill()
        sys.exit(f"{command[0]} did not print its address: {first!r}")
    return process, url.group(0)


def stop(process):
    process.terminate()
    process.wait(timeout=30)


def cpu_seconds(pid):
    """User + system CPU seconds a running process has used (from /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url, path="/requests", post=True, seconds=10, connections=64, threads=1, pin=False):
    """Requests per second wrk reached; exits on any failed request. With `pin`,
    wrk runs on CPU 0 (`pin_server` keeps the server off it)."""
    command = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", url + path]
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        if post:
            script.write('wrk.method = "POST"\nwrk.body = "{\\"size\\": 1024}"\n'
                         'wrk.headers["content-type"] = "application/json"\n')
            script.flush()
            command[1:1] = ["-s", script.name]
        if pin:
            command = ["taskset", "-c", "0"] + command
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        sys.exit(f"{errors.group(1)} failed requests from {url}{path}:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def wrk_with_cpu(pid, url, args, per_request):
    """wrk's POST /requests against the server `pid` at `url` for args.seconds;
    appends the server's CPU microseconds per request to `per_request` and
    returns the requests per second."""
    before = cpu_seconds(pid)
    rps = wrk(url, "/requests", True, args.seconds, args.connections)
    per_request.append((cpu_seconds(pid) - before) / (rps * args.seconds) * 1e6)
    return rps


def wrk_against(command, args, path="/requests", post=True, cpu_per_request=None):
    """A measurement for `alternate`: start the server `command` on a free port,
    wrk it for args.seconds over args.connections, stop it; returns requests/s.
    With a list `cpu_per_request`, appends the server's CPU microseconds per
    request to it: on a 2-core VM shared with wrk the steadier figure, since a
    run's requests/s moves with whatever else the host runs, and a request's
    CPU much less."""
    def run():
        server, url = start(command)
        try:
            before = cpu_seconds(server.pid)
            rps = wrk(url, path, post, args.seconds, args.connections,
                      pin=getattr(args, "pin", False))
            if cpu_per_request is not None:
                used = cpu_seconds(server.pid) - before
                cpu_per_request.append(used / (rps * args.seconds) * 1e6)
            return rps
        finally:
            stop(server)
    return run


def pin_server(command, pin):
    """`command` on every CPU but 0 (where `wrk(..., pin=True)` runs), with `pin`."""
    if not pin or (os.cpu_count() or 1) < 2:
        return command
    return ["taskset", "-c", f"1-{os.cpu_count() - 1}"] + command


def timed(command, env=None):
    """Runs a command under GNU time: (stdout, CPU seconds, peak RSS in MB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        out = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", t.name] + command,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, preexec_fn=raise_fd_limit)
        if out.returncode != 0:
            sys.exit(f"{command[0]} failed ({out.returncode}):\n{out.stderr}")
        user, system, rss_kb = t.read().split()[-3:]
    return out.stdout, float(user) + float(system), int(rss_kb) / 1024


def alternate(runs, subjects):
    """Runs each (name, function) in turn, `runs` times, flipping the order every
    round; prints each result as it comes; returns {name: [results]}."""
    results = {name: [] for name, _ in subjects}
    for i in range(runs):
        for name, measure in (subjects if i % 2 == 0 else subjects[::-1]):
            value = measure()
            results[name].append(value)
            print(f"  run {i + 1} {name:<24} {value:14,.2f}", flush=True)
    return results


def summary(name, values, unit=""):
    """One line: the median, min and max of a list of numbers."""
    return (f"  {name:<24} median {statistics.median(values):12,.2f}{unit}"
            f"   min {min(values):12,.2f}   max {max(values):12,.2f}   ({len(values)} runs)")


def report(results, baseline, unit=""):
    """Prints every subject's summary and its median's ratio to the baseline's."""
    base = statistics.median(results[baseline])
    for name, values in results.items():
        print(summary(name, values, unit))
    for name, values in results.items():
        if name != baseline:
            print(f"  ratio {name} / {baseline}: {statistics.median(values) / base:.3f}")
    return {name: statistics.median(values) / base for name, values in results.items()}


def cyclictest(seconds, pin):
    """Starts cyclictest (one thread, 50 us interval, memory locked) on CPU 0 when
    pinned, for `seconds`; returns the process, to be read by `cyclictest_p99`."""
    command = ["cyclictest", "-t1", "-i", "50", "-m", "-q", "-D", str(seconds), "-h", "100000"]
    if pin:
        command += ["-a", "0"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def cyclictest_p99(process):
    """The p99 wake-up latency in us from cyclictest's histogram."""
    out, _ = process.communicate(timeout=600)
    counts = []
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) >= 2 and fields[0].isdigit():
            counts.append((int(fields[0]), int(fields[1])))
    total = sum(n for _, n in counts)
    if not total:
        sys.exit(f"cyclictest printed no histogram:\n{out[-500:]}")
    seen = 0
    for us, n in counts:
        seen += n
        if seen >= 0.99 * total:
            return float(us)
    return float(counts[-1][0])


def machine_limits(pin=False, seconds=3):
    """Measures and prints the machine's own limits, so a benchmark's ratios read
    the same on a laptop, a VM or a 64-core server: cyclictest's p99 wake-up
    (rt-tests, 50 us interval) idle and beside a load, and that load itself, bare
    axum (examples/bare_axum.rs) flat out under wrk. Each part that cannot run
    says why instead. With `pin`, cyclictest and wrk on CPU 0 and the server on
    the others. Returns {"cyclictest idle us", "cyclictest loaded us",
    "bare axum req/s"}, None for what was not measured."""
    limits = {"cyclictest idle us": None, "cyclictest loaded us": None, "bare axum req/s": None}
    has_cyclictest = shutil.which("cyclictest") is not None
    if has_cyclictest:
        limits["cyclictest idle us"] = cyclictest_p99(cyclictest(seconds, pin))
    if shutil.which("wrk") and os.path.exists(BARE_AXUM):
        server, url = start(pin_server([BARE_AXUM, "127.0.0.1:0"], pin))
        try:
            beside = cyclictest(seconds, pin) if has_cyclictest else None
            limits["bare axum req/s"] = wrk(url, seconds=seconds)
            if beside:
                limits["cyclictest loaded us"] = cyclictest_p99(beside)
        finally:
            stop(server)
    shown = {
        "cyclictest idle us": lambda v: f"cyclictest p99 {v:.0f} us idle",
        "cyclictest loaded us": lambda v: f"{v:.0f} us beside wrk flat out",
        "bare axum req/s": lambda v: f"bare axum {v:,.0f} req/s under wrk",
    }
    parts = [show(limits[k]) for k, show in shown.items() if limits[k] is not None]
    if not has_cyclictest:
        parts.append("cyclictest missing (apt-get install rt-tests)")
    if limits["bare axum req/s"] is None:
        parts.append("bare axum not measured (needs wrk and cargo build --release --examples)")
    print(f"the machine's limits: {', '.join(parts)}", flush=True)
    return limits
