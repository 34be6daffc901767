/*
 * permit-wait.d: how long blocked requests wait for a persistence permit, from
 * request-block to request-unblock (the moment the permit is granted). The seed's
 * scripts could not see this; it is where the time of a saturated gate goes.
 *
 * USAGE:  sudo dtrace -s scripts/permit-wait.d [SECONDS]   macOS, illumos, FreeBSD
 *         scripts/trace permit-wait [PID] [--seconds N]         any platform
 *
 * Pairs by request id (arg0) and process. "blocked requests" counts every
 * request-block in the window; "permits granted" counts the waits that ended in
 * it, so the two differ by the requests still waiting at the end. Runs for
 * SECONDS (default 60) or until Ctrl-C, then prints the summary in nanoseconds.
 *
 * EXAMPLE (135 clients against 8 permits, --seconds 10):
 *   Summary of permit waits taken in 10 seconds represented in nanoseconds:
 *     blocked requests                                               1430
 *     permits granted                                                1427
 *     average permit wait                                        22994147
 *     max permit wait                                            53340304
 *     min permit wait                                               19245
 *     permit waits visualisation
 *              value  ------------- Distribution ------------- count
 *               8192 |                                         0
 *              16384 |                                         1
 *              32768 |                                         0
 *              65536 |                                         0
 *             131072 |                                         0
 *             262144 |                                         0
 *             524288 |                                         1
 *            1048576 |                                         6
 *            2097152 |@                                        21
 *            4194304 |@@                                       71
 *            8388608 |@@@@@@@@                                 279
 *           16777216 |@@@@@@@@@@@@@@@@@@@@@@@@                 850
 *           33554432 |@@@@@@                                   198
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
#pragma D option dynvarsize=16m

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	began = timestamp;
	deadline = began + seconds * 1000000000;
	printf("Timing permit waits for %d s (Ctrl-C prints the summary so far).\n", seconds);
}

isim*:::request-block
{
	blocked[pid, arg0] = timestamp;
	@blocked["blocked requests"] = count();
}

isim*:::request-unblock
/blocked[pid, arg0]/
{
	this->ns = timestamp - blocked[pid, arg0];
	@granted["permits granted"] = count();
	@average["average permit wait"] = avg(this->ns);
	@longest["max permit wait"] = max(this->ns);
	@shortest["min permit wait"] = min(this->ns);
	@spread["permit waits visualisation"] = quantize(this->ns);
	blocked[pid, arg0] = 0;
}

tick-10hz
/timestamp >= deadline/
{
	ended = timestamp;
	exit(0);
}

END
{
	printf("\nSummary of permit waits taken in %d seconds represented in nanoseconds:\n",
	    ((ended ? ended : timestamp) - began) / 1000000000);
	printa("  %-50s %@16d\n", @blocked);
	printa("  %-50s %@16d\n", @granted);
	printa("  %-50s %@16d\n", @average);
	printa("  %-50s %@16d\n", @longest);
	printa("  %-50s %@16d\n", @shortest);
	printa("  %-50s\n%@d\n", @spread);
}
