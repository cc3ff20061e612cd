/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The inbound message queue of a shm region: a bounded multi-producer,
 * single-consumer ring of fixed-size slots in shared memory.
 *
 * Each slot's seq says whose turn it is.  For ring position p (a 64-bit
 * counter that never wraps in practice), the slot at p & (slots-1):
 *   seq == p          free: the producer that claims p may fill it
 *   seq == p + 1      full: the consumer may read it
 *   seq == p + slots  released: free for position p + slots
 * Producers claim a position with a CAS on tail; they fill the slot and
 * publish seq = p + 1 with a release store.  The consumer reads seq with
 * acquire, copies out what it needs, and releases the slot with
 * seq = p + slots (release).  No locks, no syscalls.
 *
 * Every process that maps the region may write all of it, so nothing read
 * from it sizes an access: the functions take the slot count the caller
 * checked when it mapped the region (struct shm_map.queue_slots), and
 * positions are masked with it.
 */
#ifndef WEFT_SHM_QUEUE_H
#define WEFT_SHM_QUEUE_H

#include <stdbool.h>

#include "weft/ofi.h"

#include "shm_layout.h"

static inline void shm_queue_init(struct shm_queue *q, uint32_t slots)
{
	uint32_t i;

	q->slots = slots;
	atomic_init(&q->tail, 0);
	atomic_init(&q->sleeping, 0);
	atomic_init(&q->head, 0);
	atomic_init(&q->buf_free, 0);
	atomic_init(&q->small_free, 0);
	for (i = 0; i < slots; i++)
		atomic_init(&q->slot[i].seq, i);
}

/*
 * Producer: claim the next slot.  Returns it (to be filled and then
 * published with shm_queue_publish) or NULL when the ring is full, or when
 * it is corrupt (a slot ahead of a tail that does not move).  Any process
 * mapping the region may call it, concurrently.
 */
static inline struct shm_slot *shm_queue_claim(struct shm_queue *q,
					       uint32_t slots,
					       uint64_t *pos_out)
{
	uint64_t mask = slots - 1;
	uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);

	for (;;) {
		struct shm_slot *s = &q->slot[pos & mask];
		uint64_t seq =
			atomic_load_explicit(&s->seq, memory_order_acquire);
		int64_t diff = (int64_t)(seq - pos);

		if (diff == 0) {
			/* seq_cst: ordered against the owner's `sleeping`
			 * (shm_queue_sleep); on x86 the same instruction. */
			if (atomic_compare_exchange_weak_explicit(
				    &q->tail, &pos, pos + 1,
				    memory_order_seq_cst, memory_order_relaxed)) {
				*pos_out = pos;
				return s;
			}
			/* pos was reloaded by the failed CAS */
		} else if (diff < 0) {
			return NULL; /* full: the consumer is a lap behind */
		} else {
			/* Another producer took pos, so tail has moved past
			 * it: the acquire load of seq orders this load after
			 * that producer's CAS.  A tail still at pos means a
			 * corrupt ring, which would spin here forever. */
			uint64_t now = atomic_load_explicit(
				&q->tail, memory_order_relaxed);

			if (now == pos)
				return NULL;
			pos = now;
		}
	}
}

/* Producer: make a filled slot visible to the consumer. */
static inline void shm_queue_publish(struct shm_slot *s, uint64_t pos)
{
	atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
}

/* Consumer: the next full slot, or NULL.  Only the region's owner calls it. */
static inline struct shm_slot *shm_queue_peek(struct shm_queue *q,
					      uint32_t slots)
{
	uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
	struct shm_slot *s = &q->slot[head & (slots - 1)];

	if (atomic_load_explicit(&s->seq, memory_order_acquire) != head + 1)
		return NULL;
	return s;
}

/*
 * Sleeping with a bell.  The owner, about to sleep, calls shm_queue_sleep:
 * it sets `sleeping` and then looks at the tail; a producer, after its
 * claim, looks at `sleeping` (shm_queue_wants_bell) and, taking it back to
 * 0, rings the owner's bell once its slot is published.  Both sides are
 * sequentially consistent, so either the owner sees the claim and does not
 * sleep, or the producer sees the flag and rings.  What the producer pays
 * when nobody sleeps: one load of a line its claim already holds.
 */
static inline bool shm_queue_sleep(struct shm_queue *q)
{
	atomic_store_explicit(&q->sleeping, 1, memory_order_seq_cst);
	return atomic_load_explicit(&q->tail, memory_order_seq_cst) ==
	       atomic_load_explicit(&q->head, memory_order_relaxed);
}

