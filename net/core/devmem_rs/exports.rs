// SPDX-License-Identifier: GPL-2.0

//! What C calls: the functions `net/core/devmem.h` and
//! `net/core/netdev-genl-gen.h` declare for the Rust core. `#[export]`
//! checks each signature against its C prototype.
//!
//! C also reads the first fields of a binding and of a chunk through the
//! inline accessors of `devmem.h` (the binding of a `net_iov`, its id and
//! dma-buf offset, dropping a reference in the TX path); the assertions
//! below keep the Rust layout in step with the C declarations.
//!
//! Also what the YNL code of the netdev family (`netdev-genl-gen.h`)
//! defines for the handlers: the family, the policy of a queue in a
//! request, and the private data of a socket ([`SockPriv`]).

use crate::{
    binding::{
        Binding,
        Chunk, //
    },
    genl,
    sock::Owned,
};
use core::mem::offset_of;
use kernel::{
    bindings,
    net::{
        netdev_genl::{
            attr,
            SockBindings, //
        },
        netlink::{
            request::{
                Info,
                Policy, //
            },
            Family,
        },
        netmem::NetIov,
        sock::Sock,
    },
    page::PAGE_SIZE,
    prelude::*,
    types::Opaque,
};

/// Checks that the Rust field `$r` of `$rt` sits where C expects `$c` of
/// `$ct`, with the same size.
macro_rules! same_place {
    ($rt:ty, $r:ident, $ct:ty, $c:ident) => {
        const _: () = assert!(offset_of!($rt, $r) == offset_of!($ct, $c));
    };
}

same_place!(Binding, dev, bindings::net_devmem_dmabuf_binding, dev);
same_place!(Binding, id, bindings::net_devmem_dmabuf_binding, id);
same_place!(
    Binding,
    niov_shift,
    bindings::net_devmem_dmabuf_binding,
    niov_shift
);
same_place!(Binding, refs, bindings::net_devmem_dmabuf_binding, ref_);
same_place!(Chunk, area, bindings::dmabuf_genpool_chunk_owner, area);
same_place!(
    Chunk,
    binding,
    bindings::dmabuf_genpool_chunk_owner,
    binding
);
same_place!(
    Chunk,
    base_dma_addr,
    bindings::dmabuf_genpool_chunk_owner,
    base_dma_addr
);
const _: () = assert!(
    core::mem::size_of::<Chunk>() == core::mem::size_of::<bindings::dmabuf_genpool_chunk_owner>()
);

/// The entries of `netdev_queue_id_nl_policy`.
const QUEUE_ID_POLICY_LEN: usize = attr::QUEUE_TYPE as usize + 1;

/// The policy of a queue in the `queues` list of a request.
pub(crate) fn queue_id_policy() -> Policy<QUEUE_ID_POLICY_LEN> {
    // SAFETY: the YNL-generated policy of the netdev family, a static with
    // `NETDEV_A_QUEUE_TYPE + 1` entries.
    unsafe { Policy::new(&bindings::netdev_queue_id_nl_policy) }
}

/// The netdev family's private data of one socket (`struct
/// netdev_nl_sock`): its lock and its list of bindings.
///
/// # Invariants
///
/// The data was set up by `netdev_nl_sock_priv_init`, and its list is
/// only changed through [`SockPriv::lock`].
#[pin_data]
#[repr(transparent)]
pub struct SockPriv {
    #[pin]
    inner: Opaque<bindings::netdev_nl_sock>,
}

impl SockPriv {
    /// The private data of the socket that sent `skb`, made on first use
    /// (`genl_sk_priv_get` on the netdev family).
    ///
    /// # Safety
    ///
    /// `skb` is a netdev family request being handled.
    unsafe fn of_request<'a>(skb: *mut bindings::sk_buff) -> Result<&'a Self> {
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
    /// valid for `'a`, whose list only this type changes.
    unsafe fn from_raw<'a>(ptr: *mut bindings::netdev_nl_sock) -> &'a Self {
        // INVARIANT: per the caller.
        // SAFETY: transparent wrapper; valid per the caller.
        unsafe { &*ptr.cast() }
    }

    /// Private data of a socket made here rather than by the genetlink
    /// core, for tests; bindings still on it when it is freed are leaked.
    #[cfg(CONFIG_KUNIT)]
    pub(crate) fn new() -> impl PinInit<Self> {
        // INVARIANT: set up as the genetlink core does.
        pin_init!(Self {
            // SAFETY: `slot` is valid and not shared; all the C function
            // needs.
            inner <- Opaque::ffi_init(|slot| unsafe { bindings::netdev_nl_sock_priv_init(slot) }),
        })
    }

    /// Takes the socket's lock (`priv->lock`): the outermost lock of the
    /// handlers.
    pub(crate) fn lock(&self) -> Owned<'_> {
        let raw = self.inner.get();
        // SAFETY: `lock` and `bindings` were set up by
        // `netdev_nl_sock_priv_init` and live as long as `self`; the lock
        // guards the list, whose entries are only put there by
        // `SockBindings<Handle>` (type invariant).
        unsafe { SockBindings::lock(&raw mut (*raw).lock, &raw mut (*raw).bindings) }
    }
}

