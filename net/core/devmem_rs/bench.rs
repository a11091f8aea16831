// SPDX-License-Identifier: GPL-2.0

//! Allocation benchmark: alloc + free per `net_iov` through a page pool,
//! with this crate's provider and with the C core's gen_pool path, in the
//! same boot, on the same rig.
//!
//! Each round creates a page pool on a queue with the provider, allocates
//! every `net_iov` through `page_pool_alloc_netmems`, gives them all back
//! with `page_pool_put_full_netmem` (those that do not fit the pool's ring
//! go straight back to the provider) and destroys the pool (the rest go
//! back). Both providers see the same calls; they differ in how they hand
//! out and take back `net_iov`s:
//!
//! - Rust: one number off the lock-free free list per call (an exchange of
//!   the head and a store to the number's link), and per free an exchange
//!   of the link, which catches a double free, and one of the head;
//! - C (`net/core/devmem.c`): one `net_iov` per call from a first-fit
//!   gen_pool over the binding's DMA addresses, `gen_pool_has_addr` and
//!   `gen_pool_free` per free.
//!
//! The netdev the pools sit on is made once per provider, outside the
//! timed rounds; two passes run a block of rounds of each, and each
//! provider's fastest round counts.
//!
//! The same rounds run a third time on a page pool without a provider: its
//! buffers are system pages, which it takes from the page allocator in
//! bulk and frees back to it once its cache and ring are full. The pool
//! maps nothing, as the providers' pools map nothing per buffer (a binding
//! is mapped once, when it is made), so only where the buffers come from
//! differs. That is the floor: what the page pool costs per buffer when no
//! provider is involved.
//!
//! Prints `devmem-alloc: rust <ns> ns/niov, c <ns> ns/niov, ratio <r>,
//! system-page floor <ns> ns/page`. It checks that every `net_iov` comes
//! back, never how fast: timing is for reading, not for passing.

use super::{
    binding::Binding,
    provider::DEVMEM_OPS,
    test_netdev::{with_binding, Rig},
};
use core::ptr;
use kernel::{
    alloc::KVVec,
    device::{
        Bound,
        Device, //
    },
    dma::DmaAddress,
    genalloc::GenPool,
    net::{
        netmem::NetmemRef,
        page_pool::{
            self,
            AllocCache,
            MemoryProvider,
            PagePool,
            Params,
            Pool,
            PoolInit,
            PoolNetmem,
            ProviderOps, //
        },
    },
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
    time::{
        Instant,
        Monotonic, //
    },
    warn_on,
};

/// `net_iov`s per round.
const NIOVS: u32 = 4096;
/// Rounds per provider and measurement.
const ROUNDS: u32 = 24;

/// The C core's allocation path: a gen_pool over the DMA addresses of one
/// chunk, one `net_iov` per call, as `net_devmem_alloc_dmabuf` and
/// `net_devmem_free_dmabuf` do.
///
/// # Invariants
///
/// `binding` outlives the path and every pool using it.
struct GenPoolPath {
    pool: GenPool,
    binding: *const Binding,
    base: DmaAddress,
}

// SAFETY: the gen_pool is lock-free and safe from any context; the binding
// is `Sync`.
unsafe impl Sync for GenPoolPath {}

impl GenPoolPath {
    fn new(binding: &Binding) -> Result<Self> {
        // CAST: PAGE_SHIFT is small. The gen_pool hands out pages.
        if binding.niov_shift() != PAGE_SHIFT as u32 {
            return Err(EINVAL);
        }
        let first = binding.net_iov(0).ok_or(EINVAL)?;
        let base = first.dma_addr();
        // CAST: PAGE_SHIFT is small.
        let mut pool = GenPool::new(PAGE_SHIFT as u32)?;
        // CAST: a small size.
        let size = binding.niov_count() as usize * PAGE_SIZE;
        // CAST: dma_addr_t is unsigned long on x86-64.
        pool.add(base as usize, size)?;
        // INVARIANT: the bench drops the path before the binding.
        Ok(Self {
            pool,
            binding: ptr::from_ref(binding),
            base,
        })
    }

