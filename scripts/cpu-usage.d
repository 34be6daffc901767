/*
 * cpu-usage.d: how much CPU the server uses, a line every INTERVAL seconds, in
 * the seed's layout (TIMESTAMP PID %CPU PROCESS) with the CPU milliseconds too.
 *
 * USAGE:  sudo dtrace -p PID -s scripts/cpu-usage.d [SECONDS] [INTERVAL]
 *         scripts/trace cpu-usage [PID] [--seconds N] [--interval N]
 *
 * Samples every CPU 1000 times a second and counts the samples that catch the
 * server's threads on CPU; each is about a millisecond of CPU, so CPU-MS is the
 * CPU time used in the interval and %CPU is that over the interval's length
 * (100 = one whole CPU; D has no fractions, so %CPU is rounded down and CPU-MS is
 * the finer figure). Sampling misses bursts shorter than a millisecond and costs
 * the traced machine a little; it needs -p (or -c) for $target. Defaults: 60 s,
 * a line every 12 s (five lines, as the seed's).
 *
 * It can read low: on a 2-vCPU AMD EPYC KVM guest (Linux 6.18, DTrace for Linux
 * 2.0.7) it caught 0.62-0.70 of the server's CPU time under load, as /proc
 * counts it (cpu-usage.bt 0.80-0.82), and 0.93-0.97 of a process that spins.
 * The tap's twin (`trace cpu-usage`, no root) reads the kernel's own count.
 *
 * EXAMPLE (135 clients against 8 permits, --seconds 24 --interval 12):
 *   TIMESTAMP               PID  %CPU  CPU-MS  PROCESS
 *   2026 Nov 22 05:18:55   2641     2     319  system-simulator
 *   2026 Nov 22 05:19:07   2641     2     353  system-simulator
 */
#pragma D option quiet
/*
 * The deadline is checked ten times a second and the consumer looks for exit()
 * and drains its buffers ten times a second (at the default 1 Hz a 20 s trace
 * ended 2-3 s late), so a trace of N seconds ends about N seconds after it began.
 */
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	every = $2 > 0 ? $2 : 12;
	deadline = timestamp + seconds * 1000000000;
	line_began = timestamp;
	next_line = timestamp + every * 1000000000;
	/* sum(0) makes the line appear even when the server used no CPU at all. */
	@ms[$target] = sum(0);
	@percent[$target] = sum(0);
	printf("%-20s %6s %5s %7s  %s\n", "TIMESTAMP", "PID", "%CPU", "CPU-MS", "PROCESS");
}

profile-1000
/pid == $target/
{
	@ms[pid] = sum(1);
	@percent[pid] = sum(1);
}

tick-1s
/timestamp >= next_line/
{
	/* 1000 samples a second on one busy CPU is 100 %. */
	normalize(@percent, every * 10);
	printf("%-20Y ", walltimestamp);
	printa("%6d %@5d %@7d  system-simulator\n", @percent, @ms);
	clear(@ms);
	clear(@percent);
	line_began = timestamp;
	next_line += every * 1000000000;
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}

/* Ctrl-C (or a deadline between lines) still reports the part-interval. */
END
/timestamp - line_began >= 100000000/
{
	normalize(@percent, (timestamp - line_began) / 100000000);
	printf("%-20Y ", walltimestamp);
	printa("%6d %@5d %@7d  system-simulator\n", @percent, @ms);
}
