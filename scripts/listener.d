/*
 * listener.d: is the kernel dropping connections before the server sees
 * them? Each second, side by side, what the server sees (requests done: isim
 * probes; connections it accepted: accept4) and what the kernel does in front of
 * it (handshakes it completed and queued, the accept queue's longest,
 * connections it dropped at a full queue, and SYNs the clients had to send
 * again).
 *
 * USAGE:  sudo dtrace -p PID -s scripts/listener.d [SECONDS [NETNS]]   DTrace for Linux
 *         scripts/trace listener [PID] [--seconds N]
 *
 * NEEDS: Linux (the accept queue and its counters are Linux's), DTrace for Linux
 * 2.0 with its sdt provider over the kernel's tracepoints: sdt:::inet_sock_set_state
 * (args[1] the old state, args[2] the new, args[6] the protocol),
 * sdt:::kfree_skb (args[2] the listening socket, args[4] the drop reason: Linux
 * 5.17 and later, the socket 6.12 and later), sdt:::tcp_retransmit_skb (args[2]
 * the socket's state), and syscall::accept4:return; the kernel's types (CTF) to
 * read the listening socket. No fbt: the kernel this was built on has no
 * kprobes, so tcp_v4_syn_recv_sock cannot be probed. On macOS, illumos and
 * FreeBSD the kernel's TCP differs and these tracepoints do not exist; there,
 * `netstat -s` counts the drops ("listen queue overflows").
 *
 *   - HANDSHAKES: server-side connections that became ESTABLISHED (SYN_RECV to
 *     ESTABLISHED): each enters its listener's accept queue;
 *   - ACCEPTED: the server's accept4() calls that returned a connection;
 *   - QUEUE-MAX: the most waiting at once, HANDSHAKES less ACCEPTED since the
 *     script began (it starts from an empty queue), and LIMIT the queue's limit
 *     as the kernel read it at the last drop;
 *   - DROPPED: completed handshakes (or the requests behind them) the listener
 *     dropped because its queue was full (kfree_skb, reason TCP_LISTEN_OVERFLOW,
 *     40 in the kernel's enum skb_drop_reason);
 *   - SYN-AGAIN: SYNs the clients sent again (tcp_retransmit_skb in SYN_SENT):
 *     the listener dropped each one's first SYN a second before, or two.
 *
 * DROPPED plus SYN-AGAIN is what nstat's TcpExtListenOverflows counts, the SYNs
 * a second or two late. Same rules as listener.bt; tests/suite/scripts_live.rs
 * holds both to nstat's totals over a run. HANDSHAKES, DROPPED and SYN-AGAIN
 * count every listener in the network namespace NETNS (its inode: `readlink
 * /proc/PID/ns/net`; scripts/trace passes the server's), as nstat does there;
 * without it, every namespace's. ACCEPTED and REQUESTS are the server's.
 *
 * No root? `nstat -az TcpExtListenOverflows TcpExtListenDrops`, `ss -lnt`,
 * /stats.connections.listen_drops and the clients' connect row say the same
 * (docs/workshop/09-whole-second-delays.md).
 *
 * EXAMPLE (workshop start whole-second-delays, its load, 10 s):
 *    SEC  REQUESTS |  ACCEPTED | HANDSHAKES  QUEUE-MAX  LIMIT  DROPPED  SYN-AGAIN
 *      4       102 |       102 |        102         65     64       33         34
 */
#pragma D option quiet
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs

uint64_t began, deadline, ended;
int seconds, elapsed, in_queue, queue_max, limit;

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	began = timestamp;
	deadline = began + seconds * 1000000000;
	printf("Watching pid %d's accept queue for %d s (Ctrl-C prints the summary so far).\n",
	    $target, seconds);
	printf("%6s %9s | %9s | %10s %10s %6s %8s %10s\n", "SEC", "REQUESTS",
	    "ACCEPTED", "HANDSHAKES", "QUEUE-MAX", "LIMIT", "DROPPED", "SYN-AGAIN");
	/* Every column from the first second, even one nothing has moved yet. */
	@requests = sum(0); @accepted = sum(0); @handshakes = sum(0);
	@dropped = sum(0); @syn_again = sum(0);
	@total_dropped = sum(0); @total_syn_again = sum(0);
}

isim*:::request-done
{
	@requests = sum(1);
}

/* A server-side connection completed its handshake: it is in the accept queue. */
sdt:::inet_sock_set_state
/args[6] == 6 && args[1] == 3 && args[2] == 1 &&
 ($2 == 0 || ((struct sock *)args[0])->__sk_common.skc_net.net->ns.inum == $2)/
{
	@handshakes = sum(1);
	in_queue++;
	queue_max = in_queue > queue_max ? in_queue : queue_max;
}

syscall::accept4:return
/pid == $target && (int)arg1 >= 0/
{
	@accepted = sum(1);
	in_queue = in_queue > 0 ? in_queue - 1 : 0;
}

/* The listener's queue is full: a completed handshake (or what follows it) dropped. */
sdt:::kfree_skb
/args[4] == 40 && args[2] && ($2 == 0 || ((struct sock *)args[2])->__sk_common.skc_net.net->ns.inum == $2)/
{
	@dropped = sum(1);
	@total_dropped = sum(1);
	limit = ((struct sock *)args[2])->sk_max_ack_backlog;
}

/* A client sends its SYN again: its first went unanswered. */
sdt:::tcp_retransmit_skb
/args[2] == 2 && ($2 == 0 || ((struct sock *)args[1])->__sk_common.skc_net.net->ns.inum == $2)/
{
	@syn_again = sum(1);
	@total_syn_again = sum(1);
}

tick-1s
{
	printf("%6d", elapsed + 1);
	printa(" %@9d |", @requests);
	printa(" %@9d |", @accepted);
	printa(" %@10d", @handshakes);
	printf(" %10d %6d", queue_max, limit);
	printa(" %@8d", @dropped);
	printa(" %@10d", @syn_again);
	printf("\n");
	clear(@requests); clear(@accepted); clear(@handshakes);
	clear(@dropped); clear(@syn_again);
	queue_max = in_queue;
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
	printf("\nSummary of pid %d's accept queue in %d seconds (together: nstat's TcpExtListenOverflows):\n",
	    $target, ((ended ? ended : timestamp) - began) / 1000000000);
	printa("  dropped at a full queue %@d\n", @total_dropped);
	printa("  SYNs sent again %@d\n", @total_syn_again);
}
