/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the hook layer (src/hook*.c): a hooked fabric's state, how an op
 * wrapper runs the hooks around the provider's op, and the data-path ops
 * tables (hook_data.c) that endpoint wrappers use.
 */
#ifndef WEFT_HOOK_PRIV_H
#define WEFT_HOOK_PRIV_H

#include <pthread.h>
#include <stddef.h>

#include "weft/hook.h"
#include "weft/util_atomic.h"

/* The layer's state of one hooked fabric, shared by all its objects. */
struct weft_hook_fab {
	unsigned n;
	const struct weft_hook_ops *hooks[WEFT_HOOK_MAX];
	/* provider fid -> the layer's, for what EQs report */
	pthread_mutex_t map_lock;
	struct weft_hook_fid *map[64];
};

/* ---- running the hooks --------------------------------------------------- */

/*
 * Hooks named first sit nearest the provider, as each named hook wraps
 * what the ones before it made: the last named sees a call first.
 */
static inline void run_before(struct weft_hook_call *c)
{
	struct weft_hook_fab *fab = c->hf->fab;
	unsigned i;

	for (i = fab->n; i-- > 0;)
		if (fab->hooks[i]->before)
			fab->hooks[i]->before(c, i);
}

static inline void run_after(struct weft_hook_call *c)
{
	struct weft_hook_fab *fab = c->hf->fab;
	unsigned i;

	for (i = 0; i < fab->n; i++)
		if (fab->hooks[i]->after)
			fab->hooks[i]->after(c, i);
}

#define HF(p) ((struct weft_hook_fid *)(void *)(p))
#define INNER(hf, type) ((type *)(void *)(hf)->inner)
#define CALL(hf_, fn_, kind_, args_)                                           \
	struct weft_hook_call c = {                                            \
		.fn = (fn_), .kind = (kind_), .args = (args_), .hf = (hf_)     \
	}
#define RUN(expr)                                                              \
	do {                                                                   \
		run_before(&c);                                                \
		c.ret = (expr);                                                \
		run_after(&c);                                                 \
	} while (0)

/* Whether a provider's ops table has `op` (and it is set). */
#define HAS_OP(ops, type, op)                                                  \
	((ops) && (ops)->size >= offsetof(type, op) + sizeof((ops)->op) &&    \
	 (ops)->op)

static inline size_t iov_total(const struct iovec *iov, size_t count)
{
	size_t i, len = 0;

	for (i = 0; iov && i < count; i++)
		len += iov[i].iov_len;
	return len;
}

static inline size_t ioc_total(const struct fi_ioc *ioc, size_t count,
			enum fi_datatype dt)
{
	size_t i, n = 0;

	for (i = 0; ioc && i < count; i++)
		n += ioc[i].count;
	return n * util_atomic_dt_size(dt);
}

/* hook_data.c: messages, tagged messages, RMA, atomics and collectives. */
extern const struct fi_ops_msg hook_msg_ops;
extern const struct fi_ops_tagged hook_tagged_ops;
extern const struct fi_ops_rma hook_rma_ops;
extern const struct fi_ops_atomic hook_atomic_ops;
extern const struct fi_ops_collective hook_collective_ops;

#endif /* WEFT_HOOK_PRIV_H */
