// SPDX-License-Identifier: GPL-2.0

#include <linux/etherdevice.h>
#include <linux/netdevice.h>

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

__rust_helper void rust_helper_netif_tx_wake_all_queues(struct net_device *dev)
{
	netif_tx_wake_all_queues(dev);
}

__rust_helper void rust_helper_netif_tx_disable(struct net_device *dev)
{
	netif_tx_disable(dev);
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

__rust_helper bool rust_helper_netif_running(const struct net_device *dev)
{
	return netif_running(dev);
}

__rust_helper struct netdev_queue *
rust_helper_netdev_get_tx_queue(const struct net_device *dev,
				unsigned int index)
{
	return netdev_get_tx_queue(dev, index);
}

__rust_helper bool rust_helper___netdev_tx_sent_queue(struct netdev_queue *q,
						      unsigned int bytes,
						      bool xmit_more)
{
	return __netdev_tx_sent_queue(q, bytes, xmit_more);
}

__rust_helper bool rust_helper_netdev_xmit_more(void)
{
	return netdev_xmit_more();
}

__rust_helper void
rust_helper_netdev_tx_completed_queue(struct netdev_queue *q,
				      unsigned int pkts, unsigned int bytes)
{
	netdev_tx_completed_queue(q, pkts, bytes);
}

__rust_helper void rust_helper_netdev_tx_reset_queue(struct netdev_queue *q)
{
	netdev_tx_reset_queue(q);
}
