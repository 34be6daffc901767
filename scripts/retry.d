/*
 * retry.d: work done for clients that are still waiting against work done for
 * clients that have gone. Once a second: requests ended (cancelled ones apart),
 * requests whose client left before the reply (a client timeout: the retry
 * storm's fuel), requests cancelled for it (on_disconnect = cancel), persistent
 * writes that ended for a waiting client and for a gone one (wasted), and the
 * waits for a permit or a queue worker longer than the clients' timeout: a
 * request that waited that long was answered to nobody. INCIDENT is 1 in a
 * second during which a scenario's incident (its trigger) was in force,
 * attached before it began or during it (the server fires incident-in-force
 * every 100 ms while one is: a script attached mid-incident knows it from its
 * first line).
 *
 * USAGE:  sudo dtrace -s scripts/retry.d [SECONDS] [TIMEOUT_MS]   macOS, illumos, FreeBSD
 *         scripts/trace retry [PID] [--seconds N] [--client-timeout MS]   any platform
 *
 * TIMEOUT_MS is the clients' --timeout in milliseconds (default 1000: the
 * retry-storm exercise's). Runs for SECONDS (default 60) or until Ctrl-C, then
 * prints the totals and the permit waits as a power-of-two histogram in ns.
 *
 * EXAMPLE (retry-storm, its incident from the 5th second, --seconds 30):
 *   TIME                      DONE  ABANDONED  CANCELLED  USEFUL-WRITES  WASTED-WRITES  LATE-WAITS  INCIDENT
 *   2026 Nov 25 06:10:01       225          0          0            225              0           0         0
 *   2026 Nov 25 06:10:06       160         41          0            119             41          41         1
 *   2026 Nov 25 06:10:17       318        802          0              2            316         316         0
 *   ...
 *   Summary of work for waiting and gone clients over the whole run:
 *     requests done (not cancelled)                                   8123
 *     abandoned requests (client gone)                               11210
 *     useful persistent writes                                         2210
 *     wasted persistent writes (client gone)                           5890
 *     permit waits longer than the clients' timeout                    5903
 */
#pragma D option quiet
/* The deadline is checked ten times a second; see in-flight.d. */
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	timeout_ns = ($2 > 0 ? $2 : 1000) * 1000000;
	deadline = timestamp + seconds * 1000000000;
	incident = 0;
	seen_incident = 0;
	@done = sum(0); @abandoned = sum(0); @cancelled = sum(0);
	@useful = sum(0); @wasted = sum(0); @late = sum(0);
	printf("%-21s %9s %10s %10s %14s %14s %11s %9s\n", "TIME", "DONE", "ABANDONED",
	    "CANCELLED", "USEFUL-WRITES", "WASTED-WRITES", "LATE-WAITS", "INCIDENT");
}

isim*:::request-done
/arg3 == 0/
{
	@done = sum(1);
	@totals["requests done (not cancelled)"] = count();
}

isim*:::request-done
/arg3 == 1/
{
	@cancelled = sum(1);
	@totals["cancelled requests (client gone)"] = count();
}

isim*:::request-abandoned
{
	@abandoned = sum(1);
	@totals["abandoned requests (client gone)"] = count();
}

isim*:::persist-done
/arg4 == 0 && arg1 == 1/
{
	@useful = sum(1);
	@totals["useful persistent writes"] = count();
}

isim*:::persist-done
/arg4 == 1/
{
	@wasted = sum(1);
	@totals["wasted persistent writes (client gone)"] = count();
}

isim*:::request-unblock
{
	@waits["permit waits (ns)"] = quantize(arg1);
}

isim*:::request-unblock
/arg1 > timeout_ns/
{
	@late = sum(1);
	@totals["permit waits longer than the clients' timeout"] = count();
}

isim*:::queue-dequeue
/arg1 > timeout_ns/
{
	@late = sum(1);
	@totals["queue waits longer than the clients' timeout"] = count();
}

isim*:::incident-start
{
	incident = 1;
	seen_incident = 1;
	@totals["incidents begun"] = count();
}

isim*:::incident-in-force
{
	incident = 1;
	seen_incident = 1;
}

isim*:::incident-end
{
	incident = 0;
}

tick-1s
{
	printf("%-21Y ", walltimestamp);
	printa("%@9d %@10d %@10d %@14d %@14d %@11d", @done, @abandoned, @cancelled,
	    @useful, @wasted, @late);
	printf(" %9d\n", seen_incident);
	clear(@done); clear(@abandoned); clear(@cancelled);
	clear(@useful); clear(@wasted); clear(@late);
	seen_incident = incident;
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}

END
{
	printf("\nSummary of work for waiting and gone clients over the whole run:\n");
	printa("  %-50s %@16d\n", @totals);
	printa(@waits);
}
