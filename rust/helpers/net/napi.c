// SPDX-License-Identifier: GPL-2.0

#include <linux/netdevice.h>

__rust_helper void
rust_helper_netif_napi_add_config_locked(struct net_device *dev,
					 struct napi_struct *napi,
					 int (*poll)(struct napi_struct *, int),
					 int index)
{
	netif_napi_add_config_locked(dev, napi, poll, index);
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
