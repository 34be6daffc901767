//! A few descriptors held in reserve, so the operator's listener can still
//! accept a connection when the process has run out (EMFILE): it closes one of
//! these, which frees a slot of the descriptor table, and accepts again at once
//! (libev's documentation calls this "the special problem of accept()ing when
//! you can't"). Each is `/dev/null`, opened for reading; elsewhere than Unix
//! the reserve is empty and lends nothing.
//!
//! No crate does this: it is a handful of files in a mutex. The freed slot is
//! the kernel's to give to whichever thread asks first, so a request opening a
//! file at the same instant can take it; then the listener's accept fails
//! again, it lends the next, and after the last it waits as the data port does.

use std::fs::File;
use std::sync::Mutex;

/// What the operator's listener keeps: a few dashboards or `curl`s at once
/// while the process is out of descriptors.
pub const OPERATOR_RESERVE: usize = 4;

#[derive(Debug)]
pub struct DescriptorReserve {
    held: Mutex<Vec<File>>,
    wanted: usize,
}

impl DescriptorReserve {
    /// A reserve of `wanted` descriptors, opened now (as many as can be).
    pub fn new(wanted: usize) -> DescriptorReserve {
        let reserve = DescriptorReserve {
            held: Mutex::new(Vec::with_capacity(wanted)),
            wanted,
        };
        reserve.refill();
        reserve
    }

    /// Closes one held descriptor, freeing its slot; false when none is left.
    pub fn lend(&self) -> bool {
        self.lock().pop().is_some()
    }

    /// Opens descriptors again up to the reserve's size, while the process has
    /// slots free: after a connection it lent for has closed.
    pub fn refill(&self) {
        let mut held = self.lock();
        while held.len() < self.wanted {
            match open_one() {
                Some(file) => held.push(file),
                None => break,
            }
        }
    }

    /// Descriptors held now.
    pub fn held(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<File>> {
        // A panic while holding it leaves a list of files, still whole.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(unix)]
fn open_one() -> Option<File> {
    File::open("/dev/null").ok()
}

#[cfg(not(unix))]
fn open_one() -> Option<File> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn it_lends_what_it_holds_and_refills_to_its_size() {
        let reserve = DescriptorReserve::new(3);
        assert_eq!(reserve.held(), 3);
        assert!(reserve.lend() && reserve.lend() && reserve.lend());
        assert!(!reserve.lend(), "nothing left to lend");
        reserve.refill();
        assert_eq!(reserve.held(), 3);
    }
}
