/*
 * delayed-ack.d: are replies waiting for an acknowledgement? Each second, side
 * by side, what the server sees (requests done and their mean time inside the
 * server, request-start to request-done: isim probes) and what the sockets do
 * (the server's writes, the pairs of writes to one connection within a
 * millisecond, a reply's head and then its body, and the acknowledgements the
 * kernel held back and sent only when its delayed-ACK timer fired).
 *
 * USAGE:  sudo dtrace -p PID -s scripts/delayed-ack.d [SECONDS [NETNS]]   DTrace for Linux
 *         scripts/trace delayed-ack [PID] [--seconds N]
 *
 * NEEDS: Linux (the 40 ms delayed-ACK timer is Linux's), DTrace for Linux 2.0
 * with its sdt provider over the kernel's tracepoints: sdt:::timer_expire_entry
 * (args[2] the timer's function) and sdt:::timer_expire_exit,
 * sdt:::net_dev_queue, syscall::writev:entry, and the kernel's symbols
 * (`tcp_delack_timer). No fbt (the kernel this was built on has no kprobes) and
 * no tracepoint for an ACK: a delayed ACK is a packet the kernel queues for a
 * device while the delayed-ACK timer runs on that CPU, which is exactly when
 * nstat's TcpExtDelayedACKs counts one. The timer also fires without sending,
 * when it was moved later: those are not counted. Same rules as delayed-ack.bt;
 * tests/suite/scripts_live.rs holds both to nstat's count over the same seconds.
 * DELAYED-ACKS counts every socket in the network namespace NETNS (its inode:
 * `readlink /proc/PID/ns/net`; scripts/trace passes the server's), as nstat
 * does there, or in every namespace without it: on one machine, the clients'
 * delayed ACKs are here too. On macOS, illumos and
 * FreeBSD the timer differs (200 ms on some); `netstat -s` counts "delayed acks
 * sent".
 *
 * No root? `nstat -az TcpExtDelayedACKs`, twice, a few seconds apart: one a
 * request is the symptom (docs/workshop/10-forty-ms-floor.md).
 *
 * EXAMPLE (workshop start nagle-delayed-ack, its load, 10 s):
 *    SEC  REQUESTS  SERVER-US |  WRITES  PAIRS | DELAYED-ACKS
 *      4       152         19 |     304    152 |          153
 */
#pragma D option quiet
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs

uint64_t began, deadline, ended;
uint64_t start[uint64_t], last_write[int];
int seconds, elapsed, in_delack[int];

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	began = timestamp;
	deadline = began + seconds * 1000000000;
	printf("Watching pid %d's replies for %d s (Ctrl-C prints the summary so far).\n",
	    $target, seconds);
	printf("%6s %9s %10s | %7s %6s | %12s\n", "SEC", "REQUESTS", "SERVER-US",
	    "WRITES", "PAIRS", "DELAYED-ACKS");
	@requests = sum(0); @inside = avg(0); @writes = sum(0); @pairs = sum(0);
	@delayed = sum(0); @total_delayed = sum(0); @total_pairs = sum(0);
}

isim*:::request-start
{
	start[arg0] = timestamp;
}

isim*:::request-done
/start[arg0]/
{
	@requests = sum(1);
	@inside = avg((timestamp - start[arg0]) / 1000);
	start[arg0] = 0;
}

/*
 * A write to a connection (hyper writes sockets with writev; the runtime's
 * wake-ups are write()s to an eventfd, left out); a second to the same one
 * within 1 ms is a pair.
 */
syscall::writev:entry
/pid == $target/
{
	@writes = sum(1);
	this->fd = (int)arg0;
	this->pair = last_write[this->fd] && timestamp - last_write[this->fd] < 1000000;
	last_write[this->fd] = this->pair ? 0 : timestamp;
}

syscall::writev:entry
/pid == $target && this->pair/
{
	@pairs = sum(1);
	@total_pairs = sum(1);
}

/* The delayed-ACK timer runs on this CPU... */
sdt:::timer_expire_entry
/(uintptr_t)args[2] == (uintptr_t)&`tcp_delack_timer/
{
	in_delack[cpu] = 1;
}

/* ... and queues a packet: the ACK it held back. */
sdt:::net_dev_queue
/in_delack[cpu] &&
 ($2 == 0 || ((struct sk_buff *)args[0])->dev->nd_net.net->ns.inum == $2)/
{
	@delayed = sum(1);
	@total_delayed = sum(1);
}

sdt:::timer_expire_exit
/in_delack[cpu]/
{
	in_delack[cpu] = 0;
}

tick-1s
{
	printf("%6d", elapsed + 1);
	printa(" %@9d", @requests);
	printa(" %@10d |", @inside);
	printa(" %@7d", @writes);
	printa(" %@6d |", @pairs);
	printa(" %@12d", @delayed);
	printf("\n");
	clear(@requests); clear(@inside); clear(@writes); clear(@pairs); clear(@delayed);
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
	printf("\nSummary of pid %d's replies in %d seconds (delayed ACKs: nstat's TcpExtDelayedACKs):\n",
	    $target, ((ended ? ended : timestamp) - began) / 1000000000);
	printa("  delayed ACKs %@d\n", @total_delayed);
	printa("  write pairs %@d\n", @total_pairs);
}
