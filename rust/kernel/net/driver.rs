// SPDX-License-Identifier: GPL-2.0

//! Network device drivers: a `net_device` carrying the driver's data, its
//! operations (`struct net_device_ops`) and its registration.
//!
//! A driver implements [`Operations`] for its per-device data `T` and
//! registers a device with [`Registration::new`], which allocates an
//! Ethernet `net_device` whose private area holds `T`. Callbacks get a
//! [`Device<T>`], which gives the `NetDevice` and `&T`; those the core
//! runs under the device's instance lock (`netdev_lock`) get a
//! [`LockedDevice<T>`], which proves it to what needs the lock (NAPI
//! states, page pools for a queue). The device is set up before it is
//! registered through an [`UnregisteredDevice<T>`], whose setters are safe
//! because no one else sees it yet. Dropping the registration unregisters
//! the device (stopping it first if it is up), then drops `T` and frees
//! the device; the parent's unbind does so at the latest, so the parent
//! is bound whenever `T` is alive ([`Device::parent`]).
//!
//! C headers: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h),
//! [`include/linux/etherdevice.h`](srctree/include/linux/etherdevice.h)

use crate::{
    alloc::{
        allocator::KVmalloc,
        Allocator, //
    },
    device::{
        Bound,
        Device as GenericDevice, //
    },
    devres::Devres,
    error::{
        from_result,
        to_result, //
    },
    net::{
        netdev::NetDevice,
        netlink::request::ExtAck,
        skbuff::{
            DropReason,
            SkBuff, //
        },
    },
    prelude::*,
    sync::{
        aref::{
            ARef,
            AlwaysRefCounted, //
        },
        atomic::{
            Acquire,
            Atomic,
            Release, //
        },
        LockClassKey,
    },
    time::Jiffies,
    types::{
        CovariantForLt,
        NotThreadSafe,
        Opaque, //
    },
};
use core::{
    marker::{
        PhantomData,
        PhantomPinned, //
    },
    ptr::NonNull, //
};

/// A packet [`Operations::start_xmit`] gives back to the stack, which
/// keeps it and retries it (`NETDEV_TX_BUSY`): the ring is full. The
/// driver must have stopped the queue.
///
/// Answering busy takes the packet, so a driver cannot answer busy for one
/// it freed or kept, which the stack would then retry. It must be the
/// [`SkBuff`] `start_xmit` got: the stack retries the buffer it passed in,
/// whatever is returned. When a driver returns another, it took the one
/// passed in (sent, kept or freed it), so the adapter warns, frees the one
/// returned as dropped and answers `NETDEV_TX_OK`.
///
/// # Examples
///
/// ```
/// use kernel::net::{
///     driver::Busy,
///     skbuff::SkBuff, //
/// };
///
/// fn xmit(skb: SkBuff, room: bool) -> Result<(), Busy> {
///     if !room {
///         // The stack keeps it and retries.
///         return Err(Busy(skb));
///     }
///     // The device would send it here.
///     skb.consume();
///     Ok(())
/// }
/// ```
///
/// A driver cannot free a packet and answer busy for it:
///
/// ```ignore,compile_fail,E0382
/// use kernel::net::{
///     driver::Busy,
///     skbuff::SkBuff, //
/// };
///
/// fn xmit(skb: SkBuff) -> Result<(), Busy> {
///     drop(skb);
///     Err(Busy(skb))
/// }
/// ```
///
/// nor answer busy without giving the packet back:
///
/// ```ignore,compile_fail,E0308
/// use kernel::net::{
///     driver::Busy,
///     skbuff::SkBuff, //
/// };
///
/// fn xmit(skb: SkBuff) -> Result<(), Busy> {
///     drop(skb);
///     Err(Busy)
/// }
/// ```
pub struct Busy(pub SkBuff);

/// The transmit queue [`Operations::start_xmit`] sends on: the proof that
/// the core holds its lock (`HARD_TX_LOCK`) with bottom halves off, which
/// serialises what the queue's producer side does, byte queue limits'
/// (BQL) count of what went on the ring first.
///
/// Only the adapter makes one, for the call: byte queue limits are told
/// about sends nowhere else. Outside `start_xmit` there is no way to do
/// it:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::driver::Device;
///
/// fn sent_behind_the_lock<T>(dev: &Device<T>) {
///     let _ = dev.tx_sent(0, 1500, false);
/// }
/// ```
///
/// nor to keep the queue past the call:
///
/// ```ignore,compile_fail,E0521
/// use kernel::net::driver::TxQueue;
///
/// fn stash(_txq: &'static mut TxQueue<'static>) {}
///
/// fn xmit(txq: &mut TxQueue<'_>) {
///     stash(txq);
/// }
/// ```
///
/// # Invariants
///
/// `raw` is transmit queue `idx` of a live device, whose xmit lock the
/// thread that has the reference holds, with bottom halves off, for as long
/// as the reference lives.
pub struct TxQueue<'a> {
    raw: NonNull<bindings::netdev_queue>,
    idx: u16,
    _lock: PhantomData<&'a mut bindings::netdev_queue>,
    _not_send: NotThreadSafe,
}

impl TxQueue<'_> {
    /// The queue's index on its device: the packet's queue mapping.
    pub fn index(&self) -> u16 {
        self.idx
    }

    /// Tells byte queue limits that `bytes` went on the queue's ring
    /// (`__netdev_tx_sent_queue`); BQL stops the queue when too much is in
    /// flight, until the queue's NAPI poll says enough was sent
    /// ([`NapiPoll::tx_completed`](super::napi::NapiPoll::tx_completed)).
    /// `more` is [`xmit_more`]: the stack has another frame for the queue
    /// right away. Returns whether the driver must tell the device about
    /// the frames queued so far now (write the ring's tail): when nothing
    /// more follows, or the queue is stopped (by BQL or the driver), so
    /// that no later call would.
    pub fn sent(&mut self, bytes: u32, more: bool) -> bool {
        // SAFETY: a queue of a live device whose xmit lock is held (type
        // invariant): the only sender on it, and `Added::tx_reset`, the
        // only reset, takes the same lock.
        unsafe { bindings::__netdev_tx_sent_queue(self.raw.as_ptr(), bytes, more) }
    }
}

/// Counters reported by `ndo_get_stats64` (`struct rtnl_link_stats64`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats64 {
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Received packets dropped by the driver.
    pub rx_dropped: u64,
    /// Packets to send dropped by the driver.
    pub tx_dropped: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Packets the device missed for lack of buffers.
    pub rx_missed_errors: u64,
    /// Packets a receive queue dropped for lack of descriptors.
    pub rx_fifo_errors: u64,
}

