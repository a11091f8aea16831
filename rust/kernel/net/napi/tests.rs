// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of NAPI: the suite `rust_kernel_net_napi`.

#[macros::kunit_tests(rust_kernel_net_napi)]
mod suite {
    use super::super::*;
    use crate::{
        device::{
            Bound,
            Device as GenericDevice, //
        },
        faux,
        net::{
            driver::{
                Busy,
                Operations,
                Registration,
                TxQueue, //
            },
            netdev::NetDevice,
            skbuff::SkBuff,
        },
        time::{
            delay::fsleep,
            Delta, //
        },
    };
    #[cfg(CONFIG_PAGE_POOL)]
    use crate::{
        net::{
            page_pool::{
                Params,
                PoolNetmem, //
            },
            skbuff::{
                build_buf_size,
                RX_HEADROOM, //
            },
        },
        sync::SetOnce,
    };

    /// The ops of a device no traffic is sent through: open and stop do
    /// nothing, and what the stack sends is consumed.
    macro_rules! idle_ops {
        ($($t:ty),*) => {$(
            #[vtable]
            impl Operations for $t {
                fn open(_dev: &LockedDevice<Self>) -> Result {
                    Ok(())
                }

                fn stop(_dev: &LockedDevice<Self>) -> Result {
                    Ok(())
                }

                fn start_xmit(
                    _dev: &Device<Self>,
                    _txq: &mut TxQueue<'_>,
                    skb: SkBuff,
                ) -> Result<(), Busy> {
                    skb.consume();
                    Ok(())
                }
            }
        )*};
    }

    /// The data's first field is alive.
    static ALIVE: Atomic<bool> = Atomic::new(false);
    /// Polls of the instance.
    static POLLS: Atomic<u32> = Atomic::new(0);
    /// Polls that saw the first field dropped.
    static LATE: Atomic<u32> = Atomic::new(0);
    /// The instance, for the first field's drop; null until it is added.
    static NAPI: Atomic<*const Napi<Queue>> = Atomic::new(core::ptr::null());
    /// Whether the instance was still on its device when the first field
    /// dropped.
    static ON_AT_DROP: Atomic<bool> = Atomic::new(true);
    /// Whether the first field's drop could schedule the instance.
    static SCHEDULED_AT_DROP: Atomic<bool> = Atomic::new(true);

    /// Dropped before the queue, as it is declared before it: schedules
    /// the queue's instance as it goes, as an interrupt or busy polling
    /// could.
    struct Marker;

    impl Drop for Marker {
        fn drop(&mut self) {
            ALIVE.store(false, Release);
            let napi = NAPI.load(Acquire);
            if !napi.is_null() {
                // SAFETY: the `Napi` of the data this marker is in,
                // declared after it: not dropped yet.
                let napi = unsafe { &*napi };
                ON_AT_DROP.store(napi.added().is_some(), Relaxed);
                SCHEDULED_AT_DROP.store(napi.schedule(), Relaxed);
            }
            // Time for a poll, had the instance been left on.
            fsleep(Delta::from_millis(50));
        }
    }

    #[pin_data]
    struct Queue {
        #[pin]
        napi: Napi<Queue>,
    }

    impl Poll for Queue {
        type Data = Data;

        fn poll(_this: &Self, napi: NapiPoll<'_, Self>) -> i32 {
            if !ALIVE.load(Acquire) {
                LATE.add(1, Relaxed);
            }
            POLLS.add(1, Relaxed);
            napi.complete_done(0);
            0
        }
    }

    #[pin_data]
    struct Data {
        marker: Marker,
        #[pin]
        q: Queue,
    }

    // Its stop leaves the instance on the device, enabled.
    idle_ops!(Data);

