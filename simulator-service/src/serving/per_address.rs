//! The connections one network address may hold at once, for a listener
//! others share (the room on a venue's network). One laptop that opens
//! thousands of sockets would otherwise take every slot of the listener's
//! connection limit; with this it takes its own share and the rest answer.
//!
//! Loopback addresses count as any other: the tests reach the room over
//! them, and a facilitator's own page and checks are a few connections. The
//! map holds an entry only while its address has a connection open, so it
//! is bounded by the listener's connection limit.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Open connections per address, and the most each may hold.
#[derive(Debug)]
pub struct PerAddress {
    most: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection's place in its address's count: given back on drop.
#[derive(Debug)]
pub struct AddressSlot {
    counts: Arc<PerAddress>,
    ip: IpAddr,
}

impl PerAddress {
    pub fn new(most: usize) -> Arc<PerAddress> {
        Arc::new(PerAddress {
            most,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for a connection from `ip`, or `None` when `ip` holds its most.
    pub fn take(self: &Arc<Self>, ip: IpAddr) -> Option<AddressSlot> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let held = open.entry(ip).or_insert(0);
        if *held >= self.most {
            return None;
        }
        *held += 1;
        Some(AddressSlot {
            counts: Arc::clone(self),
            ip,
        })
    }

    #[cfg(test)]
    fn addresses(&self) -> usize {
        self.open.lock().unwrap().len()
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.counts.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = open.get_mut(&self.ip) {
            *held -= 1;
            if *held == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_its_most_and_gives_them_back() {
        let counts = PerAddress::new(2);
        let laptop: IpAddr = "10.0.0.5".parse().unwrap();
        let a = counts.take(laptop).unwrap();
        let b = counts.take(laptop).unwrap();
        assert!(counts.take(laptop).is_none());
        let other = counts.take("10.0.0.6".parse().unwrap());
        assert!(other.is_some());
        drop((a, other));
        let c = counts.take(laptop);
        assert!(c.is_some());
        drop((b, c));
        assert_eq!(counts.addresses(), 0, "no entry outlives its connections");
    }
}
