//! A new connection's handshake (`handshake_cpu`): CPU the server spends on a
//! connection before its first request, as a TLS handshake's key exchange and
//! signature, and where that CPU is spent (`handshake_on`).
//!
//! The cost is thread CPU time (`cpu-time`'s `ThreadTime`), spent in a loop of
//! arithmetic, so it is the same CPU on a fast laptop and a slow one and lasts
//! longer in wall time only when the thread waits for a core, as the real
//! handshake would. Where it runs is the lesson: inline in the accept loop it
//! serialises accepting, one handshake at a time, while the connections not yet
//! taken wait in the kernel's accept queue; on the connection's own task many
//! run at once, on every async worker. (A pool of their own was tried and left
//! out: on a 2-core machine its spinning threads took the CPU the clients beside
//! the server needed to open their connections.)

use std::time::Duration;

/// Spends `cpu` of this thread's CPU time.
pub fn spend(cpu: Duration) {
    if cpu.is_zero() {
        return;
    }
    let began = cpu_time::ThreadTime::now();
    let mut x = 0x9E37_79B9_7F4A_7C15_u64;
    while began.elapsed() < cpu {
        // A few microseconds of arithmetic between looks at the clock.
        for _ in 0..2_000 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
        }
        std::hint::black_box(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handshake_costs_its_cpu_time() {
        let began = cpu_time::ThreadTime::now();
        spend(Duration::from_millis(20));
        let spent = began.elapsed();
        assert!(spent >= Duration::from_millis(20), "{spent:?}");
        assert!(spent < Duration::from_millis(40), "{spent:?}");
    }
}