/// The operations of a network device driver whose per-device data is
/// `Self`.
#[vtable]
pub trait Operations: Sized + Send + Sync + 'static {
    /// Brings the device up (`ndo_open`), under RTNL and the instance
    /// lock.
    fn open(dev: &LockedDevice<Self>) -> Result;

    /// Takes the device down (`ndo_stop`), under RTNL and the instance
    /// lock.
    fn stop(dev: &LockedDevice<Self>) -> Result;

    /// Sends `skb` (`ndo_start_xmit`) on `txq`, the transmit queue the
    /// stack picked for it, whose lock the core holds, bottom halves off.
    /// `Ok` when the packet was taken (sent, queued or dropped); [`Busy`]
    /// with `skb` when the ring is full.
    fn start_xmit(dev: &Device<Self>, txq: &mut TxQueue<'_>, skb: SkBuff) -> Result<(), Busy>;

    /// Fills in counters (`ndo_get_stats64`).
    fn get_stats64(_dev: &Device<Self>, _stats: &mut Stats64) {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Prepares the device for frames of MTU `mtu` (`ndo_change_mtu`),
    /// under RTNL and the instance lock. The core checked `mtu` against
    /// the range set with [`UnregisteredDevice::set_mtu_range`]; [`NetDevice::mtu`]
    /// still gives the old value during the call, and the new one once it
    /// succeeds.
    fn change_mtu(_dev: &LockedDevice<Self>, _mtu: u32) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Applies the receive filters `mode` asks for
    /// (`ndo_set_rx_mode_async`): promiscuous, all-multicast, the address
    /// lists. Runs from the core's work item, with RTNL and the instance
    /// lock held; may sleep. On error the core tries again later.
    fn set_rx_mode(_dev: &Device<Self>, _mode: &RxMode<'_>) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Transmit queue `txqueue` has been stopped for longer than the
    /// device's watchdog timeout without the device sending anything
    /// (`ndo_tx_timeout`): the device or its driver is hung. Called from
    /// the core's watchdog timer, in softirq context with every transmit
    /// queue's lock held: it must not sleep nor take a queue's lock, and
    /// typically schedules a reset in process context.
    fn tx_timeout(_dev: &Device<Self>, _txqueue: u32) {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }
}

/// A job of a network driver, run in process context by a [`DeviceWork`]
/// in the driver's data. `ID` tells apart the jobs of one driver.
pub trait DeviceWorkItem<const ID: u64 = 0>: Operations {
    /// Does the job, for `dev`. May sleep. Runs neither concurrently with
    /// itself nor after [`DeviceWork::disable_sync`] returned.
    fn run(dev: &Device<Self>);
}

/// A work item in a network driver's data `T`, which runs
/// [`DeviceWorkItem::run`] on the system workqueue, now or after a delay
/// (a C `delayed_work`).
///
/// It starts disabled: [`DeviceWork::enable`] lets it be queued, and
/// [`DeviceWork::disable_sync`] waits for a run in progress, drops one
/// pending and refuses new ones until it is enabled again; the calls
/// nest, as those of C. Dropping it (with `T`) disables it, so no run
/// outlives the data.
///
/// # Invariants
///
/// `dwork` is initialised, with [`DeviceWork::run_raw`] as its function.
/// `dev` is null or the device whose private data holds `self`; it is set
/// before the work is first queued.
#[pin_data(PinnedDrop)]
pub struct DeviceWork<T: DeviceWorkItem<ID>, const ID: u64 = 0> {
    #[pin]
    dwork: Opaque<bindings::delayed_work>,
    dev: Atomic<*mut bindings::net_device>,
    #[pin]
    _pin: PhantomPinned,
    _t: PhantomData<T>,
}

// SAFETY: the C work item may be queued, cancelled and run from any
// thread; the device pointer is atomic; `T` is `Send + Sync`
// (`Operations`).
unsafe impl<T: DeviceWorkItem<ID>, const ID: u64> Send for DeviceWork<T, ID> {}

// SAFETY: as above: every method takes `&self` and goes through the
// workqueue's own synchronisation.
unsafe impl<T: DeviceWorkItem<ID>, const ID: u64> Sync for DeviceWork<T, ID> {}

impl<T: DeviceWorkItem<ID>, const ID: u64> DeviceWork<T, ID> {
    /// A disabled work item named `name`, with the lock classes `key` and
    /// `timer_key` (from [`static_lock_class!`](crate::sync::static_lock_class)).
    pub fn new(
        name: &'static CStr,
        key: Pin<&'static LockClassKey>,
        timer_key: Pin<&'static LockClassKey>,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            dwork <- Opaque::ffi_init(|slot: *mut bindings::delayed_work| {
                // SAFETY: `slot` is valid for writes and pinned; `run_raw`
                // takes a `work_struct` of a `DeviceWork<T, ID>`, which
                // this is the `work` of.
                unsafe {
                    bindings::init_work_with_key(
                        &raw mut (*slot).work,
                        Some(Self::run_raw),
                        false,
                        name.as_char_ptr(),
                        key.as_ptr(),
                    );
                    bindings::timer_init_key(
                        &raw mut (*slot).timer,
                        Some(bindings::delayed_work_timer_fn),
                        bindings::TIMER_IRQSAFE,
                        name.as_char_ptr(),
                        timer_key.as_ptr(),
                    );
                    // Never queued: nothing to wait for.
                    bindings::disable_delayed_work(slot);
                }
            }),
            dev: Atomic::new(core::ptr::null_mut()),
            _pin: PhantomPinned,
            _t: PhantomData,
        })
    }

    fn raw(&self) -> *mut bindings::delayed_work {
        self.dwork.get()
    }

    /// Whether `self` lies in the private data of `dev`.
    fn is_in(&self, dev: &Device<T>) -> bool {
        let data = core::ptr::from_ref(dev.data()).addr();
        let me = core::ptr::from_ref(self).addr();
        me >= data && me + size_of::<Self>() <= data + size_of::<T>()
    }

    /// Queues the job to run after `delay` jiffies, unless it is queued
    /// already or disabled; `now` instead moves a pending run forward to
    /// `delay` from now. `dev` must be the device whose data holds `self`:
    /// for another one, nothing is queued and the call warns. Any context.
    /// Whether the job was queued or moved.
    pub fn schedule(&self, dev: &Device<T>, delay: Jiffies, now: bool) -> bool {
        if !self.is_in(dev) {
            crate::warn_on!(true);
            return false;
        }
        // INVARIANT: `dev`'s data holds `self`, checked above.
        self.dev.store(dev.as_raw(), Release);
        // CAST: WORK_CPU_UNBOUND is a small constant.
        let cpu = bindings::wq_misc_consts_WORK_CPU_UNBOUND as c_int;
        // SAFETY: `dwork` is initialised and pinned (type invariant), and
        // stays valid until `self` is dropped, which disables it first;
        // `system_wq` is always valid.
        unsafe {
            if now {
                bindings::mod_delayed_work_on(cpu, bindings::system_wq, self.raw(), delay)
            } else {
                bindings::queue_delayed_work_on(cpu, bindings::system_wq, self.raw(), delay)
            }
        }
    }

    /// Lets the job be queued again after [`DeviceWork::disable_sync`] (or
    /// after it was made), once as many times as it was disabled.
    pub fn enable(&self) {
        // SAFETY: initialised and pinned (type invariant).
        unsafe { bindings::enable_delayed_work(self.raw()) };
    }

    /// Drops a pending run, waits for one in progress, and refuses new
    /// ones until [`DeviceWork::enable`]. Sleeps: process context, and
    /// not from the job itself, which would wait for itself.
    pub fn disable_sync(&self) {
        // SAFETY: initialised and pinned (type invariant).
        unsafe { bindings::disable_delayed_work_sync(self.raw()) };
    }

    /// # Safety
    ///
    /// `work` is the `work` of the `delayed_work` of a [`DeviceWork<T,
    /// ID>`], run by the workqueue.
    unsafe extern "C" fn run_raw(work: *mut bindings::work_struct) {
        // SAFETY: per this function's contract, `work` is in the
        // `delayed_work`, itself the `dwork` field of a `DeviceWork`;
        // `Opaque` is transparent.
        let this = unsafe {
            let dwork = crate::container_of!(work, bindings::delayed_work, work);
            &*crate::container_of!(dwork.cast::<Opaque<bindings::delayed_work>>(), Self, dwork)
        };
        let dev = this.dev.load(Acquire);
        if dev.is_null() {
            return;
        }
        // SAFETY: `dev` holds `this` in its data (type invariant), so it
        // is a device allocated for `T` that lives while `this` does;
        // `this` lives until its drop disables it, which waits for this
        // run.
        T::run(unsafe { Device::from_raw(dev) });
    }
}

#[pinned_drop]
impl<T: DeviceWorkItem<ID>, const ID: u64> PinnedDrop for DeviceWork<T, ID> {
    fn drop(self: Pin<&mut Self>) {
        // No run after the data goes.
        self.disable_sync();
    }
}

/// The receive filters the stack asks of a device, as
/// [`Operations::set_rx_mode`] sees them: its flags, and snapshots of its
/// address lists the core took for the call.
pub struct RxMode<'a> {
    dev: &'a NetDevice,
    uc: *const bindings::netdev_hw_addr_list,
    mc: *const bindings::netdev_hw_addr_list,
    _lists: PhantomData<&'a bindings::netdev_hw_addr_list>,
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

/// Offloads of a device (`netdev_features_t`): fixed ones, which user
/// space sees on and cannot turn off ([`UnregisteredDevice::set_features`]),
/// and ones it may turn off and on
/// ([`UnregisteredDevice::set_user_features`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features(u64);

impl Features {
    const fn bit(b: u32) -> Self {
        Self(1 << b)
    }

    /// Sends packets in pieces (`NETIF_F_SG`).
    pub const SG: Self = Self::bit(bindings::NETIF_F_SG_BIT);
    /// Fills in TCP and UDP checksums over IPv4 (`NETIF_F_IP_CSUM`).
    pub const IP_CSUM: Self = Self::bit(bindings::NETIF_F_IP_CSUM_BIT);
    /// Fills in TCP and UDP checksums over IPv6 (`NETIF_F_IPV6_CSUM`).
    pub const IPV6_CSUM: Self = Self::bit(bindings::NETIF_F_IPV6_CSUM_BIT);
    /// Checks received checksums (`NETIF_F_RXCSUM`).
    pub const RXCSUM: Self = Self::bit(bindings::NETIF_F_RXCSUM_BIT);
    /// Hashes received flows for RSS and gives the hash to the stack
    /// (`NETIF_F_RXHASH`).
    pub const RXHASH: Self = Self::bit(bindings::NETIF_F_RXHASH_BIT);
    /// Steers flows by ethtool rules (`NETIF_F_NTUPLE`).
    pub const NTUPLE: Self = Self::bit(bindings::NETIF_F_NTUPLE_BIT);
    /// Segments TCP over IPv4 (`NETIF_F_TSO`); see
    /// [`SkBuff::prepare_tso`](super::skbuff::SkBuff::prepare_tso).
    pub const TSO: Self = Self::bit(bindings::NETIF_F_TSO_BIT);
    /// Segments TCP over IPv6 (`NETIF_F_TSO6`).
    pub const TSO6: Self = Self::bit(bindings::NETIF_F_TSO6_BIT);
}

impl core::ops::BitOr for Features {
    type Output = Self;

    fn bitor(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }
}

