/* SPDX-License-Identifier: BSD-2-Clause */
/* The registration table (shm_mrt.h, docs/shm-layout.md). */
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm_mrt.h"

/* Entries of a table: registrations past what fits are not published
 * (peers then ask the owner). */
#define SHM_MRT_ENTRIES 1024
/* Longest a close waits for a live peer to drop its pin. */
#define SHM_MRT_WITHDRAW_MS 10000

static pthread_mutex_t mrt_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t mrt_size(uint32_t entries)
{
	return sizeof(struct shm_mrt_hdr) +
	       (size_t)entries * sizeof(struct shm_mrt_entry);
}

static uint32_t mrt_slot(uint64_t key, uint32_t entries)
{
	key ^= key >> 31;
	key *= 0x9e3779b97f4a7c15ULL;
	key ^= key >> 29;
	return (uint32_t)key & (entries - 1);
}

static struct shm_mrt_entry *mrt_entry(struct shm_mrt_map *m, uint64_t key,
				       uint32_t i)
{
	return &m->entry[(mrt_slot(key, m->entries) + i) & (m->entries - 1)];
}

/* ---- the owner's side --------------------------------------------------- */

static struct shm_mrt *mrt_of(struct util_mr_publisher *pub)
{
	return container_of(pub, struct shm_mrt, pub);
}

/* Map lock held (util_mr.c). */
static void mrt_publish(struct util_mr_publisher *pub,
			const struct util_mr_pub *reg)
{
	struct shm_mrt_map *m = &mrt_of(pub)->m;
	struct shm_mrt_entry *e;
	uint32_t i;

	for (i = 0; i < SHM_MRT_PROBE; i++) {
		e = mrt_entry(m, reg->key, i);
		if (e->live)
			continue;
		atomic_fetch_add(&e->seq, 1); /* odd: being written */
		e->key = reg->key;
		e->base = reg->base;
		e->len = reg->len;
		e->addr = (uint64_t)(uintptr_t)reg->addr;
		e->access = reg->access & (FI_REMOTE_READ | FI_REMOTE_WRITE);
		atomic_store_explicit(&e->events,
				      (uint32_t)(reg->events & UTIL_MR_CNTR_EVENTS),
				      memory_order_relaxed);
		e->live = 1;
		atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
		return;
	}
	FI_INFO(&shm_prov, FI_LOG_MR,
		"registration table %s full around key %#llx: peers reach it "
		"through this process's progress\n",
		mrt_of(pub)->name, (unsigned long long)reg->key);
}

/* Whether pid, holding a pin, can no longer use it (gone, or a zombie). */
static bool pin_holder_gone(pid_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* Wait until no pin holds e; clear pins of processes that are gone. */
static void mrt_drain(struct shm_mrt *t, struct shm_mrt_entry *e)
{
	struct timespec start = { 0, 0 }, now, nap = { 0, 20000 };
	bool busy;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		busy = false;
		for (i = 0; i < SHM_MRT_PINS; i++) {
			int32_t pid = atomic_load(&e->pin[i]);

			if (!pid)
				continue;
			if (pin_holder_gone(pid))
				atomic_compare_exchange_strong(&e->pin[i], &pid,
							       0);
			else
				busy = true;
		}
		if (!busy)
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - start.tv_sec) * 1000 +
			    (now.tv_nsec - start.tv_nsec) / 1000000 >
		    SHM_MRT_WITHDRAW_MS) {
			FI_WARN(&shm_prov, FI_LOG_MR,
				"%s: a peer kept key %#llx pinned for %d ms; "
				"closing the registration anyway\n",
				t->name, (unsigned long long)e->key,
				SHM_MRT_WITHDRAW_MS);
			for (i = 0; i < SHM_MRT_PINS; i++)
				atomic_store(&e->pin[i], 0);
			return;
		}
		nanosleep(&nap, NULL);
	}
}

/* Withdraw a live entry: once this returns, no peer uses it. */
static void mrt_kill(struct shm_mrt *t, struct shm_mrt_entry *e)
{
	/* Odd first, then look at the pins (both sequentially consistent,
	 * as a peer's pin and its second look at seq): either the peer sees
	 * the change or we see its pin. */
	atomic_fetch_add(&e->seq, 1);
	mrt_drain(t, e);
	e->live = 0;
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
}

