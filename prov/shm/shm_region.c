/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared-memory regions (shm_region.h, docs/shm-layout.md). */
#include "shm.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm_queue.h"
#include "shm_region.h"
#include "weft/util_topo.h"

#define SHM_PAGE 4096

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

bool shm_name_valid(const char *name)
{
	size_t len;

	if (!name)
		return false;
	len = strlen(name);
	return len > 0 && len < SHM_NAME_MAX && !strchr(name, '/');
}

bool shm_peer_name(const struct shm_peer *p, char *name)
{
	memcpy(name, p->name, SHM_NAME_MAX);
	return memchr(name, '\0', SHM_NAME_MAX) && shm_name_valid(name);
}

static void shm_path(char *buf, size_t len, const char *name)
{
	/* Per user, so two users' endpoints of the same name never meet. */
	snprintf(buf, len, "/weft-shm.%u.%s", (unsigned)geteuid(), name);
}

/*
 * The name a region is made under before it is published (shm_region_create):
 * its maker's pid, a count and random bits, so that no other creator and no
 * region name ("weft-shm." prefix) is the same, and another user cannot
 * take the names in advance.
 */
static void shm_path_new(char *buf, size_t len)
{
	static _Atomic unsigned count;
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint64_t)(uintptr_t)buf ^ (uint64_t)time(NULL);
	snprintf(buf, len, "/weft-shm-new.%u.%d.%u.%016llx",
		 (unsigned)geteuid(), (int)getpid(), atomic_fetch_add(&count, 1),
		 (unsigned long long)r);
}

uint64_t shm_pid_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: count fields
	 * from the last ')'.  starttime is field 22; ')' ends field 2. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (sscanf(p, "%llu", &start) != 1)
		return 0;
	return start;
}

bool shm_region_owner_alive(const struct shm_region_hdr *hdr)
{
	if (hdr->pid <= 0)
		return false;
	if (kill(hdr->pid, 0) && errno == ESRCH)
		return false;
	/* A live pid of the same start time is the owner; a different start
	 * time is a new process that reused the pid. */
	return !hdr->pid_start || shm_pid_start(hdr->pid) == hdr->pid_start;
}

static size_t region_layout(const struct shm_region_attr *attr,
			    struct shm_region_hdr *hdr)
{
	size_t off = SHM_PAGE;

	hdr->queue_off = off;
	off += align_up(sizeof(struct shm_queue) +
				(size_t)attr->queue_slots *
					sizeof(struct shm_slot),
			SHM_PAGE);
	hdr->peers_off = off;
	off += align_up((size_t)attr->max_peers * sizeof(struct shm_peer),
			SHM_PAGE);
	hdr->bounce_off = off;
	off += align_up(2 * (size_t)attr->bounce_count *
				(sizeof(struct shm_bounce) +
				 align_up(attr->bounce_size, SHM_CACHELINE)),
			SHM_PAGE);
	hdr->small_off = off;
	off += align_up((size_t)attr->small_count *
				(sizeof(struct shm_bounce) +
				 align_up(attr->small_size, SHM_CACHELINE)),
			SHM_PAGE);
	return off;
}

/*
 * Check a header (a copy: the mapping may change under us) against the
 * size of its file and fill the map's geometry from it.  Every section must
 * start on a page after the previous one ends and fit in the file, with no
 * sum or product that could overflow.  Returns 0 or -FI_EINVAL.
 */
static int map_geometry(const struct shm_region_hdr *h, size_t size,
			struct shm_map *map)
{
	uint64_t end, stride;

	if (h->magic != SHM_MAGIC || h->version != SHM_VERSION ||
	    h->hdr_size != sizeof(*h) || h->total_size != size)
		return -FI_EINVAL;

	if (!h->queue_slots || (h->queue_slots & (h->queue_slots - 1)) ||
	    h->queue_off < SHM_PAGE || h->queue_off % SHM_PAGE ||
	    h->queue_off > size ||
	    size - h->queue_off <
		    sizeof(struct shm_queue) +
			    (uint64_t)h->queue_slots * sizeof(struct shm_slot))
		return -FI_EINVAL;
	end = h->queue_off + sizeof(struct shm_queue) +
	      (uint64_t)h->queue_slots * sizeof(struct shm_slot);

