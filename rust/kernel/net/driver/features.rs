// SPDX-License-Identifier: GPL-2.0

//! The offloads of a device (`netdev_features_t`).
//!
//! C header: [`include/linux/netdev_features.h`](srctree/include/linux/netdev_features.h)

/// Offloads of a device (`netdev_features_t`): fixed ones, which user
/// space sees on and cannot turn off
/// ([`UnregisteredDevice::set_features`](super::UnregisteredDevice::set_features)),
/// and ones it may turn off and on
/// ([`UnregisteredDevice::set_user_features`](super::UnregisteredDevice::set_user_features)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features(pub(super) u64);

impl Features {
    const fn bit(b: u32) -> Self {
        Self(1 << b)
    }

    /// Sends packets in pieces (`NETIF_F_SG`).
    pub const SG: Self = Self::bit(bindings::NETIF_F_SG_BIT);
    /// Fills in TCP and UDP checksums over IPv4 (`NETIF_F_IP_CSUM`).
    pub const IP_CSUM: Self = Self::bit(bindings::NETIF_F_IP_CSUM_BIT);
    /// Fills in TCP and UDP checksums over IPv6 (`NETIF_F_IPV6_CSUM`).
    pub const IPV6_CSUM: Self = Self::bit(bindings::NETIF_F_IPV6_CSUM_BIT);
    /// Checks received checksums (`NETIF_F_RXCSUM`).
    pub const RXCSUM: Self = Self::bit(bindings::NETIF_F_RXCSUM_BIT);
    /// Hashes received flows for RSS and gives the hash to the stack
    /// (`NETIF_F_RXHASH`).
    pub const RXHASH: Self = Self::bit(bindings::NETIF_F_RXHASH_BIT);
    /// Steers flows by ethtool rules (`NETIF_F_NTUPLE`).
    pub const NTUPLE: Self = Self::bit(bindings::NETIF_F_NTUPLE_BIT);
    /// Segments TCP over IPv4 (`NETIF_F_TSO`); see
    /// [`SkBuff::prepare_tso`](crate::net::skbuff::SkBuff::prepare_tso).
    pub const TSO: Self = Self::bit(bindings::NETIF_F_TSO_BIT);
    /// Segments TCP over IPv6 (`NETIF_F_TSO6`).
    pub const TSO6: Self = Self::bit(bindings::NETIF_F_TSO6_BIT);
}

impl core::ops::BitOr for Features {
    type Output = Self;

    fn bitor(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }
}