/* Map lock held (util_mr.c). */
static void mrt_withdraw(struct util_mr_publisher *pub, uint64_t key)
{
	struct shm_mrt *t = mrt_of(pub);
	struct shm_mrt_entry *e;
	uint32_t i;

	for (i = 0; i < SHM_MRT_PROBE; i++) {
		e = mrt_entry(&t->m, key, i);
		if (!e->live || e->key != key)
			continue;
		mrt_kill(t, e);
		return;
	}
}

/*
 * Map lock held (util_mr.c): counters were bound to a published
 * registration.  No need to make peers back off: one that pinned the
 * entry before reads the old value, and its operation raced the binding
 * anyway; later ones read the new one (release here, acquire there).
 */
static void mrt_events(struct util_mr_publisher *pub, uint64_t key,
		       uint64_t events)
{
	struct shm_mrt *t = mrt_of(pub);
	struct shm_mrt_entry *e;
	uint32_t i;

	for (i = 0; i < SHM_MRT_PROBE; i++) {
		e = mrt_entry(&t->m, key, i);
		if (!e->live || e->key != key)
			continue;
		atomic_store_explicit(&e->events,
				      (uint32_t)(events & UTIL_MR_CNTR_EVENTS),
				      memory_order_release);
		return;
	}
}

static int mrt_atomic_lock(struct util_mr_publisher *pub)
{
	return shm_mrt_lock(&mrt_of(pub)->m);
}

static void mrt_atomic_unlock(struct util_mr_publisher *pub)
{
	shm_mrt_unlock(&mrt_of(pub)->m);
}


/* Create the file, sized and with its memory reserved, and map it. */
static int mrt_create(struct shm_mrt *t)
{
	size_t size = mrt_size(SHM_MRT_ENTRIES);
	char path[SHM_NAME_MAX + 1];
	uint32_t r;
	void *addr;
	int fd, ret, tries;

	for (tries = 0;; tries++) {
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint32_t)time(NULL) ^ (uint32_t)tries;
		snprintf(t->name, sizeof(t->name), "weft-shm-mrt.%u.%d.%08x",
			 (unsigned)geteuid(), (int)getpid(), r);
		snprintf(path, sizeof(path), "/%s", t->name);
		fd = shm_open(path,
			      O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			      0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries == 16)
			return -errno;
	}
	ret = posix_fallocate(fd, 0, (off_t)size);
	if (ret) {
		FI_WARN(&shm_prov, FI_LOG_DOMAIN,
			"no room for the registration table %s (%zu bytes)\n",
			t->name, size);
		ret = ret == ENOSPC ? -FI_ENOSPC : -ret;
		goto err_unlink;
	}
	addr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (addr == MAP_FAILED) {
		ret = -errno;
		goto err_unlink;
	}
	close(fd);
	t->m.hdr = addr;
	t->m.entry = (struct shm_mrt_entry *)(t->m.hdr + 1);
	t->m.size = size;
	t->m.entries = SHM_MRT_ENTRIES;
	t->m.pid = getpid();
	t->creator = getpid();
	atomic_store(&t->m.hdr->atomic_lock.word, 0);
	t->m.hdr->entries = SHM_MRT_ENTRIES;
	t->m.hdr->pid = getpid();
	t->m.hdr->total_size = size;
	t->m.hdr->hdr_size = sizeof(struct shm_mrt_hdr);
	t->m.hdr->version = SHM_VERSION;
	atomic_thread_fence(memory_order_release);
	t->m.hdr->magic = SHM_MRT_MAGIC;
	return 0;

err_unlink:
	close(fd);
	shm_unlink(path);
	return ret;
}

