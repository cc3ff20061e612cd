/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory layout of the shm provider: one region per endpoint,
 * a file in /dev/shm that peers map by name.  docs/shm-layout.md describes
 * it; every size here is pinned by a static_assert, and the version field
 * changes whenever the layout does.
 *
 *   offset 0        struct shm_region_hdr       (one page)
 *   queue_off       struct shm_queue + slots    inbound messages (MPSC ring)
 *   peers_off       struct shm_peer[max_peers]  who may send here
 *   bounce_off      2 x bounce_count buffers    payloads too big for a slot
 *   small_off       small_count buffers         payloads up to small_size
 *
 * Ownership: the region's owner is the only consumer of its queue; peers
 * are producers on the queue and claim entries of the peer table.  The
 * bounce buffers are two pools.  The first bounce_count buffers take eager
 * messages peers send here, so a payload lives in its receiver's region and
 * outlives its sender: a lock-free stack (shm_queue.buf_free) anyone who
 * maps the region takes from and gives back to.  The others carry the
 * owner's own pushed data and RMA: the owner alone takes them, in ring
 * order, and the peer that copied one out clears its `busy`.  Two pools,
 * so that messages waiting for their receives never starve the owner's own
 * transfers.  The small buffers are a third inbound pool, as many as the
 * queue has slots, for eager messages of up to small_size bytes (the
 * inject size): their own stack (shm_queue.small_free), so that a queue
 * full of such messages, a thousand injects to a peer that sleeps, is
 * taken without the receiver's progress.  Buffers are named by one index:
 * inbound first, then outbound, then small (from 2 x bounce_count).
 */
#ifndef WEFT_SHM_LAYOUT_H
#define WEFT_SHM_LAYOUT_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "weft/ofi.h"

#define SHM_MAGIC 0x77656674u /* "weft" */
#define SHM_VERSION 6
#define SHM_NAME_MAX 48 /* including the NUL */
#define SHM_SLOT_SIZE 256
#define SHM_SLOT_HDR 40
#define SHM_INLINE_MAX (SHM_SLOT_SIZE - SHM_SLOT_HDR)
#define SHM_CACHELINE 64
#define SHM_IOV_MAX 4 /* iovecs a descriptor carries */
#define SHM_SMALL_MAX (1u << 20) /* small_count at most */

/* Region header.  Written by the owner before `ready` is set to 1 (release);
 * peers read it after seeing ready == 1 (acquire). */
struct shm_region_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t hdr_size;
	uint64_t total_size;
	int32_t pid; /* owner */
	uint32_t flags; /* SHM_REGION_* */
	uint64_t pid_start; /* owner's start time (/proc/PID/stat field 22) */
	uint64_t queue_off;
	uint64_t peers_off;
	uint64_t bounce_off;
	uint32_t queue_slots; /* power of two */
	uint32_t max_peers;
	uint32_t bounce_count;
	uint32_t bounce_size;
	_Atomic uint32_t ready;
	_Atomic uint32_t gone; /* 1: the owner closed, or a successor took
				* the name over: send nothing more here */
	char name[SHM_NAME_MAX];
	/* The shm_open name of the owner's domain's registration table
	 * (struct shm_mrt_hdr) without its '/', or "" when there is none. */
	char mrt[SHM_NAME_MAX];
	uint64_t small_off;
	uint32_t small_count;
	uint32_t small_size;
};
static_assert(sizeof(struct shm_region_hdr) == 192, "shm_region_hdr size");

/* The owner may be read and written with process_vm_readv/writev. */
#define SHM_REGION_CMA (1u << 0)
/* The owner counts remote reads or writes (remote counters bound): an
 * initiator that moves data itself tells it with SHM_OP_RMA_EVENT. */
#define SHM_REGION_RMA_EVENT (1u << 1)

/*
 * One message slot.  seq carries the ring protocol (see shm_queue.h); the
 * rest is written by the producer before it publishes seq, read by the
 * consumer after.  The first SHM_CACHELINE bytes hold the header and the
 * first 24 bytes of inline payload, so a small message is one cache line.
 */
struct shm_slot {
	_Atomic uint64_t seq;
	uint16_t op; /* enum shm_op */
	uint16_t flags; /* SHM_SLOT_* */
	uint32_t src; /* sender's peer table entry: index | gen << 16 */
	uint64_t tag;
	uint64_t data; /* remote CQ data */
	uint32_t len; /* payload bytes (inline) or whole message (others) */
	uint32_t aux; /* bounce buffer index, or protocol-specific */
	uint8_t payload[SHM_INLINE_MAX];
};
static_assert(sizeof(struct shm_slot) == SHM_SLOT_SIZE, "shm_slot size");
static_assert(__builtin_offsetof(struct shm_slot, payload) == SHM_SLOT_HDR,
	      "shm_slot header size");

