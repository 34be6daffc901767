//! The `isim` USDT provider: the probe contract of the workshop.
//!
//! The names and argument orders here are what every D and bpftrace script in
//! `scripts/` and the seed's own scripts rely on (`isim*:::request-start` and so on);
//! `__` in a Rust name becomes `-` in the probe name. arg0 is always the request id
//! (a `u64`), so a script pairs events with `follow[arg0]` rather than with `self->`
//! thread-locals, which are wrong in async code: a tokio task can run its
//! request-start on one OS thread and its request-done on another.
//!
//! Arguments are plain integers because bpftrace and DTrace for Linux cannot take
//! JSON apart. A probe costs about one load and a branch while nobody traces it; the
//! argument closures are only evaluated when a tracer has enabled the probe.
//!
//! The probes are declared with every other part of their event in
//! `simulator_api::events` (`with_events!`). Do not fire them directly: `events.rs`
//! fires each probe together with the counter and metric that must agree with it.

/// The `isim` provider, made from [`simulator_api::with_events!`]: one probe a
/// declared event, each argument a `u64` in the order declared. With the `probes`
/// feature off (`cargo build --no-default-features`) there is no provider: the
/// event path's `fire!` drops its argument closure uncalled, so the binary has no
/// stapsdt notes and the event path no probe sites at all
/// (`tools/bench/probes.py` measures the difference, `docs/performance.md`).
/// usdt's own no-op backend is chosen by target OS in its build script, not by a
/// feature, so it cannot stand in for that build.
macro_rules! isim_provider {
    ($(
        $probe:ident $name:literal $when:literal
        ( $( $arg:ident : $meaning:literal ),* $(,)? )
        counters [ $( $counters:tt )* ]
        histograms [ $( $histograms:tt )* ];
    )*) => {
        #[cfg(feature = "probes")]
        #[usdt::provider]
        pub mod isim {
            $( fn $probe( $( $arg: u64 ),* ) {} )*
        }

        /// Each event's place in `simulator_api::events::EVENTS` (the order of
        /// `with_events!`): its number on the probe tap (`tap.rs`).
        #[allow(non_camel_case_types)]
        #[cfg_attr(not(feature = "probes"), allow(dead_code))]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ProbeId { $( $probe ),* }

        /// Each probe's Rust name beside its declared name: usdt names the probe
        /// after the function (`__` becomes `-`), so the two must agree.
        #[cfg(test)]
        const RUST_NAMES: &[(&str, &str)] = &[ $( (stringify!($probe), $name) ),* ];
    };
}

simulator_api::with_events!(isim_provider);

/// Every probe name, as tracers see it. Tests check the binary against this list.
pub fn probe_names() -> Vec<&'static str> {
    simulator_api::events::probe_names().collect()
}

/// Makes the probes visible to DTrace. On Linux the stapsdt notes need no
/// registration, so a failure only matters on DTrace systems; it is logged, not fatal,
/// because the simulator is still useful without tracing.
pub fn register() {
    #[cfg(feature = "probes")]
    if let Err(err) = usdt::register_probes() {
        tracing::warn!(%err, "could not register the isim USDT probes; tracing will see nothing");
    }
    #[cfg(not(feature = "probes"))]
    tracing::warn!("built without the probes feature: no isim probes to trace");
}

/// Ready-to-paste commands that trace process `pid` with `scripts`, the scenario's
/// own (its page's, in its order; `count` where it names none), for the banners
/// of `serve`, `demo` and `workshop start`: the first through `scripts/trace` (as
/// root, and without root over the probe tap or the kernel's counters), the
/// others named, and the first by hand in the form this platform needs.
pub fn trace_commands(pid: u32, scripts: &[String]) -> Vec<String> {
    if cfg!(not(feature = "probes")) {
        return vec!["(built without the probes feature: nothing to trace; rebuild with the default features)".into()];
    }
    let first = scripts.first().map_or("count", String::as_str);
    let also = match scripts.get(1..).unwrap_or_default() {
        [] => String::new(),
        rest => format!("        (also {})", rest.join(", ")),
    };
    let mut commands = vec![
        format!("sudo scripts/trace {first} {pid}{also}"),
        format!("scripts/trace {first} {pid}             (no root: the same report from the server's probe tap; `system-simulator doctor` says which way you trace)"),
    ];
    if crate::platform::os::THIS == crate::platform::os::Os::Linux {
        // SECONDS, then the pid the kernel-side scripts filter on (as
        // scripts/trace passes them); memory.bt's uprobes also name the
        // server's binary, and it keeps a key for every big block held.
        commands.push(match first {
            "memory" => format!(
                "sudo BPFTRACE_MAP_KEYS_MAX=1000000 bpftrace -p {pid} scripts/memory.bt 60 {pid} /proc/{pid}/exe"
            ),
            _ => format!("sudo bpftrace -p {pid} scripts/{first}.bt 60 {pid}"),
        });
    } else {
        commands.push(format!("sudo dtrace -p {pid} -s scripts/{first}.d"));
    }
    commands
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_probe_is_named_as_usdt_names_its_function() {
        for (rust, declared) in super::RUST_NAMES {
            assert_eq!(rust.replace("__", "-"), *declared);
        }
        assert_eq!(super::RUST_NAMES.len(), super::probe_names().len());
    }

    #[test]
    fn each_probe_id_is_its_place_among_the_events() {
        use super::ProbeId;
        let events = simulator_api::events::EVENTS;
        assert_eq!(
            events[ProbeId::request__start as usize].probe,
            "request-start"
        );
        assert_eq!(events[ProbeId::canary__tick as usize].probe, "canary-tick");
        for (i, (rust, _)) in super::RUST_NAMES.iter().enumerate() {
            assert_eq!(events[i].probe, rust.replace("__", "-"));
        }
    }
}
