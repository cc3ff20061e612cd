// SPDX-License-Identifier: BSD-2-Clause
/*
 * A registration cache that notices freed memory (weft/util_mr_cache.h).
 *
 * Lock rule: while holding mc_lock nothing here may call anything that
 * can unmap memory (free, the owner's reg and dereg): the kernel would
 * hold that thread until the monitor reads the event, and the monitor
 * needs mc_lock to read it.  Entries to free are gathered under the lock
 * and freed after it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/userfaultfd.h>

#include "weft/ofi.h"

#include "weft/core.h"
#include "weft/util_mr_cache.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static pthread_mutex_t mc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dlist_entry mc_caches = { &mc_caches, &mc_caches };
static pthread_once_t mc_once = PTHREAD_ONCE_INIT;
static int mc_uffd = -1;
static int mc_stop = -1; /* eventfd: the monitor ends */
static pthread_t mc_thread;
static bool mc_running;
/* Bumped (under mc_lock) for every range the monitor hears of. */
static uint64_t mc_events;

static uintptr_t page_size(void)
{
	static uintptr_t ps;

	if (!ps)
		ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* Mark entries overlapping [start, end) invalid; mc_lock held. */
static void invalidate(uintptr_t start, uintptr_t end)
{
	struct dlist_entry *c, *e, *tmp;

	mc_events++;
	dlist_foreach(&mc_caches, c) {
		struct util_mr_cache *cache =
			container_of(c, struct util_mr_cache, caches);

		dlist_foreach_safe(&cache->live, e, tmp) {
			struct util_mr_cache_entry *en = container_of(
				e, struct util_mr_cache_entry, entry);

			if (en->end <= start || en->start >= end)
				continue;
			en->valid = false;
			dlist_remove(e);
			dlist_insert_tail(e, &cache->dead);
			cache->entries--;
			cache->bytes -= en->end - en->start;
			cache->invalidated++;
		}
	}
}

static void *monitor(void *arg)
{
	struct pollfd pfd[2] = {
		{ .fd = mc_uffd, .events = POLLIN },
		{ .fd = mc_stop, .events = POLLIN },
	};
	struct uffd_msg msg[16];
	ssize_t n;
	size_t i;

	(void)arg;
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		/* Read under the lock: the unmapping thread goes on once its
		 * event is read, and a lookup it makes after that must find
		 * the entries invalid already. */
		pthread_mutex_lock(&mc_lock);
		while ((n = read(mc_uffd, msg, sizeof(msg))) > 0) {
			for (i = 0; i < (size_t)n / sizeof(msg[0]); i++) {
				struct uffd_msg *m = &msg[i];

				switch (m->event) {
				case UFFD_EVENT_UNMAP:
				case UFFD_EVENT_REMOVE:
					invalidate(m->arg.remove.start,
						   m->arg.remove.end);
					break;
				case UFFD_EVENT_REMAP:
					invalidate(m->arg.remap.from,
						   m->arg.remap.from +
							   m->arg.remap.len);
					break;
				case UFFD_EVENT_PAGEFAULT: {
					/* Nothing is write-protected, so
					 * none should come; let it go on. */
					struct uffdio_writeprotect wp = {
						.range.start =
							m->arg.pagefault.address &
							~(page_size() - 1),
						.range.len = page_size(),
					};

					ioctl(mc_uffd, UFFDIO_WRITEPROTECT, &wp);
					break;
				}
				default:
					break;
				}
			}
		}
		pthread_mutex_unlock(&mc_lock);
	}
	return NULL;
}