    fn binding(&self) -> &Binding {
        // SAFETY: the binding outlives the path (type invariant).
        unsafe { &*self.binding }
    }
}

// SAFETY:
// - `alloc_netmems` hands out the `net_iov` of the binding at the address
//   the gen_pool just allocated, which no one else holds: the gen_pool
//   hands each address out once until it is freed, and the bench runs one
//   round at a time, so no pool of the binding's own provider holds a
//   `net_iov` meanwhile. It clears and adopts it for the pool it returns
//   it to.
// - The binding outlives the path and every pool using it (the type
//   invariant), so its `net_iov`s stay valid while a pool holds them; an
//   address goes back to the gen_pool only in `release_netmem`.
// - Each `net_iov` of the binding, and each range the gen_pool hands out,
//   is one page (`niov_shift`), at the `net_iov`'s DMA address.
// - `init` takes nothing, so neither it nor `destroy` has anything to
//   undo.
#[vtable]
unsafe impl MemoryProvider for GenPoolPath {
    fn niov_shift(this: &Self) -> u32 {
        this.binding().niov_shift()
    }

    fn init(_this: &Self, pool: &mut PoolInit<'_>) -> Result {
        pool.disable_dma_sync();
        Ok(())
    }

    fn destroy(_this: &Self, _pool: &PagePool) {}

    fn alloc_netmems(this: &Self, cache: &mut AllocCache<'_>) -> Option<NetmemRef> {
        let addr = this.pool.alloc(PAGE_SIZE)?;
        // CAST: below `niov_count`, set up in `new`.
        let idx = ((addr as u64 - this.base) >> PAGE_SHIFT) as u32;
        let niov = this.binding().net_iov(idx)?;
        // SAFETY: the gen_pool just handed this `net_iov` out.
        unsafe { niov.reset_pp() };
        // SAFETY: as above, cleared, and returned to the pool below; the
        // binding outlives the pool.
        unsafe { cache.adopt(niov) };
        niov.to_netmem()
    }

    fn release_netmem(this: &Self, _pool: &PagePool, netmem: NetmemRef) -> bool {
        // SAFETY: the pool only holds `net_iov`s of the binding.
        let Some(niov) = (unsafe { page_pool::take_back(netmem) }) else {
            return false;
        };
        let Some(idx) = this.binding().index_of(niov) else {
            return false;
        };
        // CAST: the address of the `net_iov` in the chunk.
        let addr = (this.base + (u64::from(idx) << PAGE_SHIFT)) as usize;
        if warn_on!(!this.pool.has_addr(addr, PAGE_SIZE)) {
            return false;
        }
        // SAFETY: `addr` is the `net_iov`'s, which the pool gave back:
        // `alloc_netmems` allocated it from the gen_pool with this size,
        // and the page pool releases a `net_iov` once.
        unsafe { this.pool.free(addr, PAGE_SIZE) };
        false
    }
}

static C_PATH_OPS: ProviderOps<GenPoolPath> = ProviderOps::new();

/// One round: a new pool on the rig's queue, every `net_iov` out and back,
/// the pool destroyed (which releases what its ring holds to the
/// provider). Returns how many came out and the nanoseconds it took.
fn round(rig: &mut Rig<'_>, dev: &Device<Bound>) -> Result<(u32, i64)> {
    // CAST: u32 to usize is lossless on Linux.
    let mut got = KVVec::with_capacity(NIOVS as usize, GFP_KERNEL)?;
    let t0 = Instant::<Monotonic>::now();
    rig.new_pool(dev, 0)?;
    while let Some(m) = rig.alloc() {
        // Cannot fail: the capacity covers every `net_iov`.
        got.push_within_capacity(m).map_err(|_| ENOMEM)?;
    }
    let n = got.len();
    // Each drop gives its `net_iov` back to the pool.
    got.clear();
    rig.drop_pool();
    let ns = t0.elapsed().as_nanos();
    // CAST: at most `NIOVS`.
    Ok((n as u32, ns))
}

