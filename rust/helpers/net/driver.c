// SPDX-License-Identifier: GPL-2.0

#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>

__rust_helper void *rust_helper_netdev_priv(const struct net_device *dev)
{
	return netdev_priv(dev);
}

__rust_helper void rust_helper_eth_hw_addr_set(struct net_device *dev,
					       const u8 *addr)
{
	eth_hw_addr_set(dev, addr);
}

__rust_helper bool rust_helper_netif_carrier_ok(const struct net_device *dev)
{
	return netif_carrier_ok(dev);
}

__rust_helper void rust_helper_netif_tx_start_all_queues(struct net_device *dev)
{
	netif_tx_start_all_queues(dev);
}

__rust_helper void rust_helper_netif_stop_subqueue(struct net_device *dev,
						   u16 queue_index)
{
	netif_stop_subqueue(dev, queue_index);
}

__rust_helper void rust_helper_netif_wake_subqueue(struct net_device *dev,
						   u16 queue_index)
{
	netif_wake_subqueue(dev, queue_index);
}

__rust_helper bool
rust_helper___netif_subqueue_stopped(const struct net_device *dev,
				     u16 queue_index)
{
	return __netif_subqueue_stopped(dev, queue_index);
}

__rust_helper void rust_helper_netif_napi_add(struct net_device *dev,
					      struct napi_struct *napi,
					      int (*poll)(struct napi_struct *, int))
{
	netif_napi_add(dev, napi, poll);
}

__rust_helper void rust_helper_netif_napi_del(struct napi_struct *napi)
{
	netif_napi_del(napi);
}

__rust_helper bool rust_helper_napi_schedule(struct napi_struct *n)
{
	return napi_schedule(n);
}

__rust_helper gro_result_t rust_helper_napi_gro_receive(struct napi_struct *napi,
							struct sk_buff *skb)
{
	return napi_gro_receive(napi, skb);
}

__rust_helper void *rust_helper_skb_put_data(struct sk_buff *skb,
					     const void *data, unsigned int len)
{
	return skb_put_data(skb, data, len);
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

__rust_helper bool rust_helper_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}
