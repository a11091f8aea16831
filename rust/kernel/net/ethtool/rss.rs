// SPDX-License-Identifier: GPL-2.0

//! Receive side scaling: the indirection table, the key and the hashed
//! fields (`ethtool -x` / `-X`, `ethtool -n|-N DEV rx-flow-hash`).
//!
//! C header: [`include/linux/ethtool.h`](srctree/include/linux/ethtool.h);
//! the core's side: [`net/ethtool/rss.c`](srctree/net/ethtool/rss.c)

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

/// A class of frames the RSS hash treats alike (the `flow_type` of
/// `ethtool -n|-N DEV rx-flow-hash`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashFlow {
    /// TCP over IPv4 (`tcp4`).
    Tcp4,
    /// UDP over IPv4 (`udp4`).
    Udp4,
    /// Any other IPv4 frame: SCTP, AH, ESP or the rest (`sctp4`, `ah4`,
    /// `esp4`, `ip4`).
    OtherIp4,
    /// TCP over IPv6 (`tcp6`).
    Tcp6,
    /// UDP over IPv6 (`udp6`).
    Udp6,
    /// Any other IPv6 frame (`sctp6`, `ah6`, `esp6`, `ip6`).
    OtherIp6,
}

impl HashFlow {
    /// The class of a C flow type; `None` for one without IP (`ether`) or
    /// beyond plain IP (GTP).
    fn from_raw(flow_type: u32) -> Option<Self> {
        Some(match flow_type {
            bindings::TCP_V4_FLOW => Self::Tcp4,
            bindings::UDP_V4_FLOW => Self::Udp4,
            bindings::SCTP_V4_FLOW
            | bindings::AH_ESP_V4_FLOW
            | bindings::AH_V4_FLOW
            | bindings::ESP_V4_FLOW
            | bindings::IPV4_FLOW => Self::OtherIp4,
            bindings::TCP_V6_FLOW => Self::Tcp6,
            bindings::UDP_V6_FLOW => Self::Udp6,
            bindings::SCTP_V6_FLOW
            | bindings::AH_ESP_V6_FLOW
            | bindings::AH_V6_FLOW
            | bindings::ESP_V6_FLOW
            | bindings::IPV6_FLOW => Self::OtherIp6,
            _ => return None,
        })
    }
}

/// The header fields a flow hash covers (`RXH_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashFields(u32);

impl HashFields {
    /// No field: the frames are not hashed.
    pub const NONE: Self = Self(0);
    /// The source address (`s`).
    pub const IP_SRC: Self = Self(bindings::RXH_IP_SRC);
    /// The destination address (`d`).
    pub const IP_DST: Self = Self(bindings::RXH_IP_DST);
    /// The first two bytes of the L4 header, the source port (`f`).
    pub const L4_B_0_1: Self = Self(bindings::RXH_L4_B_0_1);
    /// Bytes 2 and 3 of the L4 header, the destination port (`n`).
    pub const L4_B_2_3: Self = Self(bindings::RXH_L4_B_2_3);
    /// Both addresses (`sd`).
    pub const ADDRS: Self = Self(bindings::RXH_IP_SRC | bindings::RXH_IP_DST);
    /// Both addresses and both ports (`sdfn`).
    pub const ADDRS_PORTS: Self = Self(Self::ADDRS.0 | Self::L4_B_0_1.0 | Self::L4_B_2_3.0);

    /// The `RXH_*` bits.
    pub fn bits(self) -> u32 {
        self.0
    }
}

/// `ETH_RSS_HASH_TOP`: the Toeplitz hash function.
// CAST: bit 0.
const HASH_TOP: u8 = 1 << bindings::ETH_RSS_HASH_TOP_BIT;

/// The sizes of a device's RSS indirection table (entries) and hash key
/// (bytes), which the core allocates its buffers by (`get_rxfh_indir_size`,
/// `get_rxfh_key_size`).
///
/// The core counts the table's bytes in a `u32`, and sends the table back
/// in one attribute, whose length is a `u16`: a size near 2^30 entries
/// would wrap the first to a small allocation that the driver then fills
/// as the large table, and one above 16382 entries the second. The table
/// is bounded by [`RxfhSizes::MAX_INDIR`], the key by its type (255
/// bytes). A size the driver computes in a wider type needs a checked
/// conversion:
///
/// ```ignore,compile_fail,E0308
/// use kernel::net::ethtool::RxfhSizes;
///
/// fn sizes(entries: u32) -> Option<RxfhSizes> {
///     RxfhSizes::new(entries, 40) // misuse
/// #   // twin: RxfhSizes::new(u16::try_from(entries).ok()?, 40)
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxfhSizes {
    indir: u16,
    key: u8,
}

