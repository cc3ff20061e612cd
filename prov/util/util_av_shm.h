/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Named address vectors shared between the processes of one user on one
 * node (FI_SHARED_AV, fi_av(3) name, FI_READ): the shared-memory object
 * and what util_av.c asks of it.  Layout: docs/shared-av.md.
 */
#ifndef WEFT_UTIL_AV_SHM_H
#define WEFT_UTIL_AV_SHM_H

#include "weft/util_av.h"

#include <assert.h>
#include <limits.h>

#define UTIL_AV_SHM_MAGIC 0x53564157u /* "WAVS" */
#define UTIL_AV_SHM_VERSION 1
/* Processes that may have one named AV open at once. */
#define UTIL_AV_SHM_PROCS 256
/* Entries a named AV holds: fi_av_attr.count, at least the minimum. */
#define UTIL_AV_SHM_MIN 64
#define UTIL_AV_SHM_MAX ((uint32_t)1 << 20)

/* shm_entry.state */
#define UTIL_AV_SHM_FREE 0u    /* never claimed */
#define UTIL_AV_SHM_CLAIMED 1u /* claimed, address being written */
#define UTIL_AV_SHM_USED 2u    /* address published */
#define UTIL_AV_SHM_DEAD 3u    /* removed (or its insert failed): never reused */

struct util_av_shm_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t ready; /* 1 once the creator filled the header */
	uint32_t addr_format;
	uint32_t addrlen;
	uint32_t type; /* FI_AV_MAP or FI_AV_TABLE */
	uint32_t capacity;
	uint32_t entry_size;
	uint32_t rsvd;
	_Atomic uint32_t next; /* entries claimed: [0, next) */
	uint32_t rsvd2;
	int32_t pids[UTIL_AV_SHM_PROCS]; /* who has it open; 0: free */
};
static_assert(sizeof(struct util_av_shm_hdr) == 40 + 4 * UTIL_AV_SHM_PROCS,
	      "shared AV header (docs/shared-av.md)");

struct util_av_shm_entry {
	_Atomic uint32_t state;
	uint32_t rsvd;
	/* then addrlen bytes, the address in the AV's stored form */
};
static_assert(sizeof(struct util_av_shm_entry) == 8,
	      "shared AV entry (docs/shared-av.md)");

/* A process's hold on a named AV. */
struct util_av_shm {
	int fd;
	struct util_av_shm_hdr *hdr;
	size_t map_len;
	bool readonly;
	uint32_t synced; /* entries [0, synced) are in the local slots */
	char name[NAME_MAX + 1]; /* the object's, for shm_unlink */
};

/*
 * Open or create the object for attr->name (util_av_open, before the AV is
 * returned): attr->flags FI_READ opens an existing one read-only.  Checks
 * the object's owner, mode and header.  Control path; may wait for a
 * creator that is filling the header.
 */
int util_av_shm_open(struct util_av *av, const struct fi_av_attr *attr,
		     enum fi_av_type *type);
/* Let go of it (fi_close of the AV); the last process unlinks it. */
void util_av_shm_close(struct util_av *av);

/* Claim the next entry for a stored address, published at once:
 * *idx.  -FI_ENOSPC when full.  AV lock held. */
int util_av_shm_claim(struct util_av *av, const void *addr, uint32_t *idx);
/* Entry idx is gone (removed, or its local insert failed). */
void util_av_shm_kill(struct util_av *av, uint32_t idx);
/* Entries claimed so far (at most the capacity). */
uint32_t util_av_shm_count(const struct util_av *av);
/* Entry idx's state (UTIL_AV_SHM_*) and, once USED, its address. */
uint32_t util_av_shm_state(const struct util_av *av, uint32_t idx,
			   const void **addr);

#endif /* WEFT_UTIL_AV_SHM_H */
