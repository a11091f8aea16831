// SPDX-License-Identifier: GPL-2.0

#include <linux/percpu-refcount.h>

__rust_helper void rust_helper_percpu_ref_get(struct percpu_ref *ref)
{
	percpu_ref_get(ref);
}

__rust_helper bool rust_helper_percpu_ref_tryget(struct percpu_ref *ref)
{
	return percpu_ref_tryget(ref);
}

__rust_helper bool rust_helper_percpu_ref_tryget_live(struct percpu_ref *ref)
{
	return percpu_ref_tryget_live(ref);
}

__rust_helper void rust_helper_percpu_ref_put(struct percpu_ref *ref)
{
	percpu_ref_put(ref);
}

__rust_helper void rust_helper_percpu_ref_kill(struct percpu_ref *ref)
{
	percpu_ref_kill(ref);
}

__rust_helper bool rust_helper_percpu_ref_is_dying(struct percpu_ref *ref)
{
	return percpu_ref_is_dying(ref);
}
