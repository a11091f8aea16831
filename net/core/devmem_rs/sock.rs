// SPDX-License-Identifier: GPL-2.0

//! The bindings a netdev netlink socket owns.
//!
//! The genetlink core gives each socket of the netdev family private data,
//! `struct netdev_nl_sock` ([`SockPriv`]), set up by
//! `netdev_nl_sock_priv_init` (C) and torn down by
//! `netdev_nl_sock_priv_destroy` (Rust, [`crate::exports`]) when the
//! socket is released, which includes the death of its process. It holds a
//! mutex and a list of the socket's bindings ([`SockBindings`]); each
//! binding on the list carries its owner's reference ([`Handle`]).
//!
//! The list is newest first, as C keeps it, so teardown unbinds the last
//! binding made first.

use crate::binding::{
    Binding,
    Handle, //
};
pub(crate) use crate::exports::SockPriv;
use core::ptr::NonNull;
use kernel::net::netdev_genl::{
    SockBindings,
    SockEntry,
    SockLink, //
};

/// The bindings of a socket, its lock held.
pub(crate) type Owned<'a> = SockBindings<'a, Handle>;

// SAFETY: a binding has one handle (its owner's reference), so its link is
// given at most once at a time; it lives while the handle's reference is
// given up with it, until `from_link` takes the handle back.
unsafe impl SockEntry for Handle {
    fn into_link(self) -> NonNull<SockLink> {
        let link = self.link();
        // The reference now belongs to the list.
        let _ = self.into_raw();
        link
    }

    unsafe fn from_link(link: NonNull<SockLink>) -> Self {
        // SAFETY: `link` came from `into_link`, so it is a binding's.
        let b = unsafe { Binding::from_link(link) };
        // SAFETY: `into_link` gave up this binding's handle with
        // `Handle::into_raw`; taken back once, per the caller.
        unsafe { Handle::from_raw(b) }
    }
}
