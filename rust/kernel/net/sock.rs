// SPDX-License-Identifier: GPL-2.0

//! Sockets, as far as a core feature checks where a socket sends: its
//! cached route and the route's device.
//!
//! C headers: [`include/net/sock.h`](srctree/include/net/sock.h),
//! [`include/net/dst.h`](srctree/include/net/dst.h),
//! [`include/net/inet_connection_sock.h`](srctree/include/net/inet_connection_sock.h)

use crate::{
    error::to_result,
    net::netdev::NetDevice,
    prelude::*,
    sync::rcu,
    types::Opaque, //
};
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

/// A socket (`struct sock`) whose lock the holder of `&Sock` holds.
#[repr(transparent)]
pub struct Sock(Opaque<bindings::sock>);

impl Sock {
    /// The socket at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a live socket whose lock (`lock_sock`) the caller holds
    /// for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::sock) -> &'a Self {
        // SAFETY: transparent wrapper; valid per the caller.
        unsafe { &*ptr.cast() }
    }

    /// The C `struct sock`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::sock {
        self.0.get()
    }

    /// The socket's cached route (`__sk_dst_get`), `None` if it has none
    /// (never had one, or it expired).
    #[inline]
    pub fn route<'a>(&'a self, _rcu: &'a rcu::Guard) -> Option<Route<'a>> {
        // SAFETY: the socket lock is held (type invariant), as reading the
        // route cache requires.
        let dst = unsafe { bindings::__sk_dst_get(self.as_raw()) };
        // INVARIANT: a cached route is freed only after an RCU grace
        // period, which `_rcu` holds off.
        NonNull::new(dst).map(|dst| Route {
            dst,
            _rcu: PhantomData,
        })
    }

    /// Rebuilds the cached route of a connected TCP socket from its
    /// addresses (`inet_csk(sk)->icsk_af_ops->rebuild_header`).
    ///
    /// # Safety
    ///
    /// The socket is a connection-oriented inet socket (TCP), whose
    /// `icsk_af_ops` are set.
    pub unsafe fn rebuild_route(&self) -> Result {
        let icsk = self.as_raw().cast::<bindings::inet_connection_sock>();
        // SAFETY: an inet connection socket starts with its `struct sock`
        // (per the caller); its ops are static.
        let rebuild = unsafe { (*(*icsk).icsk_af_ops).rebuild_header };
        let rebuild = rebuild.ok_or(EHOSTUNREACH)?;
        // SAFETY: the socket is alive and locked.
        to_result(unsafe { rebuild(self.as_raw()) })
    }
}

/// A route (`struct dst_entry`).
///
/// # Invariants
///
/// `dst` is a route kept alive for `'a` by an RCU read-side section.
pub struct Route<'a> {
    dst: NonNull<bindings::dst_entry>,
    _rcu: PhantomData<&'a rcu::Guard>,
}

impl<'a> Route<'a> {
    /// The device the route goes out of (`dst_dev_rcu`), if any.
    #[inline]
    pub fn dev(&self) -> Option<RcuDevice<'a>> {
        // SAFETY: the route is alive (type invariant).
        let dev = unsafe { bindings::dst_dev_rcu(self.dst.as_ptr()) };
        // SAFETY: a route's device is freed only after an RCU grace period,
        // which the section of `'a` holds off.
        (!dev.is_null()).then(|| RcuDevice(unsafe { NetDevice::from_raw(dev) }))
    }
}

/// A device reached under RCU ([`Route::dev`]): which device it is, and
/// nothing that could sleep, as taking its instance lock would inside
/// the RCU read-side section:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::sock::Route;
///
/// fn out_of(route: &Route<'_>) -> bool {
///     route.dev().map(|d| d.lock()).is_some() // misuse
/// #   // twin: route.dev().map(|d| d.as_ptr()).is_some()
/// }
/// ```
pub struct RcuDevice<'a>(&'a NetDevice);

impl RcuDevice<'_> {
    /// The device's address, to compare with a device held otherwise.
    pub fn as_ptr(&self) -> *const NetDevice {
        self.0
    }
}
