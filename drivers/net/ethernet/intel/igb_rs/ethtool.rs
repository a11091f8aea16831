// SPDX-License-Identifier: GPL-2.0

//! ethtool: driver info, ring sizes and header split, channels, RSS and
//! flow steering rules, interrupt moderation, flow control, link settings
//! and the driver's counters.

use crate::{
    hw,
    max_frame,
    netdev::Nic,
    regs::*,
    ring::{
        self,
        RING_MAX, //
    },
    rss::{
        Rss,
        RETA_SIZE,
        RSS_KEY_SIZE, //
    },
    steer,
    MAX_MTU,
    QUEUES, //
};
use kernel::{
    net::{
        driver::{
            Device,
            LockedDevice,
            Operations,
            QueueMgmt,
            RtnlLockedDevice, //
        },
        ethtool,
        netlink::request::ExtAck,
    },
    prelude::*,
    sync::atomic::Relaxed,
};

#[vtable]
impl ethtool::Ops for Nic {
    fn drvinfo(dev: &Device<Self>, f: &mut dyn FnMut(ethtool::DrvInfo<'_>)) {
        let pdev: &kernel::device::Device = dev.data().pdev.as_ref();
        f(ethtool::DrvInfo {
            driver: c"igb_rs",
            bus_info: pdev.name(),
        });
    }

    fn ringparam(dev: &Device<Self>) -> ethtool::RingParam {
        let nic = dev.data();
        ethtool::RingParam {
            rx_max_pending: RING_MAX,
            tx_max_pending: RING_MAX,
            rx_pending: nic.rx_ring_size.load(Relaxed),
            tx_pending: nic.tx_ring_size.load(Relaxed),
            tcp_data_split: if nic.split.load(Relaxed) {
                ethtool::TcpDataSplit::Enabled
            } else {
                ethtool::TcpDataSplit::Disabled
            },
            // Every frame is split, whatever its payload.
            hds_thresh: 0,
            hds_thresh_max: 0,
        }
    }

    // Header split per receive ring; hds-thresh is shown as 0, every
    // frame split whatever its payload, the only value taken.
    const SUPPORTED_RING_PARAMS: ethtool::RingParams =
        ethtool::RingParams::TCP_DATA_SPLIT.with(ethtool::RingParams::HDS_THRESH);

    fn set_ringparam(
        dev: &LockedDevice<Self>,
        ring: &ethtool::RingParam,
        extack: &ExtAck<'_>,
    ) -> Result {
        let nic = dev.data();
        // Below the minimum is refused, so that a size accepted is the size
        // set (the C igb raises it); the core refused any above the
        // maximum. Within, sizes round up to a multiple of 8, as the
        // device takes them.
        if ring.rx_pending < ring::RING_MIN || ring.tx_pending < ring::RING_MIN {
            extack.set_msg(c"igb_rs: a ring takes at least 64 descriptors");
            return Err(EINVAL);
        }
        let sizes = (
            ring::ring_size(ring.rx_pending),
            ring::ring_size(ring.tx_pending),
        );
        if sizes != nic.ring_sizes() {
            return nic.resize_rings(dev, sizes, ring.tcp_data_split);
        }
        let split = ring.tcp_data_split == ethtool::TcpDataSplit::Enabled;
        if split == nic.split.load(Relaxed) {
            return Ok(());
        }
        if !dev.is_running() {
            nic.split.store(split, Relaxed);
            return Ok(());
        }
        switch_split(dev, split)?;
        nic.split.store(split, Relaxed);
        Ok(())
    }

    fn rx_ring_count(dev: &Device<Self>) -> core::num::NonZeroU32 {
        // CAST: at most QUEUES. `set_channels` keeps at least one pair
        // active.
        core::num::NonZeroU32::new(dev.data().active().len() as u32)
            .unwrap_or(core::num::NonZeroU32::MIN)
    }

    fn rxfh_sizes(_dev: &Device<Self>) -> ethtool::RxfhSizes {
        // CAST: 128 and 40, checked when the driver builds.
        const { ethtool::RxfhSizes::new(RETA_SIZE as u16, RSS_KEY_SIZE as u8).unwrap() }
    }

    fn rxfh(dev: &Device<Self>, indir: &mut [u32], key: &mut [u8]) {
        let rss = dev.data().rss.lock();
        for (d, s) in indir.iter_mut().zip(rss.reta.iter()) {
            *d = u32::from(*s);
        }
        for (d, s) in key.iter_mut().zip(rss.key.iter()) {
            *d = *s;
        }
    }

    fn set_rxfh(
        dev: &Device<Self>,
        indir: Option<&[u32]>,
        key: Option<&[u8]>,
        _extack: &ExtAck<'_>,
    ) -> Result {
        let nic = dev.data();
        {
            let mut rss = nic.rss.lock();
            if let Some(indir) = indir {
                for (d, s) in rss.reta.iter_mut().zip(indir) {
                    // The core checked each entry against the ring count.
                    *d = u8::try_from(*s).map_err(|_| EINVAL)?;
                }
            }
            if let Some(key) = key {
                for (d, s) in rss.key.iter_mut().zip(key) {
                    *d = *s;
                }
                let Rss { key, steer, .. } = &mut *rss;
                steer.rekey(key);
            }
        }
        nic.configure_rss();
        Ok(())
    }

    fn rxfh_fields(dev: &Device<Self>, flow: ethtool::HashFlow) -> ethtool::HashFields {
        dev.data().rss.lock().fields.get(flow)
    }

    fn set_rxfh_fields(
        dev: &Device<Self>,
        flow: ethtool::HashFlow,
        fields: ethtool::HashFields,
        extack: &ExtAck<'_>,
    ) -> Result {
        let nic = dev.data();
        {
            let mut rss = nic.rss.lock();
            let new = rss.fields.with(flow, fields).map_err(|msg| {
                extack.set_msg(msg);
                EINVAL
            })?;
            if new == rss.fields {
                return Ok(());
            }
            // The rules' buckets are the buckets of TCP hashed by
            // addresses and ports, and only TCP may reach their queues.
            if rss.steer.uses_rss() {
                extack.set_msg(c"flow steering rules use the RSS table: delete them first");
                return Err(EBUSY);
            }
            rss.fields = new;
        }
        nic.configure_rss();
        Ok(())
    }

    fn flow_rules(dev: &Device<Self>, f: &mut dyn FnMut(u32, &ethtool::FlowRule)) -> u32 {
        dev.data().rss.lock().steer.for_each(f);
        // CAST: 16.
        steer::MAX_RULES as u32
    }

    fn add_flow_rule(
        dev: &Device<Self>,
        rule: &ethtool::FlowRule,
        at: ethtool::RuleLocation,
    ) -> Result<u32> {
        let nic = dev.data();
        let rule = steer::TcpRule::of_flow(rule)?;
        // CAST: u32 to usize is lossless on Linux.
        if rule.queue as usize >= nic.active().len() {
            return Err(EINVAL);
        }
        let loc = {
            let mut rss = nic.rss.lock();
            let Rss {
                key, fields, steer, ..
            } = &mut *rss;
            // Steering through the RSS table needs the default hash.
            steer.add(&rule, at, key, fields.is_tcp_only())?
        };
        nic.configure_rss();
        Ok(loc)
    }

    fn del_flow_rule(dev: &Device<Self>, location: u32) -> Result {
        let nic = dev.data();
        nic.rss.lock().steer.del(location)?;
        nic.configure_rss();
        Ok(())
    }

    const SUPPORTED_COALESCE: ethtool::CoalesceParams =
        ethtool::CoalesceParams::RX_USECS.with(ethtool::CoalesceParams::USE_ADAPTIVE_RX);

    fn coalesce(dev: &Device<Self>) -> ethtool::Coalesce {
        let usecs = dev.data().itr_usecs.load(Relaxed);
        ethtool::Coalesce {
            rx_usecs: usecs,
            use_adaptive_rx: hw::itr_adaptive(usecs),
        }
    }

    fn set_coalesce(dev: &Device<Self>, c: &ethtool::Coalesce, extack: &ExtAck<'_>) -> Result {
        // The transmit queue of a pair interrupts on its receive queue's
        // vector: there is no tx-usecs of its own, and the core refuses
        // one (not in SUPPORTED_COALESCE).
        let nic = dev.data();
        let now = nic.itr_usecs.load(Relaxed);
        // rx-usecs 1 and 3 are adaptive moderation, as in the C igb;
        // adaptive-rx says the same. The core hands over the request
        // merged with what `coalesce` reads: adaptive-rx differs from it
        // only when the request changes it.
        let usecs = if c.use_adaptive_rx == hw::itr_adaptive(now) {
            // rx-usecs alone (1 and 3 adaptive), or nothing, changed.
            c.rx_usecs
        } else if c.use_adaptive_rx && (c.rx_usecs == now || hw::itr_adaptive(c.rx_usecs)) {
            // adaptive-rx on: conservative, unless rx-usecs 1 came with it.
            if hw::itr_adaptive(c.rx_usecs) {
                c.rx_usecs
            } else {
                hw::ITR_DEFAULT
            }
        } else if !c.use_adaptive_rx && c.rx_usecs == now {
            // adaptive-rx off: the interval the conservative mode starts
            // its range at.
            hw::ITR_FIXED_USECS
        } else if c.use_adaptive_rx {
            extack.set_msg(c"igb_rs: adaptive-rx on takes rx-usecs 1 or 3, not an interval");
            return Err(EINVAL);
        } else {
            extack.set_msg(c"igb_rs: rx-usecs 1 and 3 are adaptive, not with adaptive-rx off");
            return Err(EINVAL);
        };
        hw::itr_check(usecs).map_err(|msg| {
            extack.set_msg(msg);
            EINVAL
        })?;
        // The queues' polls program it at their next interrupt.
        nic.itr_usecs.store(usecs, Relaxed);
        Ok(())
    }

    fn pauseparam(dev: &Device<Self>) -> ethtool::PauseParam {
        let nic = dev.data();
        let mut st = nic.phy.lock();
        let req = nic.fc_requested(&mut st);
        // Up: what the MAC does (resolved once the link came up); down:
        // what will be asked.
        let fc = if dev.is_running() { st.current } else { req };
        ethtool::PauseParam {
            autoneg: st.autoneg,
            rx_pause: fc.rx,
            tx_pause: fc.tx,
        }
    }

    fn set_pauseparam(dev: &Device<Self>, p: &ethtool::PauseParam) -> Result {
        let nic = dev.data();
        let fc = hw::Fc {
            rx: p.rx_pause,
            tx: p.tx_pause,
        };
        let mut st = nic.phy.lock();
        st.requested = Some(fc);
        st.autoneg = p.autoneg;
        if !dev.is_running() {
            // `configure` programs it all.
            return Ok(());
        }
        // The receive thresholds: pause frames are sent only with tx.
        hw::setup_fc(nic, fc, max_frame(MAX_MTU));
        if p.autoneg {
            // The partner learns the new advertisement from the next
            // autonegotiation: the link drops for a moment, and the
            // watchdog resolves flow control when it is back (C takes the
            // device down and up).
            if hw::advertise_pause(nic, fc)? {
                hw::restart_autoneg(nic)?;
            }
        } else {
            hw::force_fc(nic, fc);
            st.current = fc;
        }
        Ok(())
    }

    fn pause_stats(dev: &Device<Self>) -> ethtool::PauseStats {
        let nic = dev.data();
        let rx = u64::from(nic.rd(XONRXC)) + u64::from(nic.rd(XOFFRXC));
        let tx = u64::from(nic.rd(XONTXC)) + u64::from(nic.rd(XOFFTXC));
        ethtool::PauseStats {
            rx_pause_frames: Some(nic.pause_rx.fetch_add(rx, Relaxed) + rx),
            tx_pause_frames: Some(nic.pause_tx.fetch_add(tx, Relaxed) + tx),
        }
    }

    fn link_ksettings(dev: &Device<Self>) -> Result<ethtool::LinkSettings> {
        let nic = dev.data();
        // The PHY's other users in the driver (the watchdog, `-A`) hold
        // this around their transactions too.
        let _phy = nic.phy.lock();
        Ok(hw::link_settings(nic))
    }

    const STATS: &'static [&'static CStr] = &[c"rx_no_buffer_count", c"tx_dma_out_of_sync"];

