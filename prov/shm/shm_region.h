/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared-memory regions: creating this endpoint's region, mapping a peer's,
 * and noticing that a region's owner is gone.
 */
#ifndef WEFT_SHM_REGION_H
#define WEFT_SHM_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "shm_layout.h"

struct shm_region_attr {
	uint32_t queue_slots; /* power of two */
	uint32_t max_peers;
	uint32_t bounce_count;
	uint32_t bounce_size; /* payload bytes per bounce buffer */
	uint32_t small_count; /* small inbound buffers (0: none) */
	uint32_t small_size; /* payload bytes per small buffer */
	uint32_t flags; /* SHM_REGION_* */
	const char *mrt; /* the registration table's name, or NULL */
};

/*
 * A mapping of a region, ours or a peer's.  Whoever maps a region may write
 * all of it, its header included, at any time: the geometry is checked
 * against the file's size once, when the region is mapped, and read from
 * here ever after, never from the header again.
 */
struct shm_map {
	struct shm_region_hdr *hdr;
	size_t size;
	bool owner;
	pid_t owner_pid; /* the process that created it: only it removes it */
	char path[SHM_NAME_MAX + 32]; /* the shm_open name */
	struct shm_queue *queue;
	struct shm_peer *peers;
	char *bounce; /* the first bounce buffer */
	char *small; /* the first small buffer */
	uint32_t queue_slots; /* power of two */
	uint32_t max_peers;
	uint32_t bounce_count;
	uint32_t bounce_size; /* payload bytes of each bounce buffer */
	uint32_t small_count;
	uint32_t small_size; /* payload bytes of each small buffer */
};

static inline struct shm_queue *shm_map_queue(const struct shm_map *m)
{
	return m->queue;
}

/* Bytes from one bounce buffer to the next. */
static inline size_t shm_map_bounce_stride(const struct shm_map *m)
{
	return sizeof(struct shm_bounce) + m->bounce_size;
}

/*
 * Bounce buffer i, i < 2 * m->bounce_count: the inbound pool (peers' eager
 * payloads for the owner) first, then the owner's outbound pool.
 */
static inline struct shm_bounce *shm_map_bounce(const struct shm_map *m,
						uint32_t i)
{
	return (struct shm_bounce *)(m->bounce +
				     (size_t)i * shm_map_bounce_stride(m));
}

/* Bytes from one small buffer to the next. */
static inline size_t shm_map_small_stride(const struct shm_map *m)
{
	return sizeof(struct shm_bounce) + m->small_size;
}

/* Small buffer i, i < m->small_count (its index is 2 * bounce_count + i). */
static inline struct shm_bounce *shm_map_small(const struct shm_map *m,
					       uint32_t i)
{
	return (struct shm_bounce *)(m->small +
				     (size_t)i * shm_map_small_stride(m));
}

/* The index of small buffer 0 among all of a region's buffers. */
static inline uint64_t shm_map_small_first(const struct shm_map *m)
{
	return 2 * (uint64_t)m->bounce_count;
}

/* Whether idx names an inbound buffer (a peer's eager payload for the
 * owner): one of the large pool, or a small one. */
static inline bool shm_map_buf_inbound(const struct shm_map *m, uint64_t idx)
{
	return idx < m->bounce_count ||
	       (idx >= shm_map_small_first(m) &&
		idx - shm_map_small_first(m) < m->small_count);
}

/*
 * Peer-controlled input: a slot names a peer-table entry or a bounce buffer
 * and a length, and both come from another process.  These accessors are
 * the only way the shm endpoint (shm_conn.c, shm_xp.c, shm_rma.c) turns
 * such a field into memory: NULL when the index or the length falls
 * outside what was checked at mapping.
 */

/* Entry idx of the region's peer table, or NULL. */
static inline struct shm_peer *shm_map_peer(const struct shm_map *m,
					    uint64_t idx)
{
	return idx < m->max_peers ? &m->peers[idx] : NULL;
}

/*
 * Inbound buffer idx (an eager payload a peer put there for the owner: a
 * buffer of the large pool, or a small one) when `len` bytes of it may be
 * read or written, or NULL.
 */
static inline struct shm_bounce *shm_map_bounce_in(const struct shm_map *m,
						   uint64_t idx, uint64_t len)
{
	if (idx < m->bounce_count)
		return len <= m->bounce_size ? shm_map_bounce(m, (uint32_t)idx) :
					       NULL;
	if (idx < shm_map_small_first(m) ||
	    idx - shm_map_small_first(m) >= m->small_count ||
	    len > m->small_size)
		return NULL;
	return shm_map_small(m, (uint32_t)(idx - shm_map_small_first(m)));
}

/*
 * Outbound buffer idx (the owner's pushed data, RMA data or results; its
 * index counts from the first inbound buffer) when `len` bytes of it may be
 * read or written, or NULL.
 */
static inline struct shm_bounce *shm_map_bounce_out(const struct shm_map *m,
						    uint64_t idx, uint64_t len)
{
	if (idx < m->bounce_count || idx - m->bounce_count >= m->bounce_count ||
	    len > m->bounce_size)
		return NULL;
	return shm_map_bounce(m, (uint32_t)idx);
}

/*
 * Copy the name a peer wrote into a table entry into name[SHM_NAME_MAX].
 * False unless it is NUL terminated within the entry and a valid region
 * name (shm_name_valid).
 */
bool shm_peer_name(const struct shm_peer *p, char *name);

/* Whether an open file (its fstat) is this user's alone: a regular file
 * of our effective uid, no group or other permission bits. */
struct stat;
bool shm_stat_ours(const struct stat *st);

/* Whether `name` can name a region (non-empty, < SHM_NAME_MAX, no '/'). */
bool shm_name_valid(const char *name);

/*
 * Create this endpoint's region under `name`, mode 0600, its memory
 * reserved at once: -FI_ENOSPC, logged with the size needed, when /dev/shm
 * has no room for it.  A region of that name left by a process that no
 * longer runs is removed and replaced; one whose owner lives gives
 * -FI_EADDRINUSE, and so does a file of that path that another user owns
 * (after a warning naming it).  The region is set up under a name of its
 * own and appears under `name` whole: of two processes creating one name
 * at once, one gets -FI_EADDRINUSE.  Returns 0 or -FI_E*; never blocks.
 */
int shm_region_create(const char *name, const struct shm_region_attr *attr,
		      struct shm_map *map);

/*
 * Map a peer's region.  -FI_ENOENT when no such region exists, -FI_EAGAIN
 * while its owner is still setting it up; -FI_EACCES for a file that is
 * not this user's alone (another owner, group or other permission bits,
 * not a regular file); -FI_ENOSPC for one whose memory was not reserved
 * (writing into it could fault); -FI_EINVAL for another layout version, a
 * truncated file, or a header whose sections do not fit the file.  Logs
 * why it refused.
 */
int shm_region_map(const char *name, struct shm_map *map);

/* Unmap; the owner's unmap also removes the file, unless it is a child
 * forked since (the file stays the parent's). */
void shm_region_unmap(struct shm_map *map);

/*
 * Remove the regions of this user whose owners no longer run (killed
 * processes leave theirs behind), and the files of creators killed before
 * they published them.  Called once per process, at the first
 * endpoint; reads /dev/shm, never blocks on a peer.
 */
void shm_region_sweep(void);

/* Start time of a process (for telling a reused pid from its owner), or 0. */
uint64_t shm_pid_start(pid_t pid);

/* Whether the owner recorded in a region header still runs. */
bool shm_region_owner_alive(const struct shm_region_hdr *hdr);

#endif /* WEFT_SHM_REGION_H */
