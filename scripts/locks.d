/*
 * locks.d: how long requests wait for the index's lock, a second at a time,
 * beside the compactions that hold it.
 *
 * USAGE:  sudo dtrace -s scripts/locks.d [SECONDS]   macOS, illumos, FreeBSD
 *         scripts/trace locks [PID] [--seconds N]         any platform
 *
 * A line a second: WAITS, the requests that got the lock that second after
 * finding it held (lock-wait-done); WAITED-MS, their waits summed; LONGEST-MS,
 * the longest of them; COMPACTIONS, the compactions that ended that second
 * (compaction-done); HELD-MS, the longest any of those held the lock at once.
 * A request that finds the lock free fires nothing, so WAITS is 0 between
 * compactions. Only the index's own lock (index = true) is counted; no probe
 * says who held it, which is why an off-CPU profile (offcpu.d) is the
 * complement. Runs for SECONDS (default 60) or until Ctrl-C, then prints the
 * totals and the waits' distribution in nanoseconds.
 *
 * EXAMPLE (periodic-stall before its fix, 100 requests a second):
 *   TIME                      WAITS   WAITED-MS  LONGEST-MS COMPACTIONS    HELD-MS
 *   2026 Nov 27 21:40:01          0           0           0           0          0
 *   2026 Nov 27 21:40:02         31        4655         310           1        311
 *   2026 Nov 27 21:40:03          0           0           0           0          0
 */
#pragma D option quiet
/* The deadline is checked ten times a second; see in-flight.d. */
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	deadline = timestamp + seconds * 1000000000;
	@waits = sum(0); @waited = sum(0); @longest = max(0);
	@compactions = sum(0); @held = max(0);
	printf("%-21s %9s %11s %11s %11s %10s\n", "TIME", "WAITS", "WAITED-MS", "LONGEST-MS",
	    "COMPACTIONS", "HELD-MS");
}

isim*:::lock-wait-start
{
	@totals["requests that found the lock held"] = count();
}

isim*:::lock-wait-done
{
	@waits = sum(1);
	@waited = sum(arg1 / 1000);
	@longest = max(arg1 / 1000);
	@totals["lock waits ended"] = count();
	@spread["lock waits (ns)"] = quantize(arg1);
}

isim*:::compaction-start
{
	@totals["compactions begun"] = count();
}

isim*:::compaction-done
{
	@compactions = sum(1);
	@held = max(arg3 / 1000);
	@totals["compactions done"] = count();
}

tick-1s
{
	/* Summed in microseconds, shown in milliseconds. */
	normalize(@waited, 1000); normalize(@longest, 1000); normalize(@held, 1000);
	printf("%-21Y ", walltimestamp);
	printa("%@9d %@11d %@11d %@11d %@10d\n", @waits, @waited, @longest, @compactions, @held);
	clear(@waits); clear(@waited); clear(@longest); clear(@compactions); clear(@held);
	denormalize(@waited); denormalize(@longest); denormalize(@held);
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}

END
{
	printf("\nSummary of the index's lock over the whole run:\n");
	printa("  %-50s %@16d\n", @totals);
	printa(@spread);
}
