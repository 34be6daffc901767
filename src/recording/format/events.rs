//! A block of events, packed: the first event's time, then each event as its
//! probe's code (its place in the head's probe table), the ns since the event
//! before it (signed), and the probe's declared arguments, every number a
//! varint (postcard's encoding; zigzag for the signed). A probe's unused argument words are not written, and a
//! request's ids and times are small numbers, so an event takes a few bytes where
//! the tap's text line takes forty.
//!
//! Each event stands on its own after the one before, so a block cut short still
//! gives every event up to its last whole one ([`unpack`]).

use serde::de::DeserializeOwned;

/// The code of a `lost N` mark: the tap dropped N events there.
pub const LOST: u8 = u8::MAX;

/// An event as a recording holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packed {
    Event {
        at_ns: u64,
        /// The probe's place in the head's table.
        code: u8,
        args: [u64; 6],
    },
    /// The tap dropped this many events here (its reader fell a ring behind).
    Lost(u64),
}

/// Packs events into one block's payload.
#[derive(Debug, Default)]
pub struct Packer {
    bytes: Vec<u8>,
    /// The time of the last event packed, which the next one is written after.
    last_ns: Option<u64>,
    events: u64,
}

impl Packer {
    /// `args` of the probe's `arity` declared arguments are written.
    pub fn event(&mut self, at_ns: u64, code: u8, arity: usize, args: &[u64; 6]) {
        // Signed: the ring keeps the order events were claimed in, and a sender
        // preempted between its clock read and its claim comes after a later
        // time. Its own time is kept, so a replay gives what the tap gave.
        let delta = match self.last_ns {
            None => {
                push(&mut self.bytes, at_ns);
                0
            }
            Some(last) => at_ns as i64 - last as i64,
        };
        self.last_ns = Some(at_ns);
        self.bytes.push(code);
        push(&mut self.bytes, delta);
        for &arg in &args[..arity.min(6)] {
            push(&mut self.bytes, arg);
        }
        self.events += 1;
    }

    pub fn lost(&mut self, count: u64) {
        if self.last_ns.is_none() {
            push(&mut self.bytes, 0u64);
            self.last_ns = Some(0);
        }
        self.bytes.push(LOST);
        push(&mut self.bytes, count);
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Events packed since the last [`take`](Self::take).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The payload, and a fresh packer for the next block.
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(self).bytes
    }
}

fn push(bytes: &mut Vec<u8>, value: impl serde::Serialize) {
    // A u64's varint is at most 10 bytes, so this cannot fail.
    let mut varint = [0u8; 10];
    if let Ok(used) = postcard::to_slice(&value, &mut varint) {
        bytes.extend_from_slice(used);
    }
}

/// The events of a payload, up to its last whole one and `most` at most;
/// `arity(code)` is how many arguments that probe was recorded with (none for
/// a code not in the table). The second value is false when the payload
/// stopped inside an event, held a code the table does not have, or held more
/// than `most`: what came before is still good.
pub fn unpack(
    payload: &[u8],
    arity: impl Fn(u8) -> Option<usize>,
    most: usize,
) -> (Vec<Packed>, bool) {
    let mut events = Vec::new();
    let Some((mut at_ns, mut rest)) = take::<u64>(payload) else {
        return (events, payload.is_empty());
    };
    while let Some((&code, after)) = rest.split_first() {
        if events.len() == most {
            return (events, false);
        }
        let whole = (|| {
            if code == LOST {
                let (count, after) = take::<u64>(after)?;
                return Some((Packed::Lost(count), after));
            }
            let (delta, mut after) = take::<i64>(after)?;
            let mut args = [0; 6];
            for slot in args.iter_mut().take(arity(code)?) {
                let (value, next) = take::<u64>(after)?;
                *slot = value;
                after = next;
            }
            at_ns = at_ns.checked_add_signed(delta)?;
            Some((Packed::Event { at_ns, code, args }, after))
        })();
        let Some((event, after)) = whole else {
            return (events, false);
        };
        events.push(event);
        rest = after;
    }
    (events, true)
}

fn take<T: DeserializeOwned>(bytes: &[u8]) -> Option<(T, &[u8])> {
    postcard::take_from_bytes(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arity(code: u8) -> Option<usize> {
        (code < 3).then_some(code as usize + 1)
    }

    #[test]
    fn events_come_back_as_packed_with_their_times_even_out_of_order() {
        let mut p = Packer::default();
        p.event(1_000_000, 0, 1, &[7, 99, 0, 0, 0, 0]);
        p.event(1_000_500, 2, 3, &[8, u64::MAX, 3, 0, 0, 0]);
        p.event(1_000_400, 0, 1, &[6, 0, 0, 0, 0, 0]);
        p.lost(12);
        p.event(2_000_000, 1, 2, &[9, 10, 0, 0, 0, 0]);
        let payload = p.take();
        let (events, whole) = unpack(&payload, arity, usize::MAX);
        assert!(whole);
        assert_eq!(
            events,
            vec![
                Packed::Event {
                    at_ns: 1_000_000,
                    code: 0,
                    args: [7, 0, 0, 0, 0, 0]
                },
                Packed::Event {
                    at_ns: 1_000_500,
                    code: 2,
                    args: [8, u64::MAX, 3, 0, 0, 0]
                },
                Packed::Event {
                    at_ns: 1_000_400,
                    code: 0,
                    args: [6, 0, 0, 0, 0, 0]
                },
                Packed::Lost(12),
                Packed::Event {
                    at_ns: 2_000_000,
                    code: 1,
                    args: [9, 10, 0, 0, 0, 0]
                },
            ]
        );
        assert!(p.is_empty(), "take leaves a fresh packer");
    }

    #[test]
    fn a_payload_cut_anywhere_gives_every_event_before_the_cut() {
        let mut p = Packer::default();
        for i in 0..20u64 {
            p.event(i * 1_000_003, (i % 3) as u8, (i % 3) as usize + 1, &[i; 6]);
        }
        let payload = p.take();
        let (all, _) = unpack(&payload, arity, usize::MAX);
        for cut in 0..payload.len() {
            let (events, _) = unpack(&payload[..cut], arity, usize::MAX);
            assert_eq!(events[..], all[..events.len()], "cut at {cut}");
        }
    }

    #[test]
    fn a_code_the_table_lacks_stops_the_block_there() {
        let mut p = Packer::default();
        p.event(5, 0, 1, &[1; 6]);
        p.event(6, 9, 0, &[0; 6]);
        let (events, whole) = unpack(&p.take(), arity, usize::MAX);
        assert_eq!(events.len(), 1);
        assert!(!whole);
    }

    #[test]
    fn an_event_of_a_request_takes_a_few_bytes() {
        let mut p = Packer::default();
        for id in 100_000..101_000u64 {
            p.event(id * 50_000, 1, 2, &[id, 12_345, 0, 0, 0, 0]);
        }
        // time delta (3 bytes), code, id (3), 12,345 (2)
        assert!(p.len() <= 1_000 * 9 + 10, "{} bytes", p.len());
    }
}
