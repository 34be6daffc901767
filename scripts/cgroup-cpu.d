/*
 * cgroup-cpu.d: is the kernel stopping the server for its CPU quota? Each second,
 * side by side, what the server sees (requests done, works done, its timer
 * canary's worst lateness: isim probes) and what the kernel does to it (quota
 * periods, periods in which it ran out of quota, and how long its threads waited
 * to run again: the scheduler's tracepoints).
 *
 * USAGE:  sudo dtrace -p PID -s scripts/cgroup-cpu.d [SECONDS]   DTrace for Linux
 *         scripts/trace cgroup-cpu [PID] [--seconds N]
 *
 * NEEDS: Linux (a CFS quota is a Linux cgroup's), DTrace for Linux 2.0 with its
 * sdt provider over the kernel's tracepoints: sdt:::sched_switch (args[1] the
 * thread leaving, args[3] its state, args[5] the one coming in) and
 * sdt:::hrtimer_expire_entry (args[2] the timer's function), and the kernel's
 * symbols (`sched_cfs_period_timer). No fbt: the kernel this was built on has no
 * kprobes, so the CFS functions themselves (throttle_cfs_rq, unthrottle_cfs_rq)
 * cannot be probed, and sched:::on-cpu, enqueue and dequeue, which need them,
 * never fire there (`dtrace -l -P sched` lists them all the same). On macOS,
 * illumos and FreeBSD there is no CFS quota to watch.
 *
 * How the kernel shows: a thread of the server is switched out while it still
 * wants to run (state R, or R+ preempted): preempted, or its group out of
 * quota. The group's period timer (sched_cfs_period_timer) refills the quota
 * and lets it run again, and the kernel counts a throttled period (cpu.stat
 * nr_throttled) exactly when the timer finds the group throttled. So a period
 * counts as throttled here when a thread of the server that had waited runnable
 * for at least 1 ms (a preemption by another task is shorter) runs again within
 * 5 ms after a period timer (counted once, at the timer's next firing: the
 * threads it lets go run on several CPUs at once); throttled time is the sum
 * of those waits (per
 * thread; the kernel's throttled_time sums per CPU). Every cgroup with a quota has
 * a period timer of its own; the server's is the one most of its releases follow,
 * and only its periods count (PERIODS counts every group's until the first
 * release). Same rules as cgroup-cpu.bt; tests/suite/scripts_live.rs holds both to
 * cpu.stat's count over the same seconds.
 *
 * No root? /stats.cpu_cgroup and the cgroup's own cpu.stat say the same per
 * group (docs/workshop/08-container-timeouts.md).
 *
 * EXAMPLE (workshop start container-timeouts, its load, 10 s):
 *    SEC  REQUESTS  WORKS  CANARY-MAX-MS |  PERIODS  THROTTLED  WAITED-MS
 *      1        28     28           31 |       10          3        189
 */
#pragma D option quiet
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs

/* Nanosecond times: declared, since a variable first set to 0 would be an int. */
uint64_t began, deadline, ended, last_fired, total_waited;
uint64_t fired[uintptr_t], marked[uintptr_t];
uintptr_t last_timer, timer;
int seconds, elapsed, votes;
int second_of[uintptr_t], in_second[uintptr_t], released[uintptr_t];

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	began = timestamp;
	deadline = began + seconds * 1000000000;
	printf("Watching pid %d's CPU quota for %d s (Ctrl-C prints the summary so far).\n",
	    $target, seconds);
	printf("%6s %9s %6s %14s | %8s %10s %10s\n",
	    "SEC", "REQUESTS", "WORKS", "CANARY-MAX-MS", "PERIODS", "THROTTLED", "WAITED-MS");
	/* Every column from the first second, even one nothing has moved yet. */
	@requests = sum(0); @works = sum(0); @canary = max(0);
	@periods = sum(0); @waited = sum(0);
}

isim*:::request-done
{
	@requests = sum(1);
}

isim*:::work-done
{
	@works = sum(1);
}

isim*:::canary-tick
{
	@canary = max(arg1 / 1000000);
}