/// Restarting one receive queue at a time (`struct netdev_queue_mgmt_ops`),
/// which memory providers need: the core allocates a queue's new memory,
/// stops the queue, starts it with the new memory and frees the old.
///
/// Callbacks run with the device's instance lock held.
#[vtable]
pub trait QueueMgmt: Operations {
    /// Everything one receive queue owns (ring, buffers, page pools).
    /// The core's per-queue area that holds it is aligned only as
    /// `kvzalloc()` aligns (`ARCH_KMALLOC_MINALIGN`): a type that needs
    /// more does not build.
    type RxQueueMem: Send;

    /// Whether the queues honour [`QueueConfig::rx_page_size`], so that a
    /// memory provider may ask for buffers of another size
    /// (`QCFG_RX_PAGE_SIZE`).
    const RX_PAGE_SIZE: bool = false;

    /// The configuration of a queue nobody asked anything of.
    fn default_config(_dev: &Device<Self>) -> QueueConfig {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Checks a configuration: the defaults, then with what the queue's
    /// memory provider asks. Errors come with an `extack` message.
    fn validate_config(_dev: &Device<Self>, _cfg: &QueueConfig, _extack: &ExtAck<'_>) -> Result {
        build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Allocates memory for receive queue `idx` with configuration `cfg`,
    /// page pools included: a pool made now takes the queue's current
    /// memory provider. The queue keeps running on its old memory.
    fn rx_mem_alloc(
        dev: &LockedDevice<Self>,
        cfg: &QueueConfig,
        idx: u32,
    ) -> Result<Self::RxQueueMem>;

    /// Stops receive queue `idx` and gives up its memory.
    fn rx_stop(dev: &LockedDevice<Self>, idx: u32) -> Result<Self::RxQueueMem>;

    /// Starts receive queue `idx` on `mem`; on failure, hands `mem` back.
    fn rx_start(
        dev: &LockedDevice<Self>,
        mem: Self::RxQueueMem,
        idx: u32,
    ) -> Result<(), (Error, Self::RxQueueMem)>;
}

/// The configuration of one receive queue (`struct netdev_queue_config`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueConfig {
    /// Bytes per receive buffer, a power of two; 0 when neither the driver
    /// nor a memory provider chose.
    pub rx_page_size: u32,
}

impl QueueConfig {
    fn from_raw(raw: &bindings::netdev_queue_config) -> Self {
        Self {
            rx_page_size: raw.rx_page_size,
        }
    }
}

/// What the core's per-queue memory area holds: queue memory or nothing.
/// All zeroes (as the core allocates it) is the empty state.
#[repr(C)]
struct QueueMemSlot<M> {
    full: bool,
    mem: core::mem::MaybeUninit<M>,
}

impl<M> QueueMemSlot<M> {
    /// Evaluated wherever a slot of `M` is used: the core allocates the
    /// area with `kvzalloc()`, aligned to `ARCH_KMALLOC_MINALIGN` and no
    /// more, so a queue memory type that needs more is a build error
    /// rather than a misaligned reference. (An associated constant, not a
    /// `const _` item: it depends on `M`.)
    const ALIGNED: () = assert!(
        core::mem::align_of::<Self>() <= <KVmalloc as Allocator>::MIN_ALIGN,
        "the queue memory type needs more alignment than kvzalloc() gives"
    );

    /// # Safety
    ///
    /// `ptr` is a per-queue memory area of the core, of this size, zeroed
    /// or written only through these functions.
    unsafe fn from_raw<'a>(ptr: *mut c_void) -> &'a mut Self {
        let () = Self::ALIGNED;
        // SAFETY: per the caller; `kvzalloc()` memory is aligned to
        // `ARCH_KMALLOC_MINALIGN`, enough for `Self` (`ALIGNED`).
        unsafe { &mut *ptr.cast::<Self>() }
    }

    fn put(&mut self, mem: M) {
        if self.full {
            // SAFETY: `full` says `mem` is initialised.
            unsafe { self.mem.assume_init_drop() };
        }
        self.mem.write(mem);
        self.full = true;
    }

    fn take(&mut self) -> Option<M> {
        if !self.full {
            return None;
        }
        self.full = false;
        // SAFETY: `full` said `mem` is initialised; it is marked empty now.
        Some(unsafe { self.mem.assume_init_read() })
    }
}

/// Builds the C queue management ops of a [`QueueMgmt`] implementation.
struct QueueAdapter<T: QueueMgmt>(PhantomData<T>);

impl<T: QueueMgmt> QueueAdapter<T> {
    const OPS: bindings::netdev_queue_mgmt_ops = bindings::netdev_queue_mgmt_ops {
        ndo_queue_mem_size: {
            let () = QueueMemSlot::<T::RxQueueMem>::ALIGNED;
            core::mem::size_of::<QueueMemSlot<T::RxQueueMem>>()
        },
        ndo_queue_mem_alloc: Some(Self::mem_alloc),
        ndo_queue_mem_free: Some(Self::mem_free),
        ndo_queue_start: Some(Self::start),
        ndo_queue_stop: Some(Self::stop),
        ndo_default_qcfg: if T::HAS_DEFAULT_CONFIG {
            Some(Self::default_qcfg)
        } else {
            None
        },
        ndo_validate_qcfg: if T::HAS_VALIDATE_CONFIG {
            Some(Self::validate_qcfg)
        } else {
            None
        },
        supported_params: if T::RX_PAGE_SIZE {
            bindings::QCFG_RX_PAGE_SIZE
        } else {
            0
        },
        // SAFETY: all-zero is valid for the remaining fields: no op.
        ..unsafe { core::mem::zeroed() }
    };

    const OPS_REF: &'static bindings::netdev_queue_mgmt_ops = &Self::OPS;

    /// The device and the per-queue memory area of a callback.
    ///
    /// # Safety
    ///
    /// As for the callbacks: `dev` is registered for `T`, `mem` is a
    /// per-queue memory area of `ndo_queue_mem_size`.
    unsafe fn args<'a>(
        dev: *mut bindings::net_device,
        mem: *mut c_void,
    ) -> (&'a LockedDevice<T>, &'a mut QueueMemSlot<T::RxQueueMem>) {
        // SAFETY: per this function's contract: the core holds the
        // instance lock around the queue ops, for the call.
        unsafe {
            (
                LockedDevice::from_device(Device::<T>::from_raw(dev)),
                QueueMemSlot::from_raw(mem),
            )
        }
    }

