/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The registration table (struct shm_mrt_hdr in shm_layout.h): the owner's
 * side publishes a domain's registrations into it, a peer's side maps it
 * and uses them to move data with process_vm_readv/writev while the owner
 * takes no part.  docs/shm-layout.md, "One-sided RMA", gives the protocol.
 */
#ifndef WEFT_SHM_MRT_H
#define WEFT_SHM_MRT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "weft/util_mr.h"

#include "shm_layout.h"

/* A mapping of a table, the owner's or a peer's. */
struct shm_mrt_map {
	struct shm_mrt_hdr *hdr;
	struct shm_mrt_entry *entry;
	size_t size;
	uint32_t entries; /* power of two, checked at mapping */
	pid_t pid; /* the owner */
};

/*
 * The owner's table of one domain: attached to the domain's key map as
 * its publisher, shared by the domain's endpoints (refs).
 */
struct shm_mrt {
	struct util_mr_publisher pub; /* first */
	struct util_mr_map *map;
	struct shm_mrt_map m;
	char name[SHM_NAME_MAX]; /* shm_open name without its '/' */
	unsigned refs;
	pid_t creator; /* only it removes the file */
};

/*
 * The table of the domain whose key map is `map`, made and attached at
 * the first call, with another reference at each further one.  Returns 0
 * and *out, or -FI_E* (no room in /dev/shm, ...): the endpoint then goes
 * without one and peers use its progress.  Control path.
 */
int shm_mrt_get(struct util_mr_map *map, struct shm_mrt **out);
/* Drop a reference; the last detaches, unmaps and removes the table. */
void shm_mrt_put(struct shm_mrt *t);

/*
 * Map a peer's table by the name its region header gives, for the owner
 * `pid`.  -FI_EACCES for a file not this user's alone, -FI_EINVAL for a bad
 * name, header, size or owner, or the error of opening it.
 */
int shm_mrt_map(const char *name, pid_t pid, struct shm_mrt_map *m);
void shm_mrt_unmap(struct shm_mrt_map *m);

/*
 * A peer's use of one registration: find `key` in the table, check that
 * [addr, addr + len) lies inside it and that it grants `access`, and pin
 * it.  Returns 0 with the owner's address of addr in *raddr, the pin in
 * *pin (give it to shm_mrt_unpin) and, when events is not NULL, what the
 * owner counts of accesses to it in *events (FI_REMOTE_WRITE,
 * FI_REMOTE_READ: tell it with SHM_OP_RMA_EVENT); 1 when the table cannot
 * tell (the key is not published there: ask the owner); -FI_EACCES
 * (access not granted) or -FI_EINVAL (outside the registration, or a
 * range that wraps).
 */
int shm_mrt_pin(struct shm_mrt_map *m, uint64_t key, uint64_t addr,
		uint64_t len, uint64_t access, uint64_t *raddr,
		_Atomic int32_t **pin, uint64_t *events);
void shm_mrt_unpin(_Atomic int32_t *pin);

/*
 * The table's atomic lock (shm_layout.h): 0, or -FI_ETIMEDOUT when a
 * holder that is alive kept it SHM_MRT_LOCK_MS (stopped, or a peer that
 * means harm): the caller fails its atomic rather than wait for ever.  A
 * holder that died is survived: memory holds what it wrote back by then.
 */
#define SHM_MRT_LOCK_MS 2000
int shm_mrt_lock(struct shm_mrt_map *m);
void shm_mrt_unlock(struct shm_mrt_map *m);

#endif /* WEFT_SHM_MRT_H */
