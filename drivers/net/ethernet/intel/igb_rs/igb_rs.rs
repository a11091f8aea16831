// SPDX-License-Identifier: GPL-2.0

//! Intel 82576 Gigabit Ethernet, in Rust.
//!
//! The 82576 is the chip of the C `igb` driver (and of QEMU's `-device
//! igb`); this driver is named `igb_rs` so that both can be built, and one
//! or the other bound to a device.
//!
//! Four queue pairs (two in use at probe) on MSI-X vectors, RSS across
//! them; link changes on vector 0; receive buffers from per-queue page
//! pools, with header split on request and memory providers (devmem) on
//! the payload pools; frames sent in place, devmem frags included;
//! checksums checked and filled in by the device; flow steering rules.
//!
//! The modules, along the lines of the C igb's files where it has them:
//!
//! - `probe`: PCI probe and unbind, and the device checks done at probe;
//! - `netdev`: the driver data (`Nic`) and the network device
//!   operations (open, stop, transmit, receive filters, MTU);
//! - `ethtool`: the ethtool operations;
//! - `queue`: the queue pairs (rings, NAPI, counters); `queue_ops`: their
//!   NAPI poll, the queue API and the per-queue statistics;
//! - `irq`: the interrupt handlers and masks;
//! - `rss`, `steer`, `hash`: RSS, flow steering rules and the hashed
//!   header fields;
//! - `watchdog`: the link watchdog and the reset task;
//! - `ring`: the descriptor rings; `hw`: the control-path procedures on
//!   the registers of `regs`, a module per hardware unit; `model`: a
//!   strict model of the device for KUnit, and `model_tests`: the
//!   suite `igb_rs_hw_model` that runs `hw` against it.

mod ethtool;
mod hash;
mod hw;
mod irq;
#[cfg(CONFIG_IGB_RS_KUNIT_TEST)]
mod model;
#[cfg(CONFIG_IGB_RS_KUNIT_TEST)]
mod model_tests;
mod netdev;
mod probe;
mod queue;
mod queue_ops;
mod regs;
mod ring;
mod rss;
mod steer;
mod watchdog;

use kernel::pci;

kernel::module_pci_driver! {
    type: IgbRs,
    name: "igb_rs",
    authors: ["Seed e8a5e9b1 maintainers"],
    description: "Intel 82576 Gigabit Ethernet (Rust)",
    license: "GPL",
}

kernel::pci_device_table!(
    PCI_TABLE,
    <IgbRs as pci::Driver>::IdInfo,
    [
        // The copper 82576s (E1000_DEV_ID_82576, _NS, _QUAD_COPPER,
        // _QUAD_COPPER_ET2): the driver sets up the internal copper PHY
        // only. The fiber and SerDes ones (0x10e6, 0x10e7, 0x150d, 0x1518)
        // are left to igb; probe also refuses a copper ID whose NVM
        // selects another link mode.
        (pci::DeviceId::from_id(pci::Vendor::INTEL, 0x10c9), ()),
        (pci::DeviceId::from_id(pci::Vendor::INTEL, 0x150a), ()),
        (pci::DeviceId::from_id(pci::Vendor::INTEL, 0x10e8), ()),
        (pci::DeviceId::from_id(pci::Vendor::INTEL, 0x1526), ()),
    ]
);

/// The driver.
struct IgbRs;

/// Queue pairs (a receive and a transmit queue on one vector and NAPI)
/// the device is set up with: `ethtool -L combined` takes 1 to this many.
const QUEUES: usize = 4;
/// Queue pairs in use at probe.
const DEFAULT_QUEUES: usize = 2;

/// The largest MTU: 9 KiB jumbo frames, as the C igb takes. Frames larger
/// than a receive buffer span several descriptors.
const MAX_MTU: u32 = 9216;
/// The smallest, IPv4's.
const MIN_MTU: u32 = 68;

/// The longest frame the device takes for `mtu` (RLPML): Ethernet header,
/// one VLAN tag and the FCS around the payload.
const fn max_frame(mtu: u32) -> u32 {
    mtu + 14 + 4 + 4
}