	/* A slot names its sender's entry in 16 bits. */
	if (!h->max_peers || h->max_peers > (1u << 16) || h->peers_off < end ||
	    h->peers_off % SHM_PAGE || h->peers_off > size ||
	    size - h->peers_off <
		    (uint64_t)h->max_peers * sizeof(struct shm_peer))
		return -FI_EINVAL;
	end = h->peers_off + (uint64_t)h->max_peers * sizeof(struct shm_peer);

	/* Two pools of bounce_count buffers: inbound, then the owner's. */
	stride = sizeof(struct shm_bounce) + (uint64_t)h->bounce_size;
	if (h->bounce_size % SHM_CACHELINE || h->bounce_off < end ||
	    h->bounce_off % SHM_PAGE || h->bounce_off > size ||
	    (h->bounce_count &&
	     stride > (size - h->bounce_off) / (2 * (uint64_t)h->bounce_count)))
		return -FI_EINVAL;
	end = h->bounce_off + 2 * (uint64_t)h->bounce_count * stride;

	/* The small buffers; their indices follow both pools' in 32 bits. */
	stride = sizeof(struct shm_bounce) + (uint64_t)h->small_size;
	if (h->small_size % SHM_CACHELINE || h->small_off < end ||
	    h->small_off % SHM_PAGE || h->small_off > size ||
	    h->small_count > SHM_SMALL_MAX ||
	    (h->small_count &&
	     stride > (size - h->small_off) / h->small_count))
		return -FI_EINVAL;

	map->queue = (struct shm_queue *)((char *)map->hdr + h->queue_off);
	map->peers = (struct shm_peer *)((char *)map->hdr + h->peers_off);
	map->bounce = (char *)map->hdr + h->bounce_off;
	map->small = (char *)map->hdr + h->small_off;
	map->queue_slots = h->queue_slots;
	map->max_peers = h->max_peers;
	map->bounce_count = h->bounce_count;
	map->bounce_size = h->bounce_size;
	map->small_count = h->small_count;
	map->small_size = h->small_size;
	return 0;
}

/*
 * Whether an open region file is this user's alone: a regular file owned by
 * our effective uid (the one files are created with) with no group or other
 * permission bits.  Anyone else's file, or one others may write, is not a
 * region of ours, whatever its name and header say.
 */
static bool file_ours(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() &&
	       !(st->st_mode & (S_IRWXG | S_IRWXO));
}

bool shm_stat_ours(const struct stat *st)
{
	return file_ours(st);
}

/*
 * Remove the file at path if it is still the one judged (`judged`, its
 * fstat): between the judging and now, another process may have taken a
 * stale name over with a live region.  The file is moved aside first, so
 * that what is removed is what was looked at; a file moved aside that is
 * another one goes back.  Returns 0 when the path no longer holds the
 * judged file, -FI_EADDRINUSE when it holds another one.
 */
static int remove_judged(const char *path, const struct stat *judged)
{
	char aside[SHM_NAME_MAX + 32], from[SHM_NAME_MAX + 48],
		to[SHM_NAME_MAX + 48];
	struct stat st;

	shm_path_new(aside, sizeof(aside));
	snprintf(from, sizeof(from), "/dev/shm%s", path);
	snprintf(to, sizeof(to), "/dev/shm%s", aside);
	if (rename(from, to))
		return errno == ENOENT ? 0 : weft_errno(errno);
	if (!lstat(to, &st) && st.st_dev == judged->st_dev &&
	    st.st_ino == judged->st_ino) {
		unlink(to);
		return 0;
	}
	/* Made since, by a process that lives: its name again. */
	if (link(to, from))
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"%s was replaced while it was judged stale, and could "
			"not be put back: %s\n",
			from, strerror(errno));
	unlink(to);
	return -FI_EADDRINUSE;
}

/*
 * Remove the region at path if its owner is gone.  `ours`: the path is the
 * name we are publishing, and regions are published whole (a link from the
 * file they were made under), so a half-made file there is nobody's region;
 * elsewhere (the sweep) a half-made file may be an older creator being
 * born, and is left alone.  Returns 0
 * when the path is free now, -FI_EADDRINUSE when its owner lives or it is
 * left alone, or a translated errno.
 */
