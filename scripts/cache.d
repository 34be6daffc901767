/*
 * cache.d: the look-aside cache in front of the store's reads (cache_entries),
 * once a second.
 *
 * USAGE:  sudo dtrace -s scripts/cache.d [SECONDS]   macOS, illumos, FreeBSD
 *         scripts/trace cache [PID] [--seconds N]   any platform
 *
 * Each second: reads that hit a fresh entry, that missed, and that were
 * answered with a stale one (STALE: stale_reads = serve, after the cache was
 * unreachable), and the hit ratio, fills that
 * put their element in the cache, fills that ended with nothing put in it
 * because their client had gone (ABANDONED; of them WASTED, the ones the store
 * had read all the same), misses refused at fill_limit, and fills in flight at
 * the second's end (FILLING: the store's queue of reads and the ones it
 * serves, counted from the script's start: fills begun before it are not in
 * it, and their ends can take it below 0 for a moment; cache.bt shows 0).
 * INCIDENT is 1 in a second during which a scenario's incident was in force,
 * attached before it began or during it (the server fires incident-in-force
 * every 100 ms while one is).
 *
 * D cannot divide one aggregation by another, so HIT% is an average of its
 * own: 100 for each hit, 0 for each miss or stale read (the same whole
 * percent as HITS * 100 / (HITS + MISSES + STALE), which cache.bt prints).
 *
 * Needs the isim USDT probes and nothing of the kernel's. Runs for SECONDS
 * (default 60) or until Ctrl-C, then prints the totals and the fills' latency
 * as a power-of-two histogram in ns.
 *
 * EXAMPLE (cold-cache with stale_reads = serve, its incident from the 8th
 * second: stale entries answered while they are refreshed, --seconds 14):
 *   TIME                    HITS  MISSES  STALE  HIT%  FILLED  ABANDONED  WASTED  REFUSED  FILLING  INCIDENT
 *   2026 Nov 29 12:17:25     183      16      0    91      17          0       0        0        0         0
 *   2026 Nov 29 12:17:27       0     200      0     0      80          0       0        0      159         1
 *   2026 Nov 29 12:17:28       0     227    106     0      27        129      53        0      277         1
 *   2026 Nov 29 12:17:29      27      54    345     6      21        230      59        0      172         0
 *   2026 Nov 29 12:17:33     151      89     25    56      25         85      55        0      119         0
 *   ...
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
	incident = 0;
	seen_incident = 0;
	@hits = sum(0); @misses = sum(0); @stale = sum(0); @filled = sum(0); @abandoned = sum(0);
	@wasted = sum(0); @refused = sum(0); @filling = sum(0);
	/* A key with nothing in it: an empty second prints 0, not nothing. */
	@hit_percent = avg(0); clear(@hit_percent);
	printf("%-21s %6s %7s %6s %5s %7s %10s %7s %8s %8s %9s\n", "TIME", "HITS", "MISSES",
	    "STALE", "HIT%", "FILLED", "ABANDONED", "WASTED", "REFUSED", "FILLING", "INCIDENT");
}

isim*:::cache-hit
{
	@hits = sum(1);
	@hit_percent = avg(100);
	@totals["reads that hit"] = count();
}

isim*:::cache-miss
{
	@misses = sum(1);
	@hit_percent = avg(0);
	@totals["reads that missed"] = count();
}

isim*:::cache-stale-hit
{
	@stale = sum(1);
	@hit_percent = avg(0);
	@totals["reads answered stale"] = count();
}

isim*:::cache-fill-start
{
	@filling = sum(1);
	@totals["fills begun"] = count();
}

isim*:::cache-fill-done
{
	@filled = sum(1);
	@filling = sum(-1);
	@totals["fills that filled the cache"] = count();
	@latency["fill latency (ns)"] = quantize(arg2);
}

isim*:::cache-fill-abandoned
{
	@abandoned = sum(1);
	@filling = sum(-1);
	@totals["fills abandoned (client gone)"] = count();
}

isim*:::cache-fill-abandoned
/arg2 == 1/
{
	@wasted = sum(1);
	@totals["abandoned fills the store had read (wasted)"] = count();
}

isim*:::cache-fill-refuse
{
	@refused = sum(1);
	@totals["misses refused at fill_limit"] = count();
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
	printa("%@6d %@7d %@6d %@5d %@7d %@10d %@7d %@8d %@8d", @hits, @misses, @stale, @hit_percent,
	    @filled, @abandoned, @wasted, @refused, @filling);
	printf(" %9d\n", seen_incident);
	/* FILLING is a running sum: begun minus ended since the script's start. */
	clear(@hits); clear(@misses); clear(@stale); clear(@hit_percent); clear(@filled); clear(@abandoned);
	clear(@wasted); clear(@refused);
	seen_incident = incident;
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}

END
{
	printf("\nSummary of the cache over the whole run:\n");
	printa("  %-50s %@16d\n", @totals);
	printa(@latency);
}
