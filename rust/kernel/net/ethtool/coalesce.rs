// SPDX-License-Identifier: GPL-2.0

//! Interrupt coalescing (`ethtool -c` / `-C`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h);
//! the core's side: [`net/ethtool/coalesce.c`](srctree/net/ethtool/coalesce.c)

use super::{
    Adapter,
    Ops, //
};
use crate::{
    error::from_result,
    net::{
        driver::Device,
        netlink::request::ExtAck, //
    },
    prelude::*,
};

/// Interrupt coalescing (`ethtool -c` / `-C`): how long the device holds
/// back an interrupt for received frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coalesce {
    /// The shortest interval between receive interrupts, in µs; 0 for
    /// none (`rx-usecs`).
    pub rx_usecs: u32,
    /// The device or driver adapts the interval to the load
    /// (`adaptive-rx`).
    pub use_adaptive_rx: bool,
}

/// The coalescing parameters a driver takes (`ETHTOOL_COALESCE_*`): the
/// core refuses, with `EOPNOTSUPP`, a request that sets any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoalesceParams(u32);

impl CoalesceParams {
    /// None.
    pub const NONE: Self = Self(0);
    // The values are `BIT(0)` and `BIT(9)` of `include/linux/ethtool.h`,
    // which bindgen does not evaluate.
    /// `rx-usecs` (`ETHTOOL_COALESCE_RX_USECS`).
    pub const RX_USECS: Self = Self(1 << 0);
    /// `adaptive-rx` (`ETHTOOL_COALESCE_USE_ADAPTIVE_RX`).
    pub const USE_ADAPTIVE_RX: Self = Self(1 << 9);

    /// Both `self`'s parameters and `other`'s.
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl<T: Ops> Adapter<T> {
    /// `supported_coalesce_params`: the driver's, if it sets coalescing.
    /// The core refuses to register a device with `set_coalesce` and no
    /// parameter (`ethtool_check_ops`), and the netlink request reads the
    /// parameters before it merges: both ops or none.
    pub(super) const fn supported_coalesce() -> u32 {
        assert!(
            !T::HAS_SET_COALESCE || (T::HAS_COALESCE && T::SUPPORTED_COALESCE.0 != 0),
            "set_coalesce needs coalesce and SUPPORTED_COALESCE"
        );
        if T::HAS_SET_COALESCE {
            T::SUPPORTED_COALESCE.0
        } else {
            0
        }
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `ec` writable.
    pub(super) unsafe extern "C" fn get_coalesce(
        dev: *mut bindings::net_device,
        ec: *mut bindings::ethtool_coalesce,
        _kec: *mut bindings::kernel_ethtool_coalesce,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, ec) = unsafe { (Device::<T>::from_raw(dev), &mut *ec) };
        let c = T::coalesce(dev);
        ec.rx_coalesce_usecs = c.rx_usecs;
        ec.use_adaptive_rx_coalesce = u32::from(c.use_adaptive_rx);
        0
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `ec` valid and `extack` null
    /// or valid.
    pub(super) unsafe extern "C" fn set_coalesce(
        dev: *mut bindings::net_device,
        ec: *mut bindings::ethtool_coalesce,
        _kec: *mut bindings::kernel_ethtool_coalesce,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, ec) = unsafe { (Device::<T>::from_raw(dev), &*ec) };
        // SAFETY: null or the request's extended ACK, used only here.
        let extack = unsafe { ExtAck::from_raw(extack) };
        let c = Coalesce {
            rx_usecs: ec.rx_coalesce_usecs,
            use_adaptive_rx: ec.use_adaptive_rx_coalesce != 0,
        };
        from_result(|| T::set_coalesce(dev, &c, &extack).map(|()| 0))
    }
}
