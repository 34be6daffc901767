//! Normalise: the step every element's record goes through before admission
//! (`normalise`), and the digest its reply carries.
//!
//! **Contract.** With `normalise = off` (the original) [`run`] does nothing and
//! the reply carries no digest. Otherwise it trims the element's record and
//! leaves one space between its fields, on tokio's blocking pool (so the
//! runtime's workers stay free, and `/healthz`, the timer canary and the
//! admission gate all look normal whatever it costs), and returns the CRC-32 of
//! the result (`simulator_api::record`). The record is the element's own bytes,
//! or, for a synthetic element, the record its id stands for, in the layout the
//! world gives it (`records_fixed_width`, the note's width from
//! `record_padding_cpu`: `calibration.rs`). The two ways to find where the
//! trailing whitespace begins (`trim.rs`) give the same text; what they cost
//! differs, and nothing here counts it: no probe, no figure in `/stats`. That is
//! exercise 11's point, found with a profile (`profile/`).

pub mod calibration;
pub mod trim;

use bytes::Bytes;
use simulator_api::record;
use simulator_api::settings::Normalise;
use simulator_api::Settings;
use tokio_util::sync::CancellationToken;

use super::network::CutShort;
use super::Element;

/// Normalises request `id`'s record as `settings` say; its digest, or `None`
/// when the service does not normalise. Shutdown ends the wait, not the step.
pub async fn run(
    id: u64,
    element: &Element,
    settings: &Settings,
    stop: &CancellationToken,
) -> Result<Option<u32>, CutShort> {
    let how = settings.normalise;
    if how == Normalise::Off {
        return Ok(None);
    }
    let text = match element {
        Element::Bytes(bytes) => Source::Bytes(bytes.clone()),
        Element::Synthetic(_) => Source::Record {
            id,
            share: settings.records_fixed_width,
            note_width: calibration::note_width(settings.record_padding_cpu),
        },
    };
    let step = tokio::task::spawn_blocking(move || text.normalised_digest(how));
    tokio::select! {
        digest = step => digest.map(Some).map_err(|_| CutShort),
        () = stop.cancelled() => Err(CutShort),
    }
}

/// The text a request's record is read from.
enum Source {
    Bytes(Bytes),
    Record {
        id: u64,
        share: f64,
        note_width: usize,
    },
}

impl Source {
    fn normalised_digest(self, how: Normalise) -> u32 {
        match self {
            Source::Bytes(bytes) => digest_of(&bytes, how),
            Source::Record {
                id,
                share,
                note_width,
            } => digest_of(record::arriving(id, share, note_width).as_bytes(), how),
        }
    }
}

/// The record trimmed `how` says, split into its fields, one space apart, and
/// that text's CRC-32.
pub fn digest_of(text: &[u8], how: Normalise) -> u32 {
    let trimmed = match how {
        Normalise::ScanForward => trim::trim_end_scanning_forward(text),
        Normalise::ScanBack | Normalise::Off => trim::trim_end_scanning_back(text),
    };
    record::digest(&record::normalised(trimmed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways_give_the_reference_digest() {
        for id in [0, 5, 99_999] {
            for text in [record::delimited(id), record::fixed_width(id, 500)] {
                for how in [Normalise::ScanForward, Normalise::ScanBack] {
                    assert_eq!(
                        digest_of(text.as_bytes(), how),
                        record::reference_digest(id)
                    );
                }
            }
        }
    }

    #[tokio::test]
    async fn off_gives_no_digest_and_a_synthetic_element_its_ids_record() {
        let mut settings = Settings::default();
        let stop = CancellationToken::new();
        let element = Element::Synthetic(10);
        assert_eq!(run(7, &element, &settings, &stop).await, Ok(None));
        settings.normalise = Normalise::ScanBack;
        settings.records_fixed_width = 1.0;
        let got = run(7, &element, &settings, &stop).await;
        assert_eq!(got, Ok(Some(record::reference_digest(7))));
        let own = Element::Bytes(Bytes::from_static(b"  a   b  "));
        let got = run(7, &own, &settings, &stop).await;
        assert_eq!(got, Ok(Some(record::digest(b"a b"))));
    }
}
