// SPDX-License-Identifier: GPL-2.0

#include <linux/dma-mapping.h>
#include <linux/skbuff.h>

__rust_helper void *rust_helper_skb_put_data(struct sk_buff *skb,
					     const void *data, unsigned int len)
{
	return skb_put_data(skb, data, len);
}

__rust_helper int rust_helper_skb_cow_head(struct sk_buff *skb,
					   unsigned int headroom)
{
	return skb_cow_head(skb, headroom);
}

__rust_helper int rust_helper_skb_tailroom(const struct sk_buff *skb)
{
	return skb_tailroom(skb);
}

__rust_helper bool rust_helper_skb_frags_readable(const struct sk_buff *skb)
{
	return skb_frags_readable(skb);
}

__rust_helper u16 rust_helper_skb_get_queue_mapping(const struct sk_buff *skb)
{
	return skb_get_queue_mapping(skb);
}

__rust_helper struct skb_shared_info *rust_helper_skb_shinfo(struct sk_buff *skb)
{
	return skb_shinfo(skb);
}

__rust_helper void rust_helper_skb_add_rx_frag_netmem(struct sk_buff *skb, int i,
						      netmem_ref netmem, int off,
						      int size,
						      unsigned int truesize)
{
	skb_add_rx_frag_netmem(skb, i, netmem, off, size, truesize);
}

__rust_helper void rust_helper_skb_reserve(struct sk_buff *skb, int len)
{
	skb_reserve(skb, len);
}

__rust_helper void *rust_helper___skb_put(struct sk_buff *skb,
					  unsigned int len)
{
	return __skb_put(skb, len);
}

__rust_helper void rust_helper_skb_mark_for_recycle(struct sk_buff *skb)
{
	skb_mark_for_recycle(skb);
}

__rust_helper void rust_helper_skb_set_hash(struct sk_buff *skb, __u32 hash,
					    enum pkt_hash_types type)
{
	skb_set_hash(skb, hash, type);
}

__rust_helper void rust_helper_skb_record_rx_queue(struct sk_buff *skb,
						   u16 rx_queue)
{
	skb_record_rx_queue(skb, rx_queue);
}

__rust_helper int rust_helper_skb_network_offset(const struct sk_buff *skb)
{
	return skb_network_offset(skb);
}

__rust_helper int rust_helper_skb_checksum_start_offset(const struct sk_buff *skb)
{
	return skb_checksum_start_offset(skb);
}

__rust_helper dma_addr_t rust_helper___skb_frag_dma_map(struct device *dev,
							const skb_frag_t *frag,
							size_t offset, size_t size,
							enum dma_data_direction dir)
{
	return __skb_frag_dma_map(dev, frag, offset, size, dir);
}

__rust_helper dma_addr_t rust_helper_dma_map_single_attrs(struct device *dev,
							  void *ptr, size_t size,
							  enum dma_data_direction dir,
							  unsigned long attrs)
{
	return dma_map_single_attrs(dev, ptr, size, dir, attrs);
}

__rust_helper void rust_helper_dma_unmap_single_attrs(struct device *dev,
						      dma_addr_t addr, size_t size,
						      enum dma_data_direction dir,
						      unsigned long attrs)
{
	dma_unmap_single_attrs(dev, addr, size, dir, attrs);
}

__rust_helper int rust_helper_dma_mapping_error(struct device *dev,
						dma_addr_t dma_addr)
{
	return dma_mapping_error(dev, dma_addr);
}
