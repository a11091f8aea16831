// SPDX-License-Identifier: GPL-2.0

//! Network memory: `net_iov`s and the `netmem_ref`s that carry them.
//!
//! A `net_iov` stands for a piece of memory the CPU may not be able to read,
//! such as a slice of a dma-buf in device memory. Memory providers own
//! arrays of them, grouped in areas ([`NetIovArea`]); page pools and skbs
//! pass them around as [`NetmemRef`]s, tagged pointers that are either a
//! `struct page` or a `net_iov`.
//!
//! C header: [`include/net/netmem.h`](srctree/include/net/netmem.h)

use crate::{
    dma::DmaAddress,
    page::PAGE_SHIFT,
    prelude::*,
    types::Opaque, //
};
use core::ptr::NonNull;

/// Which kind of memory provider owns a `net_iov`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum NetIovType {
    /// A dma-buf bound with devmem TCP.
    Dmabuf = bindings::net_iov_type_NET_IOV_DMABUF,
    /// An io_uring zero-copy receive area.
    IoUring = bindings::net_iov_type_NET_IOV_IOURING,
}

/// A `struct net_iov`.
///
/// C trusts a `net_iov` it is handed: it finds the area from `owner`,
/// computes the index from the area's array, reads the provider's data
/// behind the area for [`NetIovType::Dmabuf`], and lets the device write
/// to the DMA address. Only [`NetIov::init`], which is unsafe, sets them:
///
/// ```ignore,compile_fail,E0133
/// use kernel::net::netmem::{
///     NetIov,
///     NetIovArea,
///     NetIovType, //
/// };
///
/// fn forge(niov: &mut NetIov, elsewhere: &NetIovArea) {
///     niov.init(elsewhere, NetIovType::Dmabuf, 0xdead_0000); // misuse
/// #   // twin: // SAFETY: what `init` asks of the area and the address, the caller's.
/// #   // twin: unsafe { niov.init(elsewhere, NetIovType::Dmabuf, 0xdead_0000) };
/// }
/// ```
///
/// # Invariants
///
/// `owner` is null (a [`NetIov::zeroed`] `net_iov`), or points to an
/// initialised [`NetIovArea`] that stays valid and in place as long as
/// this `net_iov` exists.
#[repr(transparent)]
pub struct NetIov(Opaque<bindings::net_iov>);

// SAFETY: a `net_iov` is a descriptor shared between CPUs by design; its
// fields are read plainly or updated atomically by the page pool.
unsafe impl Send for NetIov {}

// SAFETY: see `Send`.
unsafe impl Sync for NetIov {}

impl NetIov {
    /// A `net_iov` with every field zero, to be initialised with
    /// [`NetIov::init`].
    pub const fn zeroed() -> Self {
        Self(Opaque::zeroed())
    }