/* Slot operations. */
enum shm_op {
	SHM_OP_INLINE = 1, /* payload in the slot */
	SHM_OP_BOUNCE = 2, /* payload in the receiver's bounce buffer `aux` */
	SHM_OP_RTS = 3, /* payload at the sender, struct shm_rts in the slot */
	SHM_OP_ACK = 4, /* tag: the sender's tx id, aux: error (positive) */
	SHM_OP_RMA = 5, /* RMA or atomic request, struct shm_rma_req */
	SHM_OP_RMA_RESP = 6, /* tag: tx id, aux: error, data: bounce + 1 */
	SHM_OP_CTS = 7, /* push the message: tag tx id, aux pull id, data len */
	SHM_OP_DATA = 8, /* pushed bytes: tag pull id, aux bounce, data offset */
	SHM_OP_RMA_EVENT = 9, /* an initiator wrote or read our memory itself:
			       * aux SHM_EVENT_*, tag the key, data the
			       * operation (SHM_EVENT_KIND), len bytes */
	SHM_OP_SKIP = 10, /* written by the owner over a slot whose claimer
			  * died before publishing it: nothing */
};

/* SHM_OP_RMA_EVENT's aux: count it on the endpoint's remote counters;
 * remote CQ data (never sent: such an event is dropped); count it on the
 * counters bound to the registration under `tag`.  `data` holds the
 * engine's UTIL_RDM_TX_* kind in bits 0-7 and the atomic's fi_op in bits
 * 8-15 (SHM_EVENT_KIND). */
#define SHM_EVENT_EP (1u << 0)
#define SHM_EVENT_CQ_DATA (1u << 1)
#define SHM_EVENT_KEY (1u << 2)
#define SHM_EVENT_KIND(kind, op) ((uint64_t)(kind) | (uint64_t)(op) << 8)

/* shm_slot.flags: the RDM engine's flags (util_rdm.h: bit 0 remote CQ data,
 * bit 1 the sender waits for delivery), and the message class: tagged, or
 * the engine's collectives (UTIL_RDM_COLL), or else untagged. */
#define SHM_SLOT_TAGGED (1u << 15)
#define SHM_SLOT_COLL (1u << 14)
/* The class bits of an engine op (enum util_rdm_op), and back. */
#define SHM_SLOT_CLASS(op)                                                     \
	((op) == UTIL_RDM_TAGGED ? SHM_SLOT_TAGGED :                           \
	 (op) == UTIL_RDM_COLL	 ? SHM_SLOT_COLL :                             \
				   0)
#define SHM_SLOT_OP(flags)                                                     \
	((flags) & SHM_SLOT_TAGGED ?                                           \
		 UTIL_RDM_TAGGED :                                             \
		 UTIL_RDM_MSG | ((flags) & SHM_SLOT_COLL) >> 13)

/* The descriptor of a CMA message, in the slot and in the engine's stash. */
struct shm_rts {
	uint64_t tx_id;
	uint64_t msg_len;
	int32_t pid;
	uint32_t iov_count;
	uint64_t addr[SHM_IOV_MAX];
	uint64_t len[SHM_IOV_MAX];
	uint32_t src; /* stash only: the sender's table entry here */
	uint32_t push; /* ask the sender to push (no CMA, or not worth it) */
};
static_assert(sizeof(struct shm_rts) == 96, "RTS layout (docs/shm-layout.md)");
static_assert(sizeof(struct shm_rts) <= SHM_INLINE_MAX, "RTS fits a slot");

/*
 * A request, in the slot payload.  The data to write, or atomic operands
 * (source then compare values), sit in the initiator's bounce buffer
 * `bounce`; without one, the target reads or writes the initiator's
 * iovecs with process_vm_readv/writev.
 */
struct shm_rma_req {
	uint64_t tx_id;
	uint64_t len; /* bytes at the target */
	int32_t pid;
	uint32_t bounce; /* initiator's bounce buffer, or SHM_NO_BOUNCE */
	uint8_t kind; /* the RDM engine's UTIL_RDM_TX_* */
	uint8_t iov_count;
	uint8_t rma_count;
	uint8_t datatype;
	uint8_t op; /* enum fi_op */
	uint8_t reply_bounce; /* results come back in a target bounce buffer */
	uint8_t flags; /* SHM_RMA_F_* */
	/* Bit i: count this operation on the counters bound to the
	 * registration of rma[i] (each registration once per operation,
	 * in the part holding its last byte). */
	uint8_t count;
	uint64_t laddr[SHM_IOV_MAX];
	uint64_t llen[SHM_IOV_MAX];
	struct fi_rma_iov rma[SHM_IOV_MAX];
};
static_assert(sizeof(struct shm_rma_req) == 192,
	      "RMA request layout (docs/shm-layout.md)");