/// The binding C knows by `ptr`.
///
/// # Safety
///
/// `ptr` is a binding C got from this crate, alive for `'a`.
unsafe fn binding<'a>(ptr: *mut bindings::net_devmem_dmabuf_binding) -> &'a Binding {
    // SAFETY: C's binding pointers are pointers to `Binding`s, whose first
    // fields C sees as `struct net_devmem_dmabuf_binding` (asserted above);
    // alive per the caller.
    unsafe { &*ptr.cast::<Binding>() }
}

/// Takes a reference on the binding of a devmem `net_iov` for a frag that
/// holds it (`__get_netmem`). As in C, a binding already gone is ignored.
///
/// # Safety
///
/// `niov` is a `net_iov` of a live binding.
#[export]
pub unsafe extern "C" fn net_devmem_get_net_iov(niov: *mut bindings::net_iov) {
    // SAFETY: per this function's contract.
    let b = unsafe { Binding::of_net_iov(NetIov::from_raw(niov)) };
    let _ = b.get_raw();
}

/// Drops the reference [`net_devmem_get_net_iov`] took.
///
/// # Safety
///
/// `niov` is a `net_iov` of a binding the caller holds a reference to
/// through it.
#[export]
pub unsafe extern "C" fn net_devmem_put_net_iov(niov: *mut bindings::net_iov) {
    // SAFETY: per this function's contract.
    let b = unsafe { Binding::of_net_iov(NetIov::from_raw(niov)) };
    // SAFETY: the caller gives up the reference it holds.
    unsafe { b.put_raw() };
}

/// The TX binding `dmabuf_id` for a send on `sk`, with a reference the
/// caller drops with `net_devmem_dmabuf_binding_put`; an `ERR_PTR` if there
/// is none, it is not for TX, or the socket routes elsewhere.
///
/// # Safety
///
/// `sk` is a TCP socket whose lock the caller holds.
#[export]
pub unsafe extern "C" fn net_devmem_get_binding(
    sk: *mut bindings::sock,
    dmabuf_id: c_uint,
) -> *mut bindings::net_devmem_dmabuf_binding {
    // SAFETY: per this function's contract.
    let sk = unsafe { Sock::from_raw(sk) };
    match genl::tx_binding(sk, dmabuf_id) {
        Ok(b) => b.into_raw().as_ptr().cast(),
        Err(e) => e.to_ptr(),
    }
}

/// The `net_iov` at offset `addr` of TX binding `binding`, with the offset
/// into it and the bytes left in it; null past the end.
///
/// # Safety
///
/// `binding` came from [`net_devmem_get_binding`] and is held; `off` and
/// `size` are writable.
#[export]
pub unsafe extern "C" fn net_devmem_get_niov_at(
    binding: *mut bindings::net_devmem_dmabuf_binding,
    addr: usize,
    off: *mut usize,
    size: *mut usize,
) -> *mut bindings::net_iov {
    // SAFETY: per this function's contract.
    let b = unsafe { self::binding(binding) };
    let Some((niov, o)) = genl::tx_niov_at(b, addr) else {
        return core::ptr::null_mut();
    };
    // SAFETY: writable per this function's contract.
    unsafe {
        *off = o;
        *size = PAGE_SIZE - o;
    }
    niov.as_raw()
}

/// The `bind-rx` request.
///
/// # Safety
///
/// Called by the genetlink core with a netdev family request.
#[export]
pub unsafe extern "C" fn netdev_nl_bind_rx_doit(
    skb: *mut bindings::sk_buff,
    info: *mut bindings::genl_info,
) -> c_int {
    // SAFETY: the core parsed the request with the op's policy, of
    // `BIND_RX_MAXATTR + 1` entries.
    let info = unsafe { Info::from_raw(info, genl::BIND_RX_MAXATTR) };
    // SAFETY: `skb` is the request, per this function's contract.
    match genl::bind_rx(&info, || unsafe { SockPriv::of_request(skb) }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The `bind-tx` request.
///
/// # Safety
///
/// Called by the genetlink core with a netdev family request.
#[export]
pub unsafe extern "C" fn netdev_nl_bind_tx_doit(
    skb: *mut bindings::sk_buff,
    info: *mut bindings::genl_info,
) -> c_int {
    // SAFETY: the core parsed the request with the op's policy, of
    // `BIND_TX_MAXATTR + 1` entries.
    let info = unsafe { Info::from_raw(info, genl::BIND_TX_MAXATTR) };
    // SAFETY: `skb` is the request, per this function's contract.
    match genl::bind_tx(&info, || unsafe { SockPriv::of_request(skb) }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// A netdev netlink socket goes: unbind what it bound.
///
/// # Safety
///
/// Called by the genetlink core with the socket's private data, set up by
/// `netdev_nl_sock_priv_init`, which is freed after this returns.
#[export]
pub unsafe extern "C" fn netdev_nl_sock_priv_destroy(priv_: *mut bindings::netdev_nl_sock) {
    // SAFETY: per this function's contract.
    genl::sock_gone(unsafe { SockPriv::from_raw(priv_) });
}