    /// The `net_iov` at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a `net_iov` that stays valid for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *const bindings::net_iov) -> &'a Self {
        // SAFETY: `NetIov` is a transparent wrapper; valid per the caller.
        unsafe { &*ptr.cast() }
    }

    /// The C `struct net_iov`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::net_iov {
        self.0.get()
    }

    /// Stamps the owning area and type (`net_iov_init`) and records the DMA
    /// address of the memory, as a page pool keeps it for the
    /// `net_iov` (`page_pool_set_dma_addr_netmem`).
    ///
    /// # Safety
    ///
    /// C trusts all three values once the `net_iov` goes to a page pool:
    ///
    /// - `self` is an element of the array `owner` was initialised with
    ///   ([`NetIovArea::init`]), and neither `self` nor `owner` moves or
    ///   goes away while the `net_iov` exists (C computes the index as
    ///   `niov - owner->niovs`, and finds the area from the `net_iov`);
    /// - `kind` is that of the provider that owns `owner`: for
    ///   [`NetIovType::Dmabuf`], `owner` is the `area` at the start of a
    ///   devmem chunk (`struct dmabuf_genpool_chunk_owner`), which C reads
    ///   through `net_iov_owner`;
    /// - `dma` is the address, mapped for the device of every page pool the
    ///   `net_iov` goes to, of `1 << niov_shift` bytes of the provider's
    ///   memory that only this `net_iov` stands for: the device writes
    ///   there.
    pub unsafe fn init(&mut self, owner: &NetIovArea, kind: NetIovType, dma: DmaAddress) {
        let raw = self.as_raw();
        // A page pool on a 32-bit machine with 64-bit DMA keeps page frame
        // numbers, as it does for pages.
        let stored = if core::mem::size_of::<DmaAddress>() > core::mem::size_of::<usize>() {
            dma >> PAGE_SHIFT
        } else {
            dma
        };
        // SAFETY: `&mut self` is the only reference to this `net_iov`.
        // INVARIANT: `owner` is an initialised area that stays in place as
        // long as `self` exists, per the caller.
        unsafe {
            (*raw).owner = owner.as_raw();
            (*raw).type_ = kind as u32;
            // CAST: fits: see `stored` above.
            (*raw).desc.dma_addr = stored as usize;
        }
    }

    /// The area this `net_iov` belongs to (`net_iov_owner`); null until
    /// [`NetIov::init`].
    #[inline]
    pub fn owner(&self) -> *mut bindings::net_iov_area {
        // SAFETY: the `net_iov` is valid; `owner` is only written through
        // `&mut self`. Read in place: the page pool updates other fields
        // concurrently.
        unsafe { (*self.as_raw()).owner }
    }

    /// The type of provider it belongs to.
    #[inline]
    pub fn kind(&self) -> Option<NetIovType> {
        // SAFETY: as in `owner`.
        match unsafe { (*self.as_raw()).type_ } {
            bindings::net_iov_type_NET_IOV_DMABUF => Some(NetIovType::Dmabuf),
            bindings::net_iov_type_NET_IOV_IOURING => Some(NetIovType::IoUring),
            _ => None,
        }
    }

    /// Its position in its area's array (`net_iov_idx`); `None` if it has
    /// no area or does not lie in the area's array.
    ///
    /// Only addresses are compared: unlike `offset_from`, this is defined
    /// for a `net_iov` outside the array too.
    #[inline]
    pub fn index(&self) -> Option<usize> {
        let owner = self.owner();
        if owner.is_null() {
            return None;
        }
        // SAFETY: a non-null `owner` is an initialised area that is still
        // valid (the type invariant), whose fields are no longer written.
        let (base, count) = unsafe { ((*owner).niovs, (*owner).num_niovs) };
        let off = self.as_raw().addr().checked_sub(base.addr())?;
        let size = core::mem::size_of::<bindings::net_iov>();
        if off % size != 0 {
            return None;
        }
        let idx = off / size;
        (idx < count).then_some(idx)
    }

    /// The DMA address the page pool records for this `net_iov`.
    #[inline]
    pub fn dma_addr(&self) -> DmaAddress {
        // SAFETY: as in `owner`; the page pool does not write `dma_addr`
        // of a provider's `net_iov`.
        let stored = unsafe { (*self.as_raw()).desc.dma_addr };
        // CAST: lossless, `dma_addr_t` is at least as wide as `usize`.
        let stored = stored as DmaAddress;
        if core::mem::size_of::<DmaAddress>() > core::mem::size_of::<usize>() {
            stored << PAGE_SHIFT
        } else {
            stored
        }
    }

    /// Clears what a page pool left in the `net_iov` (its magic, pool and
    /// reference count), before a provider gives it to a pool again.
    ///
    /// # Safety
    ///
    /// No one else uses the `net_iov`: it is back with its provider.
    pub unsafe fn reset_pp(&self) {
        let raw = self.as_raw();
        // SAFETY: exclusive use, per the caller.
        unsafe {
            (*raw).desc.pp_magic = 0;
            (*raw).desc.pp = core::ptr::null_mut();
            (*raw).desc.pp_ref_count.counter = 0;
        }
    }

    /// The `netmem_ref` that carries this `net_iov` (`net_iov_to_netmem`);
    /// `None` until [`NetIov::init`] gave it an area: C code reaches the
    /// area (`net_iov_owner`) from every `net_iov` it is handed.
    #[inline]
    pub fn to_netmem(&self) -> Option<NetmemRef> {
        if self.owner().is_null() {
            return None;
        }
        // The `net_iov` is aligned: its low bit is free for the tag. C code
        // turns the value back into a pointer, so the provenance is exposed.
        // INVARIANT: a valid `net_iov` in an area, tagged.
        Some(NetmemRef(self.as_raw().expose_provenance() | NET_IOV_TAG))
    }
}

