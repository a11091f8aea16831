// SPDX-License-Identifier: GPL-2.0

#include <net/page_pool/helpers.h>

#ifdef CONFIG_PAGE_POOL
__rust_helper void
rust_helper_page_pool_put_full_netmem(struct page_pool *pool, netmem_ref netmem,
				      bool allow_direct)
{
	page_pool_put_full_netmem(pool, netmem, allow_direct);
}

__rust_helper void rust_helper_page_pool_fragment_netmem(netmem_ref netmem,
							 long nr)
{
	page_pool_fragment_netmem(netmem, nr);
}

__rust_helper dma_addr_t
rust_helper_page_pool_get_dma_addr_netmem(netmem_ref netmem)
{
	return page_pool_get_dma_addr_netmem(netmem);
}

__rust_helper void
rust_helper_page_pool_dma_sync_netmem_for_cpu(const struct page_pool *pool,
					      const netmem_ref netmem,
					      u32 offset, u32 dma_sync_size)
{
	page_pool_dma_sync_netmem_for_cpu(pool, netmem, offset, dma_sync_size);
}
#endif

__rust_helper void *rust_helper_netmem_address(netmem_ref netmem)
{
	return netmem_address(netmem);
}
