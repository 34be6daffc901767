/*
 * errors.d: the USE method's third column. Which of the server's calls fail,
 * and do its descriptors pile up? A line a second, then the run's failures by
 * errno.
 *
 * USAGE:  sudo dtrace -p PID -s scripts/errors.d [SECONDS]   macOS, illumos, FreeBSD, DTrace for Linux
 *         scripts/trace errors [PID] [--seconds N]
 *
 * NEEDS: the isim probes and the syscall provider's accept4, accept, openat,
 * open, socket, dup, dup2, dup3, fcntl and close (`dtrace -l -P syscall`
 * lists a system's; each names only those it has), the pid provider on
 * libc's open64 (macOS: open); root. Checked with
 * DTrace for Linux 2.0 on Linux 6.18.
 *
 * Each second:
 *
 *   - ACCEPT-ERRORS: the server's accept(2) calls that failed, on either of its
 *     listeners (probe accept-error; /stats.accept_errors counts the same);
 *   - NET-FDS: descriptors the process opened less those it closed since the
 *     trace began: accept4, accept, openat, open, socket, dup, dup2, dup3 and
 *     fcntl's duplicates (F_DUPFD and F_DUPFD_CLOEXEC) that
 *     returned one, less the close(2) calls that closed one. A count that
 *     climbs under a steady load is a leak; one that comes back down is a load
 *     going up and down.
 *
 * The summary: the failed accepts by errno (24 EMFILE: the process holds all
 * the descriptors its limit allows; 23 ENFILE: the machine does), and the
 * kernel's failures of the same calls by errno, the server's own and every
 * other caller's in the process. EAGAIN (11 on Linux, 35 on macOS) is left
 * out: it is how a non-blocking socket says "not yet", not an error. Last,
 * the user stacks that opened most files (the pid provider on libc's open;
 * a release build names its frames).
 *
 * No root? `system-simulator trace errors` prints the same columns from the
 * probe tap and /stats.descriptors; on Linux `ls /proc/PID/fd | wc -l` and
 * `grep 'open files' /proc/PID/limits`, on macOS `lsof -p PID | wc -l` and
 * `launchctl limit maxfiles`, say where the count and the limit are.
 *
 * EXAMPLE (the server under `ulimit -n 64`, 80 idle connections held):
 *   TIME                      ACCEPT-ERRORS    NET-FDS
 *   2026 Dec  3 10:12:01                  0          0
 *   2026 Dec  3 10:12:02                 10         37
 */
#pragma D option quiet
/* The deadline is checked ten times a second; see in-flight.d. */
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs
#pragma D option zdefs

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	deadline = timestamp + seconds * 1000000000;
	/* An aggregation, kept per CPU: a global the CPUs share loses updates. */
	@errors = sum(0); @net = sum(0);
	printf("Watching pid %d's failed calls and descriptors for %d s (Ctrl-C prints the summary so far).\n",
	    $target, seconds);
	printf("%-21s %13s %10s\n", "TIME", "ACCEPT-ERRORS", "NET-FDS");
}

isim*:::accept-error
{
	@errors = sum(1);
	@accept_errors[arg1] = count();
}

syscall::accept4:return, syscall::accept:return, syscall::openat:return,
syscall::open:return, syscall::socket:return, syscall::dup:return,
syscall::dup2:return, syscall::dup3:return
/pid == $target && (int)arg1 >= 0/
{
	@net = sum(1);
}

/* The failed calls, named as errors.bt names them (accept and open with accept4 and openat). */
syscall::accept4:return, syscall::accept:return
/pid == $target && (int)arg1 < 0 && errno != EAGAIN/
{
	@failed["accept4", errno] = count();
}

syscall::openat:return, syscall::open:return
/pid == $target && (int)arg1 < 0 && errno != EAGAIN/
{
	@failed["openat", errno] = count();
}

syscall::socket:return
/pid == $target && (int)arg1 < 0 && errno != EAGAIN/
{
	@failed["socket", errno] = count();
}

/*
 * fcntl returns a descriptor only for F_DUPFD (0) and F_DUPFD_CLOEXEC (1030 on
 * Linux, 67 on macOS). Kept by thread id: a system call's entry and return
 * run on one thread.
 */
syscall::fcntl:entry
/pid == $target && (arg1 == 0 || arg1 == 1030 || arg1 == 67)/
{
	dup_fcntl[tid] = 1;
}

syscall::fcntl:return
/dup_fcntl[tid]/
{
	@net = sum((int)arg1 >= 0 ? 1 : 0);
	dup_fcntl[tid] = 0;
}

syscall::close:return
/pid == $target && (int)arg1 == 0/
{
	@net = sum(-1);
}

tick-1s
{
	printf("%-21Y ", walltimestamp);
	printa("%@13d", @errors);
	printa(" %@10d\n", @net);
	clear(@errors);
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}

/*
 * The user stacks that open files: libc's open64 (glibc; macOS's libc calls it
 * open), at its entry, where every frame pointer of ours still leads back to
 * the request path. zdefs lets the one this system lacks match nothing.
 */
pid$target:libc.so.6:open64:entry,
pid$target:libsystem_kernel.dylib:open:entry
{
	@opens[ustack(8)] = count();
}

END
{
	printf("\nSummary of pid %d's failed calls over the whole run:\n", $target);
	printf("failed accepts, by errno (probe accept-error):\n");
	printa("  %-8d %@d\n", @accept_errors);
	printf("the kernel's failed calls of the process, by call and errno:\n");
	printa("  %-8s %-8d %@d\n", @failed);
	printf("files opened, by user stack (the 3 that opened most; D keeps no stack a descriptor, so errors.bt says which stay open):\n");
	trunc(@opens, 3);
	printa(@opens);
}
