// SPDX-License-Identifier: GPL-2.0

//! Restarting one receive queue at a time (`struct netdev_queue_mgmt_ops`),
//! with memory a memory provider may supply.
//!
//! C header: [`include/net/netdev_queues.h`](srctree/include/net/netdev_queues.h);
//! the core's side: [`net/core/netdev_rx_queue.c`](srctree/net/core/netdev_rx_queue.c)

use super::{
    Device,
    LockedDevice,
    Operations, //
};
use crate::{
    alloc::{
        allocator::KVmalloc,
        Allocator, //
    },
    error::from_result,
    net::netlink::request::ExtAck,
    prelude::*,
};
use core::marker::PhantomData;

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
    /// When new memory fails to start, the core starts the queue again on
    /// the memory [`QueueMgmt::rx_stop`] gave up, and WARNs if that fails
    /// too: a driver keeps what restarting the old memory needs (as C
    /// drivers do), so that it does not.
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
    pub(super) fn from_raw(raw: &bindings::netdev_queue_config) -> Self {
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
pub(super) struct QueueAdapter<T: QueueMgmt>(PhantomData<T>);

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

    pub(super) const OPS_REF: &'static bindings::netdev_queue_mgmt_ops = &Self::OPS;

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
