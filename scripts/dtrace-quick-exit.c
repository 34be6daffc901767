/*
 * dtrace-quick-exit.c: lets DTrace for Linux exit as soon as its trace is over.
 *
 * scripts/trace preloads this into dtrace on Linux (LD_PRELOAD; it builds it
 * once with cc, into /var/cache/system-simulator, which only root can write:
 * whoever could replace this file would run code as root). Why: DTrace for Linux 2.0.7
 * on a kernel without a CTF archive (every kernel but Oracle's UEK: DTrace
 * converts the kernel's BTF into CTF types at start) spent 7.5 s of CPU after
 * the trace's last line in dtrace_close(), freeing those types one by one
 * with libctf's ctf_dict_close() (gdb's backtrace of the busy process; Linux
 * 6.18, a 2-vCPU KVM guest). `dtrace -n 'BEGIN { exit(0) }'` took 9.4 s, and
 * 2.3 s with this preloaded. A room waited that long for its prompt after
 * every trace.
 *
 * What it changes: inside dtrace_close() only, ctf_dict_close() frees nothing;
 * everything else dtrace_close() does still happens (its uprobes are removed
 * from tracefs, its BPF programs detached), and the memory goes back when the
 * process exits a moment later. Outside dtrace_close(), and in every other
 * program, both calls go straight to the real ones (dlsym RTLD_NEXT).
 *
 * Build by hand:  cc -shared -fPIC -O2 -o dtrace-quick-exit.so dtrace-quick-exit.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>

static int closing;

void dtrace_close(void *dtp)
{
	void (*real)(void *) = (void (*)(void *))dlsym(RTLD_NEXT, "dtrace_close");

	closing = 1;
	if (real)
		real(dtp);
	closing = 0;
}

void ctf_dict_close(void *fp)
{
	static void (*real)(void *);

	if (closing)
		return;
	if (!real)
		real = (void (*)(void *))dlsym(RTLD_NEXT, "ctf_dict_close");
	if (real)
		real(fp);
}