static int reclaim_stale(const char *path, bool ours)
{
	struct shm_region_hdr *hdr;
	struct stat st;
	bool keep;
	int fd;

	fd = shm_open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return errno == ENOENT ? 0 : weft_errno(errno);
	if (fstat(fd, &st) || !file_ours(&st)) {
		/* Not ours to judge, nor to remove. */
		close(fd);
		return -FI_EADDRINUSE;
	}
	if ((size_t)st.st_size < sizeof(*hdr)) {
		close(fd);
		if (!ours)
			return -FI_EADDRINUSE;
		return remove_judged(path, &st);
	}
	hdr = mmap(NULL, sizeof(*hdr), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	close(fd);
	if (hdr == MAP_FAILED)
		return weft_errno(errno);
	if (hdr->magic != SHM_MAGIC ||
	    !atomic_load_explicit(&hdr->ready, memory_order_acquire))
		keep = !ours; /* being set up, unless it is ours to make */
	else
		keep = shm_region_owner_alive(hdr);
	/* Peers that still map it must learn it is nobody's any more
	 * (docs/shm-layout.md: a successor takes the name over). */
	if (!keep && hdr->magic == SHM_MAGIC)
		atomic_store_explicit(&hdr->gone, 1, memory_order_release);
	munmap(hdr, sizeof(*hdr));
	if (keep)
		return -FI_EADDRINUSE;
	return remove_judged(path, &st);
}

/*
 * Whether the file at path (which exists) belongs to another user: such a
 * file is nobody's region of ours, we may neither open nor remove it, and
 * it holds the name for good.  Returns 0 when it is ours (or already gone),
 * -FI_EADDRINUSE after a warning otherwise.
 */
static int taken_by_other_user(const char *path)
{
	char file[SHM_NAME_MAX + 48];
	struct stat st;

	snprintf(file, sizeof(file), "/dev/shm%s", path);
	if (lstat(file, &st) || st.st_uid == geteuid())
		return 0;
	FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
		"cannot create %s: the name is taken by a file of uid %u, "
		"not this user's (%u)\n",
		file, (unsigned)st.st_uid, (unsigned)geteuid());
	return -FI_EADDRINUSE;
}

/* link(2) for shm_open names. */
static int shm_link(const char *from, const char *to)
{
	char f[SHM_NAME_MAX + 48], t[SHM_NAME_MAX + 48];

	snprintf(f, sizeof(f), "/dev/shm%s", from);
	snprintf(t, sizeof(t), "/dev/shm%s", to);
	return link(f, t);
}

/*
 * Bind a new region's memory, not yet allocated, to the NUMA node of the
 * calling thread (the one enabling the endpoint, which will read it).
 * Nothing to do on a machine of one node, or where memory cannot be bound.
 */
static void bind_near(const char *name, void *addr, size_t size)
{
	int node = util_topo_bind_here(addr, size);

	if (node >= 0)
		FI_INFO(&shm_prov, FI_LOG_EP_CTRL,
			"region %s: memory bound to NUMA node %d\n", name,
			node);
	else
		FI_INFO(&shm_prov, FI_LOG_EP_CTRL,
			"region %s: memory left where the system puts it: "
			"%s\n",
			name,
			node == -FI_ENOSYS ? "memory binding is not supported" :
			node != -FI_ENODATA ? "binding failed" :
			util_topo_numa_count() <= 1 ? "one NUMA node" :
			"the thread's NUMA node is unknown");
}

int shm_region_create(const char *name, const struct shm_region_attr *attr,
		      struct shm_map *map)
{
	struct shm_region_hdr layout = { 0 }, *hdr;
	char tmp[SHM_NAME_MAX + 32];
	size_t size;
	int fd, ret, tries;

	if (!shm_name_valid(name) || !attr->queue_slots ||
	    (attr->queue_slots & (attr->queue_slots - 1)) || !attr->max_peers)
		return -FI_EINVAL;
	memset(map, 0, sizeof(*map));
	shm_path(map->path, sizeof(map->path), name);
	size = region_layout(attr, &layout);

