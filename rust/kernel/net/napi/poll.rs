// SPDX-License-Identifier: GPL-2.0

//! What one poll of a NAPI instance gets: the [`NapiPoll`] token, and
//! through it, with a budget, the receive side ([`NapiRx`]: GRO, the NAPI
//! allocation caches, the instance's page pools).
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h);
//! the core's side: [`net/core/dev.c`](srctree/net/core/dev.c),
//! [`net/core/gro.c`](srctree/net/core/gro.c)

use super::{
    Napi,
    Poll, //
};
use crate::{
    error::{
        code::EINVAL,
        Result, //
    },
    net::{
        driver::Device,
        netdev::NetDevice,
        skbuff::{
            DropReason,
            SkBuff, //
        },
    },
    types::NotThreadSafe,
};
#[cfg(CONFIG_PAGE_POOL)]
use crate::{
    ffi::c_int,
    net::{
        page_pool::{
            Pool,
            PoolNetmem,
            Reusable, //
        },
        skbuff::SHINFO_ROOM, //
    },
};
use core::cell::Cell;

/// The context of one poll of a NAPI instance: what [`Poll::poll`] gets.
///
/// It exists only inside the poll, and is neither `Send` nor `Sync`, so
/// nothing NAPI-only runs outside the instance's poll. Handing a packet to
/// the stack anywhere else does not build:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::napi::{
///     Napi,
///     Poll,
///     RxSkb, //
/// };
/// # // twin: use kernel::net::napi::NapiRx;
///
/// fn hand_over<T: Poll>(napi: &Napi<T>, skb: RxSkb) {
///     napi.gro_receive(skb); // misuse
/// }
/// # // twin: fn hand_over_in_poll<T: Poll>(rx: &NapiRx<'_, T>, skb: RxSkb) {
/// # // twin:     rx.gro_receive(skb);
/// # // twin: }
/// ```
///
/// nor does keeping the token past the poll:
///
/// ```ignore,compile_fail,E0521
/// use kernel::net::napi::{
///     NapiPoll,
///     Poll, //
/// };
///
/// struct Queue;
///
/// fn keep(_napi: NapiPoll<'static, Queue>) {}
///
/// impl Poll for Queue {
///     type Data = ();
///
///     fn poll(_this: &Self, napi: NapiPoll<'_, Self>) -> i32 {
///         keep(napi); // misuse
///         0
///     }
/// }
/// ```
///
/// nor using it once the poll completed:
///
/// ```ignore,compile_fail,E0382
/// use kernel::net::napi::{
///     NapiPoll,
///     Poll, //
/// };
///
/// struct Queue;
///
/// impl Poll for Queue {
///     type Data = ();
///
///     fn poll(_this: &Self, mut napi: NapiPoll<'_, Self>) -> i32 {
///         napi.complete_done(0);
///         let _ = napi.rx(); // misuse
///         0
///     }
/// }
/// ```
pub struct NapiPoll<'a, T: Poll> {
    pub(super) napi: &'a Napi<T>,
    pub(super) budget: i32,
    /// Set by `complete_done`, for the callback's return value.
    pub(super) completed: &'a Cell<bool>,
    pub(super) _not_send: NotThreadSafe,
}

impl<'a, T: Poll> NapiPoll<'a, T> {
    /// The most units of work the poll may do. 0 when netpoll polls for
    /// transmit completions only: then there is no [`NapiPoll::rx`].
    pub fn budget(&self) -> i32 {
        self.budget
    }