    /// # Safety
    ///
    /// Called by the core, under the instance lock of a device registered
    /// for `T`, with a per-queue memory area of `ndo_queue_mem_size`.
    unsafe extern "C" fn mem_alloc(
        dev: *mut bindings::net_device,
        qcfg: *mut bindings::netdev_queue_config,
        mem: *mut c_void,
        idx: c_int,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, slot) = unsafe { Self::args(dev, mem) };
        // SAFETY: the core passes the configuration to allocate for.
        let cfg = QueueConfig::from_raw(unsafe { &*qcfg });
        from_result(|| {
            let idx = u32::try_from(idx).map_err(|_| EINVAL)?;
            slot.put(T::rx_mem_alloc(dev, &cfg, idx)?);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with a
    /// configuration to fill in.
    unsafe extern "C" fn default_qcfg(
        dev: *mut bindings::net_device,
        qcfg: *mut bindings::netdev_queue_config,
    ) {
        // SAFETY: per this function's contract.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        let cfg = T::default_config(dev);
        // SAFETY: per this function's contract.
        unsafe { (*qcfg).rx_page_size = cfg.rx_page_size };
    }

    /// # Safety
    ///
    /// As for `default_qcfg`, with `extack` null or valid.
    unsafe extern "C" fn validate_qcfg(
        dev: *mut bindings::net_device,
        qcfg: *mut bindings::netdev_queue_config,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        // SAFETY: per this function's contract.
        let cfg = QueueConfig::from_raw(unsafe { &*qcfg });
        // SAFETY: per this function's contract.
        let extack = unsafe { ExtAck::from_raw(extack) };
        from_result(|| {
            T::validate_config(dev, &cfg, &extack)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `mem_alloc`.
    unsafe extern "C" fn mem_free(_dev: *mut bindings::net_device, mem: *mut c_void) {
        // SAFETY: per this function's contract.
        drop(unsafe { QueueMemSlot::<T::RxQueueMem>::from_raw(mem) }.take());
    }

    /// # Safety
    ///
    /// As for `mem_alloc`.
    unsafe extern "C" fn start(
        dev: *mut bindings::net_device,
        _qcfg: *mut bindings::netdev_queue_config,
        mem: *mut c_void,
        idx: c_int,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, slot) = unsafe { Self::args(dev, mem) };
        from_result(|| {
            let idx = u32::try_from(idx).map_err(|_| EINVAL)?;
            let m = slot.take().ok_or(EINVAL)?;
            // On failure the memory goes back to the core, which frees it.
            T::rx_start(dev, m, idx).map_err(|(e, m)| {
                slot.put(m);
                e
            })?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `mem_alloc`.
    unsafe extern "C" fn stop(
        dev: *mut bindings::net_device,
        mem: *mut c_void,
        idx: c_int,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let (dev, slot) = unsafe { Self::args(dev, mem) };
        from_result(|| {
            let idx = u32::try_from(idx).map_err(|_| EINVAL)?;
            slot.put(T::rx_stop(dev, idx)?);
            Ok(0)
        })
    }
}

/// Counters of one receive queue (`struct netdev_queue_stats_rx`): `None`
/// for those the driver does not keep.
#[derive(Clone, Copy, Debug, Default)]
pub struct RxQueueStats {
    /// Packets handed to the stack.
    pub packets: Option<u64>,
    /// Bytes handed to the stack.
    pub bytes: Option<u64>,
    /// Times a buffer or an skb could not be allocated.
    pub alloc_fail: Option<u64>,
    /// Frames dropped by the driver or the device.
    pub hw_drops: Option<u64>,
    /// Of those, frames the device dropped for lack of buffers or
    /// descriptors.
    pub hw_drop_overruns: Option<u64>,
    /// Packets whose checksum the device verified (`CHECKSUM_UNNECESSARY`).
    pub csum_unnecessary: Option<u64>,
    /// Packets without a verified checksum (`CHECKSUM_NONE`).
    pub csum_none: Option<u64>,
}

/// Counters of one transmit queue (`struct netdev_queue_stats_tx`), as for
/// [`RxQueueStats`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TxQueueStats {
    /// Packets sent.
    pub packets: Option<u64>,
    /// Bytes sent.
    pub bytes: Option<u64>,
    /// Packets dropped instead of sent.
    pub hw_drops: Option<u64>,
    /// Packets the device checksummed (`CHECKSUM_PARTIAL`).
    pub needs_csum: Option<u64>,
    /// Times the driver stopped the queue for lack of descriptors.
    pub stop: Option<u64>,
    /// Times the driver woke it.
    pub wake: Option<u64>,
    /// Packets the device segmented (TSO).
    pub hw_gso_packets: Option<u64>,
    /// Their bytes, before segmentation.
    pub hw_gso_bytes: Option<u64>,
    /// The segments they made.
    pub hw_gso_wire_packets: Option<u64>,
    /// The segments' bytes, headers included.
    pub hw_gso_wire_bytes: Option<u64>,
}

/// Adds a counter to a total, if the counter is kept.
fn sum_counter(total: &mut Option<u64>, c: Option<u64>) {
    if let Some(c) = c {
        *total = Some(total.unwrap_or(0).wrapping_add(c));
    }
}

/// Writes a counter the core reports, if it is kept: the core marked every
/// field unreported (all ones) before asking.
fn set_counter(field: &mut u64, c: Option<u64>) {
    if let Some(c) = c {
        *field = c;
    }
}

impl RxQueueStats {
    /// Adds `o`'s counters to these, keeping those either reports.
    pub fn add(&mut self, o: &Self) {
        sum_counter(&mut self.packets, o.packets);
        sum_counter(&mut self.bytes, o.bytes);
        sum_counter(&mut self.alloc_fail, o.alloc_fail);
        sum_counter(&mut self.hw_drops, o.hw_drops);
        sum_counter(&mut self.hw_drop_overruns, o.hw_drop_overruns);
        sum_counter(&mut self.csum_unnecessary, o.csum_unnecessary);
        sum_counter(&mut self.csum_none, o.csum_none);
    }

    /// Writes the kept counters.
    fn write(&self, raw: &mut bindings::netdev_queue_stats_rx) {
        set_counter(&mut raw.packets, self.packets);
        set_counter(&mut raw.bytes, self.bytes);
        set_counter(&mut raw.alloc_fail, self.alloc_fail);
        set_counter(&mut raw.hw_drops, self.hw_drops);
        set_counter(&mut raw.hw_drop_overruns, self.hw_drop_overruns);
        set_counter(&mut raw.csum_unnecessary, self.csum_unnecessary);
        set_counter(&mut raw.csum_none, self.csum_none);
    }
}

impl TxQueueStats {
    /// Adds `o`'s counters to these, keeping those either reports.
    pub fn add(&mut self, o: &Self) {
        sum_counter(&mut self.packets, o.packets);
        sum_counter(&mut self.bytes, o.bytes);
        sum_counter(&mut self.hw_drops, o.hw_drops);
        sum_counter(&mut self.needs_csum, o.needs_csum);
        sum_counter(&mut self.stop, o.stop);
        sum_counter(&mut self.wake, o.wake);
        sum_counter(&mut self.hw_gso_packets, o.hw_gso_packets);
        sum_counter(&mut self.hw_gso_bytes, o.hw_gso_bytes);
        sum_counter(&mut self.hw_gso_wire_packets, o.hw_gso_wire_packets);
        sum_counter(&mut self.hw_gso_wire_bytes, o.hw_gso_wire_bytes);
    }

    /// As [`RxQueueStats::write`].
    fn write(&self, raw: &mut bindings::netdev_queue_stats_tx) {
        set_counter(&mut raw.packets, self.packets);
        set_counter(&mut raw.bytes, self.bytes);
        set_counter(&mut raw.hw_drops, self.hw_drops);
        set_counter(&mut raw.needs_csum, self.needs_csum);
        set_counter(&mut raw.stop, self.stop);
        set_counter(&mut raw.wake, self.wake);
        set_counter(&mut raw.hw_gso_packets, self.hw_gso_packets);
        set_counter(&mut raw.hw_gso_bytes, self.hw_gso_bytes);
        set_counter(&mut raw.hw_gso_wire_packets, self.hw_gso_wire_packets);
        set_counter(&mut raw.hw_gso_wire_bytes, self.hw_gso_wire_bytes);
    }
}

/// Per-queue counters over netlink (`struct netdev_stat_ops`, the netdev
/// family's `qstats-get`).
///
/// The device's totals are the base plus every active queue's, and must
/// equal what [`Operations::get_stats64`] reports: counters of queues that
/// went away (fewer channels) belong in the base. A counter is reported
/// for the device only if the base reports it (as 0 if need be).
pub trait QueueStats: Operations {
    /// Counters of receive queue `idx`, one of the active queues.
    fn rx_queue_stats(dev: &Device<Self>, idx: u32) -> RxQueueStats;

    /// Counters of transmit queue `idx`, one of the active queues.
    fn tx_queue_stats(dev: &Device<Self>, idx: u32) -> TxQueueStats;

    /// Counters of the device not in any active queue.
    fn base_stats(dev: &Device<Self>) -> (RxQueueStats, TxQueueStats);
}

/// Builds the C stat ops of a [`QueueStats`] implementation.
struct StatsAdapter<T: QueueStats>(PhantomData<T>);

impl<T: QueueStats> StatsAdapter<T> {
    const OPS: bindings::netdev_stat_ops = bindings::netdev_stat_ops {
        get_queue_stats_rx: Some(Self::rx),
        get_queue_stats_tx: Some(Self::tx),
        get_base_stats: Some(Self::base),
    };

    const OPS_REF: &'static bindings::netdev_stat_ops = &Self::OPS;

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with a queue
    /// index below `real_num_rx_queues` and `stats` writable.
    unsafe extern "C" fn rx(
        dev: *mut bindings::net_device,
        idx: c_int,
        stats: *mut bindings::netdev_queue_stats_rx,
    ) {
        let Ok(idx) = u32::try_from(idx) else { return };
        // SAFETY: per this function's contract.
        let s = T::rx_queue_stats(unsafe { Device::<T>::from_raw(dev) }, idx);
        // SAFETY: writable per this function's contract.
        s.write(unsafe { &mut *stats });
    }

    /// # Safety
    ///
    /// As for `rx`, for a transmit queue.
    unsafe extern "C" fn tx(
        dev: *mut bindings::net_device,
        idx: c_int,
        stats: *mut bindings::netdev_queue_stats_tx,
    ) {
        let Ok(idx) = u32::try_from(idx) else { return };
        // SAFETY: per this function's contract.
        let s = T::tx_queue_stats(unsafe { Device::<T>::from_raw(dev) }, idx);
        // SAFETY: writable per this function's contract.
        s.write(unsafe { &mut *stats });
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with `rx` and
    /// `tx` writable.
    unsafe extern "C" fn base(
        dev: *mut bindings::net_device,
        rx: *mut bindings::netdev_queue_stats_rx,
        tx: *mut bindings::netdev_queue_stats_tx,
    ) {
        // SAFETY: per this function's contract.
        let (r, t) = T::base_stats(unsafe { Device::<T>::from_raw(dev) });
        // SAFETY: writable per this function's contract.
        r.write(unsafe { &mut *rx });
        // SAFETY: as above.
        t.write(unsafe { &mut *tx });
    }
}

/// A network device whose private area holds a `T`.
///
/// # Invariants
///
/// The device was allocated by [`Registration::new`] for this `T`, whose
/// private area holds an initialised `T`; its parent is bound while it
/// does.
#[repr(transparent)]
pub struct Device<T>(NetDevice, PhantomData<T>);

// SAFETY: as for `NetDevice`; `T` is `Send + Sync` where it is used.
unsafe impl<T: Send + Sync> Send for Device<T> {}

// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for Device<T> {}

// SAFETY: the references of a `NetDevice`; the type parameter only names
// the private data.
unsafe impl<T: Send + Sync> AlwaysRefCounted for Device<T> {
    fn inc_ref(&self) {
        self.0.inc_ref();
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: transparent wrapper; the caller gives up a reference.
        unsafe { NetDevice::dec_ref(obj.cast()) }
    }
}

impl<T> Device<T> {
    /// The device at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` was allocated by [`Registration::new`] for this `T` and stays
    /// allocated for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: transparent over `NetDevice`, itself over the C struct.
        unsafe { &*ptr.cast() }
    }

    /// The driver's data.
    pub fn data(&self) -> &T {
        // SAFETY: the private area holds an initialised `T` (type
        // invariant), as long as the device.
        unsafe { &*bindings::netdev_priv(self.0.as_raw()).cast::<T>() }
    }

    /// The bus device the device was registered for (its parent), bound:
    /// a device holding a `T` is registered, or being set up or torn down
    /// by its [`Registration`], which unregisters it and drops `T` by the
    /// time the parent unbinds. For DMA mappings and the like, from any
    /// callback.
    pub fn parent(&self) -> &GenericDevice<Bound> {
        // SAFETY: `Registration::new` set the parent to a valid device
        // before any `Device<T>` existed; it stays valid while bound.
        let parent: &GenericDevice =
            unsafe { GenericDevice::from_raw((*self.0.as_raw()).dev.parent) };
        // SAFETY: the private area holds `T` (type invariant), so the
        // device is within its registration, which ends before the
        // parent unbinds (devres): the parent is bound for as long as
        // `self` is borrowed.
        unsafe { parent.as_bound() }
    }

    /// Runs `f` under RTNL and the device's instance lock, taken in that
    /// order, as the core runs [`Operations::open`] and
    /// [`Operations::stop`]: for work a driver starts itself, such as a
    /// reset from a work item. Process context, holding neither lock
    /// (they do not nest), and not from anything RTNL's holders wait for.
    pub fn with_rtnl_locked<R>(&self, f: impl FnOnce(&RtnlLockedDevice<T>) -> R) -> R {
        // SAFETY: process context without RTNL, per the documentation.
        unsafe { bindings::rtnl_lock() };
        let r = {
            let _locked = self.lock();
            // SAFETY: RTNL and the instance lock are held until `_locked`
            // drops and RTNL is released, after `f` returns; `f` takes the
            // reference for any lifetime, so it cannot keep it past the
            // call.
            f(unsafe { RtnlLockedDevice::from_device(self) })
        };
        // SAFETY: taken above.
        unsafe { bindings::rtnl_unlock() };
        r
    }

    /// Whether the device is up (`netif_running`).
    pub fn is_running(&self) -> bool {
        // SAFETY: a live device.
        unsafe { bindings::netif_running(self.0.as_raw()) }
    }

    /// Tells the stack the link is up (`netif_carrier_on`).
    pub fn carrier_on(&self) {
        // SAFETY: a live device.
        unsafe { bindings::netif_carrier_on(self.0.as_raw()) }
    }

    /// Tells the stack the link is down (`netif_carrier_off`).
    pub fn carrier_off(&self) {
        // SAFETY: a live device.
        unsafe { bindings::netif_carrier_off(self.0.as_raw()) }
    }

    /// Whether the stack believes the link is up (`netif_carrier_ok`).
    pub fn carrier_ok(&self) -> bool {
        // SAFETY: a live device.
        unsafe { bindings::netif_carrier_ok(self.0.as_raw()) }
    }

    /// Lets the stack send on every transmit queue, and runs the queues'
    /// qdiscs, which may hold packets from before the queues stopped
    /// (`netif_tx_wake_all_queues`; `netif_tx_start_all_queues` would
    /// leave such a backlog waiting for the next packet).
    pub fn wake_all_queues(&self) {
        // SAFETY: a live device.
        unsafe { bindings::netif_tx_wake_all_queues(self.0.as_raw()) }
    }

    /// Stops every transmit queue (`netif_tx_stop_all_queues`).
    pub fn stop_all_queues(&self) {
        // SAFETY: a live device.
        unsafe { bindings::netif_tx_stop_all_queues(self.0.as_raw()) }
    }

    /// Stops transmit queue `idx` (`netif_stop_subqueue`): its ring is full.
    pub fn stop_queue(&self, idx: u16) {
        // The C function does not check the index.
        if u32::from(idx) < self.real_num_tx_queues() {
            // SAFETY: a queue of the device.
            unsafe { bindings::netif_stop_subqueue(self.0.as_raw(), idx) }
        }
    }

    /// Wakes transmit queue `idx` (`netif_wake_subqueue`).
    pub fn wake_queue(&self, idx: u16) {
        if u32::from(idx) < self.real_num_tx_queues() {
            // SAFETY: a queue of the device.
            unsafe { bindings::netif_wake_subqueue(self.0.as_raw(), idx) }
        }
    }

    /// Transmit queue `idx`, if the device uses it.
    pub(crate) fn tx_queue(&self, idx: u16) -> Option<*mut bindings::netdev_queue> {
        (u32::from(idx) < self.real_num_tx_queues())
            // SAFETY: a live device, a queue it has.
            .then(|| unsafe { bindings::netdev_get_tx_queue(self.0.as_raw(), idx.into()) })
    }

    /// Whether transmit queue `idx` is stopped
    /// (`__netif_subqueue_stopped`).
    pub fn queue_stopped(&self, idx: u16) -> bool {
        u32::from(idx) < self.real_num_tx_queues()
            // SAFETY: a queue of the device.
            && unsafe { bindings::__netif_subqueue_stopped(self.0.as_raw(), idx) }
    }

    /// The configuration receive queue `idx` gets when it next starts: the
    /// driver's defaults with what its memory provider asks
    /// (`netdev_queue_config`).
    pub fn queue_config(&self, idx: u32) -> QueueConfig
    where
        T: QueueMgmt,
    {
        let mut raw = bindings::netdev_queue_config::default();
        let dev = self.0.as_raw();
        // SAFETY: a live device; the field is set before registration.
        if unsafe { (*dev).queue_mgmt_ops }.is_null() {
            return QueueConfig::default();
        }
        // SAFETY: as above; read as C reads it.
        if idx >= unsafe { (*dev).real_num_rx_queues } {
            return QueueConfig::default();
        }
        let Ok(idx) = c_int::try_from(idx) else {
            return QueueConfig::default();
        };
        // SAFETY: a live device with queue management ops and queue `idx`;
        // `raw` is written.
        unsafe { bindings::netdev_queue_config(dev, idx, &mut raw) };
        QueueConfig::from_raw(&raw)
    }

    /// Whether the user set the RSS indirection table (`ethtool -X`
    /// other than `default`): a driver keeps it when the queue count
    /// changes, and spreads a default one over the new count otherwise
    /// (`netif_is_rxfh_configured`).
    pub fn rxfh_configured(&self) -> bool {
        // SAFETY: a live device.
        unsafe { bindings::netif_is_rxfh_configured(self.0.as_raw()) }
    }

    /// The number of transmit queues in use.
    pub fn real_num_tx_queues(&self) -> u32 {
        // SAFETY: a live device; the field is read as C reads it.
        unsafe { (*self.0.as_raw()).real_num_tx_queues }
    }
}

impl<T> core::ops::Deref for Device<T> {
    type Target = NetDevice;

    fn deref(&self) -> &NetDevice {
        &self.0
    }
}

/// A [`Device`] whose instance lock (`netdev_lock`) is held: what the
/// callbacks the core runs under the lock get, and the proof that what
/// needs the lock takes, such as enabling a NAPI instance
/// ([`Added::enable`](super::napi::Added::enable)) or making a page pool
/// for a queue
/// ([`Params::rx_queue_locked`](super::page_pool::Params::rx_queue_locked)).
///
/// Every device [`Registration::new`] registers asks the core for the lock
/// around all its ops (`request_ops_lock`): [`Operations::open`],
/// [`Operations::stop`], [`Operations::change_mtu`], the ethtool ops and
/// the queue management ops run under it. Only a reference exists, for the
/// call, and it is not `Send`: the lock is not held anywhere else.
///
/// # Invariants
///
/// The device's instance lock is held, by the thread that has the
/// reference, for as long as the reference lives.
#[repr(transparent)]
pub struct LockedDevice<T>(Device<T>, NotThreadSafe);

impl<T> LockedDevice<T> {
    /// The device `dev`, whose instance lock the caller holds.
    ///
    /// # Safety
    ///
    /// The caller holds `dev`'s instance lock for `'a`.
    pub unsafe fn from_device<'a>(dev: &'a Device<T>) -> &'a Self {
        // SAFETY: `Self` is transparent over `Device<T>` (the marker is a
        // ZST).
        // INVARIANT: locked for `'a`, per the caller.
        unsafe { &*core::ptr::from_ref(dev).cast() }
    }
}

impl<T> core::ops::Deref for LockedDevice<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        &self.0
    }
}

/// A [`LockedDevice`] whose caller also holds RTNL (`rtnl_lock`), taken
/// before the instance lock: what [`Device::with_rtnl_locked`] and the
/// ethtool op [`set_channels`](super::ethtool::Ops::set_channels) get, and
/// the proof that changing the queue counts of a registered device needs
/// ([`RtnlLockedDevice::set_real_num_queues`]).
///
/// Only a reference exists, for the call, and it is not `Send`: a queue
/// count cannot change behind the back of the stack, which reads it under
/// RTNL:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::driver::LockedDevice;
///
/// fn more_queues<T>(dev: &LockedDevice<T>) {
///     let _ = dev.set_real_num_queues(4, 4);
/// }
/// ```
///
/// # Invariants
///
/// The thread that has the reference holds RTNL and the device's instance
/// lock for as long as the reference lives.
#[repr(transparent)]
pub struct RtnlLockedDevice<T>(LockedDevice<T>);

impl<T> RtnlLockedDevice<T> {
    /// The device `dev`, whose instance lock and RTNL the caller holds.
    ///
    /// # Safety
    ///
    /// The caller holds RTNL and `dev`'s instance lock for `'a`.
    pub(crate) unsafe fn from_device<'a>(dev: &'a Device<T>) -> &'a Self {
        // SAFETY: the instance lock is held for `'a`, per the caller.
        let locked = unsafe { LockedDevice::from_device(dev) };
        // SAFETY: `Self` is transparent over `LockedDevice<T>`.
        // INVARIANT: RTNL is held for `'a` as well, per the caller.
        unsafe { &*core::ptr::from_ref(locked).cast() }
    }

