/*
 * memory.d: the USE method for memory. Which code allocates the server's big
 * blocks, and how fast? A line a second, then the user stacks that allocated
 * most.
 *
 * USAGE:  sudo dtrace -p PID -s scripts/memory.d [SECONDS]
 *         scripts/trace memory [PID] [--seconds N] --dtrace
 *
 * NEEDS: the pid provider on the server's allocator: jemalloc's _rjem_malloc,
 * _rjem_mallocx and _rjem_calloc in the server's binary (a.out; a Linux build
 * with the heap-profile feature, the default), or libc's malloc and calloc
 * (macOS, and a build without it); zdefs lets the ones a system lacks match
 * nothing. Root. DTrace for Linux 2.0 on Linux 6.18 checked; macOS not.
 *
 * Each second:
 *
 *   - BIG-ALLOCS: allocations of 4 KiB or more that second;
 *   - BIG-MIB: what they asked for, MiB.
 *
 * The summary: the five user stacks that allocated most of those bytes. D cannot keep a stack per pointer, so it does not
 * subtract what was freed: memory.bt does, and its summary names the stacks
 * that still hold what they allocated. Here a stack that allocates as fast as
 * the requests come is one to look at; the resident memory itself is in
 * /proc/PID/status (RssAnon), `system-simulator trace memory` (no root) and
 * memory.bt. `system-simulator profile --heap` draws the live heap by
 * allocation site without root.
 *
 * The stacks are walked by frame pointers, which the project's builds keep
 * (.cargo/config.toml). At the allocator's entry its caller has not yet
 * pushed a frame of its own, so a stack's second line is the caller's caller:
 * a function that allocates shows as the one that called it (the heap
 * profile, which unwinds with DWARF, names it).
 *
 * EXAMPLE (200 elements of 16 KiB a second):
 *   TIME                     BIG-ALLOCS    BIG-MIB
 *   2026 Dec  4 10:12:01            802         12
 *   2026 Dec  4 10:12:02            799         12
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
	/* Aggregations, kept per CPU: a global the CPUs share loses updates. */
	@allocs = sum(0); @bytes = sum(0);
	printf("Watching pid %d's memory for %d s (Ctrl-C prints the summary so far).\n",
	    $target, seconds);
	printf("%-21s %13s %10s\n", "TIME", "BIG-ALLOCS", "BIG-MIB");
}

pid$target:a.out:_rjem_malloc:entry,
pid$target:a.out:_rjem_mallocx:entry,
pid$target:libc.so.6:malloc:entry,
pid$target:libsystem_malloc.dylib:malloc:entry
/arg0 >= 4096/
{
	@allocs = sum(1);
	@bytes = sum(arg0);
	@by_stack[ustack(10)] = sum(arg0);
}

pid$target:a.out:_rjem_calloc:entry,
pid$target:libc.so.6:calloc:entry,
pid$target:libsystem_malloc.dylib:calloc:entry
/arg0 * arg1 >= 4096/
{
	@allocs = sum(1);
	@bytes = sum(arg0 * arg1);
	@by_stack[ustack(10)] = sum(arg0 * arg1);
}

tick-1s
{
	normalize(@bytes, 1048576);
	printf("%-21Y ", walltimestamp);
	printa("%@13d", @allocs);
	printa(" %@10d\n", @bytes);
	clear(@allocs);
	clear(@bytes);
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}

END
{
	printf("\nSummary of pid %d's allocations over the whole run:\n", $target);
	printf("allocations of 4 KiB or more, bytes by user stack (the 5 that allocated most; memory.bt says which still hold them):\n");
	trunc(@by_stack, 5);
	printa(@by_stack);
}
