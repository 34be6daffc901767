/*
 * offcpu.d: where the server's threads wait: the time each of its threads
 * spends blocked off the CPU (on a lock, a condition, a sleep or I/O), summed
 * by the user stack it blocked with, in microseconds, for an off-CPU flame
 * graph.
 *
 * USAGE:  sudo dtrace -p PID -s scripts/offcpu.d [SECONDS] > stacks.txt
 *         sudo scripts/trace offcpu [PID] [--seconds N]   (folded stacks)
 *         system-simulator profile --stacks stacks.txt --pid PID --off-cpu --out offcpu.svg
 *
 * Counts the waits a thread blocks in inside the system calls that wait (a
 * futex, epoll, poll, a sleep, an fsync: every wait of ours; a blocking read
 * is not among them): sched:::off-cpu fires on the thread leaving a CPU, and a
 * thread-local keeps when; sched:::on-cpu, on the thread arriving, or the
 * system call's return, whichever comes first, adds the time since to its user
 * stack: the one it blocked with, so a wait for a lock sits on top of the code
 * that asked for it. DTrace for Linux 2.0.7 lists on-cpu but it never fired on
 * Linux 6.18 here (its fbt probes are not offered), so there the return ends
 * the wait, a few microseconds after the wake-up. Only those system calls are
 * probed: all of them cost DTrace for Linux a minute to detach. Needs the
 * sched and syscall providers and -p (or -c) for $target: DTrace for Linux 2.0
 * or later on Linux, any DTrace elsewhere; root. ustack() walks
 * frame pointers: the workspace builds with them (.cargo/config.toml), Rust's
 * prebuilt standard library does not, so a stack may lose the std frames of a
 * lock or a condvar and resume at ours (rust-lang/rust#97723). A thread still
 * off the CPU when the trace ends is not counted. Threads waiting for work
 * (the runtime's parked workers, the blocking pool's idle threads, the
 * compactor between compactions) are most of any server's off-CPU time;
 * `profile --stacks --off-cpu` leaves them out, saying how much it left.
 *
 * EXAMPLE (periodic-stall before its fix, 10 s; one stack of many, innermost
 * first, microseconds):
 *               libc.so.6`syscall+0x1d
 *               system-simulator`std::sys::sync::mutex::futex::Mutex::lock_contended+0x...
 *               system-simulator`simulator_service::request_path::index::Index::take_lock+0x...
 *               ...
 *           2049113
 * and as scripts/trace offcpu prints it, folded and named:
 *   system-simulator;...;simulator_service::request_path::index::Index::record;... 2049113
 */
#pragma D option quiet
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs
#pragma D option ustackframes=64
#pragma D option dynvarsize=16m

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	deadline = timestamp + seconds * 1000000000;
	printf("offcpu.d: timing pid %d's threads off the CPU for %d s\n", $target, seconds);
}

/* The system calls a thread waits in; every system call's probe would cost
 * DTrace for Linux a minute to detach at the end. */
syscall::futex:entry, syscall::futex_wait:entry, syscall::futex_waitv:entry,
syscall::epoll_wait:entry, syscall::epoll_pwait:entry, syscall::epoll_pwait2:entry,
syscall::nanosleep:entry, syscall::clock_nanosleep:entry,
syscall::poll:entry, syscall::ppoll:entry, syscall::select:entry,
syscall::fsync:entry, syscall::fdatasync:entry
/pid == $target/
{
	self->insys = 1;
}

sched:::off-cpu
/pid == $target && self->insys/
{
	self->left = timestamp;
}

/* Whichever comes first: on-cpu where it fires, the system call's return. */
sched:::on-cpu
/self->left/
{
	@[ustack()] = sum((timestamp - self->left) / 1000);
	self->left = 0;
}

syscall::futex:return, syscall::futex_wait:return, syscall::futex_waitv:return,
syscall::epoll_wait:return, syscall::epoll_pwait:return, syscall::epoll_pwait2:return,
syscall::nanosleep:return, syscall::clock_nanosleep:return,
syscall::poll:return, syscall::ppoll:return, syscall::select:return,
syscall::fsync:return, syscall::fdatasync:return
/self->left/
{
	@[ustack()] = sum((timestamp - self->left) / 1000);
	self->left = 0;
}

syscall::futex:return, syscall::futex_wait:return, syscall::futex_waitv:return,
syscall::epoll_wait:return, syscall::epoll_pwait:return, syscall::epoll_pwait2:return,
syscall::nanosleep:return, syscall::clock_nanosleep:return,
syscall::poll:return, syscall::ppoll:return, syscall::select:return,
syscall::fsync:return, syscall::fdatasync:return
/self->insys/
{
	self->insys = 0;
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}
