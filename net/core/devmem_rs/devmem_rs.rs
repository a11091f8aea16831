// SPDX-License-Identifier: GPL-2.0

//! Device memory TCP, the core in Rust.
//!
//! A replacement of `net/core/devmem.c` and of the netdev netlink
//! `bind-rx` / `bind-tx` handlers, selected by `CONFIG_NET_DEVMEM_RUST`:
//! binding a dma-buf to receive queues and for transmit, and the dma-buf
//! memory provider for page pools. See `Documentation/networking/devmem.rst`
//! for the feature and `Documentation/networking/devmem_rs.rst` for this
//! implementation.
//!
//! C header: [`net/core/devmem.h`](srctree/net/core/devmem.h)

use kernel::{
    net::netdev::DeviceNotifier,
    prelude::*, //
};

#[cfg(CONFIG_NET_DEVMEM_RUST_BENCH)]
mod bench;
pub mod binding;
pub mod carve;
pub mod exports;
pub mod freelist;
pub mod genl;
pub mod ids;
pub mod provider;
pub mod sock;
#[cfg(CONFIG_KUNIT)]
mod test_netdev;

module! {
    type: DevmemCore,
    name: "devmem",
    authors: ["Seed e8a5e9b1 maintainers"],
    description: "Device memory TCP core",
    license: "GPL",
}

/// The core's global state, set up at boot.
pub struct DevmemCore {
    /// Tells TX bindings when their device goes.
    _tx_devices: DeviceNotifier<binding::TxDevices>,
}

impl kernel::Module for DevmemCore {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: called once, before user space can send a request.
        unsafe { ids::init() };
        // SAFETY: called once, before a binding can be made for a device.
        unsafe { binding::init() };
        Ok(DevmemCore {
            _tx_devices: DeviceNotifier::new(binding::TxDevices)?,
        })
    }
}
