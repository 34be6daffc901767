/*
 * runtime.d: is the async runtime blocked? The timer canary's lateness (a 10 ms
 * sleep the server takes over and over: how much later than asked it woke), and
 * the CPU work on elements (work = zstd): how many, on which threads, how long
 * each ran and how long it waited for a slot first. The blocking-runtime
 * scenario's symptom: works on the async workers, and a canary whose tail is tens
 * of milliseconds late while its middle is on time.
 *
 * USAGE:  sudo dtrace -s scripts/runtime.d [SECONDS]      macOS, illumos, FreeBSD
 *         scripts/trace runtime [PID] [--seconds N]           any platform
 *
 * canary-tick carries the lateness in ns (arg1); work-done the ns the work ran
 * (arg1), the ns it waited (arg2) and where it ran (arg3: 0 async worker, 1
 * blocking pool, 2 rayon), all measured by the server, so nothing needs pairing.
 * Runs for SECONDS (default 60) or until Ctrl-C, then prints the summary in
 * nanoseconds.
 *
 * EXAMPLE (serve --scenario blocking-runtime, 4 clients, 100 ms think, 10 s):
 *   Summary of the runtime in 10 seconds represented in nanoseconds:
 *     canary wake-ups                                                     812
 *     average canary lateness                                      3912345
 *     max canary lateness                                         43551000
 *     works started                                                    262
 *     works done                                                       262
 *     works on async workers                                           262
 *     average work time                                           34876543
 *     average wait for a work slot                                        0
 *     canary lateness visualisation
 *              value  ------------- Distribution ------------- count
 *             524288 |                                         0
 *            1048576 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@     741
 *            2097152 |                                         5
 *            4194304 |@                                        17
 *            8388608 |@                                        19
 *           16777216 |@                                        20
 *           33554432 |                                         10
 *           67108864 |                                         0
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
	began = timestamp;
	deadline = began + seconds * 1000000000;
	printf("Watching the runtime for %d s (Ctrl-C prints the summary so far).\n", seconds);
}

isim*:::canary-tick
{
	@ticks["canary wake-ups"] = count();
	@late["average canary lateness"] = avg(arg1);
	@latest["max canary lateness"] = max(arg1);
	@spread["canary lateness visualisation"] = quantize(arg1);
}

isim*:::work-start
{
	@started["works started"] = count();
}

isim*:::work-done
{
	@done["works done"] = count();
	@ran["average work time"] = avg(arg1);
	@waited["average wait for a work slot"] = avg(arg2);
}

isim*:::work-done
/arg3 == 0/
{
	@where["works on async workers"] = count();
}

isim*:::work-done
/arg3 == 1/
{
	@where["works on the blocking pool"] = count();
}

isim*:::work-done
/arg3 == 2/
{
	@where["works on rayon"] = count();
}

tick-10hz
/timestamp >= deadline/
{
	ended = timestamp;
	exit(0);
}

END
{
	printf("\nSummary of the runtime in %d seconds represented in nanoseconds:\n",
	    ((ended ? ended : timestamp) - began) / 1000000000);
	printa("  %-50s %@16d\n", @ticks);
	printa("  %-50s %@16d\n", @late);
	printa("  %-50s %@16d\n", @latest);
	printa("  %-50s %@16d\n", @started);
	printa("  %-50s %@16d\n", @done);
	printa("  %-50s %@16d\n", @where);
	printa("  %-50s %@16d\n", @ran);
	printa("  %-50s %@16d\n", @waited);
	printa("  %-50s\n%@d\n", @spread);
}
