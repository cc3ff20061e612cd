/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A lock that costs nothing when the threading model does not need it, and
 * little when it does.  Objects opened under FI_THREAD_SAFE take it; under
 * FI_THREAD_DOMAIN (and the other models where the application serialises
 * access) they skip it, so the fast path pays one predictable branch.
 *
 * It is a test-and-set lock: taking a free lock is one atomic exchange,
 * releasing it one release store (a pthread mutex costs about ten times
 * the instructions, measured with callgrind on a pingpong).  Every section
 * it guards is short and never blocks (blocking waits drop their locks
 * first), so a waiter spins briefly, then yields the CPU between tries, in
 * case the holder was preempted on an oversubscribed machine.
 */
#ifndef WEFT_LOCK_H
#define WEFT_LOCK_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "weft/ofi.h"

#include "weft/core.h"

struct weft_lock {
	atomic_int held;
	bool needed;
};

static inline int weft_lock_init(struct weft_lock *lock, bool needed)
{
	atomic_init(&lock->held, 0);
	lock->needed = needed;
	return 0;
}

static inline void weft_lock_destroy(struct weft_lock *lock)
{
}

static inline void weft_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Slow half of weft_lock: spin a little, then yield between tries. */
static inline void weft_lock_contended(struct weft_lock *lock)
{
	int spins = 0;

	for (;;) {
		while (atomic_load_explicit(&lock->held, memory_order_relaxed)) {
			if (++spins < 128)
				weft_cpu_relax();
			else
				sched_yield();
		}
		if (!atomic_exchange_explicit(&lock->held, 1,
					      memory_order_acquire))
			return;
	}
}

static inline void weft_lock(struct weft_lock *lock)
{
	if (!lock->needed)
		return;
	if (weft_likely(!atomic_exchange_explicit(&lock->held, 1,
						  memory_order_acquire)))
		return;
	weft_lock_contended(lock);
}

/* Take the lock only if it is free now (always, when not needed). */
static inline bool weft_trylock(struct weft_lock *lock)
{
	if (!lock->needed)
		return true;
	return !atomic_load_explicit(&lock->held, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&lock->held, 1, memory_order_acquire);
}

static inline void weft_unlock(struct weft_lock *lock)
{
	if (lock->needed)
		atomic_store_explicit(&lock->held, 0, memory_order_release);
}

/* Whether a threading model requires the provider to serialise access. */
static inline bool weft_threading_needs_lock(enum fi_threading threading)
{
	return threading == FI_THREAD_SAFE || threading == FI_THREAD_UNSPEC;
}

#endif /* WEFT_LOCK_H */
