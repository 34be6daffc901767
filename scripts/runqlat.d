/*
 * runqlat.d: how long do the server's threads wait for a CPU once they are
 * ready to run, and who holds it meanwhile? Each second, the time its threads
 * ran and the time they waited runnable (woken, or preempted while still
 * wanting to run) until a CPU took them, and the wait per millisecond run; at
 * the end, the waits' distribution and the tasks that ran on the CPU just
 * before a thread of the server got it (the ones it waited behind).
 *
 * USAGE:  sudo dtrace -p PID -s scripts/runqlat.d [SECONDS]   DTrace for Linux
 *         scripts/trace runqlat [PID] [--seconds N]
 *
 * NEEDS: Linux, DTrace for Linux 2.0 with its sdt provider over the kernel's
 * tracepoints: sdt:::sched_wakeup and sdt:::sched_wakeup_new (args[1] the
 * thread woken) and sdt:::sched_switch (args[0] and args[1] the thread leaving,
 * args[3] its state, args[5] the one coming in). sched:::enqueue and
 * sched:::on-cpu would say it more directly, but need kprobes, which the
 * kernel this was built on (6.18) lacks. A thread is known as the server's
 * once it has been on a CPU (sched_switch fires in the thread leaving it, so
 * `pid` is its process): a thread's first wake is missed, nothing after it.
 * Same rules as runqlat.bt.
 *
 * No root? /stats.runqueue_wait_ns sums the same from the kernel's own
 * accounting (/proc/PID/task/TID/schedstat), and `scripts/trace runqlat`
 * prints these columns from it.
 *
 * EXAMPLE (workshop start noisy-neighbour, its load, 10 s):
 *    SEC  ON-CPU-MS  WAITED-MS  WAITED-PER-MS-RUN
 *      1        352       1024               2.91
 */
#pragma D option quiet
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs

/* Nanosecond times: declared, since a variable first set to 0 would be an int. */
uint64_t began, deadline, ended, ran_ns, waited_ns, total_ran, total_waited;
uint64_t queued[int], on[int];
int seconds, elapsed, ours[int];

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	began = timestamp;
	deadline = began + seconds * 1000000000;
	printf("Watching pid %d's threads wait for a CPU for %d s (Ctrl-C prints the summary so far).\n",
	    $target, seconds);
	printf("%6s %10s %10s %18s\n", "SEC", "ON-CPU-MS", "WAITED-MS", "WAITED-PER-MS-RUN");
}

/* Woken: from now it waits in a run queue. */
sdt:::sched_wakeup,
sdt:::sched_wakeup_new
/ours[args[1]]/
{
	queued[args[1]] = timestamp;
}

/*
 * A thread of the server leaves its CPU: what it ran counts, and if it still
 * wants to run (state R: preempted), it waits in a run queue from now.
 */
sdt:::sched_switch
/pid == $target/
{
	ours[args[1]] = 1;
	this->ran = on[args[1]] ? timestamp - on[args[1]] : 0;
	ran_ns += this->ran;
	total_ran += this->ran;
	on[args[1]] = 0;
	queued[args[1]] = (args[3] & 0xff) == 0 ? timestamp : queued[args[1]];
}

/* A thread of the server gets a CPU: its wait ends, behind the task before it. */
sdt:::sched_switch
/ours[args[5]]/
{
	on[args[5]] = timestamp;
}

sdt:::sched_switch
/ours[args[5]] && queued[args[5]]/
{
	this->wait = timestamp - queued[args[5]];
	waited_ns += this->wait;
	total_waited += this->wait;
	@wait_us = quantize(this->wait / 1000);
	@behind[stringof(args[0])] = sum(this->wait / 1000);
	queued[args[5]] = 0;
}

tick-1s
{
	/* D prints no floats: the ratio in hundredths. */
	this->per = ran_ns > 0 ? waited_ns * 100 / ran_ns : 0;
	printf("%6d %10d %10d %15d.%02d\n", elapsed + 1, ran_ns / 1000000,
	    waited_ns / 1000000, this->per / 100, this->per % 100);
	ran_ns = 0;
	waited_ns = 0;
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
	printf("\nSummary of pid %d's threads in %d seconds:\n", $target,
	    ((ended ? ended : timestamp) - began) / 1000000000);
	this->per = total_ran > 0 ? total_waited * 100 / total_ran : 0;
	printf("  on a CPU %d ms, waited for one %d ms: %d.%02d ms waited per ms run\n",
	    total_ran / 1000000, total_waited / 1000000, this->per / 100, this->per % 100);
	printf("\nEach wait for a CPU (us):\n");
	printa(@wait_us);
	printf("\nWho ran just before, by the wait it cost (us):\n");
	trunc(@behind, 5);
	printa("  %-16s %@12d\n", @behind);
}