	/* Made under a name of its own, published whole below: nobody ever
	 * finds the name holding a region still being set up. */
	for (tries = 0;; tries++) {
		shm_path_new(tmp, sizeof(tmp));
		fd = shm_open(tmp,
			      O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			      0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries == 16)
			return weft_errno(errno);
	}
	hdr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		ret = weft_errno(errno);
		goto err_unlink;
	}
	/* Peers write the queue and the inbound buffers, the owner reads
	 * them: their pages go on the owner's NUMA node.  The policy is set
	 * before any page exists, so the reservation below takes them
	 * there. */
	bind_near(name, hdr, size);
	/* Reserve the memory now: a file merely sized would be sparse, and
	 * the first write to a page tmpfs has no room for kills with SIGBUS. */
	ret = posix_fallocate(fd, 0, (off_t)size);
	if (ret) {
		if (ret == ENOSPC)
			FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
				"no room in /dev/shm for region %s: it needs "
				"%zu bytes\n",
				name, size);
		ret = weft_errno(ret);
		munmap(hdr, size);
		goto err_unlink;
	}
	close(fd);
	fd = -1;

	/* The file is zero-filled: write only what is not zero. */
	hdr->magic = SHM_MAGIC;
	hdr->version = SHM_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->total_size = size;
	hdr->pid = getpid();
	hdr->pid_start = shm_pid_start(getpid());
	hdr->flags = attr->flags;
	hdr->queue_off = layout.queue_off;
	hdr->peers_off = layout.peers_off;
	hdr->bounce_off = layout.bounce_off;
	hdr->queue_slots = attr->queue_slots;
	hdr->max_peers = attr->max_peers;
	hdr->bounce_count = attr->bounce_count;
	hdr->bounce_size = (uint32_t)align_up(attr->bounce_size, SHM_CACHELINE);
	hdr->small_off = layout.small_off;
	hdr->small_count = attr->small_count;
	hdr->small_size = (uint32_t)align_up(attr->small_size, SHM_CACHELINE);
	snprintf(hdr->name, sizeof(hdr->name), "%s", name);
	snprintf(hdr->mrt, sizeof(hdr->mrt), "%s", attr->mrt ? attr->mrt : "");
	map->hdr = hdr;
	map->size = size;
	ret = map_geometry(hdr, size, map);
	if (ret)
		goto err_unmap;
	shm_queue_init(map->queue, map->queue_slots);
	shm_buf_init(&map->queue->buf_free, shm_map_bounce(map, 0),
		     shm_map_bounce_stride(map), map->bounce_count);
	shm_buf_init(&map->queue->small_free, shm_map_small(map, 0),
		     shm_map_small_stride(map), map->small_count);
	atomic_store_explicit(&hdr->ready, 1, memory_order_release);

	/* Publish: link fails if the name is taken, by a live region or a
	 * stale one (taken over once), or by another user's file. */
	for (tries = 0;; tries++) {
		if (!shm_link(tmp, map->path))
			break;
		ret = errno == EEXIST ? 0 : weft_errno(errno);
		if (!ret && tries)
			ret = -FI_EADDRINUSE;
		if (!ret)
			ret = taken_by_other_user(map->path);
		if (!ret)
			ret = reclaim_stale(map->path, true);
		if (ret)
			goto err_unmap;
	}
	shm_unlink(tmp);
	map->owner = true;
	map->owner_pid = getpid();
	return 0;

err_unmap:
	munmap(hdr, size);
	map->hdr = NULL;
	shm_unlink(tmp);
	return ret;
err_unlink:
	close(fd);
	shm_unlink(tmp);
	return ret;
}

int shm_region_map(const char *name, struct shm_map *map)
{
	struct shm_region_hdr *hdr, copy;
	struct stat st;
	int fd, ret;

	if (!shm_name_valid(name))
		return -FI_EINVAL;
	memset(map, 0, sizeof(*map));
	shm_path(map->path, sizeof(map->path), name);
	/* Everything below looks at the file opened, never at the path
	 * again. */
	fd = shm_open(map->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return weft_errno(errno);
	if (fstat(fd, &st)) {
		ret = weft_errno(errno);
		goto err_close;
	}
	if (!file_ours(&st)) {
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"/dev/shm%s is not a region of this user's (owner "
			"%u, mode %o): refused\n",
			map->path, (unsigned)st.st_uid,
			(unsigned)(st.st_mode & 07777));
		ret = -FI_EACCES;
		goto err_close;
	}
	if (!st.st_size) {
		ret = -FI_EAGAIN; /* its owner is still sizing it */
		goto err_close;
	}
	if ((uint64_t)st.st_size < SHM_PAGE) {
		ret = -FI_EINVAL; /* sized at once (posix_fallocate): cut */
		goto err_close;
	}
	if ((uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size) {
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"/dev/shm%s has memory not reserved: writing into it "
			"could fault; refused\n",
			map->path);
		ret = -FI_ENOSPC;
		goto err_close;
	}
	hdr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	if (hdr == MAP_FAILED) {
		ret = weft_errno(errno);
		goto err_close;
	}
	close(fd);
	map->hdr = hdr;
	map->size = (size_t)st.st_size;
	if (!atomic_load_explicit(&hdr->ready, memory_order_acquire)) {
		ret = -FI_EAGAIN;
		goto err_unmap;
	}
	memcpy(&copy, hdr, sizeof(copy));
	ret = map_geometry(&copy, map->size, map);
	if (ret) {
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"/dev/shm%s: the header does not describe a region of "
			"this layout in %zu bytes: refused\n",
			map->path, map->size);
		goto err_unmap;
	}
	return 0;

