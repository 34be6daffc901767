/*
 * in-flight.d: the persistence gate over time. Once a second: persists in flight
 * at the end of the second and at most during it, the fewest permits free during
 * it, and how many requests blocked in it. The seed's scripts counted totals;
 * this shows the gate fill up (no permit free, blocking climbs) as clients grow.
 *
 * USAGE:  sudo dtrace -s scripts/in-flight.d [SECONDS]   macOS, illumos, FreeBSD
 *         scripts/trace in-flight [PID] [--seconds N]         any platform
 *
 * The figures come from the probes' own arguments (persist-start: arg2 persists
 * in flight counting this one, arg3 permits free; persist-done: arg3 persists in
 * flight after it), which the server reads under the lock that keeps GET /stats
 * consistent, so no script-side counter can race between CPUs. A second without
 * persists repeats the last figures seen ("-" permits free before the first). Runs for SECONDS
 * (default 60) or until Ctrl-C, then prints the peak over the whole run.
 *
 * EXAMPLE (135 clients against 8 permits, --seconds 10):
 *   TIME                   IN-FLIGHT  MAX-IN-FLIGHT  MIN-PERMITS-FREE  BLOCKED
 *   2026 Nov 22 05:18:27           8              8                 0      127
 *   2026 Nov 22 05:18:28           8              8                 0      129
 *   2026 Nov 22 05:18:29           8              8                 0      132
 *   ...
 *   Summary of the persistence gate over the whole run:
 *     max persists in flight                                            8
 *     min permits free                                                  0
 *     blocked requests                                               1425
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
	deadline = timestamp + seconds * 1000000000;
	in_flight = 0;
	peak = 0;
	/* Unknown until the first persist-start: -1, printed as "-". */
	free_now = -1;
	fewest_free = -1;
	@blocked = sum(0);
	printf("%-21s %10s %14s %17s %8s\n", "TIME", "IN-FLIGHT", "MAX-IN-FLIGHT",
	    "MIN-PERMITS-FREE", "BLOCKED");
}

isim*:::persist-start
{
	@most["max persists in flight"] = max(arg2);
	@least["min permits free"] = min(arg3);
	in_flight = arg2;
	peak = arg2 > peak ? arg2 : peak;
	free_now = arg3;
	fewest_free = (fewest_free < 0 || arg3 < fewest_free) ? arg3 : fewest_free;
}

isim*:::persist-done
{
	in_flight = arg3;
}

isim*:::request-block
{
	@blocked = sum(1);
	@blocks["blocked requests"] = count();
}

tick-1s
{
	printf("%-21Y %10d %14d %17s ", walltimestamp, in_flight, peak,
	    fewest_free < 0 ? "-" : lltostr(fewest_free));
	printa("%@8d\n", @blocked);
	clear(@blocked);
	peak = in_flight;
	fewest_free = free_now;
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}

END
{
	printf("\nSummary of the persistence gate over the whole run:\n");
	printa("  %-50s %@16d\n", @most);
	printa("  %-50s %@16d\n", @least);
	printa("  %-50s %@16d\n", @blocks);
}