impl RxfhSizes {
    /// The most entries an indirection table may have: more than any
    /// device has, well within what the core's buffers and replies hold.
    pub const MAX_INDIR: u16 = 4096;

    /// A table of `indir` entries and a key of `key` bytes; `None` for a
    /// table larger than [`RxfhSizes::MAX_INDIR`]. A driver with fixed
    /// sizes checks them when it builds:
    /// `const { RxfhSizes::new(128, 40).unwrap() }`.
    pub const fn new(indir: u16, key: u8) -> Option<Self> {
        if indir > Self::MAX_INDIR {
            return None;
        }
        Some(Self { indir, key })
    }

    /// Entries of the indirection table.
    pub const fn indir(&self) -> u16 {
        self.indir
    }

    /// Bytes of the hash key.
    pub const fn key(&self) -> u8 {
        self.key
    }
}

/// The indirection table and key buffers of an RSS request, each empty
/// when its pointer is null.
///
/// Their lengths are the sizes the core says it allocated (`indir_size`,
/// `key_size`), never a second answer of [`Ops::rxfh_sizes`]: the core
/// asks the driver for its sizes before allocating, and a driver whose
/// sizes depend on its state may answer differently now. The core sets
/// both for every buffer it passes (the channel check's read of the
/// table too, since "ethtool: set indir_size when reading the table for
/// the channel check"); a non-null buffer with a zero size is empty here.
///
/// # Safety
///
/// `p` is valid; a non-null `indir` points to `indir_size` entries and a
/// non-null `key` to `key_size` bytes, used by no one else during `'a`.
unsafe fn rxfh_bufs<'a>(p: &bindings::ethtool_rxfh_param) -> (&'a mut [u32], &'a mut [u8]) {
    // CAST: u32 to usize is lossless on Linux.
    let (indir_len, key_len) = (p.indir_size as usize, p.key_size as usize);
    // SAFETY: per this function's contract: non-null, with that many
    // elements, ours alone for `'a`.
    unsafe {
        (
            if p.indir.is_null() {
                &mut []
            } else {
                core::slice::from_raw_parts_mut(p.indir, indir_len)
            },
            if p.key.is_null() {
                &mut []
            } else {
                core::slice::from_raw_parts_mut(p.key, key_len)
            },
        )
    }
}