    fn stats(dev: &Device<Self>, values: &mut [u64]) {
        let nic = dev.data();
        nic.read_drops();
        // As in C: the frames that found their queue without descriptors
        // (RNBC), and the DOUTSYNC interrupts.
        let counters = [nic.drops.no_buffer(), nic.dma_out_of_sync.load(Relaxed)];
        for (v, c) in values.iter_mut().zip(counters) {
            *v = c;
        }
    }

    fn channels(dev: &Device<Self>) -> ethtool::Channels {
        ethtool::Channels {
            // CAST: 4.
            max_combined: QUEUES as u32,
            max_other: 1,
            // CAST: at most QUEUES.
            combined_count: dev.data().active().len() as u32,
            other_count: 1,
        }
    }

    fn set_channels(dev: &RtnlLockedDevice<Self>, ch: &ethtool::Channels) -> Result {
        let nic = dev.data();
        // CAST: u32 to usize is lossless on Linux.
        let n = ch.combined_count as usize;
        if n == 0 || n > QUEUES || ch.other_count != 1 {
            return Err(EINVAL);
        }
        if n == nic.active().len() {
            return Ok(());
        }
        let old = nic.active().len();
        let running = dev.is_running();
        if running {
            <Nic as Operations>::stop(dev)?;
        }
        let use_pairs = |n: usize| -> Result {
            // CAST: at most QUEUES.
            let count = n as u32;
            // The device is down: no queue is in use.
            dev.set_real_num_queues(count, count)?;
            nic.active.store(n, Relaxed);
            if !dev.rxfh_configured() {
                nic.rss.lock().spread(n);
            }
            Ok(())
        };
        let set = use_pairs(n);
        if running {
            // The counters of pairs out of use stay in the base stats.
            if let Err(e) = <Nic as Operations>::open(dev) {
                // Back on the pairs that worked, so that a failed request
                // changes nothing.
                if set.is_ok() {
                    use_pairs(old)?;
                }
                <Nic as Operations>::open(dev)?;
                return Err(e);
            }
        }
        set
    }
}