static_assert(sizeof(struct shm_rma_req) <= SHM_INLINE_MAX,
	      "RMA request fits a slot");

/* shm_rma_req.flags */
#define SHM_RMA_F_LAST 1u /* the operation's last part: report remote events */
#define SHM_RMA_F_COMMIT 2u /* FI_COMMIT_COMPLETE: flush FI_RMA_PMEM ranges */

#define SHM_NO_BOUNCE UINT32_MAX

/*
 * Queue control: producers share `tail`, the consumer owns `head` (others
 * read it to know what was consumed), and the bounce buffers' free lists
 * sit on lines of their own.
 *
 * `owner` is a robust, process-shared mutex the owner holds as long as it
 * lives.  When the thread holding it ends (a SIGKILL included), the kernel
 * sets FUTEX_OWNER_DIED in its word: a producer reads that word, on the
 * line it reads `slots` from anyway, before every send, so it notices a
 * dead owner without a system call.  (The owner takes it again if only the
 * thread that held it ended.)
 *
 * buf_free (and small_free, the small buffers') is a lock-free stack any
 * process mapping the region pops from and pushes to: bits 0-31 the top
 * buffer's index + 1 within its pool (0: empty), bits
 * 32-63 a tag every change bumps, so a CAS never mistakes a top that was
 * popped and pushed back for the one it read (ABA).  Each buffer's `next`
 * links to the one below, index + 1.
 */
struct shm_queue {
	uint32_t slots; /* power of two */
	uint32_t pad0;
	union {
		pthread_mutex_t lock; /* held by the owner while it lives */
		uint8_t pad1[SHM_CACHELINE - 8];
	} owner;
	_Atomic uint64_t tail; /* next slot a producer claims */
	/* 1: the owner is about to sleep on its bell (shm_queue.h); the
	 * producer that takes it back to 0 rings. */
	_Atomic uint32_t sleeping;
	uint8_t pad2[SHM_CACHELINE - 12];
	_Atomic uint64_t head; /* next slot the consumer reads (release) */
	uint8_t pad3[SHM_CACHELINE - 8];
	_Atomic uint64_t buf_free; /* inbound pool: tag << 32 | top */
	uint8_t pad4[SHM_CACHELINE - 8];
	_Atomic uint64_t small_free; /* small buffers: tag << 32 | top */
	uint8_t pad5[SHM_CACHELINE - 8];
	struct shm_slot slot[];
};
static_assert(sizeof(struct shm_queue) == 5 * SHM_CACHELINE, "shm_queue size");
static_assert(sizeof(pthread_mutex_t) <= SHM_CACHELINE - 8,
	      "the owner's mutex fits the queue's first line");

/*
 * Peer table entry.  A sender takes an entry (CAS of state to CLAIMED from
 * FREE, or from CLOSED once its previous holder's slots are consumed),
 * fills pid, pid_start and name, bumps gen, then publishes ACTIVE
 * (release).  shm_slot.src carries the entry's index in its low 16 bits
 * and the low 16 bits of gen above them: the owner attributes a slot to
 * the entry's holder only when the generations agree.
 *
 * A holder that closes writes release_pos (the queue's tail after its last
 * slot) and publishes CLOSED: the entry keeps naming it until the owner's
 * head has passed release_pos, so its queued slots are still attributed to
 * it.  A sender that finds an ACTIVE entry whose holder is dead closes it
 * the same way on the holder's behalf.
 */
enum shm_peer_state {
	SHM_PEER_FREE = 0,
	SHM_PEER_CLAIMED = 1,
	SHM_PEER_ACTIVE = 2,
	SHM_PEER_CLOSED = 3,
};

/* shm_peer.claim of a holder between its claim mark and its claim. */
#define SHM_CLAIMING UINT64_MAX

