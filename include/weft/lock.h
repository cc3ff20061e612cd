/*
 * A mutex that costs nothing when the threading model does not need it.
 * Objects opened under FI_THREAD_SAFE take the lock; under FI_THREAD_DOMAIN
 * (and the other models where the application serialises access) they skip
 * it, so the fast path pays one predictable branch.
 */
#ifndef WEFT_LOCK_H
#define WEFT_LOCK_H

#include <pthread.h>
#include <stdbool.h>

#include <rdma/fi_domain.h>

#include "weft/core.h"

struct weft_lock {
	pthread_mutex_t mutex;
	bool needed;
};

static inline int weft_lock_init(struct weft_lock *lock, bool needed)
{
	int ret;

	lock->needed = needed;
	ret = pthread_mutex_init(&lock->mutex, NULL);
	return ret ? weft_errno(ret) : 0;
}

static inline void weft_lock_destroy(struct weft_lock *lock)
{
	pthread_mutex_destroy(&lock->mutex);
}

static inline void weft_lock(struct weft_lock *lock)
{
	if (lock->needed)
		pthread_mutex_lock(&lock->mutex);
}

static inline void weft_unlock(struct weft_lock *lock)
{
	if (lock->needed)
		pthread_mutex_unlock(&lock->mutex);
}

/* Whether a threading model requires the provider to serialise access. */
static inline bool weft_threading_needs_lock(enum fi_threading threading)
{
	return threading == FI_THREAD_SAFE || threading == FI_THREAD_UNSPEC;
}

#endif /* WEFT_LOCK_H */
