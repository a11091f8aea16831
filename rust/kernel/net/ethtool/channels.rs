// SPDX-License-Identifier: GPL-2.0

//! Queue counts (`ethtool -l` / `-L`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h);
//! the core's side: [`net/ethtool/channels.c`](srctree/net/ethtool/channels.c)

use super::{
    Adapter,
    Ops, //
};
use crate::{
    error::from_result,
    net::driver::{
        Device,
        RtnlLockedDevice, //
    },
    prelude::*,
};

/// Queue counts (`ethtool -l` / `-L`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Channels {
    /// The most queue pairs.
    pub max_combined: u32,
    /// The most other (non-queue) interrupt vectors.
    pub max_other: u32,
    /// Queue pairs in use.
    pub combined_count: u32,
    /// Other vectors in use.
    pub other_count: u32,
}

impl<T: Ops> Adapter<T> {
    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `ch` writable.
    pub(super) unsafe extern "C" fn get_channels(
        dev: *mut bindings::net_device,
        ch: *mut bindings::ethtool_channels,
    ) {
        // SAFETY: per this function's contract.
        let (dev, ch) = unsafe { (Device::<T>::from_raw(dev), &mut *ch) };
        let c = T::channels(dev);
        ch.max_combined = c.max_combined;
        ch.max_other = c.max_other;
        ch.combined_count = c.combined_count;
        ch.other_count = c.other_count;
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `ch` valid.
    pub(super) unsafe extern "C" fn set_channels(
        dev: *mut bindings::net_device,
        ch: *mut bindings::ethtool_channels,
    ) -> c_int {
        // SAFETY: per this function's contract; the core runs the ethtool
        // ops of an ops-locked device, as `Registration::new` makes every
        // device, under its instance lock, and this one under RTNL too,
        // which `op_needs_rtnl` asks the core to take for it.
        let (dev, ch) = unsafe {
            (
                RtnlLockedDevice::from_device(Device::<T>::from_raw(dev)),
                &*ch,
            )
        };
        let c = Channels {
            max_combined: ch.max_combined,
            max_other: ch.max_other,
            combined_count: ch.combined_count,
            other_count: ch.other_count,
        };
        from_result(|| T::set_channels(dev, &c).map(|()| 0))
    }
}