/// Restarts every receive queue of the running device on a new ring with
/// header split as `split` says, one queue at a time, as the queue API
/// restarts one: the link and the other queues stay up. Every new ring is
/// made before the first queue stops, and each old one kept until the
/// last queue runs, so that a failure puts every queue back on the ring it
/// had.
fn switch_split(dev: &LockedDevice<Nic>, split: bool) -> Result {
    let nic = dev.data();
    let mut rings = KVec::with_capacity(QUEUES, GFP_KERNEL)?;
    for q in nic.active() {
        // CAST: below QUEUES.
        let cfg = dev.queue_config(q.idx as u32);
        rings.push(nic.new_rx_ring_split(dev, q.idx, &cfg, split)?, GFP_KERNEL)?;
    }
    let mut olds = KVec::with_capacity(rings.len(), GFP_KERNEL)?;
    for (q, ring) in nic.active().iter().zip(rings) {
        // CAST: below QUEUES.
        let idx = q.idx as u32;
        let restarted = <Nic as QueueMgmt>::rx_stop(dev, idx).and_then(|old| {
            match <Nic as QueueMgmt>::rx_start(dev, ring, idx) {
                Ok(()) => Ok(old),
                Err((e, _new)) => {
                    // Back on the old ring, which worked.
                    restart_on(dev, old, idx);
                    Err(e)
                }
            }
        });
        match restarted {
            // Within the capacity reserved: `push_within_capacity` fails
            // only beyond it.
            Ok(old) => {
                let _ = olds.push_within_capacity((idx, old));
            }
            Err(e) => {
                // The queues already switched go back on their old rings.
                for (idx, old) in olds {
                    if <Nic as QueueMgmt>::rx_stop(dev, idx).is_ok() {
                        restart_on(dev, old, idx);
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Starts receive queue `idx`, stopped, on `ring`, a ring it ran on.
fn restart_on(dev: &LockedDevice<Nic>, ring: ring::RxRing, idx: u32) {
    if let Err((e, _ring)) = <Nic as QueueMgmt>::rx_start(dev, ring, idx) {
        dev_err!(
            dev.data().pdev,
            "receive queue {} did not restart: {:?}\n",
            idx,
            e
        );
    }
}