    /// Sets how many of the transmit and receive queues allocated with
    /// the device are in use (`netif_set_real_num_queues`). The driver
    /// must no longer use the queues that go: their packets are flushed
    /// and their NAPI and interrupts should be quiet.
    pub fn set_real_num_queues(&self, tx: u32, rx: u32) -> Result {
        // SAFETY: a live device; RTNL and the instance lock are held (type
        // invariant), as the C function asserts for a registered device.
        to_result(unsafe { bindings::netif_set_real_num_queues(self.as_raw(), tx, rx) })
    }
}

impl<T> core::ops::Deref for RtnlLockedDevice<T> {
    type Target = LockedDevice<T>;

    fn deref(&self) -> &LockedDevice<T> {
        &self.0
    }
}

/// A device [`Registration::new`] allocated for `T`, with an initialised
/// `T`, before it registers it: what `setup` gets, to give the device its
/// offloads, limits and ops tables. No one else sees the device yet, so
/// every setter is safe; none exists on a registered [`Device`]:
///
/// ```ignore,compile_fail,E0599
/// use kernel::net::driver::{
///     Device,
///     Features, //
/// };
///
/// fn late<T>(dev: &Device<T>) {
///     dev.set_features(Features::SG);
/// }
/// ```
///
/// An ops table comes from the trait it adapts, so a driver installs only
/// the tables of the traits it implements:
///
/// ```ignore,compile_fail,E0277
/// use kernel::net::driver::{
///     Operations,
///     UnregisteredDevice, //
/// };
///
/// fn setup<T: Operations>(dev: &UnregisteredDevice<T>) {
///     dev.set_queue_mgmt();
/// }
/// ```
///
/// It gives no [`Device`], so no counted reference ([`ARef`]) to a device
/// that may yet be freed without being registered:
///
/// ```ignore,compile_fail,E0308
/// use kernel::{
///     net::driver::{
///         Device,
///         UnregisteredDevice, //
///     },
///     sync::aref::ARef,
/// };
///
/// fn keep<T: Send + Sync>(dev: &UnregisteredDevice<T>) -> ARef<Device<T>> {
///     let dev: &Device<T> = dev;
///     dev.into()
/// }
/// ```
///
/// # Invariants
///
/// The device was allocated for `T`, holds an initialised `T`, and is not
/// registered; only the thread that has the reference, which is not
/// `Send`, touches it.
#[repr(transparent)]
pub struct UnregisteredDevice<T>(Device<T>, NotThreadSafe);

