// SPDX-License-Identifier: GPL-2.0

//! Link speed, duplex and modes (`ethtool DEV`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h);
//! the core's side: [`net/ethtool/linkmodes.c`](srctree/net/ethtool/linkmodes.c)

use super::{
    Adapter,
    Ops, //
};
use crate::{
    net::driver::Device,
    prelude::*, //
};

/// Link modes, as bits of ethtool's link mode maps: those of a gigabit
/// copper port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkModes(u64);

impl LinkModes {
    /// No mode.
    pub const NONE: Self = Self(0);
    /// 10BASE-T, half duplex.
    pub const BASE_T_10_HALF: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_10baseT_Half_BIT);
    /// 10BASE-T, full duplex.
    pub const BASE_T_10_FULL: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_10baseT_Full_BIT);
    /// 100BASE-TX, half duplex.
    pub const BASE_T_100_HALF: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_100baseT_Half_BIT);
    /// 100BASE-TX, full duplex.
    pub const BASE_T_100_FULL: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_100baseT_Full_BIT);
    /// 1000BASE-T, half duplex.
    pub const BASE_T_1000_HALF: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_1000baseT_Half_BIT);
    /// 1000BASE-T, full duplex.
    pub const BASE_T_1000_FULL: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_1000baseT_Full_BIT);
    /// Autonegotiation.
    pub const AUTONEG: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Autoneg_BIT);
    /// A twisted pair port.
    pub const TP: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_TP_BIT);
    /// Symmetric pause frames.
    pub const PAUSE: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Pause_BIT);
    /// Asymmetric pause frames.
    pub const ASYM_PAUSE: Self =
        Self::bit(bindings::ethtool_link_mode_bit_indices_ETHTOOL_LINK_MODE_Asym_Pause_BIT);

    /// The mode of `ETHTOOL_LINK_MODE_*_BIT` `bit`, below 64.
    const fn bit(bit: bindings::ethtool_link_mode_bit_indices) -> Self {
        Self(1 << bit)
    }

    /// Both sets.
    pub const fn with(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether every mode of `other` is in the set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Sets the set's bits in the link mode map `map`, leaving the others.
    fn write(self, map: &mut [c_ulong]) {
        let word = c_ulong::BITS;
        for bit in 0..u64::BITS {
            if self.0 & (1 << bit) != 0 {
                // CAST: u32 to usize is lossless on Linux.
                if let Some(w) = map.get_mut((bit / word) as usize) {
                    *w |= 1 << (bit % word);
                }
            }
        }
    }
}

/// The port's connector (`ethtool DEV`'s "Port").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    /// Twisted pair.
    TwistedPair,
    /// Anything else.
    Other,
}

/// The link as `ethtool DEV` shows it (`get_link_ksettings`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSettings {
    /// Speed in Mb/s; `None` without a link.
    pub speed: Option<u32>,
    /// Full duplex or not; `None` without a link.
    pub full_duplex: Option<bool>,
    /// The connector.
    pub port: Port,
    /// The PHY's address on its management bus.
    pub phy_address: u8,
    /// Speed and duplex are autonegotiated.
    pub autoneg: bool,
    /// The modes the port has.
    pub supported: LinkModes,
    /// The modes it advertises.
    pub advertising: LinkModes,
    /// The modes the link partner advertised.
    pub lp_advertising: LinkModes,
}

impl<T: Ops> Adapter<T> {
    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `ks` writable, zeroed by the core.
    pub(super) unsafe extern "C" fn get_link_ksettings(
        dev: *mut bindings::net_device,
        ks: *mut bindings::ethtool_link_ksettings,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, ks) = unsafe { (Device::<T>::from_raw(dev), &mut *ks) };
        let l = match T::link_ksettings(dev) {
            Ok(l) => l,
            Err(e) => return e.to_errno(),
        };
        // CAST: SPEED_UNKNOWN, -1, is all ones in the u32 field.
        ks.base.speed = l.speed.unwrap_or(bindings::SPEED_UNKNOWN as u32);
        // CAST: the DUPLEX_*, PORT_* and AUTONEG_* values fit a u8.
        ks.base.duplex = match l.full_duplex {
            Some(true) => bindings::DUPLEX_FULL,
            Some(false) => bindings::DUPLEX_HALF,
            None => bindings::DUPLEX_UNKNOWN,
        } as u8;
        ks.base.port = match l.port {
            Port::TwistedPair => bindings::PORT_TP,
            Port::Other => bindings::PORT_OTHER,
        } as u8;
        ks.base.phy_address = l.phy_address;
        ks.base.autoneg = if l.autoneg {
            bindings::AUTONEG_ENABLE
        } else {
            bindings::AUTONEG_DISABLE
        } as u8;
        l.supported.write(&mut ks.link_modes.supported);
        l.advertising.write(&mut ks.link_modes.advertising);
        l.lp_advertising.write(&mut ks.link_modes.lp_advertising);
        0
    }
}

#[macros::kunit_tests(rust_kernel_ethtool_linkmodes)]
mod tests {
    use super::*;

    #[test]
    fn link_modes_land_on_their_ethtool_bits() {
        let mut map = [0 as c_ulong; 2];
        LinkModes::BASE_T_10_HALF
            .with(LinkModes::BASE_T_1000_FULL)
            .with(LinkModes::ASYM_PAUSE)
            .write(&mut map);
        // ETHTOOL_LINK_MODE_10baseT_Half_BIT 0, 1000baseT_Full 5,
        // Asym_Pause 14 (uapi/linux/ethtool.h): word 0 on every word size.
        assert_eq!(map, [1 | 1 << 5 | 1 << 14, 0]);
        // Bits already there stay.
        LinkModes::TP.write(&mut map);
        assert_eq!(map[0], 1 | 1 << 5 | 1 << 7 | 1 << 14);
        assert!(LinkModes::PAUSE.with(LinkModes::TP).contains(LinkModes::TP));
        assert!(!LinkModes::TP.contains(LinkModes::PAUSE));
    }
}
