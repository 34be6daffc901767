/*
 * size.d: does an element's size decide its fate? Requests and persists by size
 * class (under 64 KiB, 64 KiB to 1 MiB, 1 MiB and over): how many, their average
 * and longest request lifetime, and their average persist time. The
 * size-variance scenario's symptom: persist time grows with size, and the small
 * elements' lifetimes are as long as the large ones' because they waited behind
 * them for permits.
 *
 * USAGE:  sudo dtrace -s scripts/size.d [SECONDS]      macOS, illumos, FreeBSD
 *         scripts/trace size [PID] [--seconds N]           any platform
 *
 * request-start and persist-start carry the element's bytes (arg1), kept per
 * request id (arg0) until request-done (lifetime ns, arg1) and persist-done
 * (latency ns, arg2) say how it went: global arrays keyed by the id, never
 * self->, because a request's probes fire on whichever thread runs it. Requests
 * already under way when the script starts are not counted. Runs for SECONDS
 * (default 60) or until Ctrl-C, then prints the summary in nanoseconds.
 *
 * EXAMPLE (serve --scenario size-variance, its load, 10 s):
 *   Summary of the sizes in 10 seconds represented in nanoseconds:
 *     requests < 64 KiB                                              1012
 *     requests 64 KiB - 1 MiB                                         560
 *     requests >= 1 MiB                                               118
 *     average lifetime < 64 KiB                                   41234567
 *     average lifetime 64 KiB - 1 MiB                             44345678
 *     average lifetime >= 1 MiB                                   52456789
 *     max lifetime < 64 KiB                                      312345678
 *     max lifetime 64 KiB - 1 MiB                                298765432
 *     max lifetime >= 1 MiB                                      345678901
 *     average persist < 64 KiB                                    23012345
 *     average persist 64 KiB - 1 MiB                              34123456
 *     average persist >= 1 MiB                                   121234567
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
#pragma D option dynvarsize=16m

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	began = timestamp;
	deadline = began + seconds * 1000000000;
	printf("Watching element sizes for %d s (Ctrl-C prints the summary so far).\n", seconds);
}

isim*:::request-start
{
	rsize[pid, arg0] = arg1;
}

isim*:::persist-start
{
	psize[pid, arg0] = arg1;
}

isim*:::request-done
/rsize[pid, arg0] && rsize[pid, arg0] < 65536/
{
	@n["requests < 64 KiB"] = count();
	@life["average lifetime < 64 KiB"] = avg(arg1);
	@longest["max lifetime < 64 KiB"] = max(arg1);
}

isim*:::persist-done
/psize[pid, arg0] && psize[pid, arg0] < 65536/
{
	@persist["average persist < 64 KiB"] = avg(arg2);
}

isim*:::request-done
/rsize[pid, arg0] && rsize[pid, arg0] >= 65536 && rsize[pid, arg0] < 1048576/
{
	@n["requests 64 KiB - 1 MiB"] = count();
	@life["average lifetime 64 KiB - 1 MiB"] = avg(arg1);
	@longest["max lifetime 64 KiB - 1 MiB"] = max(arg1);
}

isim*:::persist-done
/psize[pid, arg0] && psize[pid, arg0] >= 65536 && psize[pid, arg0] < 1048576/
{
	@persist["average persist 64 KiB - 1 MiB"] = avg(arg2);
}

isim*:::request-done
/rsize[pid, arg0] && rsize[pid, arg0] >= 1048576/
{
	@n["requests >= 1 MiB"] = count();
	@life["average lifetime >= 1 MiB"] = avg(arg1);
	@longest["max lifetime >= 1 MiB"] = max(arg1);
}

isim*:::persist-done
/psize[pid, arg0] && psize[pid, arg0] >= 1048576/
{
	@persist["average persist >= 1 MiB"] = avg(arg2);
}

isim*:::request-done
{
	rsize[pid, arg0] = 0;
}

isim*:::persist-done
{
	psize[pid, arg0] = 0;
}

tick-10hz
/timestamp >= deadline/
{
	ended = timestamp;
	exit(0);
}

END
{
	printf("\nSummary of the sizes in %d seconds represented in nanoseconds:\n",
	    ((ended ? ended : timestamp) - began) / 1000000000);
	printa("  %-50s %@16d\n", @n);
	printa("  %-50s %@16d\n", @life);
	printa("  %-50s %@16d\n", @longest);
	printa("  %-50s %@16d\n", @persist);
}
