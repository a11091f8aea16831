// SPDX-License-Identifier: GPL-2.0

//! The driver's own counters (`ethtool -S`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h);
//! the core's side: `ETHTOOL_GSTATS` in
//! [`net/ethtool/ioctl.c`](srctree/net/ethtool/ioctl.c), the names in
//! [`net/ethtool/strset.c`](srctree/net/ethtool/strset.c)

use super::{
    Adapter,
    Ops, //
};
use crate::{
    net::driver::Device,
    prelude::*, //
};

impl<T: Ops> Adapter<T> {
    /// Whether the driver has counters of its own. The core warns about a
    /// driver that has `get_ethtool_stats` and no counter.
    pub(super) const fn has_stats() -> bool {
        assert!(
            !T::HAS_STATS || !T::STATS.is_empty(),
            "stats needs at least one name in STATS"
        );
        T::HAS_STATS
    }

    /// The number of strings in `sset`: the counters' names for
    /// `ETH_SS_STATS`, none of the other sets.
    ///
    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`.
    pub(super) unsafe extern "C" fn get_sset_count(
        _dev: *mut bindings::net_device,
        sset: c_int,
    ) -> c_int {
        match u32::try_from(sset) {
            Ok(bindings::ethtool_stringset_ETH_SS_STATS) => {
                c_int::try_from(T::STATS.len()).unwrap_or(c_int::MAX)
            }
            _ => EOPNOTSUPP.to_errno(),
        }
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `data` writable for as many
    /// `ETH_GSTRING_LEN`-byte strings as [`Self::get_sset_count`] gave for
    /// `stringset`.
    pub(super) unsafe extern "C" fn get_strings(
        _dev: *mut bindings::net_device,
        stringset: u32,
        data: *mut u8,
    ) {
        if stringset != bindings::ethtool_stringset_ETH_SS_STATS || data.is_null() {
            return;
        }
        // CAST: 32.
        let len = bindings::ETH_GSTRING_LEN as usize;
        // SAFETY: per this function's contract: one string per name, the
        // count `get_sset_count` gave for this set, which is constant.
        let buf = unsafe { core::slice::from_raw_parts_mut(data, T::STATS.len() * len) };
        for (dst, name) in buf.chunks_exact_mut(len).zip(T::STATS) {
            let bytes = name.to_bytes();
            let n = bytes.len().min(len - 1);
            dst[..n].copy_from_slice(&bytes[..n]);
            dst[n..].fill(0);
        }
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `stats` valid and `data`
    /// writable for `stats.n_stats` values.
    pub(super) unsafe extern "C" fn get_ethtool_stats(
        dev: *mut bindings::net_device,
        stats: *mut bindings::ethtool_stats,
        data: *mut u64,
    ) {
        if data.is_null() {
            return;
        }
        // SAFETY: per this function's contract.
        let (dev, n) = unsafe { (Device::<T>::from_raw(dev), (*stats).n_stats) };
        // CAST: u32 to usize is lossless on Linux.
        let n = (n as usize).min(T::STATS.len());
        // SAFETY: per this function's contract, `data` has `n_stats`
        // values, and no more than that are used.
        let values = unsafe { core::slice::from_raw_parts_mut(data, n) };
        T::stats(dev, values);
    }
}
