// SPDX-License-Identifier: GPL-2.0

//! The netdev generic netlink family, for a devmem core that serves its
//! `bind-rx` and `bind-tx` requests: the family's attribute types
//! ([`attr`]), and the list of dma-buf bindings a socket of the family
//! owns ([`SockBindings`]), which the C side walks as a `list_head`.
//!
//! C headers: [`include/net/netdev_netlink.h`](srctree/include/net/netdev_netlink.h),
//! [`include/uapi/linux/netdev.h`](srctree/include/uapi/linux/netdev.h)

use crate::{
    sync::{
        lock::{
            mutex::MutexBackend,
            Guard, //
        },
        Mutex,
    },
    types::Opaque,
};
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

/// Attribute types of the netdev generic netlink family, as
/// `include/uapi/linux/netdev.h` numbers them, for reading requests
/// ([`Info`](super::netlink::request::Info)) and filling replies.
pub mod attr {
    /// A uAPI attribute type, checked at build time to fit the 16 bits of
    /// `nla_type`.
    const fn nla(raw: u32) -> u16 {
        assert!(raw <= u16::MAX as u32);
        // CAST: checked just above.
        raw as u16
    }

    /// `NETDEV_A_DEV_IFINDEX`: the device a request is about.
    pub const DEV_IFINDEX: u16 = nla(bindings::NETDEV_A_DEV_IFINDEX);
    /// `NETDEV_A_QUEUE_ID`: a queue's index.
    pub const QUEUE_ID: u16 = nla(bindings::NETDEV_A_QUEUE_ID);
    /// `NETDEV_A_QUEUE_TYPE`: a queue's
    /// [`QueueType`](super::netdev::QueueType).
    pub const QUEUE_TYPE: u16 = nla(bindings::NETDEV_A_QUEUE_TYPE);
    /// `NETDEV_A_QUEUE_DMABUF`: the dma-buf binding a queue receives into.
    pub const QUEUE_DMABUF: u16 = nla(bindings::NETDEV_A_QUEUE_DMABUF);
    /// `NETDEV_A_PAGE_POOL_DMABUF`: the dma-buf binding of a page pool.
    pub const PAGE_POOL_DMABUF: u16 = nla(bindings::NETDEV_A_PAGE_POOL_DMABUF);
    /// `NETDEV_A_DMABUF_IFINDEX`: the device of a dma-buf binding.
    pub const DMABUF_IFINDEX: u16 = nla(bindings::NETDEV_A_DMABUF_IFINDEX);
    /// `NETDEV_A_DMABUF_QUEUES`: one queue to bind, nested; repeated.
    pub const DMABUF_QUEUES: u16 = nla(bindings::NETDEV_A_DMABUF_QUEUES);
    /// `NETDEV_A_DMABUF_FD`: the dma-buf to bind.
    pub const DMABUF_FD: u16 = nla(bindings::NETDEV_A_DMABUF_FD);
    /// `NETDEV_A_DMABUF_ID`: the id of a dma-buf binding.
    pub const DMABUF_ID: u16 = nla(bindings::NETDEV_A_DMABUF_ID);
    /// `NETDEV_A_DMABUF_RX_PAGE_SIZE`: the size of a receive buffer.
    pub const DMABUF_RX_PAGE_SIZE: u16 = nla(bindings::NETDEV_A_DMABUF_RX_PAGE_SIZE);
}

/// The place of an object on a netdev netlink socket's list of the
/// dma-buf bindings it made ([`SockBindings`]): a C `list_head`, written
/// only while the object is on the list.
#[repr(transparent)]
pub struct SockLink(Opaque<bindings::list_head>);

impl SockLink {
    /// A link on no list.
    pub const fn new() -> Self {
        Self(Opaque::uninit())
    }
}

impl Default for SockLink {
    fn default() -> Self {
        Self::new()
    }
}

/// The owner of an object with a [`SockLink`], which a socket's list of
/// bindings ([`SockBindings`]) can hold in its place.
///
/// # Safety
///
/// - [`SockEntry::into_link`] gives up the owner for the link of its
///   object, which stays valid, and is used by nothing else, until
///   [`SockEntry::from_link`] takes the owner back: an object has one
///   owner, so its link is given at most once at a time.
/// - [`SockEntry::from_link`] gives back the owner that gave `link`.
pub unsafe trait SockEntry: Sized {
    /// Gives up the owner for the link of its object.
    fn into_link(self) -> NonNull<SockLink>;

    /// Takes back the owner [`SockEntry::into_link`] gave `link` for.
    ///
    /// # Safety
    ///
    /// `link` came from [`SockEntry::into_link`] of this type, and is taken
    /// back once.
    unsafe fn from_link(link: NonNull<SockLink>) -> Self;
}

/// The list of dma-buf bindings of a netdev netlink socket (the `bindings`
/// of `struct netdev_nl_sock`), its lock (`lock`) held: newest first, as C
/// keeps it, each entry holding a `T`.
///
/// # Invariants
///
/// - `head` is an initialised list, guarded by the mutex `_guard` holds,
///   valid for `'a`.
/// - Every entry of the list is the link of a `T` given up by
///   [`SockEntry::into_link`]: the list owns it.
pub struct SockBindings<'a, T: SockEntry> {
    head: *mut bindings::list_head,
    _guard: Guard<'a, (), MutexBackend>,
    _entries: PhantomData<T>,
}

impl<'a, T: SockEntry> SockBindings<'a, T> {
    /// Takes `lock` and gives the list `head` it guards.
    ///
    /// # Safety
    ///
    /// - `lock` is an initialised mutex and `head` an initialised list,
    ///   which it guards, both valid for `'a`.
    /// - Every entry of the list is the link of a `T` given up by
    ///   [`SockEntry::into_link`], now and whenever the lock is released:
    ///   the list is only changed through this type, with the same `T`.
    pub unsafe fn lock(lock: *mut bindings::mutex, head: *mut bindings::list_head) -> Self {
        // SAFETY: an initialised mutex valid for `'a`, per the caller.
        let mutex = unsafe { Mutex::<()>::from_raw(lock) };
        // INVARIANT: per the caller; the mutex is held from here.
        Self {
            head,
            _guard: mutex.lock(),
            _entries: PhantomData,
        }
    }

    /// Adds `entry` at the front; the list holds it until
    /// [`SockBindings::pop`].
    pub fn push(&mut self, entry: T) {
        let link = entry.into_link().cast::<bindings::list_head>();
        // SAFETY: `link` stays valid while the list holds it and is on no
        // list (its owner just gave it up; an object has one owner, per
        // `SockEntry`); `head` is an initialised list whose lock is held
        // (type invariants). `SockLink` is transparent over `list_head`.
        unsafe { bindings::list_add(link.as_ptr(), self.head) };
    }

    /// Takes the newest entry off the list.
    pub fn pop(&mut self) -> Option<T> {
        // SAFETY: `head` is an initialised list whose lock is held (type
        // invariants).
        let first = unsafe { (*self.head).next };
        if core::ptr::eq(first, self.head) {
            return None;
        }
        // SAFETY: `first` is an entry of the list, whose lock is held.
        unsafe { bindings::list_del(first) };
        // SAFETY: an entry is never null.
        let link = unsafe { NonNull::new_unchecked(first) }.cast::<SockLink>();
        // SAFETY: every entry was given up by `T::into_link` (type
        // invariants), and this one is off the list now: taken back once.
        Some(unsafe { T::from_link(link) })
    }
}