    /// The device the instance polls for.
    pub fn dev(&self) -> &'a Device<T::Data> {
        // SAFETY: a polled instance is enabled, so on a device of
        // `T::Data` whose data is initialised (type invariants of `Napi`
        // and `Instance`): the registration takes the instance off,
        // disabling it and so waiting for this poll, before it drops the
        // data, or waits for the counted references a poll may have made.
        // The poll sees `'a` only as a lifetime of its call.
        unsafe { Device::from_raw(self.napi.device()) }
    }

    /// The receive side of the poll: `None` with a budget of 0, when
    /// netpoll polls, maybe with interrupts off, and receive work (the
    /// NAPI caches, GRO, page pools) is not allowed.
    ///
    /// One at a time: it lends the instance's page pools out.
    pub fn rx(&mut self) -> Option<NapiRx<'_, T>> {
        (self.budget > 0).then_some(NapiRx {
            napi: self.napi,
            _not_send: NotThreadSafe,
        })
    }

    /// Tells byte queue limits that `packets` frames of `bytes` bytes of
    /// the instance's transmit queue (the one of the index it was added
    /// with) were sent (`netdev_tx_completed_queue`), which may let the
    /// stack send on it again. Nothing for an index the device does not
    /// use for transmits.
    ///
    /// Completions are told only here: the NAPI core runs one poll of an
    /// instance at a time, and no other instance of the device has the
    /// index (the contract of [`Napi::add`]), so completions of a queue are
    /// serialised, as BQL requires. A transmit path cannot tell them:
    ///
    /// ```ignore,compile_fail,E0599
    /// use kernel::net::driver::TxQueue;
    /// # // twin: use kernel::net::napi::{NapiPoll, Poll};
    ///
    /// fn completed_in_xmit(txq: &mut TxQueue<'_>) {
    ///     txq.tx_completed(1, 1500); // misuse
    /// }
    /// # // twin: fn completed_in_poll<T: Poll>(napi: &NapiPoll<'_, T>) {
    /// # // twin:     napi.tx_completed(1, 1500);
    /// # // twin: }
    /// ```
    ///
    /// More bytes than the queue has in flight are cut to what it has,
    /// with a warning (rate limited): byte queue limits BUG on them
    /// (`dql_completed`).
    pub fn tx_completed(&self, packets: u32, bytes: u32) {
        let Ok(idx) = u16::try_from(self.napi.inst.index.get()) else {
            return;
        };
        if let Some(q) = self.dev().tx_queue(idx) {
            #[cfg(CONFIG_BQL)]
            let bytes = {
                // SAFETY: a transmit queue of the device, whose counts
                // stay. `num_queued` is the sender's, which may be adding
                // to it meanwhile, under the queue's lock: read once, as
                // `dql_completed` reads it (`READ_ONCE`); it only grows
                // until a reset, which needs the instance disabled
                // (`Added::tx_reset`), so not during this poll.
                // `num_completed` is the completer's: this poll's (see
                // below).
                let (queued, completed) = unsafe {
                    let dql = &raw const (*q).dql;
                    (
                        core::ptr::read_volatile(&raw const (*dql).num_queued),
                        (*dql).num_completed,
                    )
                };
                let cut = completable(bytes, queued, completed);
                // A driver bug, said with the device's name each time the
                // net rate limit lets it (a test run finds it on any
                // device but the KUnit suite's, which makes it on
                // purpose); not a WARN, which a test run's kernel log must
                // be free of.
                // SAFETY: no requirements.
                if cut != bytes && unsafe { bindings::net_ratelimit() } != 0 {
                    // SAFETY: a live device; the format is NUL-terminated
                    // and takes two `%u`, given two `u32`.
                    unsafe {
                        bindings::netdev_warn(
                            self.dev().as_raw(),
                            crate::str::CStrExt::as_char_ptr(
                                c"NAPI poll completed %u bytes, %u in flight\n",
                            ),
                            bytes,
                            cut,
                        )
                    };
                }
                cut
            };
            // SAFETY: a transmit queue of the device; in the poll of its
            // index's only instance, which the NAPI core does not run
            // twice at once, and `Added::tx_reset` refuses an enabled
            // instance: the only completer. No more bytes than are in
            // flight: at most what was when the count was read above,
            // and sends only add to it.
            unsafe { bindings::netdev_tx_completed_queue(q, packets, bytes) }
        }
    }

    /// Ends polling after `work_done` units (`napi_complete_done`);
    /// `false` when the instance stays scheduled (busy polling or netpoll
    /// own it, or it was scheduled meanwhile), and the interrupt must stay
    /// off. Refused (`false`) when `work_done` is not below the budget: the
    /// poll then goes on.
    ///
    /// Once completed, another CPU may poll the instance: the token goes.
    pub fn complete_done(self, work_done: i32) -> bool {
        if work_done < 0 || work_done >= self.budget {
            return false;
        }
        self.completed.set(true);
        // SAFETY: in this instance's poll, which has not completed yet
        // (the token is consumed here), with less than its budget done.
        unsafe { bindings::napi_complete_done(self.napi.as_raw(), work_done) }
    }
}