impl<T> UnregisteredDevice<T> {
    /// # Safety
    ///
    /// `ptr` was allocated for `T`, holds an initialised `T`, is not
    /// registered during `'a`, and only the caller's thread touches it.
    unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: transparent over `Device<T>` (the marker is a ZST), which
        // the caller's guarantees make valid.
        // INVARIANT: per the caller.
        unsafe { &*ptr.cast() }
    }

    fn raw(&self) -> *mut bindings::net_device {
        self.0.as_raw()
    }

    /// The driver's data.
    pub fn data(&self) -> &T {
        self.0.data()
    }

    /// Gives the device the queue management API of `T`
    /// ([`QueueMgmt`]).
    pub fn set_queue_mgmt(&self)
    where
        T: QueueMgmt,
    {
        // SAFETY: not registered (type invariant): no one reads the field
        // concurrently.
        unsafe { (*self.raw()).queue_mgmt_ops = QueueAdapter::<T>::OPS_REF };
    }

    /// Gives the device the per-queue counters of `T` ([`QueueStats`]).
    pub fn set_stat_ops(&self)
    where
        T: QueueStats,
    {
        // SAFETY: not registered (type invariant): no one reads the field
        // concurrently.
        unsafe { (*self.raw()).stat_ops = StatsAdapter::<T>::OPS_REF };
    }

    /// Gives the device the ethtool operations of `T`
    /// ([`ethtool::Ops`](super::ethtool::Ops)).
    pub fn set_ethtool_ops(&self)
    where
        T: super::ethtool::Ops,
    {
        // SAFETY: not registered (type invariant): no one reads the field
        // concurrently.
        unsafe { (*self.raw()).ethtool_ops = super::ethtool::Adapter::<T>::OPS_REF };
    }

    /// Gives the device its offloads.
    pub fn set_features(&self, f: Features) {
        let raw = self.raw();
        // SAFETY: not registered (type invariant): no one reads the fields
        // concurrently.
        unsafe {
            (*raw).features |= f.0;
            (*raw).vlan_features |= f.0;
        }
    }

    /// Gives the device offloads that user space may turn off and on
    /// (`ethtool -K`), on to begin with: offloads the stack uses or not
    /// packet by packet, which need no change in the device.
    pub fn set_user_features(&self, f: Features) {
        let raw = self.raw();
        // SAFETY: as for `set_features`.
        unsafe {
            (*raw).hw_features |= f.0;
            (*raw).features |= f.0;
            (*raw).vlan_features |= f.0;
        }
    }

    /// Declares that the driver sends frags of device memory (`net_iov`s
    /// of a devmem TX binding) by their DMA addresses (`NETMEM_TX_DMA`).
    ///
    /// Safe: the stack then hands the driver packets whose frags may be
    /// `net_iov`s, which have no page to map or read. The only ways safe
    /// code has to a frag's memory know them:
    /// [`SkBuff::map_for_tx`](super::skbuff::SkBuff::map_for_tx) gives
    /// their provider's DMA address, and
    /// [`SkBuff::copy_bits`](super::skbuff::SkBuff::copy_bits) refuses
    /// unreadable frags.
    pub fn set_netmem_tx(&self) {
        // SAFETY: as for `set_features`; written through a raw place, as
        // in `set_unicast_filter`.
        unsafe {
            bindings::net_device__bindgen_ty_1__bindgen_ty_1::set_netmem_tx_raw(
                &raw mut (*self.raw()).__bindgen_anon_1.__bindgen_anon_1,
                // CAST: 1, into a two-bit field.
                bindings::netmem_tx_mode_NETMEM_TX_DMA as c_ulong,
            )
        };
    }

    /// Sets the range of MTUs the stack may ask for, `min` to `max`
    /// bytes; outside it, setting the MTU fails with `EINVAL` before
    /// [`Operations::change_mtu`] runs.
    pub fn set_mtu_range(&self, min: u32, max: u32) {
        // SAFETY: as for `set_features`.
        unsafe {
            (*self.raw()).min_mtu = min;
            (*self.raw()).max_mtu = max;
        }
    }

    /// Declares that [`Operations::set_rx_mode`] filters on the unicast
    /// list (`IFF_UNICAST_FLT`): without it, the core turns on promiscuous
    /// mode for any address beyond the device's own.
    pub fn set_unicast_filter(&self) {
        type Group = bindings::net_device__bindgen_ty_1__bindgen_ty_1;
        // SAFETY: as for `set_features`; the bit field is read and written
        // through a raw place, without a reference to its group.
        unsafe {
            let bits = &raw mut (*self.raw()).__bindgen_anon_1.__bindgen_anon_1;
            // CAST: a flag of the 32-bit field.
            let flag = bindings::netdev_priv_flags_IFF_UNICAST_FLT as c_ulong;
            Group::set_priv_flags_raw(bits, Group::priv_flags_raw(bits) | flag);
        }
    }

    /// Sets how many of the transmit and receive queues allocated with
    /// the device are in use (`netif_set_real_num_queues`).
    pub fn set_real_num_queues(&self, tx: u32, rx: u32) -> Result {
        // SAFETY: a live device, not registered (type invariant): the C
        // function needs RTNL only for a registered one.
        to_result(unsafe { bindings::netif_set_real_num_queues(self.raw(), tx, rx) })
    }
}

/// Fills `key` with the system's RSS hash key (`netdev_rss_key_fill`),
/// random and the same for every device, so that flows hash alike.
pub fn rss_key_fill(key: &mut [u8]) {
    // SAFETY: `key` is writable for its length.
    unsafe { bindings::netdev_rss_key_fill(key.as_mut_ptr().cast(), key.len()) }
}

