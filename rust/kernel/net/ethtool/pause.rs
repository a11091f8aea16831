// SPDX-License-Identifier: GPL-2.0

//! Link-level flow control (`ethtool -a` / `-A`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h);
//! the core's side: [`net/ethtool/pause.c`](srctree/net/ethtool/pause.c)

use super::{
    Adapter,
    Ops, //
};
use crate::{
    error::from_result,
    net::driver::Device,
    prelude::*, //
};

/// Link-level flow control (`ethtool -a`).
#[derive(Clone, Copy, Debug, Default)]
pub struct PauseParam {
    /// Pause use is negotiated with the link partner.
    pub autoneg: bool,
    /// Received pause frames stop transmission.
    pub rx_pause: bool,
    /// The device sends pause frames when its receive buffer fills.
    pub tx_pause: bool,
}

/// IEEE 802.3x pause frame counters (`ethtool -I -a`); a counter the
/// device does not keep is `None` and goes unreported.
#[derive(Clone, Copy, Debug, Default)]
pub struct PauseStats {
    /// Pause frames sent (aPAUSEMACCtrlFramesTransmitted).
    pub tx_pause_frames: Option<u64>,
    /// Pause frames received (aPAUSEMACCtrlFramesReceived).
    pub rx_pause_frames: Option<u64>,
}

impl<T: Ops> Adapter<T> {
    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `pause` writable.
    pub(super) unsafe extern "C" fn get_pauseparam(
        dev: *mut bindings::net_device,
        pause: *mut bindings::ethtool_pauseparam,
    ) {
        // SAFETY: per this function's contract.
        let (dev, pause) = unsafe { (Device::<T>::from_raw(dev), &mut *pause) };
        let p = T::pauseparam(dev);
        pause.autoneg = u32::from(p.autoneg);
        pause.rx_pause = u32::from(p.rx_pause);
        pause.tx_pause = u32::from(p.tx_pause);
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `pause` valid.
    pub(super) unsafe extern "C" fn set_pauseparam(
        dev: *mut bindings::net_device,
        pause: *mut bindings::ethtool_pauseparam,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, pause) = unsafe { (Device::<T>::from_raw(dev), &*pause) };
        let p = PauseParam {
            autoneg: pause.autoneg != 0,
            rx_pause: pause.rx_pause != 0,
            tx_pause: pause.tx_pause != 0,
        };
        from_result(|| T::set_pauseparam(dev, &p).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `stats` writable.
    pub(super) unsafe extern "C" fn get_pause_stats(
        dev: *mut bindings::net_device,
        stats: *mut bindings::ethtool_pause_stats,
    ) {
        // SAFETY: per this function's contract.
        let (dev, stats) = unsafe { (Device::<T>::from_raw(dev), &mut *stats) };
        let p = T::pause_stats(dev);
        // ETHTOOL_STAT_NOT_SET: not reported.
        let unset = u64::MAX;
        // The counters' `struct_group` (`stats`), written whole.
        stats.__bindgen_anon_1 = bindings::ethtool_pause_stats__bindgen_ty_1 {
            stats: bindings::ethtool_pause_stats__bindgen_ty_1__bindgen_ty_2 {
                tx_pause_frames: p.tx_pause_frames.unwrap_or(unset),
                rx_pause_frames: p.rx_pause_frames.unwrap_or(unset),
                tx_pause_storm_events: unset,
            },
        };
    }
}
