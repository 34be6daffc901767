//! The `.isim` file's frame: a magic line and a version, then blocks, each a
//! kind, a length and a CRC-32 before its payload. This module writes blocks and
//! cuts a file back into them; what a block holds is `mod.rs`'s and `events.rs`'s.
//!
//! Written by hand, not as one serde document, because a recording must survive
//! its recorder being killed: a block is whole once its last byte is written, a
//! reader finds where a cut file stops being whole, and a flipped byte fails its
//! block's checksum rather than decoding into other numbers. The layout:
//!
//! ```text
//! "ISIMREC\n"  u16 version (LE)   then blocks:
//! u8 kind   u32 payload length (LE)   u32 CRC-32 of the payload (LE)   payload
//! ```

use std::io::Write;

/// The first bytes of every recording.
pub const MAGIC: &[u8; 8] = b"ISIMREC\n";
/// The version this build writes and the newest it reads.
pub const VERSION: u16 = 2;
/// A block's kind, length and checksum.
const BLOCK_HEAD: usize = 9;
/// The largest payload a reader accepts: a length over it is damage, not a block
/// (the recorder writes events in blocks of at most [`crate::recording::EVENTS_BLOCK`]).
pub const MAX_PAYLOAD: usize = 64 << 20;

/// What a block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// JSON: who recorded what, and the probe table the events' codes index.
    Head = 1,
    /// Packed events (`events.rs`).
    Events = 2,
    /// JSON: a second has passed; `/stats` as read then.
    Tick = 3,
    /// JSON: the recording ended in order.
    End = 4,
    /// JSON: a CPU profile the server took of itself during the recording.
    Profile = 5,
    /// JSON: the server's trail as it stood then (format 2 on).
    Trail = 6,
}

impl Kind {
    fn of(byte: u8) -> Option<Kind> {
        [
            Kind::Head,
            Kind::Events,
            Kind::Tick,
            Kind::End,
            Kind::Profile,
            Kind::Trail,
        ]
        .into_iter()
        .find(|k| *k as u8 == byte)
    }
}

/// Writes the magic and the version, then blocks.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    written: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W) -> std::io::Result<Self> {
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        Ok(Writer {
            out,
            written: (MAGIC.len() + 2) as u64,
        })
    }

    /// One block, head and payload in one write, so a block is whole or cut.
    pub fn block(&mut self, kind: Kind, payload: &[u8]) -> std::io::Result<()> {
        let length = u32::try_from(payload.len())
            .ok()
            .filter(|&n| n as usize <= MAX_PAYLOAD)
            .ok_or_else(|| std::io::Error::other("a block over 64 MiB"))?;
        let mut block = Vec::with_capacity(BLOCK_HEAD + payload.len());
        block.push(kind as u8);
        block.extend_from_slice(&length.to_le_bytes());
        block.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        block.extend_from_slice(payload);
        self.out.write_all(&block)?;
        self.written += block.len() as u64;
        Ok(())
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }
}

/// Why a file is not a recording this build can read at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OpenError {
    #[error("not an isim recording: it does not start with ISIMREC")]
    NotARecording,
    #[error("recorded in format {0}, newer than this system-simulator reads (format {VERSION}): replay it with the version that recorded it, or a newer one")]
    Newer(u16),
}

/// A block, or where the blocks stop.
#[derive(Debug, PartialEq, Eq)]
pub enum Next<'a> {
    Block {
        kind: Kind,
        payload: &'a [u8],
    },
    /// The file ends inside a block (a recorder stopped mid-write): `part` is
    /// as much of its payload as is there. Nothing follows.
    Cut {
        kind: Option<Kind>,
        part: &'a [u8],
    },
    /// The next bytes are not a block: a bad checksum, kind or length.
    Damaged {
        why: String,
    },
    End,
}

/// Cuts a file's bytes into blocks, in order.
#[derive(Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    stopped: bool,
}

