/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Named AVs shared between processes (prov/util/util_av_shm.h,
 * docs/shared-av.md).
 *
 * The object is /dev/shm/weft-av.UID.NAME (NAME with every byte outside
 * [A-Za-z0-9._-] written %XX), mode 0600.  Whoever opens it checks that it
 * is a regular file of ours that no other user can reach, then its
 * header; anything else is refused, never repaired, except an object
 * every process of which is gone (its pids are dead, or its creator died
 * before the header was done), which a writer replaces.  flock on the
 * object serialises opening, the pid table and unlinking: the last
 * process to close unlinks it, and an opener that finds the object it
 * waited on unlinked starts again.
 */
#include "util_av_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long an opener waits for a creator to fill the header. */
#define AV_SHM_WAIT_MS 1000

static size_t shm_entry_size(size_t addrlen)
{
	return sizeof(struct util_av_shm_entry) + ((addrlen + 7) & ~(size_t)7);
}

static size_t shm_size(uint32_t capacity, size_t entry_size)
{
	return sizeof(struct util_av_shm_hdr) + (size_t)capacity * entry_size;
}

static struct util_av_shm_entry *shm_entry(const struct util_av_shm *s,
					   uint32_t idx)
{
	return (struct util_av_shm_entry *)((char *)s->hdr +
					    sizeof(struct util_av_shm_hdr) +
					    (size_t)idx * s->hdr->entry_size);
}

/* "/weft-av.UID." and the name, bytes outside [A-Za-z0-9._-] as %XX. */
static int shm_name(const char *name, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	int n = snprintf(out, len, "/weft-av.%u.", (unsigned int)geteuid());
	size_t o = (size_t)n;
	const unsigned char *p;

	if (!name[0])
		return -FI_EINVAL;
	for (p = (const unsigned char *)name; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') ||
			     (*p >= 'A' && *p <= 'Z') ||
			     (*p >= '0' && *p <= '9') || *p == '.' ||
			     *p == '_' || *p == '-';

		if (o + (plain ? 1 : 3) >= len)
			return -FI_EINVAL;
		if (plain) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

static bool pid_alive(int32_t pid)
{
	return pid > 0 && (!kill(pid, 0) || errno == EPERM);
}

/* Forget dead processes; returns how many live ones are left. */
static int shm_prune(struct util_av_shm_hdr *h)
{
	int i, live = 0;

	for (i = 0; i < UTIL_AV_SHM_PROCS; i++) {
		if (!h->pids[i])
			continue;
		if (pid_alive(h->pids[i]))
			live++;
		else
			h->pids[i] = 0;
	}
	return live;
}

static int shm_add_pid(struct util_av_shm_hdr *h)
{
	int i;

	for (i = 0; i < UTIL_AV_SHM_PROCS; i++) {
		if (!h->pids[i]) {
			h->pids[i] = (int32_t)getpid();
			return 0;
		}
	}
	return -FI_EBUSY;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

enum shm_verdict { SHM_OK, SHM_RETRY, SHM_GONE };

/*
 * The object fd is locked: create it (created) or check it.  SHM_GONE: no
 * process of it is left or its creator died early (a writer replaces it);
 * SHM_RETRY: its creator is still at work; else a return code.
 */
static int shm_attach(struct util_av *av, struct util_av_shm *s,
		      const struct stat *st, bool created, uint32_t capacity,
		      enum fi_av_type *type, bool type_given)
{
	size_t esz = shm_entry_size(av->addrlen), size;
	struct util_av_shm_hdr *h;
	int ret;

	if (created) {
		size = shm_size(capacity, esz);
		if (ftruncate(s->fd, (off_t)size))
			return -weft_errno(errno);
		h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 s->fd, 0);
		if (h == MAP_FAILED)
			return -weft_errno(errno);
		h->magic = UTIL_AV_SHM_MAGIC;
		h->version = UTIL_AV_SHM_VERSION;
		h->addr_format = av->ops.addr_format;
		h->addrlen = (uint32_t)av->addrlen;
		h->type = (uint32_t)*type;
		h->capacity = capacity;
		h->entry_size = (uint32_t)esz;
		atomic_init(&h->next, 0);
		h->pids[0] = (int32_t)getpid();
		__atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
		s->hdr = h;
		s->map_len = size;
		return SHM_OK;
	}
	if ((size_t)st->st_size < sizeof(*h))
		return st->st_size ? -FI_EINVAL : SHM_RETRY;
	h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, s->fd,
		 0);
	if (h == MAP_FAILED)
		return -weft_errno(errno);
	ret = SHM_OK;
	if (h->magic != UTIL_AV_SHM_MAGIC ||
	    h->version != UTIL_AV_SHM_VERSION) {
		ret = -FI_EINVAL;
	} else if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE)) {
		/* Its creator holds the lock while it fills the header:
		 * we have the lock, so it died. */
		ret = SHM_GONE;
	} else if (h->addr_format != av->ops.addr_format ||
		   h->addrlen != av->addrlen || h->entry_size != esz ||
		   h->capacity < UTIL_AV_SHM_MIN ||
		   h->capacity > UTIL_AV_SHM_MAX ||
		   (uint64_t)st->st_size != shm_size(h->capacity, esz) ||
		   (h->type != FI_AV_MAP && h->type != FI_AV_TABLE)) {
		ret = -FI_EINVAL;
	} else if (type_given && h->type != (uint32_t)*type) {
		FI_WARN(av->prov, FI_LOG_AV,
			"shared AV %s is of the other type\n", s->name + 1);
		ret = -FI_EINVAL;
	} else if (!shm_prune(h)) {
		ret = SHM_GONE;
	}
	if (ret == -FI_EINVAL && !(type_given && h->type != (uint32_t)*type))
		FI_WARN(av->prov, FI_LOG_AV,
			"/dev/shm%s is no shared AV of this provider's "
			"addresses: refused (remove it if it is stale)\n",
			s->name);
	if (ret != SHM_OK) {
		munmap(h, sizeof(*h));
		return ret;
	}
	ret = shm_add_pid(h);
	size = shm_size(h->capacity, esz);
	*type = (enum fi_av_type)h->type;
	munmap(h, sizeof(*h));
	if (ret) {
		FI_WARN(av->prov, FI_LOG_AV,
			"shared AV %s: %d processes have it open already\n",
			s->name + 1, UTIL_AV_SHM_PROCS);
		return ret;
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (h == MAP_FAILED) {
		ret = -weft_errno(errno);
		return ret;
	}
	s->hdr = h;
	s->map_len = size;
	return SHM_OK;
}

