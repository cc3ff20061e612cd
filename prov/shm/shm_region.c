/* Shared-memory regions (shm_region.h, docs/shm-layout.md). */
#include "weft/core.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_queue.h"
#include "shm_region.h"

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

static void shm_path(char *buf, size_t len, const char *name)
{
	/* Per user, so two users' endpoints of the same name never meet. */
	snprintf(buf, len, "/weft-shm.%u.%s", (unsigned)getuid(), name);
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
	return off;
}

/*
 * Remove the region at path if its owner is gone.  `ours`: the path is the
 * name we are creating, so a half-made file can only be a dead creator's
 * (nobody else creates under our name); elsewhere (the sweep) a half-made
 * file may be another process being born, and is left alone.  Returns 0
 * when the path is free now, -FI_EADDRINUSE when its owner lives or it is
 * left alone, or a translated errno.
 */
static int reclaim_stale(const char *path, bool ours)
{
	struct shm_region_hdr *hdr;
	struct stat st;
	bool keep;
	int fd;

	fd = shm_open(path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return errno == ENOENT ? 0 : weft_errno(errno);
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(*hdr)) {
		close(fd);
		if (!ours)
			return -FI_EADDRINUSE;
		shm_unlink(path);
		return 0;
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
	shm_unlink(path);
	return 0;
}

int shm_region_create(const char *name, const struct shm_region_attr *attr,
		      struct shm_map *map)
{
	struct shm_region_hdr layout = { 0 }, *hdr;
	struct shm_queue *q;
	size_t size;
	int fd, ret, tries;

	if (!shm_name_valid(name) || !attr->queue_slots ||
	    (attr->queue_slots & (attr->queue_slots - 1)) || !attr->max_peers)
		return -FI_EINVAL;
	memset(map, 0, sizeof(*map));
	shm_path(map->path, sizeof(map->path), name);
	size = region_layout(attr, &layout);

	for (tries = 0;; tries++) {
		fd = shm_open(map->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			      0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries)
			return weft_errno(errno);
		ret = reclaim_stale(map->path, true);
		if (ret)
			return ret;
	}
	if (ftruncate(fd, (off_t)size)) {
		ret = weft_errno(errno);
		goto err_unlink;
	}
	hdr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		ret = weft_errno(errno);
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
	snprintf(hdr->name, sizeof(hdr->name), "%s", name);
	map->hdr = hdr;
	map->size = size;
	map->owner = true;
	q = shm_map_queue(map);
	shm_queue_init(q, attr->queue_slots);
	shm_buf_init(&q->buf_free, shm_map_bounce(map, 0),
		     shm_map_bounce_stride(map), attr->bounce_count);
	atomic_store_explicit(&hdr->ready, 1, memory_order_release);
	return 0;

err_unlink:
	close(fd);
	shm_unlink(map->path);
	return ret;
}

int shm_region_map(const char *name, struct shm_map *map)
{
	struct shm_region_hdr *hdr;
	struct stat st;
	int fd, ret;

	if (!shm_name_valid(name))
		return -FI_EINVAL;
	memset(map, 0, sizeof(*map));
	shm_path(map->path, sizeof(map->path), name);
	fd = shm_open(map->path, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return weft_errno(errno);
	if (fstat(fd, &st)) {
		ret = weft_errno(errno);
		goto err_close;
	}
	if ((size_t)st.st_size < SHM_PAGE) {
		ret = -FI_EAGAIN; /* its owner is still sizing it */
		goto err_close;
	}
	hdr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, 0);
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
	if (hdr->magic != SHM_MAGIC || hdr->version != SHM_VERSION ||
	    hdr->total_size != map->size) {
		ret = -FI_EINVAL; /* another layout version */
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
	if (map->owner)
		shm_unlink(map->path);
	munmap(map->hdr, map->size);
	map->hdr = NULL;
}

void shm_region_sweep(void)
{
	char prefix[32], path[SHM_NAME_MAX + 32];
	struct dirent *d;
	size_t plen;
	DIR *dir;

	snprintf(prefix, sizeof(prefix), "weft-shm.%u.", (unsigned)getuid());
	plen = strlen(prefix);
	dir = opendir("/dev/shm");
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, prefix, plen) ||
		    strlen(d->d_name) >= sizeof(path) - 1)
			continue;
		snprintf(path, sizeof(path), "/%s", d->d_name);
		/* Only regions whose owner is gone are removed. */
		if (!reclaim_stale(path, false))
			FI_INFO(&weft_core_prov, FI_LOG_CORE,
				"removed %s, left by a process that is gone\n",
				d->d_name);
	}
	closedir(dir);
}
