//! The record an element carries, as the server normalises it and the clients
//! check it: one definition for both, so a reply's digest can be checked against
//! the reference for every element of a load.
//!
//! A synthetic element (`{"size": N}`) stands for a record of a partner's
//! export: its fields are made from the element's id ([`fields`]), and it arrives
//! in one of two layouts: delimited (one space between fields), or fixed-width
//! (each field padded with spaces to its column, the note to `note_width`
//! columns, and a two-letter status last: [`fixed_width`]). Normalising a record
//! trims it and leaves one space between fields, so both layouts of one record
//! normalise to the same text, [`delimited`], and a reply's digest (the CRC-32 of
//! the normalised text: [`digest`]) is [`reference_digest`] of its id whatever
//! the layout. A server that skips the step, cuts the record short or keeps its
//! padding replies with another digest, or none.
//!
//! Which ids arrive fixed-width is the world's (`records_fixed_width`, a share):
//! [`is_fixed_width`] picks them by a hash of the id, the same ids on every
//! machine and in every run.

/// The status every record ends with.
const STATUS: &str = "OK";
/// The columns of the fixed-width layout before the note: id, account, amount.
const COLUMNS: [usize; 3] = [12, 14, 12];
/// The note's column when the world does not size it (`record_padding_cpu = 0`):
/// a punched card's width.
pub const DEFAULT_NOTE_WIDTH: usize = 80;

const NOTES: [&str; 8] = [
    "paid in full",
    "second instalment",
    "refund requested",
    "card on file",
    "invoice attached",
    "standing order",
    "late fee waived",
    "address changed",
];

/// A well-mixed 64-bit hash of `x` (splitmix64's finaliser): the fields and the
/// layout of a record follow from its id alone.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Record `id`'s fields: its id, an account, an amount and a note.
pub fn fields(id: u64) -> [String; 4] {
    let h = mix(id);
    [
        format!("{id:010}"),
        format!("ACCT-{:06}", h % 1_000_000),
        format!("{}.{:02}", (h >> 20) % 10_000, (h >> 40) % 100),
        NOTES[(h >> 56) as usize % NOTES.len()].to_owned(),
    ]
}

/// Record `id` delimited: its fields and status, one space apart. This is also
/// what normalising either layout gives.
pub fn delimited(id: u64) -> String {
    let mut text = fields(id).join(" ");
    text.push(' ');
    text.push_str(STATUS);
    text
}

/// Record `id` in the fixed-width layout, its note padded to `note_width`
/// columns (at least the note's own length) before the status.
pub fn fixed_width(id: u64, note_width: usize) -> String {
    let [id_text, account, amount, note] = fields(id);
    let mut text = String::with_capacity(COLUMNS.iter().sum::<usize>() + note_width + 3);
    // Each field is padded to its column less one and then a space, so a field
    // as wide as its column still ends before the next one begins.
    for (field, width) in [id_text, account, amount].iter().zip(COLUMNS) {
        text.push_str(&format!("{field:<w$} ", w = width - 1));
    }
    text.push_str(&format!("{note:<note_width$} "));
    text.push_str(STATUS);
    text
}

/// Whether record `id` arrives fixed-width when that is `share` of the records.
pub fn is_fixed_width(id: u64, share: f64) -> bool {
    // The top 53 bits as a fraction in [0, 1): exact in an f64.
    let fraction = (mix(id ^ 0x5eed_f1ed) >> 11) as f64 / (1u64 << 53) as f64;
    fraction < share
}

/// Record `id` as it arrives when `share` of the records are fixed-width.
pub fn arriving(id: u64, share: f64, note_width: usize) -> String {
    match is_fixed_width(id, share) {
        true => fixed_width(id, note_width),
        false => delimited(id),
    }
}

/// The reference normalisation: trimmed, one space between fields.
pub fn normalised(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for word in text
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(b' ');
        }
        out.extend_from_slice(word);
    }
    out
}

/// The digest a reply carries: the CRC-32 (IEEE) of the normalised record.
pub fn digest(normalised: &[u8]) -> u32 {
    crc32fast::hash(normalised)
}

/// The digest of record `id` normalised, whatever layout it arrived in.
pub fn reference_digest(id: u64) -> u32 {
    digest(delimited(id).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_normalise_to_the_delimited_record() {
        for id in [0, 1, 7, 12_345, u64::MAX] {
            let wide = fixed_width(id, 30_000);
            if id < 10_000_000_000 {
                assert_eq!(wide.len(), 12 + 14 + 12 + 30_000 + 1 + 2);
            }
            assert!(wide.ends_with(" OK"), "{:?}", &wide[wide.len() - 5..]);
            assert_eq!(normalised(wide.as_bytes()), delimited(id).as_bytes());
            assert_eq!(
                normalised(delimited(id).as_bytes()),
                delimited(id).as_bytes()
            );
            assert_eq!(digest(&normalised(wide.as_bytes())), reference_digest(id));
        }
        // A note wider than its column is not cut.
        assert_eq!(
            normalised(fixed_width(3, 1).as_bytes()),
            delimited(3).as_bytes()
        );
    }

    #[test]
    fn the_share_of_fixed_width_records_is_what_the_world_says() {
        for share in [0.0, 0.05, 0.5, 1.0] {
            let n = (0..100_000u64)
                .filter(|&id| is_fixed_width(id, share))
                .count();
            let got = n as f64 / 100_000.0;
            assert!((got - share).abs() < 0.005, "share {share}: {got}");
        }
    }

    #[test]
    fn a_record_cut_short_or_left_padded_has_another_digest() {
        let id = 42;
        let right = reference_digest(id);
        let text = delimited(id);
        assert_ne!(digest(&text.as_bytes()[..text.len() - 1]), right);
        assert_ne!(digest(fixed_width(id, 80).as_bytes()), right);
        assert_ne!(digest(b""), right);
    }
}