/// A round of [`round`]'s shape on a pool of system pages, without a
/// provider or a netdev: a new pool (of the rigs' size), `NIOVS` pages out,
/// all back (`page_pool_put_full_netmem`, as in [`round`]), the pool
/// destroyed. Unmapped, as the faux device has no DMA mask, and as the
/// providers' pools map nothing per buffer. Returns the nanoseconds.
fn system_round(dev: &Device<Bound>) -> Result<i64> {
    // CAST: u32 to usize is lossless on Linux.
    let mut got = KVVec::<PoolNetmem>::with_capacity(NIOVS as usize, GFP_KERNEL)?;
    let t0 = Instant::<Monotonic>::now();
    let mut pool = Pool::new(&Params::new(dev, 0, 256).unmapped())?;
    for _ in 0..NIOVS {
        // The page allocator ran dry: no figure to give.
        let page = pool.alloc().ok_or(ENOMEM)?;
        // Cannot fail: the capacity covers every page.
        got.push_within_capacity(page).map_err(|_| ENOMEM)?;
    }
    // Each drop gives its page back to the pool.
    got.clear();
    drop(pool);
    Ok(t0.elapsed().as_nanos())
}

/// A rig for `ops` over `mp`, without a pool yet: its netdev is made once,
/// outside the timed rounds.
fn rig<'a, T: MemoryProvider>(
    ops: &'static ProviderOps<T>,
    mp: &'a T,
    dev: &'a Device<Bound>,
) -> Result<Rig<'a>> {
    let mut rig = Rig::new(ops, mp, dev, 0)?;
    rig.drop_pool();
    Ok(rig)
}

/// The nanoseconds of one round, checking that it saw every `net_iov`.
fn timed(rig: &mut Rig<'_>, dev: &Device<Bound>) -> Result<i64> {
    let (n, ns) = round(rig, dev)?;
    if n != NIOVS {
        return Err(EIO);
    }
    Ok(ns)
}

#[kunit_tests(devmem_rs_bench)]
mod tests {
    use super::*;

    #[test]
    fn devmem_alloc() -> Result {
        with_binding(NIOVS, |b, dev| {
            let c_path = GenPoolPath::new(b)?;
            let mut rust_rig = rig(&DEVMEM_OPS, b, dev)?;
            let mut c_rig = rig(&C_PATH_OPS, &c_path, dev)?;
            // Two passes over both, a block of rounds each, after a warm-up
            // round each; each keeps its fastest round: the load of the
            // machine (a TCG guest shares it) varies, the best round much
            // less, and blocks keep each path's code and data warm.
            timed(&mut rust_rig, dev)?;
            timed(&mut c_rig, dev)?;
            system_round(dev)?;
            let (mut rust, mut c, mut sys) = (i64::MAX, i64::MAX, i64::MAX);
            for _ in 0..2 {
                for _ in 0..ROUNDS {
                    rust = rust.min(timed(&mut rust_rig, dev)?);
                }
                for _ in 0..ROUNDS {
                    c = c.min(timed(&mut c_rig, dev)?);
                }
                for _ in 0..ROUNDS {
                    sys = sys.min(system_round(dev)?);
                }
            }
            let n = i64::from(NIOVS);
            let (rust, c, sys) = (rust / n, c / n, sys / n);
            // Ratio to two decimals, in integers: no floats in the kernel.
            let r100 = if c > 0 { rust * 100 / c } else { 0 };
            pr_info!(
                "devmem-alloc: rust {rust} ns/niov, c {c} ns/niov, ratio {}.{:02}, \
                 system-page floor {sys} ns/page\n",
                r100 / 100,
                r100 % 100
            );
            Ok(())
        })
    }
}