impl<T: Ops> Adapter<T> {
    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`.
    pub(super) unsafe extern "C" fn get_rx_ring_count(dev: *mut bindings::net_device) -> u32 {
        // SAFETY: per this function's contract.
        let count = T::rx_ring_count(unsafe { Device::<T>::from_raw(dev) }).get();
        // The core takes the count back as an `int`, negative for an
        // error: a larger count would read as one.
        count.min(i32::MAX as u32)
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`.
    pub(super) unsafe extern "C" fn get_rxfh_indir_size(dev: *mut bindings::net_device) -> u32 {
        // SAFETY: per this function's contract.
        T::rxfh_sizes(unsafe { Device::<T>::from_raw(dev) })
            .indir
            .into()
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`.
    pub(super) unsafe extern "C" fn get_rxfh_key_size(dev: *mut bindings::net_device) -> u32 {
        // SAFETY: per this function's contract.
        T::rxfh_sizes(unsafe { Device::<T>::from_raw(dev) })
            .key
            .into()
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `p` set up by the ethtool core.
    pub(super) unsafe extern "C" fn get_rxfh(
        dev: *mut bindings::net_device,
        p: *mut bindings::ethtool_rxfh_param,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, p) = unsafe { (Device::<T>::from_raw(dev), &mut *p) };
        p.hfunc = HASH_TOP;
        // SAFETY: the core set up `p` with buffers of the sizes it says,
        // lent for this call; the slices do not outlive it.
        let (indir, key) = unsafe { rxfh_bufs(p) };
        T::rxfh(dev, indir, key);
        0
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `p` set up by the ethtool core and
    /// `extack` null or valid.
    pub(super) unsafe extern "C" fn set_rxfh(
        dev: *mut bindings::net_device,
        p: *mut bindings::ethtool_rxfh_param,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, p) = unsafe { (Device::<T>::from_raw(dev), &mut *p) };
        // SAFETY: null or the request's extended ACK, used only here.
        let extack = unsafe { ExtAck::from_raw(extack) };
        from_result(|| {
            // 0 is ETH_RSS_HASH_NO_CHANGE.
            if p.hfunc != 0 && p.hfunc != HASH_TOP {
                extack.set_msg(c"only the Toeplitz hash is supported");
                return Err(EOPNOTSUPP);
            }
            // CAST: RXH_XFRM_NO_CHANGE is 0xff.
            let no_change = bindings::RXH_XFRM_NO_CHANGE as u8;
            if p.rss_context != 0 || (p.input_xfrm != 0 && p.input_xfrm != no_change) {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: as in `get_rxfh`.
            let (indir, key) = unsafe { rxfh_bufs(p) };
            let indir = (!indir.is_empty()).then_some(&*indir);
            let key = (!key.is_empty()).then_some(&*key);
            T::set_rxfh(dev, indir, key, &extack)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `f` valid.
    pub(super) unsafe extern "C" fn get_rxfh_fields(
        dev: *mut bindings::net_device,
        f: *mut bindings::ethtool_rxfh_fields,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, f) = unsafe { (Device::<T>::from_raw(dev), &mut *f) };
        // Only the default context: `rxfh_per_ctx_fields` is not set.
        match HashFlow::from_raw(f.flow_type) {
            Some(flow) if f.rss_context == 0 => {
                f.data = T::rxfh_fields(dev, flow).bits();
                0
            }
            _ => EINVAL.to_errno(),
        }
    }

    /// # Safety
    ///
    /// As for `Adapter::get_drvinfo`, with `f` valid and `extack` null or
    /// valid.
    pub(super) unsafe extern "C" fn set_rxfh_fields(
        dev: *mut bindings::net_device,
        f: *const bindings::ethtool_rxfh_fields,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, f) = unsafe { (Device::<T>::from_raw(dev), &*f) };
        // SAFETY: null or the request's extended ACK, used only here.
        let extack = unsafe { ExtAck::from_raw(extack) };
        from_result(|| {
            let flow = HashFlow::from_raw(f.flow_type).ok_or(EINVAL)?;
            if f.rss_context != 0 {
                return Err(EINVAL);
            }
            T::set_rxfh_fields(dev, flow, HashFields(f.data), &extack)?;
            Ok(0)
        })
    }
}

#[macros::kunit_tests(rust_kernel_ethtool_rss)]
mod tests {
    use super::*;

    /// A request for the first `indir_size` entries of `indir` and
    /// `key_size` bytes of `key`, as the core sets one up.
    fn request(
        indir: &mut [u32],
        indir_size: u32,
        key: &mut [u8],
        key_size: u32,
    ) -> bindings::ethtool_rxfh_param {
        bindings::ethtool_rxfh_param {
            indir_size,
            indir: indir.as_mut_ptr(),
            key_size,
            key: key.as_mut_ptr(),
            ..Default::default()
        }
    }

    #[test]
    fn rss_buffers_have_the_sizes_the_core_allocated() {
        // The core allocated 8 entries and a 4-byte key (the driver's
        // sizes when it asked); one more of each is past its buffers.
        let (mut indir, mut key) = ([!0u32; 9], [!0u8; 5]);
        let p = request(&mut indir, 8, &mut key, 4);
        // SAFETY: `p` points into the arrays above, unused meanwhile.
        let (i, k) = unsafe { rxfh_bufs(&p) };
        assert_eq!((i.len(), k.len()), (8, 4));
        // A driver whose table has grown to 128 entries since fills what
        // fits, and nothing beyond.
        for (d, s) in i.iter_mut().zip(0..128) {
            *d = s;
        }
        k.fill(0);
        assert_eq!(indir[7], 7);
        assert_eq!((indir[8], key[3], key[4]), (!0, 0, !0));
    }

    #[test]
    fn rss_buffers_are_empty_when_null_or_unsized() {
        let (mut indir, mut key) = ([0u32; 4], [0u8; 4]);
        // The table without its size (the channel check's read, before the
        // core said how large it is): nothing to write.
        let p = request(&mut indir, 0, &mut key, 4);
        // SAFETY: as above.
        let (i, k) = unsafe { rxfh_bufs(&p) };
        assert_eq!((i.len(), k.len()), (0, 4));
        let p = bindings::ethtool_rxfh_param {
            indir_size: 128,
            key_size: 40,
            ..Default::default()
        };
        // SAFETY: both pointers are null.
        let (i, k) = unsafe { rxfh_bufs(&p) };
        assert!(i.is_empty() && k.is_empty());
    }
}
