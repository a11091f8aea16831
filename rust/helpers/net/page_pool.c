// SPDX-License-Identifier: GPL-2.0

#include <linux/irqflags.h>
#include <net/page_pool/helpers.h>

#ifdef CONFIG_PAGE_POOL
__rust_helper void
rust_helper_page_pool_put_full_netmem(struct page_pool *pool, netmem_ref netmem,
				      bool allow_direct)
{
	page_pool_put_full_netmem(pool, netmem, allow_direct);
}

/* Whether a provider's ops are where the page pool core accepts them. */
__rust_helper bool rust_helper_is_kernel_rodata(unsigned long addr)
{
	return is_kernel_rodata(addr);
}

/* Whether a pool dropped here must leave its destruction to a workqueue. */
__rust_helper bool rust_helper_in_interrupt(void)
{
	return in_interrupt();
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

__rust_helper long rust_helper_page_pool_unref_netmem(netmem_ref netmem,
						      long nr)
{
	return page_pool_unref_netmem(netmem, nr);
}
#endif

__rust_helper atomic_long_t *
rust_helper_netmem_get_pp_ref_count_ref(netmem_ref netmem)
{
	return netmem_get_pp_ref_count_ref(netmem);
}

__rust_helper int rust_helper_page_ref_count(const struct page *page)
{
	return page_ref_count(page);
}

__rust_helper void rust_helper_get_netmem(netmem_ref netmem)
{
	get_netmem(netmem);
}

__rust_helper void rust_helper_put_netmem(netmem_ref netmem)
{
	put_netmem(netmem);
}

__rust_helper struct page *rust_helper___netmem_to_page(netmem_ref netmem)
{
	return __netmem_to_page(netmem);
}

__rust_helper bool rust_helper_dev_page_is_reusable(const struct page *page)
{
	return dev_page_is_reusable(page);
}

/* Tested before a buffer's sync works out its arguments. */
__rust_helper bool rust_helper_dma_dev_need_sync(const struct device *dev)
{
	return dma_dev_need_sync(dev);
}

__rust_helper void
rust_helper_dma_sync_single_range_for_cpu(struct device *dev, dma_addr_t addr,
					  unsigned long offset, size_t size,
					  enum dma_data_direction dir)
{
	dma_sync_single_range_for_cpu(dev, addr, offset, size, dir);
}

__rust_helper void
rust_helper_dma_sync_single_range_for_device(struct device *dev,
					     dma_addr_t addr,
					     unsigned long offset, size_t size,
					     enum dma_data_direction dir)
{
	dma_sync_single_range_for_device(dev, addr, offset, size, dir);
}

__rust_helper void *rust_helper_netmem_address(netmem_ref netmem)
{
	return netmem_address(netmem);
}

/* Whether a buffer dropped here may go back to its pool. */
__rust_helper bool rust_helper_irqs_disabled(void)
{
	return irqs_disabled();
}
