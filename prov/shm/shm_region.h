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
	uint32_t flags; /* SHM_REGION_* */
};

/* A mapping of a region, ours or a peer's. */
struct shm_map {
	struct shm_region_hdr *hdr;
	size_t size;
	bool owner;
	char path[SHM_NAME_MAX + 32]; /* the shm_open name */
};

static inline struct shm_queue *shm_map_queue(const struct shm_map *m)
{
	return (struct shm_queue *)((char *)m->hdr + m->hdr->queue_off);
}

static inline struct shm_peer *shm_map_peers(const struct shm_map *m)
{
	return (struct shm_peer *)((char *)m->hdr + m->hdr->peers_off);
}

static inline size_t shm_map_bounce_stride(const struct shm_map *m)
{
	return sizeof(struct shm_bounce) + m->hdr->bounce_size;
}

static inline struct shm_bounce *shm_map_bounce(const struct shm_map *m,
						uint32_t i)
{
	return (struct shm_bounce *)((char *)m->hdr + m->hdr->bounce_off +
				     (size_t)i * shm_map_bounce_stride(m));
}

/* Whether `name` can name a region (non-empty, < SHM_NAME_MAX, no '/'). */
bool shm_name_valid(const char *name);

/*
 * Create this endpoint's region under `name`, mode 0600.  A region of that
 * name left by a process that no longer runs is removed and replaced; one
 * whose owner lives gives -FI_EADDRINUSE.  Returns 0 or -FI_E*; never
 * blocks.
 */
int shm_region_create(const char *name, const struct shm_region_attr *attr,
		      struct shm_map *map);

/*
 * Map a peer's region.  -FI_ENOENT when no such region exists, -FI_EAGAIN
 * while its owner is still setting it up, -FI_EINVAL for a region of
 * another layout version.
 */
int shm_region_map(const char *name, struct shm_map *map);

/* Unmap; the owner's unmap also removes the file. */
void shm_region_unmap(struct shm_map *map);

/*
 * Remove the regions of this user whose owners no longer run (killed
 * processes leave theirs behind).  Called once per process, at the first
 * endpoint; reads /dev/shm, never blocks on a peer.
 */
void shm_region_sweep(void);

/* Start time of a process (for telling a reused pid from its owner), or 0. */
uint64_t shm_pid_start(pid_t pid);

/* Whether the owner recorded in a region header still runs. */
bool shm_region_owner_alive(const struct shm_region_hdr *hdr);

#endif /* WEFT_SHM_REGION_H */