int shm_mrt_get(struct util_mr_map *map, struct shm_mrt **out)
{
	struct util_mr_publisher *pub;
	struct shm_mrt *t;
	int ret;

	pthread_mutex_lock(&mrt_lock);
	pub = util_mr_map_publisher(map);
	if (pub) {
		ret = -FI_EBUSY;
		if (pub->publish == mrt_publish) {
			t = mrt_of(pub);
			t->refs++;
			*out = t;
			ret = 0;
		}
		goto out;
	}
	ret = -FI_ENOMEM;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out;
	t->pub.publish = mrt_publish;
	t->pub.withdraw = mrt_withdraw;
	t->pub.events = mrt_events;
	t->pub.atomic_lock = mrt_atomic_lock;
	t->pub.atomic_unlock = mrt_atomic_unlock;
	t->map = map;
	t->refs = 1;
	ret = mrt_create(t);
	if (ret) {
		free(t);
		goto out;
	}
	ret = util_mr_map_attach(map, &t->pub);
	if (ret) {
		t->refs = 1;
		pthread_mutex_unlock(&mrt_lock);
		shm_mrt_put(t);
		return ret;
	}
	*out = t;
out:
	pthread_mutex_unlock(&mrt_lock);
	return ret;
}

void shm_mrt_put(struct shm_mrt *t)
{
	char path[SHM_NAME_MAX + 1];

	pthread_mutex_lock(&mrt_lock);
	if (--t->refs) {
		pthread_mutex_unlock(&mrt_lock);
		return;
	}
	/* Registrations may outlive the endpoints: the map withdraws what
	 * is left, so that no peer that still maps the table touches that
	 * memory once the last endpoint is closed. */
	util_mr_map_detach(t->map, &t->pub);
	pthread_mutex_unlock(&mrt_lock);
	snprintf(path, sizeof(path), "/%s", t->name);
	if (t->creator == getpid())
		shm_unlink(path);
	shm_mrt_unmap(&t->m);
	free(t);
}

/* ---- a peer's side ------------------------------------------------------ */

static bool mrt_name_valid(const char *name)
{
	static const char prefix[] = "weft-shm-mrt.";

	return memchr(name, '\0', SHM_NAME_MAX) &&
	       !strncmp(name, prefix, sizeof(prefix) - 1) &&
	       !strchr(name, '/');
}

int shm_mrt_map(const char *name, pid_t pid, struct shm_mrt_map *m)
{
	char path[SHM_NAME_MAX + 1];
	struct shm_mrt_hdr h;
	struct stat st;
	void *addr;
	int fd, ret;

	memset(m, 0, sizeof(*m));
	if (!mrt_name_valid(name))
		return -FI_EINVAL;
	snprintf(path, sizeof(path), "/%s", name);
	fd = shm_open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return -errno;
	ret = -FI_EACCES;
	if (fstat(fd, &st) || !shm_stat_ours(&st)) {
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"%s is not this user's alone: not used\n", path);
		goto out;
	}
	ret = -FI_EINVAL;
	if ((size_t)st.st_size < sizeof(h) ||
	    (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size)
		goto out;
	addr = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	if (addr == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	memcpy(&h, addr, sizeof(h));
	atomic_thread_fence(memory_order_acquire);
	if (h.magic != SHM_MRT_MAGIC || h.version != SHM_VERSION ||
	    h.hdr_size != sizeof(h) || h.pid != pid || !h.entries ||
	    (h.entries & (h.entries - 1)) || h.entries > (1u << 24) ||
	    h.total_size != (uint64_t)st.st_size ||
	    h.total_size != mrt_size(h.entries)) {
		FI_WARN(&shm_prov, FI_LOG_EP_CTRL,
			"%s: not a registration table of process %d\n", path,
			(int)pid);
		munmap(addr, (size_t)st.st_size);
		goto out;
	}
	m->hdr = addr;
	m->entry = (struct shm_mrt_entry *)(m->hdr + 1);
	m->size = (size_t)st.st_size;
	m->entries = h.entries;
	m->pid = pid;
	ret = 0;
out:
	close(fd);
	return ret;
}

void shm_mrt_unmap(struct shm_mrt_map *m)
{
	if (m->hdr)
		munmap(m->hdr, m->size);
	memset(m, 0, sizeof(*m));
}

static _Atomic int32_t *mrt_take_pin(struct shm_mrt_entry *e, int32_t self)
{
	int i;

	for (i = 0; i < SHM_MRT_PINS; i++) {
		int32_t zero = 0;

		if (atomic_compare_exchange_strong(&e->pin[i], &zero, self))
			return &e->pin[i];
	}
	return NULL;
}

int shm_mrt_pin(struct shm_mrt_map *m, uint64_t key, uint64_t addr,
		uint64_t len, uint64_t access, uint64_t *raddr,
		_Atomic int32_t **pin, uint64_t *events)
{
	struct shm_mrt_entry *e, c;
	uint64_t s1, off;
	uint32_t i;

	for (i = 0; i < SHM_MRT_PROBE; i++) {
		e = mrt_entry(m, key, i);
		s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
		if (s1 & 1)
			continue;
		c.key = e->key;
		c.live = e->live;
		c.base = e->base;
		c.len = e->len;
		c.addr = e->addr;
		c.access = e->access;
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&e->seq, memory_order_relaxed) != s1 ||
		    !c.live || c.key != key)
			continue;
		if ((c.access & access) != access)
			return -FI_EACCES;
		/* Inside [base, base + len), never computing addr + len. */
		if (addr < c.base)
			return -FI_EINVAL;
		off = addr - c.base;
		if (off > c.len || len > c.len - off)
			return -FI_EINVAL;
		*pin = mrt_take_pin(e, (int32_t)weft_pid());
		if (!*pin)
			return 1;
		/* Still the entry we checked (see mrt_withdraw)? */
		if (atomic_load(&e->seq) != s1) {
			shm_mrt_unpin(*pin);
			return 1;
		}
		*raddr = c.addr + off;
		if (events)
			*events = atomic_load_explicit(&e->events,
						       memory_order_acquire) &
				  UTIL_MR_CNTR_EVENTS;
		return 0;
	}
	return 1;
}

