/*
 * queue.d: the persistence queue (persistence = pool): elements queued and taken
 * by a worker, refused at a full queue (when_full = shed) or dropped for waiting
 * over queue_wait_limit, the deepest the queue got, and how long elements waited
 * in it. The sequential-persist scenario's symptom: a full queue in front of one
 * worker; spawn-per-request's fixes: refusals or drops instead of a pile-up.
 *
 * USAGE:  sudo dtrace -s scripts/queue.d [SECONDS]      macOS, illumos, FreeBSD
 *         scripts/trace queue [PID] [--seconds N]           any platform
 *
 * queue-enqueue carries the depth after the element went in (arg1); queue-dequeue
 * the nanoseconds the element waited (arg1), measured by the server, so nothing
 * needs pairing. Runs for SECONDS (default 60) or until Ctrl-C, then prints the
 * summary in nanoseconds.
 *
 * EXAMPLE (serve --scenario sequential-persist, 20 clients, --seconds 10):
 *   Summary of the persistence queue in 10 seconds represented in nanoseconds:
 *     elements queued                                                 270
 *     elements dequeued                                               167
 *     elements refused (queue full)                                     0
 *     elements dropped (waited too long)                                0
 *     max queue depth                                                 100
 *     average queue wait                                       5012345678
 *     max queue wait                                           6034567890
 *     queue waits visualisation
 *              value  ------------- Distribution ------------- count
 *         1073741824 |                                         0
 *         2147483648 |@@@@@@                                   25
 *         4294967296 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@       142
 *         8589934592 |                                         0
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
	printf("Watching the persistence queue for %d s (Ctrl-C prints the summary so far).\n", seconds);
}

isim*:::queue-enqueue
{
	@queued["elements queued"] = count();
	@deepest["max queue depth"] = max(arg1);
}

isim*:::queue-dequeue
{
	@taken["elements dequeued"] = count();
	@average["average queue wait"] = avg(arg1);
	@longest["max queue wait"] = max(arg1);
	@spread["queue waits visualisation"] = quantize(arg1);
}

isim*:::queue-refuse
{
	@refused["elements refused (queue full)"] = count();
}

isim*:::queue-drop
{
	@dropped["elements dropped (waited too long)"] = count();
}

tick-10hz
/timestamp >= deadline/
{
	ended = timestamp;
	exit(0);
}

END
{
	printf("\nSummary of the persistence queue in %d seconds represented in nanoseconds:\n",
	    ((ended ? ended : timestamp) - began) / 1000000000);
	printa("  %-50s %@16d\n", @queued);
	printa("  %-50s %@16d\n", @taken);
	printa("  %-50s %@16d\n", @refused);
	printa("  %-50s %@16d\n", @dropped);
	printa("  %-50s %@16d\n", @deepest);
	printa("  %-50s %@16d\n", @average);
	printa("  %-50s %@16d\n", @longest);
	printa("  %-50s\n%@d\n", @spread);
}