/// How much of a buffer of `size` bytes at address `data` a packet built
/// around it takes: up to the last cache line boundary in it, where its
/// shared info ends (`napi_build_skb` puts it at the end, and it must be
/// aligned: atomics, and a cache line of its own). 0 when there is none.
#[cfg(CONFIG_PAGE_POOL)]
#[inline]
pub(super) fn build_size(data: usize, size: usize) -> u32 {
    // CAST: a small power of two.
    let align = bindings::SMP_CACHE_BYTES as usize;
    // Aligned at both ends, as a page pool's halves are: all of it.
    if (data | size) & (align - 1) == 0 {
        if let Ok(size) = u32::try_from(size) {
            return size;
        }
    }
    let end = data.saturating_add(size) & !(align - 1);
    // A buffer is at most a `u32` long.
    u32::try_from(end.saturating_sub(data)).unwrap_or(0)
}

/// What byte queue limits can take of `bytes` completed, with `queued`
/// bytes queued and `completed` completed so far (counts that wrap): no
/// more than are in flight, which `dql_completed` BUGs on.
#[cfg_attr(not(CONFIG_BQL), allow(dead_code))]
#[inline]
pub(super) fn completable(bytes: u32, queued: u32, completed: u32) -> u32 {
    bytes.min(queued.wrapping_sub(completed))
}

impl SkBuff {
    /// Frees the packet as sent, from the poll `napi` of a NAPI instance
    /// (`napi_consume_skb`): into the per-CPU NAPI cache, unless the poll
    /// has no budget (netpoll), when it is freed as [`SkBuff::consume`]
    /// frees it. Outside a poll, there is [`SkBuff::consume`].
    pub fn napi_consume<T: Poll>(self, napi: &NapiPoll<'_, T>) {
        // SAFETY: the buffer is ours to free; in a NAPI poll, whose budget
        // is passed as it came (0 makes it `dev_consume_skb_any`).
        unsafe { bindings::napi_consume_skb(self.into_raw(), napi.budget()) }
    }
}

/// A packet a poll made for a received frame ([`NapiRx::alloc_skb`],
/// [`NapiRx::build_skb`]), changed since only as this type lets it be:
/// its data and shared info are its own, and it has neither a socket nor
/// a destructor (what `napi_alloc_skb` and `napi_build_skb` give). So
/// [`NapiRx::gro_receive`] hands it to GRO without checking either.
///
/// It reads as an [`SkBuff`]; what changes it is its own (frags, the
/// protocol, the checksum and hash the device found, and the receive
/// queue, [`NapiRx::record_rx_queue`]): a poll cannot swap
/// it for a packet from elsewhere, shared or cloned, nor make it one.
/// Such a packet does not go to GRO:
///
/// ```ignore,compile_fail,E0308
/// use kernel::net::{
///     napi::{
///         NapiRx,
///         Poll, //
///     },
///     skbuff::SkBuff,
/// };
/// # // twin: use kernel::net::napi::RxSkb;
///
/// fn hand_over<T: Poll>(rx: &NapiRx<'_, T>, skb: SkBuff) {
///     rx.gro_receive(skb); // misuse
/// }
/// # // twin: fn hand_over_built<T: Poll>(rx: &NapiRx<'_, T>, skb: RxSkb) {
/// # // twin:     rx.gro_receive(skb);
/// # // twin: }
/// ```
///
/// # Invariants
///
/// The packet is neither shared nor cloned ([`SkBuff::is_exclusive`]),
/// and its socket and destructor are null.
pub struct RxSkb(SkBuff);