/// A `struct net_iov_area`: a provider's array of `net_iov`s and where it
/// starts in the provider's memory.
///
/// # Invariants
///
/// Once initialised, `niovs` points to `num_niovs` `net_iov`s that live as
/// long as the area.
#[repr(transparent)]
pub struct NetIovArea(Opaque<bindings::net_iov_area>);

// SAFETY: read-only once initialised.
unsafe impl Send for NetIovArea {}

// SAFETY: read-only once initialised.
unsafe impl Sync for NetIovArea {}

impl NetIovArea {
    /// An area with every field zero, to be initialised with
    /// [`NetIovArea::init`].
    pub const fn zeroed() -> Self {
        Self(Opaque::zeroed())
    }

    /// The area at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to an area that stays valid for `'a`.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *const bindings::net_iov_area) -> &'a Self {
        // SAFETY: transparent wrapper; valid per the caller.
        unsafe { &*ptr.cast() }
    }

    /// The C `struct net_iov_area`.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::net_iov_area {
        self.0.get()
    }

    /// Points the area at its `net_iov`s, which start at `base_virtual` in
    /// the provider's memory.
    ///
    /// # Safety
    ///
    /// - `niovs` points to `count` `net_iov`s that outlive the area and do
    ///   not move;
    /// - the area does not move or go away while any `net_iov` points to it
    ///   ([`NetIov::init`]), and none does yet: readers of an initialised
    ///   area do not expect it to change.
    pub unsafe fn init(
        &mut self,
        niovs: *mut bindings::net_iov,
        count: usize,
        base_virtual: usize,
    ) {
        // SAFETY: `&mut self` is the only reference to the area.
        let raw = unsafe { &mut *self.as_raw() };
        raw.niovs = niovs;
        raw.num_niovs = count;
        raw.base_virtual = base_virtual;
        // INVARIANT: per the caller.
    }

    /// The number of `net_iov`s in the area.
    #[inline]
    pub fn len(&self) -> usize {
        // SAFETY: read-only once initialised.
        unsafe { (*self.as_raw()).num_niovs }
    }

    /// Whether the area has no `net_iov`s.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Where the area starts in the provider's memory.
    #[inline]
    pub fn base_virtual(&self) -> usize {
        // SAFETY: read-only once initialised.
        unsafe { (*self.as_raw()).base_virtual }
    }
}

/// The tag bit of a `netmem_ref` that carries a `net_iov` (`NET_IOV`).
// CAST: a one-bit constant.
const NET_IOV_TAG: bindings::netmem_ref = bindings::NET_IOV as bindings::netmem_ref;

/// A `netmem_ref`: a `struct page` or a `net_iov`, told apart by the low
/// bit.
///
/// C trusts the `netmem_ref`s it is handed (by a memory provider, for
/// one), so safe code cannot make one from an arbitrary value:
///
/// ```ignore,compile_fail,E0133
/// use kernel::net::netmem::NetmemRef;
///
/// let forged = NetmemRef::from_raw(0x1000 | 1); // misuse
/// # // twin: // SAFETY: not handed to C: this only shows the call.
/// # // twin: let forged = unsafe { NetmemRef::from_raw(0x1000 | 1) };
/// ```
///
/// # Invariants
///
/// The value is not 0, and when it was made it was the address of a
/// `struct page`, or of a `net_iov` in an area with the `NET_IOV` bit set. Like a
/// raw pointer, it does not keep what it points to alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct NetmemRef(bindings::netmem_ref);

