// SPDX-License-Identifier: GPL-2.0

//! The bindings a netdev netlink socket owns.
//!
//! The genetlink core gives each socket of the netdev family private data,
//! `struct netdev_nl_sock`, set up by `netdev_nl_sock_priv_init` (C) and
//! torn down by `netdev_nl_sock_priv_destroy` (here) when the socket is
//! released, which includes the death of its process. It holds a mutex and
//! a list of the socket's bindings; each binding on the list carries its
//! owner's reference ([`Handle`]).
//!
//! The list is newest first, as C keeps it, so teardown unbinds the last
//! binding made first.

use crate::binding::{
    Binding,
    Handle, //
};
use kernel::{
    bindings,
    net::netlink::Family,
    prelude::*,
    sync::{
        lock::{
            mutex::MutexBackend,
            Guard, //
        },
        Mutex,
    },
    types::Opaque,
};

/// The netdev family's private data of one socket.
#[repr(transparent)]
pub struct SockPriv(Opaque<bindings::netdev_nl_sock>);

impl SockPriv {
    /// The private data of the socket that sent `skb`, made on first use
    /// (`genl_sk_priv_get` on the netdev family).
    ///
    /// # Safety
    ///
    /// `skb` is a netdev family request being handled.
    pub unsafe fn of_request<'a>(skb: *mut bindings::sk_buff) -> Result<&'a Self> {
        // SAFETY: the netdev family is a static defined by the YNL code.
        let family = unsafe { Family::from_raw(&raw mut bindings::netdev_nl_family) };
        // SAFETY: `skb` is a request of that family, per the caller.
        let ptr = unsafe { family.sock_priv(skb) }?;
        // SAFETY: the family's private data is a `netdev_nl_sock`, set up
        // by `netdev_nl_sock_priv_init`, which lives while the socket does,
        // longer than the request.
        Ok(unsafe { Self::from_raw(ptr.as_ptr().cast()) })
    }

    /// The private data at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a `netdev_nl_sock` set up by `netdev_nl_sock_priv_init`,
    /// valid for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::netdev_nl_sock) -> &'a Self {
        // SAFETY: transparent wrapper; valid per the caller.
        unsafe { &*ptr.cast() }
    }

    fn head(&self) -> *mut bindings::list_head {
        // SAFETY: a field of the live private data.
        unsafe { &raw mut (*self.0.get()).bindings }
    }

    /// Takes the socket's lock (`priv->lock`): the outermost lock of the
    /// handlers.
    pub fn lock(&self) -> Owned<'_> {
        // SAFETY: `lock` was set up with `mutex_init` by
        // `netdev_nl_sock_priv_init` and lives as long as `self`.
        let mutex = unsafe { Mutex::<()>::from_raw(&raw mut (*self.0.get()).lock) };
        Owned {
            head: self.head(),
            _guard: mutex.lock(),
        }
    }
}

/// The bindings of a socket, its lock held.
pub struct Owned<'a> {
    head: *mut bindings::list_head,
    _guard: Guard<'a, (), MutexBackend>,
}

impl Owned<'_> {
    /// Adds a binding; the socket holds it until [`Owned::pop`].
    pub fn push(&mut self, handle: Handle) {
        let b = handle.into_raw();
        // SAFETY: the binding is alive (its handle's reference now belongs
        // to the list) and unlinked (a handle is never on a list); the lock
        // is held, which guards `head`.
        unsafe { bindings::list_add(Binding::link(b), self.head) };
    }

    /// Takes the newest binding off the list.
    pub fn pop(&mut self) -> Option<Handle> {
        // SAFETY: `head` is a list guarded by the lock we hold.
        let first = unsafe { (*self.head).next };
        if core::ptr::eq(first, self.head) {
            return None;
        }
        // SAFETY: only bindings' links are put on the list (`push`).
        let b = unsafe { Binding::from_link(first) };
        // SAFETY: `first` is on the list, which we hold the lock of.
        unsafe { bindings::list_del(first) };
        // SAFETY: every entry of the list was put there by `push` from a
        // handle, whose reference comes back now, once.
        Some(unsafe { Handle::from_raw(b) })
    }
}
