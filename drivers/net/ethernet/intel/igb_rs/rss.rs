// SPDX-License-Identifier: GPL-2.0

//! Receive side scaling: the indirection table and the Toeplitz key as
//! `ethtool -X` sets them, written to the device together with the flow
//! steering rules (`steer.rs`) that take buckets over.

use crate::{
    hash,
    steer,
    DEFAULT_QUEUES, //
};
use kernel::prelude::*;

/// Entries of the RSS indirection table.
pub(crate) const RETA_SIZE: usize = 128;
/// Bytes of the RSS hash key.
pub(crate) const RSS_KEY_SIZE: usize = 40;

/// The RSS configuration: which queue each hash bucket goes to, and the
/// Toeplitz key; and the flow steering rules, which take buckets over.
pub(crate) struct Rss {
    pub(crate) reta: [u8; RETA_SIZE],
    pub(crate) key: [u8; RSS_KEY_SIZE],
    pub(crate) fields: hash::Fields,
    pub(crate) steer: steer::Steering,
}

impl Rss {
    /// The system's key, buckets spread evenly over the queue pairs in
    /// use; five-tuple filters if the device `has_filters`.
    /// Made in place: the table, the key and the flow rules (about 1 KiB)
    /// stay off the stack.
    pub(crate) fn new(has_filters: bool) -> impl Init<Self> {
        init!(Self {
            reta: [0; RETA_SIZE],
            key: [0; RSS_KEY_SIZE],
            fields: hash::Fields::TCP_ONLY,
            steer: steer::Steering::new(has_filters),
        })
        .chain(|rss| {
            kernel::net::driver::rss_key_fill(&mut rss.key);
            rss.spread(DEFAULT_QUEUES);
            Ok(())
        })
    }

    /// Spreads the buckets evenly over `n` queue pairs.
    pub(crate) fn spread(&mut self, n: usize) {
        for (i, e) in self.reta.iter_mut().enumerate() {
            // CAST: below QUEUES.
            *e = (i % n.max(1)) as u8;
        }
    }

    /// The four entries of RETA register `g`: the table's, or a rule's.
    pub(crate) fn reta_reg(&self, g: usize) -> u32 {
        let mut v = [0u8; 4];
        for (k, e) in v.iter_mut().enumerate() {
            let b = 4 * g + k;
            *e = match self.steer.queue_of(b) {
                // CAST: the rule's queue was checked against QUEUES.
                Some(q) => q as u8,
                None => self.reta.get(b).copied().unwrap_or(0),
            };
        }
        u32::from_le_bytes(v)
    }
}