static inline bool shm_queue_wants_bell(struct shm_queue *q)
{
	return __builtin_expect(atomic_load_explicit(&q->sleeping,
						  memory_order_seq_cst), 0) &&
	       atomic_exchange_explicit(&q->sleeping, 0,
					memory_order_relaxed);
}

/* Consumer: hand the slot returned by shm_queue_peek back to producers. */
static inline void shm_queue_release(struct shm_queue *q, uint32_t slots,
				     struct shm_slot *s)
{
	uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);

	atomic_store_explicit(&s->seq, head + slots, memory_order_release);
	atomic_store_explicit(&q->head, head + 1, memory_order_release);
}

/*
 * Whether the thread that held the queue's owner mutex ended (see
 * shm_layout.h): a hint, one load, that the owner may be dead.  Where the
 * mutex's word cannot be read, SHM_OWNER_HINT is 0 and this says "maybe"
 * always.
 */
#ifdef __GLIBC__
#include <linux/futex.h>
#define SHM_OWNER_HINT 1
static inline bool shm_owner_died(struct shm_queue *q)
{
	return __atomic_load_n(&q->owner.lock.__data.__lock,
			       __ATOMIC_RELAXED) &
	       FUTEX_OWNER_DIED;
}
#else
#define SHM_OWNER_HINT 0
static inline bool shm_owner_died(struct shm_queue *q)
{
	(void)q;
	return true;
}
#endif

/* Whether the consumer has handled every slot before position pos. */
static inline bool shm_queue_consumed(struct shm_queue *q, uint64_t pos)
{
	return (int64_t)(atomic_load_explicit(&q->head, memory_order_acquire) -
			 pos) >= 0;
}

/*
 * The free list of the inbound bounce buffers (shm_queue.buf_free): a
 * lock-free stack over `count` buffers from `first`, `stride` bytes apart.
 * Any process that maps the region may pop and push, concurrently; a
 * buffer's content written before the push that frees it (or before the
 * slot that names it is published) is seen by whoever pops it (or reads
 * the slot) next.
 */
#define SHM_BUF_TOP(v) ((uint32_t)(v))
#define SHM_BUF_NEXT_TAG(v) ((((v) >> 32) + 1) << 32)

/* Producer of the region's setup: every buffer free. */
static inline void shm_buf_init(_Atomic uint64_t *top,
				struct shm_bounce *first, size_t stride,
				uint32_t count)
{
	uint32_t i;

	for (i = 0; i < count; i++)
		atomic_init(&((struct shm_bounce *)((char *)first +
						    i * stride))->next,
			    i + 1 < count ? i + 2 : 0);
	atomic_init(top, count ? 1 : 0);
}

/* Take a free buffer: 0 and its index, or -FI_EAGAIN when none is free. */
static inline int shm_buf_pop(_Atomic uint64_t *free_top,
			      struct shm_bounce *first, size_t stride,
			      uint32_t count, uint32_t *idx)
{
	uint64_t top = atomic_load_explicit(free_top, memory_order_acquire);
	struct shm_bounce *b;
	uint32_t i1;

	for (;;) {
		i1 = SHM_BUF_TOP(top);
		if (!i1 || i1 > count)
			return -FI_EAGAIN;
		b = (struct shm_bounce *)((char *)first + (i1 - 1) * stride);
		/* A stale `next` (the top changed meanwhile) fails the CAS. */
		if (atomic_compare_exchange_weak_explicit(
			    free_top, &top,
			    SHM_BUF_NEXT_TAG(top) |
				    atomic_load_explicit(&b->next,
							 memory_order_relaxed),
			    memory_order_acquire, memory_order_acquire)) {
			*idx = i1 - 1;
			return 0;
		}
	}
}

/* Give buffer idx back (after copying out of it). */
static inline void shm_buf_push(_Atomic uint64_t *free_top,
				struct shm_bounce *first, size_t stride,
				uint32_t idx)
{
	struct shm_bounce *b =
		(struct shm_bounce *)((char *)first + idx * stride);
	uint64_t top = atomic_load_explicit(free_top, memory_order_relaxed);

	do {
		atomic_store_explicit(&b->next, SHM_BUF_TOP(top),
				      memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(
		free_top, &top, SHM_BUF_NEXT_TAG(top) | (idx + 1),
		memory_order_release, memory_order_relaxed));
}

#endif /* WEFT_SHM_QUEUE_H */