/// Whether the stack has another frame for the same transmit queue right
/// after the one [`Operations::start_xmit`] is sending
/// (`netdev_xmit_more`): the driver may then leave the device's doorbell
/// for that frame, as [`TxQueue::sent`] says. Meaningful only inside
/// `start_xmit`.
pub fn xmit_more() -> bool {
    // SAFETY: reads this CPU's transmit state; any context may.
    unsafe { bindings::netdev_xmit_more() }
}

/// Builds the C ops table of an [`Operations`] implementation.
struct Adapter<T: Operations>(PhantomData<T>);

impl<T: Operations> Adapter<T> {
    const OPS: bindings::net_device_ops = bindings::net_device_ops {
        ndo_open: Some(Self::open),
        ndo_stop: Some(Self::stop),
        ndo_start_xmit: Some(Self::start_xmit),
        ndo_get_stats64: if T::HAS_GET_STATS64 {
            Some(Self::get_stats64)
        } else {
            None
        },
        ndo_change_mtu: if T::HAS_CHANGE_MTU {
            Some(Self::change_mtu)
        } else {
            None
        },
        ndo_set_rx_mode_async: if T::HAS_SET_RX_MODE {
            Some(Self::set_rx_mode)
        } else {
            None
        },
        ndo_tx_timeout: if T::HAS_TX_TIMEOUT {
            Some(Self::tx_timeout)
        } else {
            None
        },
        ndo_set_mac_address: Some(bindings::eth_mac_addr),
        ndo_validate_addr: Some(bindings::eth_validate_addr),
        // SAFETY: all-zero is a valid ops table: every op absent.
        ..unsafe { core::mem::zeroed() }
    };

    /// The table, in read-only data.
    const OPS_REF: &'static bindings::net_device_ops = &Self::OPS;

    /// # Safety
    ///
    /// `dev` is a device registered by [`Registration::new`] for `T`.
    unsafe fn dev<'a>(dev: *mut bindings::net_device) -> &'a Device<T> {
        // SAFETY: per the caller.
        unsafe { Device::from_raw(dev) }
    }

