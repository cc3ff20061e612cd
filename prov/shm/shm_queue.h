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

#include <rdma/fi_errno.h>

#include "shm_layout.h"

static inline void shm_queue_init(struct shm_queue *q, uint32_t slots)
{
	uint32_t i;

	q->slots = slots;
	atomic_init(&q->tail, 0);
	q->head = 0;
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
			if (atomic_compare_exchange_weak_explicit(
				    &q->tail, &pos, pos + 1,
				    memory_order_relaxed, memory_order_relaxed)) {
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
	struct shm_slot *s = &q->slot[q->head & (slots - 1)];

	if (atomic_load_explicit(&s->seq, memory_order_acquire) != q->head + 1)
		return NULL;
	return s;
}

/* Consumer: hand the slot returned by shm_queue_peek back to producers. */
static inline void shm_queue_release(struct shm_queue *q, uint32_t slots,
				     struct shm_slot *s)
{
	atomic_store_explicit(&s->seq, q->head + slots, memory_order_release);
	q->head++;
}

#endif /* WEFT_SHM_QUEUE_H */
