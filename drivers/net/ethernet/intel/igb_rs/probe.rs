// SPDX-License-Identifier: GPL-2.0

//! Probe and unbind: the device reset and checked (NVM, MAC address,
//! copper PHY) through its BAR, then the network device registered and
//! the MSI-X vectors requested.

use crate::{
    hw,
    irq::{
        OtherIrq,
        QueueIrq, //
    },
    netdev::Nic,
    regs::*,
    steer,
    IgbRs,
    DEFAULT_QUEUES,
    MAX_MTU,
    MIN_MTU,
    PCI_TABLE,
    QUEUES, //
};
use kernel::{
    dev_dbg, dev_err, dev_info,
    device::{
        Bound,
        Core, //
    },
    dma::{
        Device as _,
        DmaMask, //
    },
    io::Io,
    irq,
    net::driver::{
        Features,
        Registration, //
    },
    pci,
    prelude::*,
    time::{
        delay::fsleep,
        Delta, //
    },
};

/// What a bound device holds, dropped in this order: the interrupt
/// handlers (which hold references to the network device), the vectors,
/// then the network device.
#[pin_data]
pub(crate) struct Probed<'bound> {
    #[pin]
    irq_queues: [irq::Registration<'bound, QueueIrq>; QUEUES],
    #[pin]
    irq_other: irq::Registration<'bound, OtherIrq>,
    vectors: pci::IrqVectorRegistration<'bound>,
    netdev: Registration<'bound, Nic>,
}

/// The names of the queue pairs' interrupts.
const QUEUE_IRQ_NAMES: [&CStr; QUEUES] = [
    c"igb_rs-rxtx-0",
    c"igb_rs-rxtx-1",
    c"igb_rs-rxtx-2",
    c"igb_rs-rxtx-3",
];

/// Requests MSI-X vector `idx` of `vecs` for `handler`.
fn request_irq<'bound, H: irq::Handler + 'static>(
    vecs: &pci::IrqVectorRegistration<'bound>,
    idx: usize,
    name: &'static CStr,
    handler: H,
) -> impl PinInit<irq::Registration<'bound, H>, Error> + 'bound {
    // SAFETY: `vecs` is the `vectors` field of `Probed`, initialised before
    // the interrupt fields, pinned with it, and dropped after them.
    let vecs: &'bound pci::IrqVectorRegistration<'bound> = unsafe { &*core::ptr::from_ref(vecs) };
    pin_init::pin_init_scope(move || {
        let req: irq::IrqRequest<'bound> = vecs.index(idx)?.into();
        // SAFETY: the registration is a field of `Probed`, never forgotten.
        Ok(unsafe {
            irq::Registration::new(req, irq::Flags::TRIGGER_NONE, name, Ok::<_, Error>(handler))
        })
    })
}

impl hw::Regs for pci::Bar<'_, BAR0_SIZE> {
    fn rd(&self, reg: usize) -> u32 {
        self.try_read32(reg).unwrap_or(!0)
    }

    fn wr(&self, reg: usize, val: u32) {
        let _ = self.try_write32(val, reg);
    }

    fn sleep_us(&self, us: u32) {
        fsleep(Delta::from_micros(i64::from(us)));
    }
}

/// Stops the device: no interrupts, no DMA. Resets it and leaves every
/// interrupt masked and nothing in the filters.
fn reset(pdev: &pci::Device<Core<'_>>, bar: &pci::Bar<'_, BAR0_SIZE>) {
    let (_, waits) = hw::reset(bar);
    if !waits.master {
        dev_err!(pdev, "DMA requests still pending at reset\n");
    }
    // QEMU's model sets neither.
    dev_dbg!(
        pdev,
        "reset: NVM auto-read {}, configuration {}\n",
        if waits.auto_rd { "done" } else { "timed out" },
        if waits.cfg_done { "done" } else { "timed out" }
    );
    // Nothing but our address in the filters.
    for i in 0..MTA_REGS {
        hw::Regs::wr(bar, MTA + 4 * i, 0);
        hw::Regs::wr(bar, VFTA + 4 * i, 0);
    }
}

/// The device's MAC address: the NVM's alternate one for this port if it
/// has one (put in RAR0, as the permanent address), else what the device
/// loaded into RAR0. Refused, as in C, when the NVM checksum is wrong or
/// the address is not a valid unicast one.
fn mac_address(pdev: &pci::Device<Core<'_>>, bar: &pci::Bar<'_, BAR0_SIZE>) -> Result<[u8; 6]> {
    if !hw::nvm_checksum_ok(bar)? {
        dev_err!(pdev, "the NVM checksum is not valid\n");
        return Err(EIO);
    }
    if let Some(alt) = hw::alt_mac(bar)? {
        hw::set_rar0(bar, &alt);
    }
    let mac = hw::rar0(bar);
    if !hw::is_valid_ether_addr(&mac) {
        dev_err!(pdev, "invalid MAC address {:02x?}\n", mac);
        return Err(EIO);
    }
    Ok(mac)
}