static void mc_start(void)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_EVENT_UNMAP |
			    UFFD_FEATURE_EVENT_REMOVE |
			    UFFD_FEATURE_EVENT_REMAP,
	};
	sigset_t all, old;
	int fd;

	if (getenv("WEFT_MR_CACHE_NO_WATCH"))
		return;
	fd = (int)syscall(SYS_userfaultfd,
			  O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	if (ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		return;
	}
	mc_stop = eventfd(0, EFD_CLOEXEC);
	if (mc_stop < 0) {
		close(fd);
		return;
	}
	mc_uffd = fd;
	/* The monitor takes no signal meant for the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	mc_running = !pthread_create(&mc_thread, NULL, monitor, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!mc_running) {
		close(mc_stop);
		close(mc_uffd);
		mc_stop = mc_uffd = -1;
	}
}

__attribute__((destructor)) static void mc_end(void)
{
	uint64_t one = 1;

	if (!mc_running)
		return;
	if (write(mc_stop, &one, sizeof(one)) == sizeof(one))
		pthread_join(mc_thread, NULL);
	mc_running = false;
}

bool util_mr_cache_watching(void)
{
	pthread_once(&mc_once, mc_start);
	return mc_running;
}

/* Watch [start, end) for unmapping; whether it can be. */
static bool watch(uintptr_t start, uintptr_t end)
{
	struct uffdio_register r = {
		.range = { .start = start, .len = end - start },
		/* Write-protect mode with nothing protected: no fault is
		 * ever taken, and the range's events still come. */
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	return mc_running && !ioctl(mc_uffd, UFFDIO_REGISTER, &r);
}

void util_mr_cache_init(struct util_mr_cache *cache,
			const struct util_mr_cache_ops *ops, void *owner,
			size_t max_entries, size_t max_bytes)
{
	memset(cache, 0, sizeof(*cache));
	cache->ops = ops;
	cache->owner = owner;
	cache->max_entries = max_entries;
	cache->max_bytes = max_bytes;
	dlist_init(&cache->live);
	dlist_init(&cache->dead);
	if (!util_mr_cache_watching())
		cache->max_entries = 0;
	pthread_mutex_lock(&mc_lock);
	dlist_insert_tail(&cache->caches, &mc_caches);
	pthread_mutex_unlock(&mc_lock);
}

/* Move what may go (dead and unused) to out; mc_lock held. */
static void gather_dead(struct util_mr_cache *cache, struct dlist_entry *out)
{
	struct dlist_entry *e, *tmp;

	dlist_foreach_safe(&cache->dead, e, tmp) {
		if (container_of(e, struct util_mr_cache_entry, entry)->refs)
			continue;
		dlist_remove(e);
		dlist_insert_tail(e, out);
	}
}

/* Unused live entries past the bounds go, least recently used first. */
static void gather_over(struct util_mr_cache *cache, struct dlist_entry *out)
{
	struct dlist_entry *e = cache->live.prev, *prev;

	while (e != &cache->live &&
	       (cache->entries > cache->max_entries ||
		cache->bytes > cache->max_bytes)) {
		struct util_mr_cache_entry *en =
			container_of(e, struct util_mr_cache_entry, entry);

		prev = e->prev;
		if (!en->refs) {
			dlist_remove(e);
			dlist_insert_tail(e, out);
			cache->entries--;
			cache->bytes -= en->end - en->start;
		}
		e = prev;
	}
}

static void release(struct util_mr_cache *cache, struct dlist_entry *list)
{
	struct dlist_entry *e, *tmp;

	dlist_foreach_safe(list, e, tmp) {
		struct util_mr_cache_entry *en =
			container_of(e, struct util_mr_cache_entry, entry);

		dlist_remove(e);
		cache->ops->dereg(cache->owner, en->handle);
		free(en);
	}
}

int util_mr_cache_get(struct util_mr_cache *cache, const void *addr,
		      size_t len, uint64_t access,
		      struct util_mr_cache_entry **entry)
{
	uintptr_t ps = page_size();
	uintptr_t start = (uintptr_t)addr & ~(ps - 1);
	uintptr_t end = ((uintptr_t)addr + (len ? len : 1) + ps - 1) &
			~(ps - 1);
	struct util_mr_cache_entry *en;
	struct dlist_entry *e, *free_list;
	struct dlist_entry gone;
	uint64_t seq;
	bool kept;
	int ret;

	dlist_init(&gone);
	pthread_mutex_lock(&mc_lock);
	gather_dead(cache, &gone);
	dlist_foreach(&cache->live, e) {
		en = container_of(e, struct util_mr_cache_entry, entry);
		if (en->start <= start && en->end >= end &&
		    (en->access & access) == access) {
			en->refs++;
			cache->hits++;
			/* Most recently used first. */
			dlist_remove(e);
			dlist_insert_head(e, &cache->live);
			pthread_mutex_unlock(&mc_lock);
			release(cache, &gone);
			*entry = en;
			return 0;
		}
	}
	cache->misses++;
	seq = mc_events;
	pthread_mutex_unlock(&mc_lock);
	release(cache, &gone);

	en = calloc(1, sizeof(*en));
	if (!en)
		return -FI_ENOMEM;
	en->start = start;
	en->end = end;
	en->access = access;
	en->refs = 1;
	en->valid = true;
	/* Watched before it is registered: an unmapping from here on is
	 * heard of, and one before the registration makes it fail. */
	kept = cache->max_entries && end - start <= cache->max_bytes &&
	       watch(start, end);
	ret = cache->ops->reg(cache->owner, (void *)start, end - start, access,
			      &en->handle);
	if (ret) {
		free(en);
		return ret;
	}
	dlist_init(&gone);
	pthread_mutex_lock(&mc_lock);
	/* Anything unmapped meanwhile might have been this range. */
	if (mc_events != seq)
		kept = false;
	en->kept = kept;
	if (kept) {
		dlist_insert_head(&en->entry, &cache->live);
		cache->entries++;
		cache->bytes += end - start;
		gather_over(cache, &gone);
	} else {
		dlist_init(&en->entry);
	}
	pthread_mutex_unlock(&mc_lock);
	free_list = &gone;
	release(cache, free_list);
	*entry = en;
	return 0;
}

void util_mr_cache_put(struct util_mr_cache *cache,
		       struct util_mr_cache_entry *en)
{
	struct dlist_entry gone;
	bool drop;

	dlist_init(&gone);
	pthread_mutex_lock(&mc_lock);
	en->refs--;
	drop = !en->kept && !en->refs;
	gather_dead(cache, &gone);
	gather_over(cache, &gone);
	pthread_mutex_unlock(&mc_lock);
	release(cache, &gone);
	if (drop) {
		cache->ops->dereg(cache->owner, en->handle);
		free(en);
	}
}

size_t util_mr_cache_fini(struct util_mr_cache *cache)
{
	struct dlist_entry gone, *e, *tmp;
	size_t in_use = 0;

	dlist_init(&gone);
	pthread_mutex_lock(&mc_lock);
	dlist_remove(&cache->caches);
	dlist_foreach_safe(&cache->live, e, tmp) {
		dlist_remove(e);
		dlist_insert_tail(e, &gone);
	}
	dlist_foreach_safe(&cache->dead, e, tmp) {
		dlist_remove(e);
		dlist_insert_tail(e, &gone);
	}
	pthread_mutex_unlock(&mc_lock);
	dlist_foreach(&gone, e)
		if (container_of(e, struct util_mr_cache_entry, entry)->refs)
			in_use++;
	release(cache, &gone);
	cache->entries = cache->bytes = 0;
	return in_use;
}

void util_mr_cache_stats(struct util_mr_cache *cache,
			 struct util_mr_cache_stats *stats)
{
	pthread_mutex_lock(&mc_lock);
	stats->hits = cache->hits;
	stats->misses = cache->misses;
	stats->invalidated = cache->invalidated;
	stats->entries = cache->entries;
	stats->bytes = cache->bytes;
	pthread_mutex_unlock(&mc_lock);
}