    #[test]
    fn no_poll_once_the_registration_goes() -> Result {
        let faux = faux::Registration::new(c"rust_net_napi", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        ALIVE.store(true, Release);
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x02],
            try_pin_init!(Data {
                marker: Marker,
                q <- pin_init!(Queue {
                    napi <- Napi::new(),
                }),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        let q = &dev.data().q;
        // SAFETY: the test's thread, in process context, holds no lock.
        let unlocked = unsafe { crate::net::driver::UnlockedDevice::from_device(dev) };
        unlocked.with_rtnl_locked(|locked| -> Result {
            // SAFETY: the owner is the queue the instance is in, which
            // has nothing else; the queue is in the data of `dev`, the
            // only device it is added to, and reached only through it;
            // index 0 is its alone.
            let napi = unsafe { q.napi.add(locked, q, 0)? };
            napi.enable(locked);
            Ok(())
        })?;
        NAPI.store(&raw const q.napi, Release);
        assert!(q.napi.schedule());
        for _ in 0..100 {
            if POLLS.load(Relaxed) >= 1 {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert!(POLLS.load(Relaxed) >= 1);
        // Unregisters the device, whose driver leaves the instance on it,
        // then drops `marker`, then `q`.
        drop(reg);
        assert!(!ON_AT_DROP.load(Relaxed));
        assert!(!SCHEDULED_AT_DROP.load(Relaxed));
        assert_eq!(LATE.load(Relaxed), 0);
        Ok(())
    }

    /// A queue made and dropped while the device runs.
    #[pin_data]
    struct SpareQueue {
        #[pin]
        napi: Napi<SpareQueue>,
    }

    impl Poll for SpareQueue {
        type Data = SpareData;

        fn poll(_this: &Self, napi: NapiPoll<'_, Self>) -> i32 {
            napi.complete_done(0);
            0
        }
    }

    #[pin_data]
    struct SpareData {
        #[pin]
        slot: crate::sync::Mutex<Option<Pin<KBox<SpareQueue>>>>,
    }

    idle_ops!(SpareData);

    #[test]
    fn a_napi_dropped_under_the_instance_lock_is_taken_off() -> Result {
        let faux = faux::Registration::new(c"rust_net_napi", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x03],
            try_pin_init!(SpareData {
                slot <- crate::new_mutex!(None),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        // SAFETY: the test's thread, in process context, holds no lock.
        let unlocked = unsafe { crate::net::driver::UnlockedDevice::from_device(dev) };
        unlocked.with_rtnl_locked(|locked| -> Result {
            // The locks this thread holds are not taken again.
            assert_eq!(locked.lock().err(), Some(EDEADLK));
            assert_eq!(unlocked.with_rtnl_locked(|_| Ok(())).err(), Some(EDEADLK));
            let q = KBox::pin_init(
                pin_init!(SpareQueue {
                    napi <- Napi::new(),
                }),
                GFP_KERNEL,
            )?;
            let mut slot = dev.data().slot.lock();
            let q = &**slot.insert(q);
            // SAFETY: the owner is the queue the instance is in, which has
            // nothing else and no drop of its own; the queue is in the data
            // of `dev`, the only device it is added to, and reached only
            // through it; index 0 is its alone.
            let napi = unsafe { q.napi.add(locked, q, 0)? };
            napi.enable(locked);
            // Dropped under the instance lock, as a callback would: taken
            // off in place, not waiting for the lock.
            *slot = None;
            // SAFETY: the list changes under the instance lock, held.
            let list = unsafe { &raw mut (*dev.as_raw()).napi_list };
            // SAFETY: as above.
            assert!(core::ptr::eq(unsafe { (*list).next }, list));
            Ok(())
        })?;
        drop(reg);
        Ok(())
    }

    /// Frames the poll of [`GroQueue`] handed to GRO.
    static HANDED: Atomic<u32> = Atomic::new(0);

    /// A queue whose poll hands GRO a frame that names another device, one
    /// that names none, one of its own whose Ethernet header it did not
    /// parse, and one of its own.
    #[pin_data]
    struct GroQueue {
        #[pin]
        napi: Napi<GroQueue>,
    }

    impl Poll for GroQueue {
        type Data = GroData;

        fn poll(_this: &Self, mut napi: NapiPoll<'_, Self>) -> i32 {
            let other = napi.dev().data().other;
            if let Some(rx) = napi.rx() {
                let own: &NetDevice = rx.dev();
                for (dev, keep, parse) in [
                    (other, true, true),
                    (own, false, true),
                    (own, true, false),
                    (own, true, true),
                ] {
                    // A broadcast frame of an unknown protocol (0xffff):
                    // the stack counts it dropped on the device it names.
                    let Some(mut skb) = rx.alloc_skb(64) else {
                        continue;
                    };
                    // `alloc_skb` names the instance's device already.
                    if skb.put_data(&[0xff; 60]).is_err()
                        || (parse && skb.eth_type_trans(dev).is_err())
                    {
                        continue;
                    }
                    if !keep {
                        // SAFETY: a buffer of ours on no list: `dev` is
                        // the live member of the union.
                        unsafe {
                            (*skb.as_raw())
                                .__bindgen_anon_1
                                .__bindgen_anon_1
                                .__bindgen_anon_1
                                .dev = core::ptr::null_mut()
                        };
                    }
                    HANDED.add(1, Relaxed);
                    rx.gro_receive(skb);
                }
            }
            napi.complete_done(0);
            0
        }
    }

    #[pin_data]
    struct GroData {
        /// Another registered device.
        other: &'static NetDevice,
        #[pin]
        q: GroQueue,
    }

    idle_ops!(GroData, OtherData);

    /// The frames the stack dropped on `dev` (`rx_dropped`).
    fn rx_dropped(dev: &NetDevice) -> u64 {
        let mut stats = bindings::rtnl_link_stats64::default();
        // SAFETY: a registered device; `dev_get_stats` fills `stats`.
        unsafe { bindings::dev_get_stats(dev.as_raw(), &mut stats) };
        stats.rx_dropped
    }

    #[test]
    fn gro_drops_frames_of_other_devices() -> Result {
        let faux = faux::Registration::new(c"rust_net_napi_gro", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        let other = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x03],
            Ok::<_, Error>(OtherData),
            |_| Ok(()),
        )?;
        // SAFETY: the device outlives the registration below, which goes
        // first, at the end of the test; `'static` only for the data's
        // type.
        let other_dev: &'static NetDevice = unsafe { &*core::ptr::from_ref(&**other.device()) };
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x04],
            try_pin_init!(GroData {
                other: other_dev,
                q <- pin_init!(GroQueue {
                    napi <- Napi::new(),
                }),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        HANDED.store(0, Relaxed);
        let (mine, theirs) = (rx_dropped(dev), rx_dropped(other_dev));
        let q = &dev.data().q;
        // SAFETY: the test's thread, in process context, holds no lock.
        let unlocked = unsafe { crate::net::driver::UnlockedDevice::from_device(dev) };
        unlocked.with_rtnl_locked(|locked| -> Result {
            // SAFETY: as in `no_poll_once_the_registration_goes`.
            let napi = unsafe { q.napi.add(locked, q, 0)? };
            napi.enable(locked);
            Ok(())
        })?;
        assert!(q.napi.schedule());
        for _ in 0..100 {
            if rx_dropped(dev) > mine {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        // All four went to GRO; only the device's own parsed one reached
        // the stack, which dropped it, unknown, on the device. The others
        // were freed before: the other device saw nothing, the one that
        // named no device did not reach the stack, which would have
        // crashed on it, and neither did the one without a MAC header,
        // which GRO would have read 64 KiB past its head.
        assert_eq!(HANDED.load(Relaxed), 4);
        assert_eq!(rx_dropped(dev), mine + 1);
        assert_eq!(rx_dropped(other_dev), theirs);
        drop(reg);
        drop(other);
        Ok(())
    }

    /// The data of a device with no queues of its own.
    struct OtherData;

    #[test]
    fn completions_stop_at_what_is_in_flight() {
        assert_eq!(poll::completable(1500, 3000, 1000), 1500);
        assert_eq!(poll::completable(2000, 3000, 1000), 2000);
        assert_eq!(poll::completable(u32::MAX, 3000, 1000), 2000);
        assert_eq!(poll::completable(u32::MAX, 0, 0), 0);
        // The counts wrap.
        assert_eq!(poll::completable(100, 10, u32::MAX - 9), 20);
        assert_eq!(poll::completable(100, 10, 20), 100);
    }

    #[cfg(CONFIG_PAGE_POOL)]
    #[test]
    fn packets_are_built_up_to_a_cache_line_boundary() {
        // CAST: a small power of two.
        let line = bindings::SMP_CACHE_BYTES as usize;
        let page = 1 << 20;
        assert_eq!(poll::build_size(page, 4096), 4096);
        assert_eq!(poll::build_size(page, 0), 0);
        assert_eq!(poll::build_size(page + line, 2 * line), (2 * line) as u32);
        assert_eq!(
            poll::build_size(page + line, 2 * line + 8),
            (2 * line) as u32
        );
        assert_eq!(poll::build_size(page, 1001), (1001 / line * line) as u32);
        assert_eq!(
            poll::build_size(page + 8, 1001),
            ((1009 / line * line) - 8) as u32
        );
        assert_eq!(poll::build_size(page + 8, line - 16), 0);
        assert_eq!(poll::build_size(page + 8, 0), 0);
    }

    /// Checks of the receive test's poll, a bit each, set when it held.
    #[cfg(CONFIG_PAGE_POOL)]
    mod check {
        /// `build_skb` names the instance's device in the packet.
        pub(super) const BUILT_FOR_THE_DEVICE: u32 = 1 << 0;
        /// `eth_type_trans` pulls a header from the linear part only.
        pub(super) const ETH_HEADER_IN_THE_LINEAR_PART: u32 = 1 << 1;
        /// Completing more than was sent leaves byte queue limits' counts
        /// sound (and does not BUG).
        pub(super) const NO_MORE_COMPLETED_THAN_SENT: u32 = 1 << 2;
        /// A clone's data and frags are not changed through it.
        pub(super) const CLONES_LEFT_ALONE: u32 = 1 << 3;
        /// Only what was synced for the CPU goes to the stack.
        pub(super) const SYNCED_ONLY: u32 = 1 << 5;
        /// A packet built around a buffer of any size has its shared info
        /// aligned to a cache line.
        pub(super) const SHINFO_ALIGNED: u32 = 1 << 4;
        /// Buffers of `build_buf_size(len)` carved one after the other
        /// from a page each take a packet of `len` bytes, shared info
        /// aligned.
        pub(super) const BUILD_BUF_SIZE_FITS: u32 = 1 << 6;
        /// Only a receive queue the device uses is recorded in a packet.
        pub(super) const RX_QUEUE_OF_THE_DEVICE: u32 = 1 << 7;
    }

    /// What the receive test's poll found (`check` bits).
    #[cfg(CONFIG_PAGE_POOL)]
    static RX_CHECKS: Atomic<u32> = Atomic::new(0);
    /// Whether the receive test's poll ran its checks.
    #[cfg(CONFIG_PAGE_POOL)]
    static RX_POLLED: Atomic<bool> = Atomic::new(false);

    #[cfg(CONFIG_PAGE_POOL)]
    #[pin_data]
    struct RxQueue {
        #[pin]
        napi: Napi<RxQueue>,
        pool: SetOnce<PoolId>,
    }

    #[cfg(CONFIG_PAGE_POOL)]
    impl Poll for RxQueue {
        type Data = RxData;

        fn poll(this: &Self, mut napi: NapiPoll<'_, Self>) -> i32 {
            if !RX_POLLED.load(Acquire) {
                RX_CHECKS.store(rx_checks(this, &mut napi), Relaxed);
                RX_POLLED.store(true, Release);
            }
            napi.complete_done(0);
            0
        }
    }

    /// The device of a packet.
    #[cfg(CONFIG_PAGE_POOL)]
    fn skb_dev(skb: &SkBuff) -> *mut bindings::net_device {
        // SAFETY: a packet of ours, not shared.
        unsafe {
            (*skb.as_raw())
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev
        }
    }

    /// A buffer of the instance's pool `id` (`size` bytes of a shared
    /// one, or a whole one), its `len` bytes from `off` synced for the
    /// CPU.
    #[cfg(CONFIG_PAGE_POOL)]
    fn synced_buf(
        rx: &mut NapiRx<'_, RxQueue>,
        id: PoolId,
        size: Option<u32>,
        off: u32,
        len: u32,
    ) -> Option<PoolNetmem> {
        let buf = {
            let mut pool = rx.pool(id)?;
            match size {
                Some(size) => pool.alloc_frag(size),
                None => pool.alloc(),
            }?
        };
        buf.sync_for_cpu(rx.pool_ref(id)?, off, len);
        Some(buf)
    }

    /// What the receive side of a poll does, checked.
    #[cfg(CONFIG_PAGE_POOL)]
    fn rx_checks(q: &RxQueue, napi: &mut NapiPoll<'_, RxQueue>) -> u32 {
        let mut ok = 0;
        // Nothing was sent.
        napi.tx_completed(1, u32::MAX);
        #[cfg(CONFIG_BQL)]
        if let Some(txq) = napi.dev().tx_queue(0) {
            // SAFETY: a transmit queue of the device; the device is down:
            // nothing sends.
            let (queued, completed) = unsafe { ((*txq).dql.num_queued, (*txq).dql.num_completed) };
            if completed == queued {
                ok |= check::NO_MORE_COMPLETED_THAN_SENT;
            }
        }
        #[cfg(not(CONFIG_BQL))]
        {
            ok |= check::NO_MORE_COMPLETED_THAN_SENT;
        }
        let Some(id) = q.pool.copy() else {
            return ok;
        };
        let Some(mut rx) = napi.rx() else {
            return ok;
        };
        let ndev = rx.dev();
        let dev = ndev.as_raw();
        if let Some(buf) = synced_buf(&mut rx, id, None, RX_HEADROOM, 64) {
            if let Ok(mut skb) = rx.build_skb(buf, RX_HEADROOM, 64) {
                if skb_dev(&skb) == dev {
                    ok |= check::BUILT_FOR_THE_DEVICE;
                }
                if skb.eth_type_trans(ndev).is_ok() && skb.len() == 64 - 14 {
                    ok |= check::ETH_HEADER_IN_THE_LINEAR_PART;
                }
                skb.consume();
            }
        }
        // The device has one receive queue: queue 0 is recorded (the
        // stack keeps it plus one), queue 1 and beyond are refused and
        // leave the record as it was.
        if let Some(mut skb) = rx.alloc_skb(0) {
            if ndev.real_num_rx_queues() == 1
                && rx.record_rx_queue(&mut skb, 0).is_ok()
                && skb.queue_mapping() == 1
                && rx.record_rx_queue(&mut skb, 1) == Err(EINVAL)
                && rx.record_rx_queue(&mut skb, u16::MAX) == Err(EINVAL)
                && skb.queue_mapping() == 1
            {
                ok |= check::RX_QUEUE_OF_THE_DEVICE;
            }
            skb.consume();
        }
        // Nothing synced, or not all of the frame: refused.
        let refused = |buf: Option<PoolNetmem>, rx: &NapiRx<'_, RxQueue>| {
            buf.is_some_and(|buf| rx.build_skb(buf, RX_HEADROOM, 64).is_err())
        };
        let unsynced = rx.pool(id).and_then(|mut p| p.alloc());
        let part = synced_buf(&mut rx, id, None, RX_HEADROOM, 63);
        let frag_part = synced_buf(&mut rx, id, None, 1, 64);
        let frag_refused = frag_part.is_some_and(|buf| {
            rx.alloc_skb(0).is_some_and(|mut skb| {
                let refused = skb.add_rx_frag(buf, 0, 64).is_err();
                skb.consume();
                refused
            })
        });
        if refused(unsynced, &rx) && refused(part, &rx) && frag_refused {
            ok |= check::SYNCED_ONLY;
        }
        // Buffers of a size that is not a multiple of a cache line, the
        // second at an offset that need not be one either.
        let mut aligned = true;
        for _ in 0..2 {
            let Some(buf) = synced_buf(&mut rx, id, Some(1001), RX_HEADROOM, 64) else {
                aligned = false;
                break;
            };
            match rx.build_skb(buf, RX_HEADROOM, 64) {
                Ok(skb) => {
                    // SAFETY: a packet of ours; its shared info follows
                    // its data.
                    let shinfo = unsafe { bindings::skb_shinfo(skb.as_raw()) };
                    // CAST: a small power of two.
                    aligned &= (shinfo as usize) % (bindings::SMP_CACHE_BYTES as usize) == 0;
                    skb.consume();
                }
                Err(_) => aligned = false,
            }
        }
        if aligned {
            ok |= check::SHINFO_ALIGNED;
        }
        // Back to back from the start of a page (earlier buffers of other
        // sizes left the pool's current page at an odd offset), each as
        // full as it may be.
        const LEN: u32 = 256;
        let mut built = 0;
        let mut fits = true;
        for _ in 0..16 {
            let Some(buf) = synced_buf(&mut rx, id, Some(build_buf_size(LEN)), RX_HEADROOM, LEN)
            else {
                break;
            };
            if built == 0 && buf.offset() != 0 {
                continue;
            }
            match rx.build_skb(buf, RX_HEADROOM, LEN) {
                Ok(skb) => {
                    // SAFETY: as above.
                    let shinfo = unsafe { bindings::skb_shinfo(skb.as_raw()) };
                    // CAST: a small power of two.
                    fits &= (shinfo as usize) % (bindings::SMP_CACHE_BYTES as usize) == 0
                        && skb.len() == LEN;
                    skb.consume();
                }
                Err(_) => fits = false,
            }
            built += 1;
            if built == 3 {
                break;
            }
        }
        if fits && built == 3 {
            ok |= check::BUILD_BUF_SIZE_FITS;
        }
        // A clone, as `start_xmit` may get one: its data is not its alone.
        if let Some(skb) = rx.alloc_skb(64).map(SkBuff::from) {
            // SAFETY: a packet of ours; the clone is a new one, ours too.
            let clone = unsafe { bindings::skb_clone(skb.as_raw(), bindings::GFP_ATOMIC) };
            if !clone.is_null() {
                // SAFETY: a new packet, ours.
                let mut clone = unsafe { SkBuff::from_raw(clone) };
                let refused = skb.is_cloned()
                    && clone.is_cloned()
                    && !clone.is_shared()
                    && clone.put_data(&[0; 16]) == Err(EBUSY)
                    && synced_buf(&mut rx, id, None, 0, 64)
                        .is_some_and(|buf| clone.add_rx_frag(buf, 0, 64).is_err())
                    && clone.is_empty()
                    && clone.nr_frags() == 0;
                clone.consume();
                // Its own again once the clone is gone.
                if refused && skb.is_exclusive() {
                    ok |= check::CLONES_LEFT_ALONE;
                }
            }
            skb.consume();
        }
        // All in a frag: nothing to pull the header from, and the packet
        // stays as it was.
        let refused = rx.alloc_skb(0).is_some_and(|mut skb| {
            let refused = synced_buf(&mut rx, id, None, 0, 64)
                .is_some_and(|buf| skb.add_rx_frag(buf, 0, 64).is_ok())
                && skb.headlen() == 0
                && skb.eth_type_trans(ndev).is_err()
                && skb.len() == 64;
            skb.consume();
            refused
        });
        if !refused {
            ok &= !check::ETH_HEADER_IN_THE_LINEAR_PART;
        }
        ok
    }

    #[cfg(CONFIG_PAGE_POOL)]
    #[pin_data]
    struct RxData {
        #[pin]
        q: RxQueue,
    }

    #[cfg(CONFIG_PAGE_POOL)]
    idle_ops!(RxData);

    #[cfg(CONFIG_PAGE_POOL)]
    #[test]
    fn a_poll_builds_packets_the_stack_can_take() -> Result {
        let faux = faux::Registration::new(c"rust_net_napi_rx", None)?;
        let parent: &faux::Device<Bound> = faux.as_ref();
        let parent: &GenericDevice<Bound> = parent.as_ref();
        let reg = Registration::new(
            parent,
            1,
            1,
            &[0x02, 0, 0, 0, 0x13, 0x03],
            try_pin_init!(RxData {
                q <- pin_init!(RxQueue {
                    napi <- Napi::new(),
                    pool: SetOnce::new(),
                }),
            }? Error),
            |_| Ok(()),
        )?;
        let dev = reg.device();
        // No sender hands `start_xmit` a packet it keeps a reference to.
        type Group = bindings::net_device__bindgen_ty_1__bindgen_ty_1;
        // SAFETY: a registered device; the bit field is read through a
        // raw place.
        let flags = unsafe {
            Group::priv_flags_raw(&raw const (*dev.as_raw()).__bindgen_anon_1.__bindgen_anon_1)
        };
        assert_eq!(
            flags & bindings::netdev_priv_flags_IFF_TX_SKB_SHARING as c_ulong,
            0
        );
        let q = &dev.data().q;
        // A faux device has no DMA mask: the pool does not map.
        let pool = Pool::new(&Params::new(parent, 0, 16).unmapped())?;
        // SAFETY: the test's thread, in process context, holds no lock.
        let unlocked = unsafe { crate::net::driver::UnlockedDevice::from_device(dev) };
        unlocked.with_rtnl_locked(|locked| -> Result {
            // SAFETY: as in `no_poll_once_the_registration_goes`.
            let napi = unsafe { q.napi.add(locked, q, 0)? };
            let id = napi.attach_pool(locked, pool).map_err(|(e, _)| e)?;
            q.pool.populate(id);
            napi.enable(locked);
            Ok(())
        })?;
        assert!(q.napi.schedule());
        for _ in 0..100 {
            if RX_POLLED.load(Acquire) {
                break;
            }
            fsleep(Delta::from_millis(10));
        }
        assert!(RX_POLLED.load(Acquire));
        let ok = RX_CHECKS.load(Relaxed);
        assert_ne!(ok & check::BUILT_FOR_THE_DEVICE, 0);
        assert_ne!(ok & check::ETH_HEADER_IN_THE_LINEAR_PART, 0);
        assert_ne!(ok & check::NO_MORE_COMPLETED_THAN_SENT, 0);
        assert_ne!(ok & check::CLONES_LEFT_ALONE, 0);
        assert_ne!(ok & check::SHINFO_ALIGNED, 0);
        assert_ne!(ok & check::SYNCED_ONLY, 0);
        assert_ne!(ok & check::BUILD_BUF_SIZE_FITS, 0);
        assert_ne!(ok & check::RX_QUEUE_OF_THE_DEVICE, 0);
        // Takes the instance off, destroying its pool.
        drop(reg);
        Ok(())
    }
}
