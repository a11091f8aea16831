// SPDX-License-Identifier: GPL-2.0

#include <net/page_pool/helpers.h>

#ifdef CONFIG_PAGE_POOL
__rust_helper void
rust_helper_page_pool_put_full_netmem(struct page_pool *pool, netmem_ref netmem,
				      bool allow_direct)
{
	page_pool_put_full_netmem(pool, netmem, allow_direct);
}
#endif
