/*
 * request-lifetime.d: how long requests live, from request-start to request-done,
 * the network traverses included, as the seed's request lifetime script measured.
 *
 * USAGE:  sudo dtrace -s scripts/request-lifetime.d [SECONDS]   macOS, illumos, FreeBSD
 *         scripts/trace request-lifetime [PID] [--seconds N]         any platform
 *
 * Pairs the two probes by request id (arg0) and process, never with self->:
 * a tokio task may start a request on one OS thread and finish it on another,
 * and a thread-local start time then belongs to some other request. Requests
 * already in flight when tracing starts are skipped. Runs for SECONDS (default
 * 60) or until Ctrl-C, then prints the summary in nanoseconds.
 *
 * EXAMPLE (135 clients against 8 permits, --seconds 10):
 *   Summary of all request lifetimes taken in 10 seconds represented in nanoseconds:
 *     total requests                                                 1436
 *     average request lifetime                                   30127079
 *     max request lifetime                                       56740517
 *     min request lifetime                                        4185171
 *     request lifetimes visualisation
 *              value  ------------- Distribution ------------- count
 *            1048576 |                                         0
 *            2097152 |                                         1
 *            4194304 |                                         10
 *            8388608 |@@@@                                     127
 *           16777216 |@@@@@@@@@@@@@@@@@@@@@                    755
 *           33554432 |@@@@@@@@@@@@@@@                          543
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
/* One entry per request in flight; room for tens of thousands without drops. */
#pragma D option dynvarsize=16m

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	began = timestamp;
	deadline = began + seconds * 1000000000;
	printf("Timing request lifetimes for %d s (Ctrl-C prints the summary so far).\n", seconds);
}

isim*:::request-start
{
	started[pid, arg0] = timestamp;
}

isim*:::request-done
/started[pid, arg0]/
{
	this->ns = timestamp - started[pid, arg0];
	@total["total requests"] = count();
	@average["average request lifetime"] = avg(this->ns);
	@longest["max request lifetime"] = max(this->ns);
	@shortest["min request lifetime"] = min(this->ns);
	@spread["request lifetimes visualisation"] = quantize(this->ns);
	started[pid, arg0] = 0;
}

tick-10hz
/timestamp >= deadline/
{
	ended = timestamp;
	exit(0);
}

END
{
	printf("\nSummary of all request lifetimes taken in %d seconds represented in nanoseconds:\n",
	    ((ended ? ended : timestamp) - began) / 1000000000);
	printa("  %-50s %@16d\n", @total);
	printa("  %-50s %@16d\n", @average);
	printa("  %-50s %@16d\n", @longest);
	printa("  %-50s %@16d\n", @shortest);
	printa("  %-50s\n%@d\n", @spread);
}