int util_av_shm_open(struct util_av *av, const struct fi_av_attr *attr,
		     enum fi_av_type *type)
{
	bool type_given = attr->type != FI_AV_UNSPEC;
	uint32_t capacity = UTIL_AV_SHM_MIN;
	long waited = 0;
	struct util_av_shm *s;
	struct stat st;
	bool created;
	int ret, fd;

	while (capacity < attr->count && capacity < UTIL_AV_SHM_MAX)
		capacity *= 2;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	s->fd = -1;
	s->readonly = (attr->flags & FI_READ) != 0;
	ret = shm_name(attr->name, s->name, sizeof(s->name));
	if (ret) {
		FI_WARN(av->prov, FI_LOG_AV, "AV name \"%s\": %s\n",
			attr->name, fi_strerror(-ret));
		goto err;
	}
	for (;;) {
		created = false;
		fd = shm_open(s->name, O_RDWR, 0600);
		if (fd < 0 && errno == ENOENT && !s->readonly) {
			fd = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL, 0600);
			created = fd >= 0;
			if (fd < 0 && errno == EEXIST)
				continue;
		}
		if (fd < 0) {
			ret = errno == ENOENT ? -FI_ENOENT : -weft_errno(errno);
			FI_WARN(av->prov, FI_LOG_AV, "shared AV %s: %s\n",
				attr->name,
				ret == -FI_ENOENT ?
					"no such AV (FI_READ opens one "
					"that exists)" :
					fi_strerror(-ret));
			goto err;
		}
		s->fd = fd;
		if (flock(fd, LOCK_EX) || fstat(fd, &st)) {
			ret = -weft_errno(errno);
			goto err;
		}
		if (!st.st_nlink) { /* unlinked while we waited */
			close(fd);
			s->fd = -1;
			continue;
		}
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		    (st.st_mode & 077)) {
			FI_WARN(av->prov, FI_LOG_AV,
				"/dev/shm%s is not a private object of this "
				"user: refused\n",
				s->name);
			ret = -FI_EACCES;
			goto err;
		}
		ret = shm_attach(av, s, &st, created, capacity, type,
				 type_given);
		if (ret == SHM_RETRY && waited < AV_SHM_WAIT_MS) {
			flock(fd, LOCK_UN);
			close(fd);
			s->fd = -1;
			sleep_ms(1);
			waited++;
			continue;
		}
		if (ret == SHM_RETRY)
			ret = SHM_GONE; /* its creator never filled it */
		if (ret == SHM_GONE) {
			if (s->readonly) {
				FI_WARN(av->prov, FI_LOG_AV,
					"shared AV %s: every process that "
					"had it is gone\n",
					attr->name);
				ret = -FI_ENOENT;
				goto err;
			}
			/* Ours, checked, and nobody's: start afresh. */
			shm_unlink(s->name);
			flock(fd, LOCK_UN);
			close(fd);
			s->fd = -1;
			continue;
		}
		if (ret)
			goto err;
		break;
	}
	flock(s->fd, LOCK_UN);
	s->synced = 0;
	av->shm = s;
	return 0;

