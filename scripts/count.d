/*
 * count.d: how many times each isim probe fired, in the words of the seed's
 * count script ("requests started", "blocked requests", ...).
 *
 * USAGE:  sudo dtrace -s scripts/count.d [SECONDS]      macOS, illumos, FreeBSD
 *         scripts/trace count [PID] [--seconds N]            any platform (Linux too)
 *
 * Runs for SECONDS (default 60) or until Ctrl-C, then prints the counts, the
 * smallest first, as the seed's DTrace output did. A count line appears only once
 * its probe has fired, so "blocked requests" is missing while nothing blocks, and
 * "shed requests (503)" unless the server sheds (when_full = shed; each shed request
 * is a blocked one too), and "abandoned requests (client gone)" unless a client
 * went away before its reply (a client timeout; the request still runs to its
 * request-done), nor "wasted persistent writes (client gone)", the writes that
 * ended after their client had left, nor "cancelled requests (client gone)" unless
 * the server cancels them (on_disconnect = cancel; each still has its request-done).
 * Over a window, "requests started" and "requests done" differ by the requests
 * in flight at its two edges; they agree with GET /stats when the window covers
 * the whole load (start tracing, run the clients, let them finish, stop).
 *
 * EXAMPLE (135 clients against 8 permits, --seconds 10):
 *     non blocked requests                                             12
 *     blocked requests                                               1425
 *     persistent writes done                                         1437
 *     persistent writes started                                      1437
 *     requests done                                                  1437
 *     requests started                                               1437
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
	printf("Counting isim probes for %d s (Ctrl-C prints the counts so far).\n", seconds);
}

isim*:::request-start	{ @counts["requests started"] = count(); }
isim*:::request-done	{ @counts["requests done"] = count(); }
isim*:::request-block	{ @counts["blocked requests"] = count(); }
isim*:::request-nonblock	{ @counts["non blocked requests"] = count(); }
isim*:::request-shed	{ @counts["shed requests (503)"] = count(); }
isim*:::request-abandoned	{ @counts["abandoned requests (client gone)"] = count(); }
isim*:::request-done /arg3 == 1/ { @counts["cancelled requests (client gone)"] = count(); }
isim*:::persist-start	{ @counts["persistent writes started"] = count(); }
isim*:::persist-done	{ @counts["persistent writes done"] = count(); }
isim*:::persist-done /arg1 == 0/ { @counts["persistent writes failed"] = count(); }
isim*:::persist-done /arg4 == 1/ { @counts["wasted persistent writes (client gone)"] = count(); }
isim*:::persist-hedge	{ @counts["hedged persistent writes"] = count(); }

/* Comparing against a deadline, not counting ticks, keeps the window right even
 * where a tick is lost (see docs/tracing.md, "ticks on idle CPUs"). */
tick-10hz
/timestamp >= deadline/
{
	exit(0);
}

END
{
	printf("\n");
	printa("  %-50s %@16d\n", @counts);
}