struct shm_peer {
	_Atomic uint32_t state;
	int32_t pid;
	_Atomic uint32_t gen; /* bumped by every claim: tells holders apart */
	_Atomic uint32_t hold; /* owner: 1 while it holds this sender's
				* requests back; the holder then sends none */
	uint64_t pid_start; /* holder's start time: a reused pid is not it */
	uint64_t release_pos; /* CLOSED: reusable once head >= this */
	char name[SHM_NAME_MAX];
	/* Holder: SHM_CLAIMING while it claims a slot, then the ring
	 * position + 1 of the slot it claimed, until it published it (then
	 * 0).  The owner reads it only to skip a slot whose claimer died
	 * before publishing it. */
	_Atomic uint64_t claim;
	/* Holder: the index + 1 of the inbound bounce buffer (of the large
	 * or the small pool) it took and has not yet handed over in a
	 * published slot (0: none): whoever finds the holder dead gives it
	 * back. */
	_Atomic uint32_t bounce;
	uint8_t pad1[2 * SHM_CACHELINE - 44 - SHM_NAME_MAX];
};
static_assert(sizeof(struct shm_peer) == 128, "shm_peer size");

/* Bounce buffer header, at the start of each buffer. */
struct shm_bounce {
	_Atomic uint32_t next; /* inbound pool: free list link, index + 1 */
	_Atomic uint32_t busy; /* outbound pool: set by the owner when it
				* fills it, cleared (release) by the reader */
	uint32_t len;
	uint8_t pad[SHM_CACHELINE - 12];
	uint8_t data[];
};
static_assert(sizeof(struct shm_bounce) == SHM_CACHELINE, "shm_bounce size");

/*
 * The registration table of a domain: a file of its own in /dev/shm,
 * "weft-shm-mrt.<uid>.<pid>.<n>.<random>", named in the region header of
 * each of the domain's endpoints.  It lets a peer read, write and apply
 * atomics to registered memory with process_vm_readv/writev while the
 * owner computes or sleeps (docs/shm-layout.md, "One-sided RMA").
 *
 * Entries are found by key: slot hash(key) & (entries - 1) and the next
 * SHM_MRT_PROBE - 1 after it.  The owner alone writes an entry's fields,
 * between two increments of seq (odd while it writes); a peer reads seq,
 * the fields, and seq again.  To use an entry a peer takes a pin (CAS of a
 * free pin from 0 to its pid), then reads seq again: unchanged, the entry
 * stays as read until the pin is dropped.  The owner withdraws an entry by
 * making seq odd and waiting until no pin holds it (a pin whose process is
 * gone is cleared), then clearing `live` and making seq even.
 *
 * `atomic_lock` is a lock word: whoever applies an atomic to the owner's
 * registered memory (a peer, or the owner serving a request) holds it from
 * reading the old values to writing the new ones.  0: free; else the
 * holder's pid in bits 0-31 and its thread id in bits 32-63, taken by CAS
 * from 0.  A waiter takes it over from a holder whose process is gone, and
 * gives up after SHM_MRT_LOCK_MS.  Not a pthread mutex: every process
 * mapping the table may write it, and a robust mutex keeps the links of
 * its holder's robust list inside itself, which glibc follows (and the
 * kernel, at the holder's exit).
 */
#define SHM_MRT_MAGIC 0x776d7274u /* "wmrt" */
#define SHM_MRT_PROBE 16
#define SHM_MRT_PINS 8

struct shm_mrt_hdr {
	uint32_t magic;
	uint16_t version; /* SHM_VERSION */
	uint16_t hdr_size;
	uint32_t entries; /* power of two */
	int32_t pid; /* owner */
	uint64_t total_size;
	uint8_t pad0[SHM_CACHELINE - 24];
	union {
		_Atomic uint64_t word;
		uint8_t pad[SHM_CACHELINE];
	} atomic_lock;
};
static_assert(sizeof(struct shm_mrt_hdr) == 2 * SHM_CACHELINE,
	      "shm_mrt_hdr size");

struct shm_mrt_entry {
	_Atomic uint64_t seq; /* even: stable; odd: being changed */
	uint64_t key;
	uint64_t base; /* peers' address of byte 0 */
	uint64_t len;
	uint64_t addr; /* the owner's address of byte 0 */
	uint64_t access; /* FI_REMOTE_READ, FI_REMOTE_WRITE */
	uint32_t live; /* 1: a registration */
	/* FI_REMOTE_WRITE / FI_REMOTE_READ: the owner counts those accesses
	 * (counters bound to the registration), so a peer that moves data
	 * itself tells it (SHM_OP_RMA_EVENT with SHM_EVENT_KEY).  Written by
	 * the owner whenever a counter is bound; read by a peer holding a
	 * pin. */
	_Atomic uint32_t events;
	_Atomic int32_t pin[SHM_MRT_PINS]; /* pids of peers using it, or 0 */
	uint8_t pad1[2 * SHM_CACHELINE - 56 - 4 * SHM_MRT_PINS];
};
static_assert(sizeof(struct shm_mrt_entry) == 2 * SHM_CACHELINE,
	      "shm_mrt_entry size");

#endif /* WEFT_SHM_LAYOUT_H */