/* A thread of the server leaves its CPU still runnable: its wait starts. */
sdt:::sched_switch
/pid == $target && (args[3] & 0xff) == 0/
{
	off[args[1]] = timestamp;
}

/*
 * Every cgroup with a quota has a period timer of its own. The server's is the
 * one that lets its throttled threads go: each release votes for the timer that
 * fired just before it (Boyer-Moore's majority vote, `timer`), and the counts are
 * kept per timer, so a release that followed another group's timer by chance
 * counts for that one, not the server's.
 */
/*
 * A period is counted at its timer's next firing, not at the release: a timer
 * lets throttled threads go on several CPUs at once, and two CPUs that both
 * read "not counted yet" before either wrote it counted one period twice (8 of
 * 69 in cgroup-cpu.bt's run with the rayon pool's two threads; cpu.stat 61). A
 * release only marks the firing it followed (every CPU writes the same value),
 * and a timer fires on one CPU at a time, so the firing before this one counts
 * once, if marked.
 */
sdt:::hrtimer_expire_entry
/(uintptr_t)args[2] == (uintptr_t)&`sched_cfs_period_timer &&
 fired[(uintptr_t)args[0]] > 0 &&
 marked[(uintptr_t)args[0]] == fired[(uintptr_t)args[0]]/
{
	this->t = (uintptr_t)args[0];
	this->newcomer = timer != this->t && votes == 0;
	timer = this->newcomer ? this->t : timer;
	votes = this->newcomer ? 1 : timer == this->t ? votes + 1 : votes - 1;
	second_of[this->t] != elapsed ? in_second[this->t] = 0 : 0;
	second_of[this->t] = elapsed;
	in_second[this->t]++;
	released[this->t]++;
}

sdt:::hrtimer_expire_entry
/(uintptr_t)args[2] == (uintptr_t)&`sched_cfs_period_timer/
{
	this->now = timestamp;
	last_fired = this->now;
	last_timer = (uintptr_t)args[0];
	fired[last_timer] = this->now;
}

sdt:::hrtimer_expire_entry
/(uintptr_t)args[2] == (uintptr_t)&`sched_cfs_period_timer &&
 (timer == 0 || (uintptr_t)args[0] == timer)/
{
	@periods = sum(1);
}

/* It runs again: a wait of 1 ms or more is a stall. */
sdt:::sched_switch
/off[args[5]] && timestamp - off[args[5]] >= 1000000/
{
	this->wait = timestamp - off[args[5]];
	@waited = sum(this->wait / 1000000);
	total_waited += this->wait;
}

/*
 * Released by a period timer just now, waiting since before it: that firing
 * found the group throttled. Marked here, counted once at the timer's next
 * firing (above).
 */
sdt:::sched_switch
/off[args[5]] && timestamp - off[args[5]] >= 1000000 && last_fired > 0 &&
 timestamp - last_fired < 5000000 && off[args[5]] < last_fired/
{
	marked[last_timer] = last_fired;
}

sdt:::sched_switch
/off[args[5]]/
{
	off[args[5]] = 0;
}

tick-1s
{
	printf("%6d", elapsed + 1);
	printa(" %@9d", @requests);
	printa(" %@6d", @works);
	printa(" %@14d", @canary);
	printf(" |");
	printa(" %@8d", @periods);
	printf(" %10d", second_of[timer] == elapsed ? in_second[timer] : 0);
	printa(" %@10d", @waited);
	printf("\n");
	clear(@requests); clear(@works); clear(@canary);
	clear(@periods); clear(@waited);
	elapsed++;
}

tick-10hz
/timestamp >= deadline/
{
	ended = timestamp;
	exit(0);
}

END
{
	printf("\nSummary of pid %d's CPU quota in %d seconds:\n", $target,
	    ((ended ? ended : timestamp) - began) / 1000000000);
	/* The last firing's period, if it was throttled, has no next firing yet. */
	released[timer] += fired[timer] > 0 && marked[timer] == fired[timer] ? 1 : 0;
	printf("  throttled periods %d, waited %d ms\n", released[timer],
	    total_waited / 1000000);
}