err_unmap:
	munmap(map->hdr, map->size);
	map->hdr = NULL;
	return ret;
err_close:
	close(fd);
	return ret;
}

void shm_region_unmap(struct shm_map *map)
{
	if (!map->hdr)
		return;
	/* A child forked after the region was made unmaps its copy; the
	 * file stays its parent's. */
	if (map->owner && map->owner_pid == getpid())
		shm_unlink(map->path);
	munmap(map->hdr, map->size);
	map->hdr = NULL;
}

/*
 * Remove a file a creator that is gone left before publishing it (the
 * sweep): /dev/shm/name is "weft-shm-new.<uid>.<pid>.<n>", prefix up to
 * the pid.
 */
static void reclaim_unpublished(const char *name, const char *prefix)
{
	char path[SHM_NAME_MAX + 32];
	struct stat st;
	long pid;
	int fd;

	pid = strtol(name + strlen(prefix), NULL, 10);
	if (pid <= 0 || !kill((pid_t)pid, 0) || errno != ESRCH ||
	    strlen(name) >= sizeof(path) - 1)
		return;
	snprintf(path, sizeof(path), "/%s", name);
	fd = shm_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && file_ours(&st))
		shm_unlink(path);
	close(fd);
}

/* A bell (shm_conn.c) whose region is gone: its owner is gone too. */
static void reclaim_bell(const char *name)
{
	char path[SHM_NAME_MAX + 48];
	struct stat st;

	if (strlen(name) >= SHM_NAME_MAX)
		return;
	snprintf(path, sizeof(path), "/dev/shm/weft-shm.%u.%s",
		 (unsigned)geteuid(), name);
	if (!lstat(path, &st) || errno != ENOENT)
		return;
	snprintf(path, sizeof(path), "/dev/shm/weft-bell.%u.%s",
		 (unsigned)geteuid(), name);
	if (!lstat(path, &st) && S_ISFIFO(st.st_mode) &&
	    st.st_uid == geteuid())
		unlink(path);
}

void shm_region_sweep(void)
{
	char prefix[32], new_prefix[40], path[SHM_NAME_MAX + 32];
	struct dirent *d;
	size_t plen;
	DIR *dir;

	char bell_prefix[32], mrt_prefix[40];

	snprintf(prefix, sizeof(prefix), "weft-shm.%u.", (unsigned)geteuid());
	snprintf(bell_prefix, sizeof(bell_prefix), "weft-bell.%u.",
		 (unsigned)geteuid());
	snprintf(new_prefix, sizeof(new_prefix), "weft-shm-new.%u.",
		 (unsigned)geteuid());
	snprintf(mrt_prefix, sizeof(mrt_prefix), "weft-shm-mrt.%u.",
		 (unsigned)geteuid());
	plen = strlen(prefix);
	dir = opendir("/dev/shm");
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (!strncmp(d->d_name, new_prefix, strlen(new_prefix))) {
			reclaim_unpublished(d->d_name, new_prefix);
			continue;
		}
		/* Registration tables: weft-shm-mrt.<uid>.<pid>.<random>. */
		if (!strncmp(d->d_name, mrt_prefix, strlen(mrt_prefix))) {
			reclaim_unpublished(d->d_name, mrt_prefix);
			continue;
		}
		if (strncmp(d->d_name, prefix, plen) ||
		    strlen(d->d_name) >= sizeof(path) - 1)
			continue;
		snprintf(path, sizeof(path), "/%s", d->d_name);
		/* Only regions whose owner is gone are removed. */
		if (!reclaim_stale(path, false))
			FI_INFO(&shm_prov, FI_LOG_EP_CTRL,
				"removed %s, left by a process that is gone\n",
				d->d_name);
	}
	/* Bells after regions: a bell is stale once its region is gone,
	 * and the directory may list a bell before the region this sweep
	 * removes (tmpfs lists the newest first). */
	rewinddir(dir);
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, bell_prefix, strlen(bell_prefix)))
			reclaim_bell(d->d_name + strlen(bell_prefix));
	closedir(dir);
}