impl RxSkb {
    /// Appends a frag of a pool buffer ([`SkBuff::add_rx_frag`]).
    #[cfg(CONFIG_PAGE_POOL)]
    #[inline]
    pub fn add_rx_frag(&mut self, buf: PoolNetmem, off: u32, len: u32) -> Result<(), PoolNetmem> {
        // INVARIANT: frags neither share nor clone the packet, nor give it
        // a socket or a destructor.
        self.0.add_rx_frag(buf, off, len)
    }

    /// Appends to the linear part ([`SkBuff::put_data`]).
    #[inline]
    pub fn put_data(&mut self, data: &[u8]) -> Result {
        // INVARIANT: as in `add_rx_frag`.
        self.0.put_data(data)
    }

    /// Sets the protocol and device from the Ethernet header
    /// ([`SkBuff::eth_type_trans`]).
    #[inline]
    pub fn eth_type_trans(&mut self, dev: &NetDevice) -> Result {
        // INVARIANT: as in `add_rx_frag`.
        self.0.eth_type_trans(dev)
    }

    /// Marks the checksums as checked ([`SkBuff::set_csum_unnecessary`]).
    #[inline]
    pub fn set_csum_unnecessary(&mut self) {
        // INVARIANT: as in `add_rx_frag`.
        self.0.set_csum_unnecessary()
    }

    /// Records an L4 hash ([`SkBuff::set_l4_hash`]).
    #[inline]
    pub fn set_l4_hash(&mut self, hash: u32) {
        // INVARIANT: as in `add_rx_frag`.
        self.0.set_l4_hash(hash)
    }

    /// Records an L3 hash ([`SkBuff::set_l3_hash`]).
    #[inline]
    pub fn set_l3_hash(&mut self, hash: u32) {
        // INVARIANT: as in `add_rx_frag`.
        self.0.set_l3_hash(hash)
    }

    /// Frees the packet as dropped ([`SkBuff::drop_reason`]).
    #[inline]
    pub fn drop_reason(self, reason: DropReason) {
        self.0.drop_reason(reason)
    }

    /// Frees the packet as consumed ([`SkBuff::consume`]).
    #[inline]
    pub fn consume(self) {
        self.0.consume()
    }
}

impl core::ops::Deref for RxSkb {
    type Target = SkBuff;

    #[inline]
    fn deref(&self) -> &SkBuff {
        &self.0
    }
}

impl From<RxSkb> for SkBuff {
    #[inline]
    fn from(skb: RxSkb) -> SkBuff {
        skb.0
    }
}

/// A page pool an instance holds ([`Added::attach_pool`](super::Added::attach_pool)), for its poll
/// ([`NapiRx::pool`]).
#[cfg(CONFIG_PAGE_POOL)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolId {
    pub(super) napi: *mut bindings::napi_struct,
    pub(super) slot: usize,
}

// SAFETY: a name, never dereferenced.
#[cfg(CONFIG_PAGE_POOL)]
unsafe impl Send for PoolId {}

// SAFETY: as for `Send`.
#[cfg(CONFIG_PAGE_POOL)]
unsafe impl Sync for PoolId {}

/// A page pool lent to allocate from: what [`NapiRx::pool`] gives a poll
/// of the pool its instance holds. It reads as the [`Pool`] and allocates
/// from it, but does not give it out: a pool the instance recycles into
/// directly stays the instance's, and is not swapped for another one,
/// which would leave the instance's context and be allocated from
/// elsewhere while the instance recycles into its lockless cache.
///
/// ```ignore,compile_fail,E0596
/// use kernel::net::{
///     napi::{
///         NapiRx,
///         PoolId,
///         Poll, //
///     },
///     page_pool::Pool,
/// };
///
/// fn swap_out<T: Poll>(rx: &mut NapiRx<'_, T>, id: PoolId, mine: &mut Pool) {
///     if let Some(pool) = rx.pool(id) {
///         core::mem::swap(&mut *pool, mine); // misuse
/// #       // twin: let _ = pool.is_unreadable();
///     }
/// }
/// ```
///
/// A pool the caller has, to allocate from, may be lent the same way
/// (`From<&mut Pool>`), so that one filling path serves both.
#[cfg(CONFIG_PAGE_POOL)]
pub struct NapiPool<'a>(&'a mut Pool);

