// SPDX-License-Identifier: GPL-2.0

//! Device memory TCP, the core in Rust.
//!
//! This crate is being built up into a replacement of `net/core/devmem.c`
//! and of the netdev netlink `bind-rx` / `bind-tx` handlers: binding a
//! dma-buf to receive queues and for transmit, and the dma-buf memory
//! provider for page_pool. It holds the `net_iov` allocator so far; the C
//! implementation stays in use. See `Documentation/networking/devmem.rst`
//! for the feature.
//!
//! C header: [`net/core/devmem.h`](srctree/net/core/devmem.h)

/// The prefix of this crate's `pr_*!` messages.
const __LOG_PREFIX: &[u8] = b"devmem\0";

pub mod freelist;
