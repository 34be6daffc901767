/*
 * profile.d: where the server's CPU goes: its user stacks, sampled 99 times a
 * second on every CPU while one of its threads runs there, counted by stack,
 * for a flame graph.
 *
 * USAGE:  sudo dtrace -p PID -s scripts/profile.d [SECONDS] > stacks.txt
 *         sudo scripts/trace profile [PID] [--seconds N]   (folded stacks)
 *         system-simulator profile --stacks stacks.txt --pid PID --out flame.svg
 *
 * Needs the profile provider and -p (or -c) for $target; DTrace for Linux 2.0
 * or later on Linux, any DTrace elsewhere. ustack() walks frame pointers: the
 * workspace builds with them (.cargo/config.toml), Rust's prebuilt standard
 * library does not, so a stack may stop at a std frame; the frames that burn
 * CPU, ours, are walked. 99 Hz, not 100, so the samples do not run in lockstep
 * with timers firing at round rates. At the end DTrace prints each stack,
 * innermost frame first, and its count; `system-simulator profile --stacks`
 * folds them (or scripts/trace profile, which does it for you). Default 60 s.
 *
 * EXAMPLE (cpu-hot-spot before its fix, 10 s; one stack of many):
 *   system-simulator`_ZN17simulator_service12request_path9normalise4trim25trim_end_scanning_forward17h...E+0x3e
 *   system-simulator`_ZN17simulator_service12request_path9normalise9digest_of17h...E+0x1e
 *   ...
 *   231
 */
#pragma D option quiet
#pragma D option statusrate=10hz
#pragma D option switchrate=10hz
#pragma D option defaultargs
#pragma D option ustackframes=64

BEGIN
{
	seconds = $1 > 0 ? $1 : 60;
	deadline = timestamp + seconds * 1000000000;
	printf("profile.d: sampling pid %d at 99 Hz for %d s\n", $target, seconds);
}

profile-99
/pid == $target/
{
	@[ustack()] = count();
}

tick-10hz
/timestamp >= deadline/
{
	exit(0);
}