#[cfg(CONFIG_PAGE_POOL)]
impl NapiPool<'_> {
    /// A whole buffer ([`Pool::alloc`]).
    #[inline]
    pub fn alloc(&mut self) -> Option<PoolNetmem> {
        self.0.alloc()
    }

    /// A whole page to give out half by half and reuse in place
    /// ([`Pool::alloc_reusable`]).
    #[inline]
    pub fn alloc_reusable(&mut self) -> Option<Reusable> {
        self.0.alloc_reusable()
    }

    /// `size` bytes of a buffer shared with other allocations
    /// ([`Pool::alloc_frag`]).
    #[inline]
    pub fn alloc_frag(&mut self, size: u32) -> Option<PoolNetmem> {
        self.0.alloc_frag(size)
    }

    /// How many buffers wait in the pool's allocation cache
    /// ([`Pool::cached`]).
    pub fn cached(&mut self) -> u32 {
        self.0.cached()
    }
}

#[cfg(CONFIG_PAGE_POOL)]
impl core::ops::Deref for NapiPool<'_> {
    type Target = Pool;

    #[inline]
    fn deref(&self) -> &Pool {
        self.0
    }
}

#[cfg(CONFIG_PAGE_POOL)]
impl<'a> From<&'a mut Pool> for NapiPool<'a> {
    fn from(pool: &'a mut Pool) -> Self {
        Self(pool)
    }
}

/// The receive side of a poll with a budget ([`NapiPoll::rx`]): GRO, the
/// per-CPU NAPI allocation caches and the instance's page pools, which
/// only NAPI's softirq context may use.
///
/// One exists at a time for a poll, so a pool is lent out once:
///
/// ```ignore,compile_fail,E0499
/// use kernel::net::napi::{
///     NapiPoll,
///     Poll, //
/// };
///
/// struct Queue;
///
/// impl Poll for Queue {
///     type Data = ();
///
///     fn poll(_this: &Self, mut napi: NapiPoll<'_, Self>) -> i32 {
///         let first = napi.rx();
///         let second = napi.rx(); // misuse
///         drop((first, second)); // misuse
/// #       // twin: drop(first);
///         0
///     }
/// }
/// ```
pub struct NapiRx<'p, T: Poll> {
    napi: &'p Napi<T>,
    _not_send: NotThreadSafe,
}

