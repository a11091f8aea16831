// SPDX-License-Identifier: GPL-2.0

//! The receive filters of a device (`ndo_set_rx_mode_async`): its flags
//! and its unicast and multicast address lists.
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h),
//! [`include/linux/etherdevice.h`](srctree/include/linux/etherdevice.h)

use crate::net::netdev::NetDevice;
use core::marker::PhantomData;

/// The receive filters the stack asks of a device, as
/// [`Operations::set_rx_mode`](super::Operations::set_rx_mode) sees them:
/// its flags, and snapshots of its address lists the core took for the
/// call.
pub struct RxMode<'a> {
    pub(super) dev: &'a NetDevice,
    pub(super) uc: *const bindings::netdev_hw_addr_list,
    pub(super) mc: *const bindings::netdev_hw_addr_list,
    pub(super) _lists: PhantomData<&'a bindings::netdev_hw_addr_list>,
}

impl<'a> RxMode<'a> {
    fn flags(&self) -> u32 {
        // SAFETY: a live device; the flags are read as C reads them.
        unsafe { (*self.dev.as_raw()).flags }
    }

    /// Every frame is to be received (`IFF_PROMISC`).
    pub fn promiscuous(&self) -> bool {
        self.flags() & bindings::net_device_flags_IFF_PROMISC != 0
    }

    /// Every multicast frame is to be received (`IFF_ALLMULTI`).
    pub fn all_multicast(&self) -> bool {
        self.flags() & bindings::net_device_flags_IFF_ALLMULTI != 0
    }

    /// The device's own address (`dev_addr`), which changes only while
    /// the device is down; the core asks for the filters again at open.
    pub fn address(&self) -> [u8; ETH_ALEN] {
        let mut a = [0u8; ETH_ALEN];
        // SAFETY: a live Ethernet device: `dev_addr` points to at least
        // `ETH_ALEN` bytes.
        let src = unsafe { core::slice::from_raw_parts((*self.dev.as_raw()).dev_addr, ETH_ALEN) };
        a.copy_from_slice(src);
        a
    }

    /// The multicast addresses to receive.
    pub fn multicast(&self) -> HwAddrs<'a> {
        // SAFETY: the core's snapshot, which only the caller of the
        // callback `self` was made for changes, after it.
        unsafe { HwAddrs::new(self.mc) }
    }

    /// The unicast addresses to receive besides the device's own.
    pub fn unicast(&self) -> HwAddrs<'a> {
        // SAFETY: as for `multicast`.
        unsafe { HwAddrs::new(self.uc) }
    }
}

/// The Ethernet addresses of one of a device's address lists
/// (`struct netdev_hw_addr_list`).
pub struct HwAddrs<'a> {
    head: *const bindings::list_head,
    pos: *const bindings::list_head,
    len: usize,
    _list: PhantomData<&'a bindings::netdev_hw_addr_list>,
}

impl HwAddrs<'_> {
    /// # Safety
    ///
    /// `list` is a device's address list, not changed while the iterator
    /// lives.
    unsafe fn new(list: *const bindings::netdev_hw_addr_list) -> Self {
        // SAFETY: valid per the caller.
        let (head, len) = unsafe { (&raw const (*list).list, (*list).count) };
        Self {
            head,
            // SAFETY: as above.
            pos: unsafe { (*head).next },
            len: usize::try_from(len).unwrap_or(0),
            _list: PhantomData,
        }
    }
}

impl Iterator for HwAddrs<'_> {
    type Item = [u8; ETH_ALEN];

    fn next(&mut self) -> Option<[u8; ETH_ALEN]> {
        if self.pos == self.head {
            return None;
        }
        // SAFETY: `pos` is the list node of an entry of the list, which
        // does not change while `self` lives.
        let ha = unsafe { crate::container_of!(self.pos, bindings::netdev_hw_addr, list) };
        // SAFETY: as above.
        let (addr, next) = unsafe { (&(*ha).addr, (*self.pos).next) };
        self.pos = next;
        self.len = self.len.saturating_sub(1);
        let mut a = [0u8; ETH_ALEN];
        a.copy_from_slice(addr.get(..ETH_ALEN)?);
        Some(a)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len, Some(self.len))
    }
}

impl ExactSizeIterator for HwAddrs<'_> {}

/// Bytes of an Ethernet address.
pub const ETH_ALEN: usize = 6;