impl NetmemRef {
    /// Wraps a `netmem_ref` from C.
    ///
    /// # Safety
    ///
    /// `raw` is the address of a valid `struct page`, or of a valid
    /// `net_iov` with the `NET_IOV` bit set: a `netmem_ref` C handed out,
    /// not 0.
    #[inline]
    pub unsafe fn from_raw(raw: bindings::netmem_ref) -> Self {
        // INVARIANT: per the caller.
        Self(raw)
    }

    /// The C `netmem_ref`.
    #[inline]
    pub fn as_raw(self) -> bindings::netmem_ref {
        self.0
    }

    /// Whether it carries a `net_iov` (`netmem_is_net_iov`).
    #[inline]
    pub fn is_net_iov(self) -> bool {
        self.0 & NET_IOV_TAG != 0
    }

    /// The `net_iov` it carries, if it carries one (`netmem_to_net_iov`).
    #[inline]
    pub fn net_iov(self) -> Option<NonNull<bindings::net_iov>> {
        if !self.is_net_iov() {
            return None;
        }
        NonNull::new(core::ptr::with_exposed_provenance_mut(
            self.0 & !NET_IOV_TAG,
        ))
    }
}

#[macros::kunit_tests(rust_kernel_netmem)]
mod tests {
    use super::*;
    use crate::alloc::KVVec;

    #[test]
    fn net_iovs_know_their_area_index_and_address() -> Result {
        let mut niovs = KVVec::with_capacity(4, GFP_KERNEL)?;
        for _ in 0..4 {
            niovs.push(NetIov::zeroed(), GFP_KERNEL)?;
        }
        let mut area = KBox::new(NetIovArea::zeroed(), GFP_KERNEL)?;
        // SAFETY: `niovs` outlives `area` in this test and does not move
        // (no push after this point).
        unsafe { area.init(niovs.as_mut_ptr().cast(), 4, 0x4000) };
        for (i, n) in niovs.iter_mut().enumerate() {
            // CAST: small test values.
            let dma = 0x10_0000 + (i as u64) * 4096;
            // SAFETY: `n` is in `area`'s array; both stay in place until
            // the end of the test. No page pool sees these `net_iov`s, so
            // the type and DMA address are only read back.
            unsafe { n.init(&area, NetIovType::Dmabuf, dma) };
        }
        assert_eq!(area.len(), 4);
        assert_eq!(area.base_virtual(), 0x4000);
        for (i, n) in niovs.iter().enumerate() {
            assert_eq!(n.index(), Some(i));
            assert_eq!(n.owner(), area.as_raw());
            assert_eq!(n.kind(), Some(NetIovType::Dmabuf));
            assert_eq!(n.dma_addr(), 0x10_0000 + (i as u64) * 4096);
        }
        // A `net_iov` in no area has no index.
        let stray = NetIov::zeroed();
        assert_eq!(stray.index(), None);
        Ok(())
    }

    #[test]
    fn netmem_refs_carry_net_iovs_with_a_tag() -> Result {
        let mut n = KBox::new(NetIov::zeroed(), GFP_KERNEL)?;
        // Not in an area yet: nothing C could follow to its owner.
        assert!(n.to_netmem().is_none());
        let mut area = KBox::new(NetIovArea::zeroed(), GFP_KERNEL)?;
        // SAFETY: `n` outlives `area` in this test and stays in place.
        unsafe { area.init(n.as_raw(), 1, 0) };
        // SAFETY: `n` is `area`'s one `net_iov`; both stay in place until
        // the end of the test, and no page pool sees `n`.
        unsafe { n.init(&area, NetIovType::Dmabuf, 0x10_0000) };
        let r = n.to_netmem().ok_or(EINVAL)?;
        assert!(r.is_net_iov());
        assert_eq!(r.as_raw() & 1, 1);
        assert_eq!(r.net_iov().map(|p| p.as_ptr()), Some(n.as_raw()));
        // A page pointer has the bit clear.
        let page = crate::page::Page::alloc_page(GFP_KERNEL)?;
        // SAFETY: a valid page, alive until the end of the test.
        let page = unsafe { NetmemRef::from_raw(page.as_ptr().addr()) };
        assert!(!page.is_net_iov());
        assert!(page.net_iov().is_none());
        Ok(())
    }
}