impl<'p, T: Poll> NapiRx<'p, T> {
    /// The device the instance polls for.
    #[inline]
    pub fn dev(&self) -> &'p Device<T::Data> {
        // SAFETY: as in `NapiPoll::dev`.
        unsafe { Device::from_raw(self.napi.device()) }
    }

    /// The page pool the instance holds as `id`
    /// ([`Added::attach_pool`](super::Added::attach_pool)), to allocate
    /// from, lent ([`NapiPool`]); `None` for an `id` it does not hold.
    #[cfg(CONFIG_PAGE_POOL)]
    #[inline]
    pub fn pool(&mut self, id: PoolId) -> Option<NapiPool<'_>> {
        if id.napi != self.napi.as_raw() {
            return None;
        }
        // SAFETY: in the instance's poll, which alone uses the pools while
        // it may be polled (type invariant of `Napi`); `&mut self`, this
        // poll's only `NapiRx`, lends them out once at a time.
        let pools = unsafe { &mut *self.napi.inst.pools.get() };
        pools
            .get_mut(id.slot)
            .and_then(Option::as_mut)
            .map(NapiPool)
    }

    /// The page pool the instance holds as `id`, shared: what a buffer of
    /// it needs to be synced for the CPU or addressed
    /// ([`PoolNetmem::sync_for_cpu`]),
    /// alongside the poll's other uses of `self`. `None` for an `id` it
    /// does not hold.
    #[cfg(CONFIG_PAGE_POOL)]
    #[inline]
    pub fn pool_ref(&self, id: PoolId) -> Option<&Pool> {
        if id.napi != self.napi.as_raw() {
            return None;
        }
        // SAFETY: in the instance's poll, which alone uses the pools while
        // it may be polled (type invariant of `Napi`); `&self` keeps this
        // poll's only `NapiRx` from lending a pool out mutably meanwhile.
        let pools = unsafe { &*self.napi.inst.pools.get() };
        pools.get(id.slot).and_then(Option::as_ref)
    }

    /// Hands a packet the poll made to the stack through GRO
    /// (`napi_gro_receive`). The packet must have its Ethernet header
    /// parsed, and name the instance's device as the one it came in on
    /// ([`RxSkb::eth_type_trans`] with [`NapiRx::dev`]). One without a
    /// MAC header is dropped (`SKB_DROP_REASON_DEV_HDR`): GRO compares the
    /// MAC headers of the packets it holds, and reads one that was never
    /// set at 64 KiB past the head. One that names another device, or
    /// none, is dropped too (`SKB_DROP_REASON_DEV_READY`): GRO may hold a
    /// packet on the instance's lists until a later flush, and only this
    /// instance's device is known to outlive them.
    ///
    /// GRO frees the packets it merges, and moves frags between their
    /// shared infos: an [`RxSkb`] is neither shared nor cloned, nor owned
    /// by a socket, as GRO needs.
    #[inline]
    pub fn gro_receive(&self, skb: RxSkb) {
        // SAFETY: the buffer is ours; `mac_header` sits in the `headers`
        // struct group, as `protocol` does (`SkBuff::eth_type_trans`).
        let mac = unsafe {
            (*skb.as_raw())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_ref()
                .mac_header
        };
        // `skb_mac_header_was_set`: `eth_type_trans` sets it, and nothing
        // an `RxSkb` does moves the head after it.
        if mac == u16::MAX {
            skb.drop_reason(DropReason::DevHdr);
            return;
        }
        // SAFETY: the buffer is ours and valid; while it is on no list,
        // the member of its union that is live is `dev` (set by
        // `eth_type_trans`, by `alloc_skb` and `build_skb` to the
        // instance's device, or null by unsafe code).
        let dev = unsafe {
            (*skb.as_raw())
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev
        };
        if dev != self.napi.device() {
            skb.drop_reason(DropReason::DevReady);
            return;
        }
        // SAFETY: in this instance's poll, with a budget; the buffer is
        // given up, ours alone and without a socket or destructor
        // (`RxSkb`'s invariant), with its MAC header set, and names the
        // instance's device.
        unsafe { bindings::napi_gro_receive(self.napi.as_raw(), SkBuff::from(skb).into_raw()) };
    }

    /// Records in `skb` that it came in on receive queue `queue` of the
    /// instance's device (`skb_record_rx_queue`): RPS takes that queue's
    /// CPU map, and the socket the packet is for remembers the queue
    /// (`xps_rxqs` sends its packets by the transmit queue paired with
    /// it). A queue the device does not use (`real_num_rx_queues`) is not
    /// recorded (`EINVAL`): the stack warns of a packet that names one.
    #[inline]
    pub fn record_rx_queue(&self, skb: &mut RxSkb, queue: u16) -> Result {
        if u32::from(queue) >= self.dev().real_num_rx_queues() {
            return Err(EINVAL);
        }
        // SAFETY: the buffer is ours; its queue field takes any value, and
        // the stack checks the one it reads against the device's queues.
        unsafe { bindings::skb_record_rx_queue(skb.as_raw(), queue) };
        Ok(())
    }

    /// A buffer of `len` bytes for a received packet, with headroom
    /// (`napi_alloc_skb`); `None` without memory.
    // The caller is who made it, should it be dropped without a reason.
    #[cfg_attr(CONFIG_DEBUG_NET, track_caller)]
    pub fn alloc_skb(&self, len: u32) -> Option<RxSkb> {
        // SAFETY: in this instance's poll, with a budget.
        let skb = unsafe { bindings::napi_alloc_skb(self.napi.as_raw(), len) };
        if skb.is_null() {
            return None;
        }
        // INVARIANT: new: one user and one data reference, not cloned,
        // and every field up to `tail` zeroed (`skbuff_clear`), the
        // socket and destructor among them.
        // SAFETY: a new buffer, ours.
        Some(RxSkb(unsafe { SkBuff::from_raw(skb) }))
    }

    /// A packet built around a received frame where the device wrote it
    /// (`napi_build_skb`), without copying: `len` bytes at `headroom` into
    /// `buf`, a readable pool buffer whose last [`SHINFO_ROOM`] bytes up to
    /// its last cache line boundary take the packet's shared info, aligned
    /// (what follows that boundary is left unused). The frame is the
    /// stack's to read: the caller made it visible to the CPU
    /// ([`PoolNetmem::sync_for_cpu`], last, over at least the frame;
    /// [`PoolNetmem::is_synced`]). The packet's head takes the buffer's pool
    /// reference and goes back to the pool when the packet is freed
    /// (`skb_mark_for_recycle`). Its device is the instance's, as
    /// `napi_alloc_skb` sets it: GRO reads it (`netif_elide_gro`). Hands
    /// the buffer back when the frame and the shared info do not fit in
    /// it, or memory runs out.
    // As in `alloc_skb`. Inline: a driver builds every frame with it,
    // from more than one place (a whole frame, a split frame's headers).
    #[cfg(CONFIG_PAGE_POOL)]
    #[cfg_attr(CONFIG_DEBUG_NET, track_caller)]
    #[inline]
    pub fn build_skb(&self, buf: PoolNetmem, headroom: u32, len: u32) -> Result<RxSkb, PoolNetmem> {
        if !buf.is_readable() || !buf.is_synced(headroom, len) {
            return Err(buf);
        }
        // SAFETY: a page of the pool (readable), mapped in the kernel's
        // address space.
        let base = unsafe { bindings::netmem_address(buf.netmem().as_raw()) };
        if base.is_null() {
            return Err(buf);
        }
        // CAST: u32 to usize is lossless on Linux.
        let (offset, size) = (buf.offset() as usize, buf.size() as usize);
        // SAFETY: the buffer is `size` bytes from `offset` into the page
        // (`PoolNetmem`'s invariant).
        let data = unsafe { base.cast::<u8>().add(offset) };
        let truesize = build_size(data as usize, size);
        let fits = headroom
            .checked_add(len)
            .and_then(|n| n.checked_add(SHINFO_ROOM))
            .is_some_and(|n| n <= truesize);
        if !fits {
            return Err(buf);
        }
        // SAFETY: `data` is the start of the buffer, `size` bytes long,
        // which only its reference uses (`PoolNetmem`'s invariant);
        // `truesize` is at most `size`, and ends aligned to the cache line
        // (`build_size`): the shared info goes, aligned, in its last
        // `SHINFO_ROOM` bytes, after the frame (checked above); in this
        // instance's poll, with a budget.
        let raw = unsafe { bindings::napi_build_skb(data.cast(), truesize) };
        if raw.is_null() {
            return Err(buf);
        }
        // The head owns the pool reference from now on.
        let _ = buf.into_raw();
        // SAFETY: a new packet, ours; `headroom + len` bytes of its buffer
        // are before its shared info, as checked above. A received packet
        // names its device without a reference, as `napi_alloc_skb`'s do:
        // unregistering waits for those in flight.
        unsafe {
            (*raw)
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev = self.napi.device();
            bindings::skb_reserve(raw, headroom as c_int);
            bindings::__skb_put(raw, len);
            bindings::skb_mark_for_recycle(raw);
            // INVARIANT: as in `alloc_skb`.
            Ok(RxSkb(SkBuff::from_raw(raw)))
        }
    }
}