/// Checks that the port runs on the 82576's internal copper PHY, the only
/// media the driver sets up, and resets that PHY (unless the firmware
/// blocks it). SGMII, SerDes and fiber ports are refused: the C igb
/// drives them.
fn copper_phy(pdev: &pci::Device<Core<'_>>, bar: &pci::Bar<'_, BAR0_SIZE>) -> Result {
    if !hw::is_copper(bar) {
        dev_err!(
            pdev,
            "the NVM sets a SerDes, SGMII or 1000BASE-KX link (CTRL_EXT {:#010x}): only the internal copper PHY is supported, use igb\n",
            hw::Regs::rd(bar, CTRL_EXT)
        );
        return Err(ENODEV);
    }
    let id = hw::phy_id(bar).inspect_err(|e| dev_err!(pdev, "PHY not readable: {:?}\n", e))?;
    if id != PHY_ID_82576 {
        dev_err!(
            pdev,
            "PHY id {:#010x} is not the 82576's internal PHY ({:#010x})\n",
            id,
            PHY_ID_82576
        );
        return Err(ENODEV);
    }
    if !hw::phy_reset(bar)? {
        dev_info!(pdev, "PHY reset blocked by the manageability firmware\n");
    }
    Ok(())
}

/// Whether the device has five-tuple queue filters: FTQF keeps what is
/// written to it (the disabled value, left there), which QEMU's does not.
fn has_tuple_filters(bar: &pci::Bar<'_, BAR0_SIZE>) -> bool {
    bar.write32(steer::FTQF_PROBE, FTQF);
    bar.read32(FTQF) == steer::FTQF_PROBE
}

impl pci::Driver for IgbRs {
    type IdInfo = ();
    type Data<'bound> = Probed<'bound>;
    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        _info: Option<&'bound Self::IdInfo>,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        pin_init::pin_init_scope(move || {
            pdev.enable_device_mem()?;
            pdev.set_master();
            // The device takes one buffer address per descriptor and has no
            // scatter-gather segment limit: a mapped dma-buf is carved into
            // buffers whatever the length of its segments, so the DMA layer
            // may hand out segments as long as it likes (the default, 64
            // KiB, is wrong for a dma-buf of large folios).
            // SAFETY: nothing allocates or maps DMA for the device yet.
            unsafe {
                pdev.dma_set_mask_and_coherent(DmaMask::new::<64>())?;
                pdev.dma_set_max_seg_size(u32::MAX);
            }
            let bar = pdev.iomap_region_sized::<BAR0_SIZE>(0, c"igb_rs")?;
            reset(pdev, &bar);
            let mac = mac_address(pdev, &bar)?;
            copper_phy(pdev, &bar)?;
            let filters = has_tuple_filters(&bar);
            // Mapped again for the network device's data, for the bound
            // lifetime.
            drop(bar);
            // CAST: 4.
            let nq = QUEUES as u32;
            let irq_types = pci::IrqTypes::default().with(pci::IrqType::MsiX);
            let vectors = pdev.alloc_irq_vectors(nq + 1, nq + 1, irq_types)?;
            let mut irqs = [0; QUEUES];
            for (i, irq) in irqs.iter_mut().enumerate() {
                *irq = irq::IrqRequest::from(vectors.index(i + 1)?).irq();
            }
            let netdev = Registration::new(
                pdev.as_ref(),
                nq,
                nq,
                &mac,
                Nic::new(pdev, filters, irqs),
                |dev| {
                    dev.data().bar.set(dev, |parent| {
                        let pdev: &pci::Device<Bound> = parent.try_into()?;
                        pdev.iomap_region_sized::<BAR0_SIZE>(0, c"igb_rs")
                    })?;
                    dev.set_queue_mgmt();
                    dev.set_stat_ops();
                    dev.set_ethtool_ops();
                    dev.set_features(
                        Features::SG
                            | Features::IP_CSUM
                            | Features::IPV6_CSUM
                            | Features::RXCSUM
                            | Features::RXHASH
                            | Features::NTUPLE,
                    );
                    dev.set_user_features(Features::TSO | Features::TSO6);
                    // Frames are mapped with `SkBuff::map_for_tx`.
                    dev.set_netmem_tx();
                    dev.set_unicast_filter();
                    dev.set_mtu_range(MIN_MTU, MAX_MTU);
                    // CAST: 2.
                    let n = DEFAULT_QUEUES as u32;
                    dev.set_real_num_queues(n, n)
                },
            )?;
            // Resets may be queued from now (`tx_timeout`, the watchdog)
            // until unbind disables them again; the work item starts
            // disabled.
            netdev.device().data().reset_task.enable();
            Ok(try_pin_init!(Probed {
                netdev,
                vectors,
                irq_other <- request_irq(
                    vectors,
                    VEC_OTHER as usize,
                    c"igb_rs-other",
                    OtherIrq { dev: netdev.device_ref() },
                ),
                irq_queues <- pin_init::pin_init_array_from_fn(|i| {
                    let name = QUEUE_IRQ_NAMES.get(i).copied().unwrap_or(c"igb_rs-rxtx");
                    let handler = QueueIrq { dev: netdev.device_ref(), idx: i };
                    request_irq(vectors, i + 1, name, handler)
                }),
            }))
        })
    }

    fn unbind<'bound>(pdev: &'bound pci::Device<Core<'_>>, this: Pin<&Self::Data<'bound>>) {
        // Stop DMA before the rings go with the network device, and give
        // the device back to the firmware (a reset keeps DRV_LOAD).
        let nic = this.netdev.device().data();
        // No reset of the device behind unbind's back, nor after: the
        // watchdog and `tx_timeout` can no longer queue one.
        nic.reset_task.disable_sync();
        if let Some(bar) = nic.bar.get() {
            reset(pdev, bar);
            hw::release_control(bar);
        }
    }
}
