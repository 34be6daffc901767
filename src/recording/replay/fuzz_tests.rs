//! Recordings that are not what a recorder writes: random bytes, honest files
//! with bytes flipped (their checksums made right again, so the damage reaches
//! the decoders), ticks with any numbers, and a file of the smallest events.
//! Reading, filming and exporting them never panics, and what a read keeps
//! stays within its budget (`recording::MEMORY_PER_FILE_BYTE`).

use std::sync::OnceLock;

use proptest::prelude::*;

use super::film;
use crate::recording::export::perfetto;
use crate::recording::format::events::Packer;
use crate::recording::format::file::{Kind, Writer};
use crate::recording::format::{
    self as recording, EndBlock, Head, Item, ProbeEntry, Recording, Stop, TickBlock, MEMORY_FLOOR,
    MEMORY_PER_FILE_BYTE,
};

/// A recording's blocks as a recorder writes them.
fn blocks_of(recording: &Recording) -> Vec<(Kind, Vec<u8>)> {
    let table = Head::probe_table();
    let mut blocks = vec![(Kind::Head, serde_json::to_vec(&recording.head).unwrap())];
    let mut packer = Packer::default();
    for item in &recording.items {
        match item {
            Item::Event { at_ns, probe, args } => {
                let code = table.iter().position(|p| p.name == *probe).unwrap();
                packer.event(*at_ns, code as u8, table[code].args.len(), args);
            }
            Item::Lost(n) => packer.lost(*n),
            Item::Tick {
                second,
                unix_ms,
                tap_ns,
                stats,
            } => {
                if !packer.is_empty() {
                    blocks.push((Kind::Events, packer.take()));
                }
                let tick = TickBlock {
                    second: *second,
                    unix_ms: *unix_ms,
                    tap_ns: *tap_ns,
                    stats: serde_json::to_value(stats).unwrap(),
                };
                blocks.push((Kind::Tick, serde_json::to_vec(&tick).unwrap()));
            }
            Item::End { seconds, stats } => {
                let end = EndBlock {
                    seconds: *seconds,
                    stats: serde_json::to_value(stats).unwrap(),
                };
                blocks.push((Kind::End, serde_json::to_vec(&end).unwrap()));
            }
        }
    }
    blocks
}

fn file_of(blocks: &[(Kind, Vec<u8>)]) -> Vec<u8> {
    let mut file = Vec::new();
    let mut writer = Writer::new(&mut file).unwrap();
    for (kind, payload) in blocks {
        writer.block(*kind, payload).unwrap();
    }
    writer.flush().unwrap();
    file
}

fn honest() -> &'static [(Kind, Vec<u8>)] {
    static BLOCKS: OnceLock<Vec<(Kind, Vec<u8>)>> = OnceLock::new();
    BLOCKS.get_or_init(|| blocks_of(&film::fixture::recording(&[3, 0, 5, 7, 2])))
}

/// Everything a reader of `bytes` does: never a panic; what it keeps within budget.
fn read_all_of(bytes: &[u8]) {
    let Ok(recording) = recording::parse(bytes) else {
        return;
    };
    let budget = MEMORY_FLOOR + MEMORY_PER_FILE_BYTE * bytes.len();
    let kept = recording.items.len() * std::mem::size_of::<Item>();
    assert!(
        kept <= budget,
        "{kept} bytes of items from {} bytes",
        bytes.len()
    );
    let _ = recording.stop.told(recording.last_second());
    if let Ok(film) = film::make(&recording) {
        let _ = film.history_at(film.length_s());
        let _ = film.tick_at(film.length_s());
    }
    let _ = perfetto::export(&recording);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_are_refused_or_read_without_a_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        honest_start in any::<bool>(),
    ) {
        let mut file = bytes;
        if honest_start {
            file.splice(0..0, file_of(&honest()[..1]));
        }
        read_all_of(&file);
    }

    #[test]
    fn flipped_bytes_with_their_checksums_made_right_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let mut blocks = honest().to_vec();
        for (block, at, byte) in flips {
            let payload = &mut blocks[block.index(honest().len())].1;
            if !payload.is_empty() {
                let i = at.index(payload.len());
                payload[i] = byte;
            }
        }
        let mut file = file_of(&blocks);
        if let Some(cut) = cut {
            file.truncate(cut.index(file.len()));
        }
        read_all_of(&file);
    }

    #[test]
    fn ticks_with_any_numbers_never_panic(
        numbers in proptest::collection::vec((any::<u64>(), any::<u64>(), any::<u64>()), 1..8),
    ) {
        let mut blocks = honest().to_vec();
        let mut numbers = numbers.into_iter().cycle();
        for (kind, payload) in &mut blocks {
            if matches!(kind, Kind::Tick | Kind::End) {
                let mut json: serde_json::Value = serde_json::from_slice(payload).unwrap();
                let (a, b, c) = numbers.next().unwrap();
                for (field, n) in [("second", a), ("seconds", a), ("unix_ms", b), ("tap_ns", c)] {
                    if json.get(field).is_some() {
                        json[field] = n.into();
                    }
                }
                *payload = serde_json::to_vec(&json).unwrap();
            }
        }
        read_all_of(&file_of(&blocks));
    }
}

/// The smallest events there are (a probe recorded with no arguments: a code
/// and a one-byte time each), 4 MiB of them: two million, 320 MB as items. The
/// read stops at its budget and says so.
#[test]
fn a_file_of_the_smallest_events_is_read_to_its_budget_and_told() {
    let mut head: Head = serde_json::from_slice(&honest()[0].1).unwrap();
    head.probes = vec![ProbeEntry {
        name: head.probes[0].name.clone(),
        args: Vec::new(),
    }];
    let mut packer = Packer::default();
    for _ in 0..2 << 20 {
        packer.event(1, 0, 0, &[0; 6]);
    }
    let blocks = [
        (Kind::Head, serde_json::to_vec(&head).unwrap()),
        (Kind::Events, packer.take()),
    ];
    let file = file_of(&blocks);
    let read = recording::parse(&file).unwrap();
    let budget = MEMORY_FLOOR + MEMORY_PER_FILE_BYTE * file.len();
    let kept = read.items.capacity() * std::mem::size_of::<Item>();
    assert!(kept <= budget, "{kept} bytes kept of a budget of {budget}");
    match &read.stop {
        Stop::Damaged { why, .. } => assert!(why.contains("would take more than"), "{why}"),
        other => panic!("read whole past its budget: {other:?}"),
    }
}