    /// # Safety
    ///
    /// As for `dev`, and the caller holds the device's instance lock for
    /// `'a`.
    unsafe fn locked<'a>(dev: *mut bindings::net_device) -> &'a LockedDevice<T> {
        // SAFETY: per the caller.
        unsafe { LockedDevice::from_device(Device::from_raw(dev)) }
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, under its
    /// instance lock (`request_ops_lock`, set by [`Registration::new`]).
    unsafe extern "C" fn open(dev: *mut bindings::net_device) -> c_int {
        // SAFETY: per this function's contract.
        from_result(|| T::open(unsafe { Self::locked(dev) }).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn stop(dev: *mut bindings::net_device) -> c_int {
        // SAFETY: per this function's contract.
        from_result(|| T::stop(unsafe { Self::locked(dev) }).map(|()| 0))
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with a buffer
    /// the driver now owns.
    unsafe extern "C" fn start_xmit(
        skb: *mut bindings::sk_buff,
        dev: *mut bindings::net_device,
    ) -> bindings::netdev_tx_t {
        // SAFETY: per this function's contract.
        let (dev, skb) = unsafe { (Self::dev(dev), SkBuff::from_raw(skb)) };
        let passed = skb.as_raw();
        let idx = skb.queue_mapping();
        // The core capped the mapping below the queues in use when it
        // picked the queue (`netdev_cap_txqueue`).
        let Some(raw) = dev.tx_queue(idx).and_then(NonNull::new) else {
            crate::warn_on!(true);
            skb.drop_reason(DropReason::DevReady);
            return bindings::netdev_tx_NETDEV_TX_OK;
        };
        // INVARIANT: the core called `ndo_start_xmit` for the queue of the
        // packet's mapping, with that queue's xmit lock held and bottom
        // halves off (`HARD_TX_LOCK`; the device is not `LLTX`), for the
        // call.
        let mut txq = TxQueue {
            raw,
            idx,
            _lock: PhantomData,
            _not_send: NotThreadSafe,
        };
        match T::start_xmit(dev, &mut txq, skb) {
            Ok(()) => bindings::netdev_tx_NETDEV_TX_OK,
            // The stack keeps the buffer it passed in and retries it: given
            // back, not freed. A buffer at its address is that one or, if
            // the driver freed it and got another there, a valid one the
            // driver owns: either way the stack gets a buffer it owns.
            Err(Busy(skb)) if skb.as_raw() == passed => {
                let _ = skb.into_raw();
                bindings::netdev_tx_NETDEV_TX_BUSY
            }
            // Another buffer: the driver took the one passed in (sent, kept
            // or freed it), which the stack must not retry. The one
            // returned is the driver's to drop.
            Err(Busy(other)) => {
                crate::warn_on!(true);
                drop(other);
                bindings::netdev_tx_NETDEV_TX_OK
            }
        }
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with `stats`
    /// writable.
    unsafe extern "C" fn get_stats64(
        dev: *mut bindings::net_device,
        stats: *mut bindings::rtnl_link_stats64,
    ) {
        let mut s = Stats64::default();
        // SAFETY: per this function's contract.
        T::get_stats64(unsafe { Self::dev(dev) }, &mut s);
        // SAFETY: writable per this function's contract.
        let out = unsafe { &mut *stats };
        out.rx_packets = s.rx_packets;
        out.rx_bytes = s.rx_bytes;
        out.tx_packets = s.tx_packets;
        out.tx_bytes = s.tx_bytes;
        out.rx_dropped = s.rx_dropped;
        out.tx_dropped = s.tx_dropped;
        out.rx_errors = s.rx_errors;
        out.rx_missed_errors = s.rx_missed_errors;
        out.rx_fifo_errors = s.rx_fifo_errors;
    }

    /// # Safety
    ///
    /// As for `open`.
    unsafe extern "C" fn change_mtu(dev: *mut bindings::net_device, mtu: c_int) -> c_int {
        // SAFETY: per this function's contract.
        let d = unsafe { Self::locked(dev) };
        from_result(|| {
            let mtu = u32::try_from(mtu).map_err(|_| EINVAL)?;
            T::change_mtu(d, mtu)?;
            // SAFETY: a live device; the core serialises MTU changes
            // (RTNL), and lockless readers use `READ_ONCE`, which this
            // pairs with as `WRITE_ONCE` does.
            unsafe { core::ptr::write_volatile(&raw mut (*dev).mtu, mtu) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, from its
    /// transmit watchdog (a timer: softirq, no instance lock).
    unsafe extern "C" fn tx_timeout(dev: *mut bindings::net_device, txqueue: c_uint) {
        // SAFETY: per this function's contract.
        T::tx_timeout(unsafe { Self::dev(dev) }, txqueue);
    }

    /// # Safety
    ///
    /// Called by the core for a device registered for `T`, with `uc` and
    /// `mc` the core's snapshots of the device's address lists, left alone
    /// during the call.
    unsafe extern "C" fn set_rx_mode(
        dev: *mut bindings::net_device,
        uc: *mut bindings::netdev_hw_addr_list,
        mc: *mut bindings::netdev_hw_addr_list,
    ) -> c_int {
        // SAFETY: per this function's contract.
        let dev = unsafe { Self::dev(dev) };
        let mode = RxMode {
            dev,
            uc,
            mc,
            _lists: PhantomData,
        };
        from_result(|| T::set_rx_mode(dev, &mode).map(|()| 0))
    }
}

/// A resource of the parent bus device, such as a mapped PCI BAR, kept in
/// a network driver's data `T` for the parent's bound lifetime and used
/// without a revocation check.
///
/// The parent is bound for as long as `T` is alive (see [`Registration`]),
/// so a resource that borrows from the parent (a `pci::Bar<'bound>`) stays
/// valid for as long as the data holding it: [`BoundResource::get`] gives
/// it for the borrow of the data. It starts empty, in the data's
/// initialiser, and [`BoundResource::set`] fills it once, from `setup` of
/// [`Registration::new`], with what a function makes of the parent.
/// Fields drop in the order they are declared: declare it after the
/// fields whose drop may still use it (a work item that waits for its
/// run). The function is generic over the parent's lifetime, so what it returns
/// borrows from the parent or from nothing; a resource borrowing anything
/// shorter-lived does not build:
///
/// ```ignore,compile_fail,E0597
/// use kernel::{
///     net::driver::{
///         BoundResource,
///         UnregisteredDevice, //
///     },
///     prelude::*,
///     types::CovariantForLt,
/// };
///
/// type Borrowed = CovariantForLt!(&'_ u32);
///
/// fn setup<T>(dev: &UnregisteredDevice<T>, res: &BoundResource<Borrowed>) -> Result {
///     let local = 5;
///     res.set(dev, |_parent| Ok(&local))
/// }
/// ```
///
/// # Invariants
///
/// `res` is written at most once, by `set`, while the device whose private
/// area holds `self` is not registered and only the thread setting it up
/// has it; the value written was made from that device's parent, for a
/// lifetime that lasts for as long as the parent is bound, and is dropped
/// with `self`, in place.
#[pin_data]
pub struct BoundResource<F: CovariantForLt>
where
    for<'a> F::Of<'a>: Send + Sync,
{
    res: core::cell::UnsafeCell<Option<F::Of<'static>>>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: written once, before the data holding it is shared (type
// invariant), then only read; the value is `Sync`.
unsafe impl<F: CovariantForLt> Sync for BoundResource<F> where for<'a> F::Of<'a>: Send + Sync {}

impl<F: CovariantForLt> BoundResource<F>
where
    for<'a> F::Of<'a>: Send + Sync,
{
    /// An empty slot, for the initialiser of a driver's data. It never
    /// moves once made (it is not [`Unpin`]), so it is dropped with the
    /// data it is made in.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            res: core::cell::UnsafeCell::new(None),
            _pin: PhantomPinned,
        })
    }

    /// Fills the slot with what `f` makes of the parent of `dev`, which
    /// must be the device whose data holds `self`: `EINVAL` otherwise,
    /// `EBUSY` if the slot is full already.
    pub fn set<T>(
        &self,
        dev: &UnregisteredDevice<T>,
        f: impl for<'b> FnOnce(&'b GenericDevice<Bound>) -> Result<F::Of<'b>>,
    ) -> Result {
        let data = core::ptr::from_ref(dev.data()).addr();
        let me = core::ptr::from_ref(self).addr();
        if me < data || me + size_of::<Self>() > data + size_of::<T>() {
            return Err(EINVAL);
        }
        let res = core::mem::ManuallyDrop::new(f(dev.0.parent())?);
        // SAFETY: lifetimes do not change layout; `res` is not used again.
        // The value is valid for as long as the parent is bound, which is
        // for as long as `self`, in the data of `dev`, lives: it is handed
        // out only for borrows of `self` (`get`).
        let res = unsafe { core::ptr::read(core::ptr::from_ref(&*res).cast::<F::Of<'static>>()) };
        let slot = self.res.get();
        // SAFETY: only the thread setting `dev` up has the data (type
        // invariant of `UnregisteredDevice`), and no reference into the
        // slot's value exists while it is empty.
        unsafe {
            if (*slot).is_some() {
                return Err(EBUSY);
            }
            // INVARIANT: written once, before registration, with a value
            // made from the parent of the device holding `self`.
            *slot = Some(res);
        }
        Ok(())
    }

    /// The resource, for the borrow of the data; `None` before
    /// [`BoundResource::set`] filled the slot.
    pub fn get(&self) -> Option<&F::Of<'_>> {
        // SAFETY: the slot is no longer written once full (type invariant),
        // and a reference is handed out only then.
        let res = unsafe { (*self.res.get()).as_ref() }?;
        // The value lives until the parent unbinds, after `self` goes.
        Some(F::cast_ref(res))
    }
}

/// A registered network device with driver data `T`, for the bound bus
/// device `'a` borrows (its parent).
///
/// The registration is a device resource of the parent (devres), as
/// drm's is: dropping it unregisters the device, then drops `T` and frees
/// the device, and the parent's unbind does so at the latest, should the
/// registration be leaked. So the parent is bound for as long as `T` is
/// alive, which is what lets the callbacks have it bound
/// ([`Device::parent`]), and a bus driver keep the registration in its
/// data for the bound lifetime (`pci::Driver::Data<'bound>`).
///
/// # Invariants
///
/// `dev` is the device `_reg` holds: allocated for `T`, with an
/// initialised `T`, registered for `parent` until `_reg` is dropped or
/// revoked; `_reg` is revoked only when `parent` unbinds, which ends `'a`.
pub struct Registration<'a, T: Operations> {
    parent: &'a GenericDevice<Bound>,
    dev: NonNull<bindings::net_device>,
    /// Unregisters the device when dropped, unless the parent's unbind
    /// did.
    _reg: Devres<Registered<T>>,
}

// SAFETY: the registration may be dropped on any thread (process context).
unsafe impl<T: Operations> Send for Registration<'_, T> {}

// SAFETY: `&Registration` only gives `&Device<T>`.
unsafe impl<T: Operations> Sync for Registration<'_, T> {}

impl<'a, T: Operations> Registration<'a, T> {
    /// Allocates an Ethernet device with `txqs` transmit and `rxqs`
    /// receive queues and MAC address `mac` for hardware `parent`,
    /// initialises its data with `data`, and registers it
    /// (`alloc_etherdev_mqs`, `register_netdev`). `setup` runs on the
    /// device before registration, to set features, limits and ops
    /// tables.
    pub fn new(
        parent: &'a GenericDevice<Bound>,
        txqs: u32,
        rxqs: u32,
        mac: &[u8; 6],
        data: impl PinInit<T, Error>,
        setup: impl FnOnce(&UnregisteredDevice<T>) -> Result,
    ) -> Result<Self> {
        const { assert!(core::mem::align_of::<T>() <= bindings::NETDEV_ALIGN as usize) };
        let size = c_int::try_from(core::mem::size_of::<T>()).map_err(|_| EINVAL)?;
        // SAFETY: no requirements.
        let dev = unsafe { bindings::alloc_etherdev_mqs(size, txqs, rxqs) };
        let dev = NonNull::new(dev).ok_or(ENOMEM)?;
        // SAFETY: the private area is `size` bytes, aligned to
        // `NETDEV_ALIGN` (checked above against `T`).
        let slot = unsafe { bindings::netdev_priv(dev.as_ptr()) }.cast::<T>();
        // SAFETY: `slot` is valid for a `T` and stays put with the device.
        if let Err(e) = unsafe { data.__init(slot) } {
            // SAFETY: allocated above, never registered.
            unsafe { bindings::free_netdev(dev.as_ptr()) };
            return Err(e);
        }
        // From here on, dropping `guard` drops `T` and frees the device.
        let guard = Unregistered::<T>(dev, PhantomData);
        // SAFETY: the device is ours. `parent` is bound now, and stays
        // bound while `T` lives: `guard` drops it here on failure, and
        // `_reg` below unregisters the device and drops it by the time
        // `parent` unbinds; the core holds a reference to the parent while
        // the device is registered.
        unsafe {
            let raw = dev.as_ptr();
            (*raw).dev.parent = parent.as_raw();
            (*raw).netdev_ops = Adapter::<T>::OPS_REF;
            // Every op under the instance lock, which `LockedDevice`
            // promises the callbacks.
            (*raw).request_ops_lock = true;
            bindings::eth_hw_addr_set(raw, mac.as_ptr());
        }
        // SAFETY: allocated for `T` with an initialised `T`, registered
        // only after `setup` returns; the reference it gets cannot leave
        // the call, nor this thread.
        setup(unsafe { UnregisteredDevice::from_raw(dev.as_ptr()) })?;
        // SAFETY: a fully set up device.
        to_result(unsafe { bindings::register_netdev(dev.as_ptr()) })?;
        core::mem::forget(guard);
        // INVARIANT: registered just above; `Registered` unregisters it
        // when dropped, which a failure here does at once.
        let reg = Devres::new(parent, Registered::<T>(dev, PhantomData))?;
        Ok(Self {
            parent,
            dev,
            _reg: reg,
        })
    }

    /// The device.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: allocated for `T` (type invariant) and registered while
        // `self` lives: `_reg` is revoked only when `parent` unbinds, which
        // ends `'a`, as `Devres::access` argues.
        unsafe { Device::from_raw(self.dev.as_ptr()) }
    }

    /// The bus device the device is registered for.
    pub fn parent(&self) -> &'a GenericDevice<Bound> {
        self.parent
    }

    /// A counted reference to the device, for an interrupt handler or a
    /// work item. The registration must outlive it being used: dropping it
    /// waits for every reference to go (`netdev_wait_allrefs`).
    pub fn device_ref(&self) -> ARef<Device<T>> {
        self.device().into()
    }
}

/// A registered device allocated for `T`, holding an initialised `T`: the
/// device resource [`Registration`] puts on the parent. Dropping it
/// unregisters the device (stopping it first if it is up), then drops `T`
/// and frees the device.
///
/// # Invariants
///
/// `.0` was allocated for `T`, holds an initialised `T`, and is
/// registered.
struct Registered<T: Operations>(NonNull<bindings::net_device>, PhantomData<T>);

// SAFETY: unregistering may happen on any thread (process context); `T`
// is `Send + Sync` (`Operations`).
unsafe impl<T: Operations> Send for Registered<T> {}

// SAFETY: `&Registered` gives nothing.
unsafe impl<T: Operations> Sync for Registered<T> {}

impl<T: Operations> Drop for Registered<T> {
    fn drop(&mut self) {
        // SAFETY: registered (type invariant); stops the device first if
        // it is up.
        unsafe { bindings::unregister_netdev(self.0.as_ptr()) };
        drop(Unregistered::<T>(self.0, PhantomData));
    }
}

/// A device allocated for `T`, holding an initialised `T`, not registered:
/// dropping it drops `T` and frees the device.
struct Unregistered<T>(NonNull<bindings::net_device>, PhantomData<T>);

impl<T> Drop for Unregistered<T> {
    fn drop(&mut self) {
        // SAFETY: the private area holds an initialised `T`, used by no one
        // now that the device is not registered.
        unsafe {
            core::ptr::drop_in_place(bindings::netdev_priv(self.0.as_ptr()).cast::<T>());
            bindings::free_netdev(self.0.as_ptr());
        }
    }
}