void shm_mrt_unpin(_Atomic int32_t *pin)
{
	atomic_store_explicit(pin, 0, memory_order_release);
}

/* This thread's value of a held lock word (shm_layout.h). */
static uint64_t lock_self(void)
{
	return (uint64_t)(uint32_t)weft_tid() << 32 | (uint32_t)weft_pid();
}

int shm_mrt_lock(struct shm_mrt_map *m)
{
	_Atomic uint64_t *w = &m->hdr->atomic_lock.word;
	struct timespec start = { 0, 0 }, now, nap = { 0, 20000 };
	uint64_t self = lock_self(), seen, looked = 0;
	unsigned int spins = 0;
	bool timing = false;
	long ms;

	for (;;) {
		seen = 0;
		if (atomic_compare_exchange_weak_explicit(
			    w, &seen, self, memory_order_acquire,
			    memory_order_relaxed))
			return 0;
		if (!seen || ++spins < 1024) {
			weft_cpu_relax();
			continue;
		}
		/* Held a while: its holder is preempted, stopped or gone.
		 * The clock counts from here (a read of it may be a system
		 * call: not for a lock taken at once). */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!timing) {
			start = now;
			timing = true;
		}
		ms = (now.tv_sec - start.tv_sec) * 1000 +
		     (now.tv_nsec - start.tv_nsec) / 1000000;
		if (ms - (long)looked >= 10) {
			looked = (uint64_t)ms;
			if (pin_holder_gone((pid_t)(uint32_t)seen) &&
			    atomic_compare_exchange_strong(w, &seen, self)) {
				/* It died holding it: memory holds what it
				 * wrote back by then, if anything; go on. */
				FI_INFO(&shm_prov, FI_LOG_EP_DATA,
					"atomic lock of process %d: its holder "
					"%d died\n",
					(int)m->pid, (int)(uint32_t)seen);
				return 0;
			}
		}
		if (ms > SHM_MRT_LOCK_MS) {
			FI_WARN(&shm_prov, FI_LOG_EP_DATA,
				"atomic lock of process %d: held by process %d "
				"for over %d ms; atomic failed\n",
				(int)m->pid, (int)(uint32_t)seen,
				SHM_MRT_LOCK_MS);
			return -FI_ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
}

void shm_mrt_unlock(struct shm_mrt_map *m)
{
	uint64_t self = lock_self();

	/* Not ours any more (taken over, or written by another): leave it. */
	atomic_compare_exchange_strong_explicit(&m->hdr->atomic_lock.word,
						&self, 0, memory_order_release,
						memory_order_relaxed);
}
