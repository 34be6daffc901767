/*
 * persist-time.d: how long writes to persistent storage take, from persist-start
 * to persist-done, as the seed's persist time script measured. The data processor
 * does not wait for them, but each one holds a permit until it ends.
 *
 * USAGE:  sudo dtrace -s scripts/persist-time.d [SECONDS]   macOS, illumos, FreeBSD
 *         scripts/trace persist-time [PID] [--seconds N]         any platform
 *
 * Pairs the two probes by request id (arg0) and process, never with self->: the
 * persist runs as its own tokio task, on whichever thread is free, so the seed's
 * thread-local start times paired unrelated events (its multi-second "writes").
 * Writes already under way when tracing starts are skipped. Runs for SECONDS
 * (default 60) or until Ctrl-C, then prints the summary in nanoseconds.
 *
 * EXAMPLE (135 clients against 8 permits, --seconds 10):
 *   Summary of all writes to persistent storage taken in 10 seconds represented in nanoseconds:
 *     total writes                                                   1430
 *     average write                                              61084545
 *     max write                                                  79869603
 *     min write                                                  44787984
 *     visualisation of writes
 *              value  ------------- Distribution ------------- count
 *           16777216 |                                         0
 *           33554432 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@      1266
 *           67108864 |@@@@@                                    164
 *          134217728 |                                         0
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
	printf("Timing persists for %d s (Ctrl-C prints the summary so far).\n", seconds);
}

isim*:::persist-start
{
	started[pid, arg0] = timestamp;
}

isim*:::persist-done
/started[pid, arg0]/
{
	this->ns = timestamp - started[pid, arg0];
	@total["total writes"] = count();
	@average["average write"] = avg(this->ns);
	@longest["max write"] = max(this->ns);
	@shortest["min write"] = min(this->ns);
	@spread["visualisation of writes"] = quantize(this->ns);
	started[pid, arg0] = 0;
}

isim*:::persist-done
/arg1 == 0/
{
	@failed["failed writes"] = count();
}

tick-10hz
/timestamp >= deadline/
{
	ended = timestamp;
	exit(0);
}

END
{
	printf("\nSummary of all writes to persistent storage taken in %d seconds represented in nanoseconds:\n",
	    ((ended ? ended : timestamp) - began) / 1000000000);
	printa("  %-50s %@16d\n", @total);
	printa("  %-50s %@16d\n", @failed);
	printa("  %-50s %@16d\n", @average);
	printa("  %-50s %@16d\n", @longest);
	printa("  %-50s %@16d\n", @shortest);
	printa("  %-50s\n%@d\n", @spread);
}
