//! The element a request carries through the path.

use bytes::Bytes;

/// What a request asks to store: real bytes, or just a size (`{"size": N}`) so a
/// client can simulate large elements without sending them.
#[derive(Debug, Clone)]
pub enum Element {
    Bytes(Bytes),
    Synthetic(u64),
}

impl Element {
    pub fn len(&self) -> u64 {
        match self {
            Element::Bytes(b) => b.len() as u64,
            Element::Synthetic(n) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
