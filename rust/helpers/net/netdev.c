// SPDX-License-Identifier: GPL-2.0

#include <linux/netdevice.h>
#include <net/dst.h>
#include <net/netdev_lock.h>
#include <net/sock.h>

__rust_helper void rust_helper_dev_hold(struct net_device *dev)
{
	dev_hold(dev);
}

__rust_helper void rust_helper_dev_put(struct net_device *dev)
{
	dev_put(dev);
}

__rust_helper bool rust_helper_netif_device_present(const struct net_device *dev)
{
	return netif_device_present(dev);
}

__rust_helper void rust_helper_netdev_lock(struct net_device *dev)
{
	netdev_lock(dev);
}

__rust_helper void rust_helper_netdev_unlock(struct net_device *dev)
{
	netdev_unlock(dev);
}

/* Whether the current task holds the instance lock of @dev. */
__rust_helper bool rust_helper_netdev_lock_held_by_current(struct net_device *dev)
{
#ifdef CONFIG_PREEMPT_RT
	return rt_mutex_owner(&dev->lock.rtmutex) == current;
#else
	return mutex_get_owner(&dev->lock) == (unsigned long)current;
#endif
}

__rust_helper bool rust_helper_netdev_need_ops_lock(const struct net_device *dev)
{
	return netdev_need_ops_lock(dev);
}

__rust_helper struct dst_entry *rust_helper___sk_dst_get(const struct sock *sk)
{
	return __sk_dst_get(sk);
}

__rust_helper struct net_device *rust_helper_dst_dev_rcu(const struct dst_entry *dst)
{
	return dst_dev_rcu(dst);
}