err:
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	return ret;
}

void util_av_shm_close(struct util_av *av)
{
	struct util_av_shm *s = av->shm;
	int i;

	if (!s)
		return;
	if (!flock(s->fd, LOCK_EX)) {
		for (i = 0; i < UTIL_AV_SHM_PROCS; i++)
			if (s->hdr->pids[i] == (int32_t)getpid()) {
				s->hdr->pids[i] = 0;
				break;
			}
		if (!shm_prune(s->hdr))
			shm_unlink(s->name);
		flock(s->fd, LOCK_UN);
	}
	munmap(s->hdr, s->map_len);
	close(s->fd);
	free(s);
	av->shm = NULL;
}

int util_av_shm_claim(struct util_av *av, const void *addr, uint32_t *idx)
{
	struct util_av_shm *s = av->shm;
	struct util_av_shm_entry *e;
	uint32_t i;

	i = atomic_fetch_add_explicit(&s->hdr->next, 1, memory_order_relaxed);
	if (i >= s->hdr->capacity) {
		FI_WARN(av->prov, FI_LOG_AV,
			"shared AV %s is full (%u entries: fi_av_attr.count "
			"of its creator)\n",
			s->name + 1, s->hdr->capacity);
		return -FI_ENOSPC;
	}
	e = shm_entry(s, i);
	memcpy(e + 1, addr, av->addrlen);
	atomic_store_explicit(&e->state, UTIL_AV_SHM_USED,
			      memory_order_release);
	*idx = i;
	return 0;
}

void util_av_shm_kill(struct util_av *av, uint32_t idx)
{
	struct util_av_shm *s = av->shm;

	if (idx < s->hdr->capacity)
		atomic_store_explicit(&shm_entry(s, idx)->state,
				      UTIL_AV_SHM_DEAD, memory_order_release);
}

uint32_t util_av_shm_count(const struct util_av *av)
{
	const struct util_av_shm *s = av->shm;
	uint32_t n = atomic_load_explicit(&s->hdr->next, memory_order_acquire);

	return n < s->hdr->capacity ? n : s->hdr->capacity;
}

uint32_t util_av_shm_state(const struct util_av *av, uint32_t idx,
			   const void **addr)
{
	struct util_av_shm_entry *e = shm_entry(av->shm, idx);

	*addr = e + 1;
	return atomic_load_explicit(&e->state, memory_order_acquire);
}