impl<'a> Reader<'a> {
    /// Checks the magic and the version.
    pub fn new(bytes: &'a [u8]) -> Result<Self, OpenError> {
        let head = MAGIC.len() + 2;
        if bytes.len() < head || &bytes[..MAGIC.len()] != MAGIC {
            return Err(OpenError::NotARecording);
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version > VERSION {
            return Err(OpenError::Newer(version));
        }
        Ok(Reader {
            bytes,
            at: head,
            stopped: false,
        })
    }

    /// The byte where the next block begins (or where the file stopped being whole).
    pub fn at(&self) -> usize {
        self.at
    }

    pub fn next_block(&mut self) -> Next<'a> {
        if self.stopped {
            return Next::End;
        }
        let rest = &self.bytes[self.at..];
        if rest.is_empty() {
            return Next::End;
        }
        if rest.len() < BLOCK_HEAD {
            self.stopped = true;
            return Next::Cut {
                kind: Kind::of(rest[0]),
                part: &[],
            };
        }
        let kind = Kind::of(rest[0]);
        let length = u32::from_le_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        let crc = u32::from_le_bytes([rest[5], rest[6], rest[7], rest[8]]);
        let damaged = |why: String| Next::Damaged { why };
        let Some(kind) = kind else {
            self.stopped = true;
            return damaged(format!("a block of unknown kind {}", rest[0]));
        };
        if length > MAX_PAYLOAD {
            self.stopped = true;
            return damaged(format!("a block that says it is {length} bytes long"));
        }
        let payload = &rest[BLOCK_HEAD..];
        if payload.len() < length {
            self.stopped = true;
            return Next::Cut {
                kind: Some(kind),
                part: payload,
            };
        }
        let payload = &payload[..length];
        if crc32fast::hash(payload) != crc {
            self.stopped = true;
            return damaged(format!("a {kind:?} block whose checksum does not match"));
        }
        self.at += BLOCK_HEAD + length;
        Next::Block { kind, payload }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(blocks: &[(Kind, &[u8])]) -> Vec<u8> {
        let mut w = Writer::new(Vec::new()).unwrap();
        for (kind, payload) in blocks {
            w.block(*kind, payload).unwrap();
        }
        w.out
    }

    #[test]
    fn blocks_come_back_in_order_and_then_the_end() {
        let bytes = file(&[(Kind::Head, b"{}"), (Kind::Events, &[1, 2, 3])]);
        let mut r = Reader::new(&bytes).unwrap();
        assert_eq!(
            r.next_block(),
            Next::Block {
                kind: Kind::Head,
                payload: b"{}"
            }
        );
        assert_eq!(
            r.next_block(),
            Next::Block {
                kind: Kind::Events,
                payload: &[1, 2, 3]
            }
        );
        assert_eq!(r.next_block(), Next::End);
        assert_eq!(r.at(), bytes.len());
    }

    #[test]
    fn a_file_cut_anywhere_gives_its_whole_blocks_then_the_part() {
        let bytes = file(&[(Kind::Head, b"{}"), (Kind::Events, &[7; 40])]);
        let first_block_ends = 10 + 9 + 2;
        for cut in first_block_ends + 1..bytes.len() {
            let mut r = Reader::new(&bytes[..cut]).unwrap();
            assert!(matches!(r.next_block(), Next::Block { .. }));
            match r.next_block() {
                Next::Cut { part, .. } => assert_eq!(part.len(), cut.saturating_sub(30)),
                other => panic!("cut at {cut}: {other:?}"),
            }
            assert_eq!(r.next_block(), Next::End);
        }
    }

    #[test]
    fn a_flipped_byte_is_damage_and_not_other_numbers() {
        let mut bytes = file(&[(Kind::Events, &[1, 2, 3, 4])]);
        let last = bytes.len() - 1;
        bytes[last] ^= 0x10;
        let mut r = Reader::new(&bytes).unwrap();
        assert!(matches!(r.next_block(), Next::Damaged { .. }));
        assert_eq!(r.next_block(), Next::End);
    }

    #[test]
    fn other_files_and_newer_formats_are_told_apart() {
        assert_eq!(
            Reader::new(b"{\"json\": 1}").unwrap_err(),
            OpenError::NotARecording
        );
        let mut bytes = file(&[]);
        let newer = VERSION + 1;
        bytes[8..10].copy_from_slice(&newer.to_le_bytes());
        assert_eq!(Reader::new(&bytes).unwrap_err(), OpenError::Newer(newer));
        assert!(OpenError::Newer(newer)
            .to_string()
            .contains(&format!("format {newer}")));
        // A recording of format 1 (before the trail) is still read.
        bytes[8..10].copy_from_slice(&1u16.to_le_bytes());
        assert!(Reader::new(&bytes).is_ok());
    }
}
