/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The registration table peers use to reach registered memory without its
 * owner (prov/shm/shm_mrt.c): what a peer may look up, what it is refused,
 * that closing a registration waits for the peers using it but not for
 * dead ones, that the atomic lock survives a holder that died, and that a
 * table others may write is not used.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "dead_pid.h"
#include "weft/core.h"
#include "shm_mrt.h"
#include "shm_region.h"

extern struct fi_provider shm_prov;
static struct fi_provider *const link_shm __attribute__((used)) = &shm_prov;

static struct util_mr_map map;
static struct shm_mrt *mrt;
static char buf[8192];

static void setup(void)
{
	cr_assert_eq(util_mr_map_init(&map, NULL,
				      FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, 0,
				      true),
		     0);
	cr_assert_eq(shm_mrt_get(&map, &mrt), 0);
}

static void teardown(void)
{
	shm_mrt_put(mrt);
	util_mr_map_fini(&map);
}

static uint64_t reg(void *p, size_t len, uint64_t access)
{
	struct iovec iov = { p, len };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = access,
	};
	uint64_t key;

	cr_assert_eq(util_mr_map_insert(&map, &attr, NULL, &key), 0);
	return key;
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

TestSuite(shm_mrt, .init = setup, .fini = teardown, .timeout = 60);

Test(shm_mrt, lookup_checks_bounds_access_and_wrap)
{
	uint64_t key = reg(buf, 4096, FI_REMOTE_WRITE), addr = (uintptr_t)buf;
	struct shm_mrt_map m;
	_Atomic int32_t *pin;
	uint64_t raddr;

	cr_assert_eq(shm_mrt_map(mrt->name, getpid(), &m), 0);
	cr_assert_eq(shm_mrt_pin(&m, key, addr + 100, 64, FI_REMOTE_WRITE,
				 &raddr, &pin, NULL),
		     0);
	cr_expect_eq(raddr, addr + 100);
	cr_expect_eq(atomic_load(pin), getpid());
	shm_mrt_unpin(pin);
	/* the whole region, and nothing past it */
	cr_expect_eq(shm_mrt_pin(&m, key, addr, 4096, FI_REMOTE_WRITE, &raddr,
				 &pin, NULL),
		     0);
	shm_mrt_unpin(pin);
	cr_expect_eq(shm_mrt_pin(&m, key, addr + 4096 - 63, 64,
				 FI_REMOTE_WRITE, &raddr, &pin, NULL),
		     -FI_EINVAL);
	cr_expect_eq(shm_mrt_pin(&m, key, addr - 1, 2, FI_REMOTE_WRITE,
				 &raddr, &pin, NULL),
		     -FI_EINVAL);
	cr_expect_eq(shm_mrt_pin(&m, key, addr + 64, UINT64_MAX - 32,
				 FI_REMOTE_WRITE, &raddr, &pin, NULL),
		     -FI_EINVAL);
	cr_expect_eq(shm_mrt_pin(&m, key, UINT64_MAX - 31, 64,
				 FI_REMOTE_WRITE, &raddr, &pin, NULL),
		     -FI_EINVAL);
	/* no remote read granted */
	cr_expect_eq(shm_mrt_pin(&m, key, addr, 64, FI_REMOTE_READ, &raddr,
				 &pin, NULL),
		     -FI_EACCES);
	/* unknown key: ask the owner */
	cr_expect_eq(shm_mrt_pin(&m, key ^ 1, addr, 64, FI_REMOTE_WRITE,
				 &raddr, &pin, NULL),
		     1);
	/* closed: gone from the table */
	cr_assert_eq(util_mr_map_remove(&map, key), 0);
	cr_expect_eq(shm_mrt_pin(&m, key, addr, 64, FI_REMOTE_WRITE, &raddr,
				 &pin, NULL),
		     1);
	shm_mrt_unmap(&m);
}

Test(shm_mrt, registrations_before_the_table_are_published)
{
	struct util_mr_map m2;
	struct shm_mrt *t2;
	struct shm_mrt_map pm;
	_Atomic int32_t *pin;
	uint64_t key, raddr;
	struct iovec iov = { buf, 128 };
	struct fi_mr_attr attr = {
		.mr_iov = &iov, .iov_count = 1, .access = FI_REMOTE_READ,
	};

	cr_assert_eq(util_mr_map_init(&m2, NULL,
				      FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, 0,
				      true),
		     0);
	cr_assert_eq(util_mr_map_insert(&m2, &attr, NULL, &key), 0);
	cr_assert_eq(shm_mrt_get(&m2, &t2), 0);
	cr_assert_eq(shm_mrt_map(t2->name, getpid(), &pm), 0);
	cr_expect_eq(shm_mrt_pin(&pm, key, (uintptr_t)buf, 128, FI_REMOTE_READ,
				 &raddr, &pin, NULL),
		     0);
	shm_mrt_unpin(pin);
	shm_mrt_unmap(&pm);
	shm_mrt_put(t2);
	util_mr_map_fini(&m2);
}

/* A peer process pins key and reports it, then waits or dies. */
static pid_t pinning_child(uint64_t key, int *rfd, bool die)
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		struct shm_mrt_map m;
		_Atomic int32_t *pin;
		uint64_t raddr;
		char c = 'p';

		close(p[0]);
		if (shm_mrt_map(mrt->name, getppid(), &m) ||
		    shm_mrt_pin(&m, key, (uintptr_t)buf, 64, FI_REMOTE_WRITE,
				&raddr, &pin, NULL))
			_exit(2);
		if (write(p[1], &c, 1) != 1)
			_exit(3);
		if (die)
			_exit(0); /* leaves its pin */
		usleep(300 * 1000);
		shm_mrt_unpin(pin);
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

Test(shm_mrt, close_waits_for_a_live_pin)
{
	uint64_t key = reg(buf, 4096, FI_REMOTE_WRITE), t0;
	int fd, status;
	pid_t pid;
	char c;

	pid = pinning_child(key, &fd, false);
	cr_assert_eq(read(fd, &c, 1), 1);
	t0 = ms_now();
	cr_assert_eq(util_mr_map_remove(&map, key), 0);
	/* the child held its pin for 300 ms */
	cr_expect_geq(ms_now() - t0, 150, "close returned after %llu ms",
		      (unsigned long long)(ms_now() - t0));
	waitpid(pid, &status, 0);
	cr_expect(WIFEXITED(status) && !WEXITSTATUS(status));
	close(fd);
}

Test(shm_mrt, close_does_not_wait_for_a_dead_pin)
{
	uint64_t key = reg(buf, 4096, FI_REMOTE_WRITE), t0;
	int fd, status;
	pid_t pid;
	char c;

	pid = pinning_child(key, &fd, true);
	cr_assert_eq(read(fd, &c, 1), 1);
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	t0 = ms_now();
	cr_assert_eq(util_mr_map_remove(&map, key), 0);
	/* generous: well below the 10 s bound of a live pin */
	cr_expect_lt(ms_now() - t0, 5000);
	close(fd);
}

Test(shm_mrt, atomic_lock_survives_a_dead_holder)
{
	struct shm_mrt_map m;
	int status;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		if (shm_mrt_map(mrt->name, getppid(), &m))
			_exit(2);
		if (shm_mrt_lock(&m))
			_exit(3);
		_exit(0); /* dies holding it */
	}
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	cr_assert_eq(shm_mrt_map(mrt->name, getpid(), &m), 0);
	cr_assert_neq(atomic_load(&m.hdr->atomic_lock.word), 0);
	cr_assert_eq(shm_mrt_lock(&m), 0); /* taken over from the dead */
	shm_mrt_unlock(&m);
	cr_assert_eq(atomic_load(&m.hdr->atomic_lock.word), 0);
	cr_assert_eq(shm_mrt_lock(&m), 0); /* and usable again */
	shm_mrt_unlock(&m);
	shm_mrt_unmap(&m);
}

/*
 * A holder that lives and keeps the lock (stopped, or a peer that means
 * harm) costs a waiter SHM_MRT_LOCK_MS and an error, not a hang; once it
 * is gone the lock is had again.
 */
Test(shm_mrt, atomic_lock_gives_up_on_a_live_holder)
{
	struct shm_mrt_map m;
	uint64_t t0, took;
	int status, p[2];
	pid_t pid;
	char c;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		if (shm_mrt_map(mrt->name, getppid(), &m) || shm_mrt_lock(&m))
			_exit(2);
		if (write(p[1], "l", 1) != 1)
			_exit(2);
		pause(); /* holds it until killed */
		_exit(0);
	}
	cr_assert_eq(read(p[0], &c, 1), 1);
	cr_assert_eq(shm_mrt_map(mrt->name, getpid(), &m), 0);
	t0 = ms_now();
	cr_expect_eq(shm_mrt_lock(&m), -FI_ETIMEDOUT);
	took = ms_now() - t0;
	cr_expect_geq(took, SHM_MRT_LOCK_MS);
	cr_expect_lt(took, SHM_MRT_LOCK_MS + 3000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	cr_assert_eq(shm_mrt_lock(&m), 0);
	shm_mrt_unlock(&m);
	close(p[0]);
	close(p[1]);
	shm_mrt_unmap(&m);
}

/* A lock word a peer scribbled over (a process that does not exist) is
 * taken over; unlock leaves a word that is not ours alone. */
Test(shm_mrt, atomic_lock_word_scribbled)
{
	struct shm_mrt_map m;

	cr_assert_eq(shm_mrt_map(mrt->name, getpid(), &m), 0);
	atomic_store(&m.hdr->atomic_lock.word, 0xdeadbeef7ffffff0ULL);
	cr_assert_eq(shm_mrt_lock(&m), 0);
	shm_mrt_unlock(&m);
	cr_assert_eq(atomic_load(&m.hdr->atomic_lock.word), 0);
	atomic_store(&m.hdr->atomic_lock.word, 0x1234);
	shm_mrt_unlock(&m); /* not ours: left as it is */
	cr_assert_eq(atomic_load(&m.hdr->atomic_lock.word), 0x1234);
	atomic_store(&m.hdr->atomic_lock.word, 0);
	shm_mrt_unmap(&m);
}

Test(shm_mrt, table_others_may_write_is_refused)
{
	struct shm_mrt_map m;
	char path[SHM_NAME_MAX + 1];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "/%s", mrt->name);
	fd = shm_open(path, O_RDWR, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(fchmod(fd, 0660), 0);
	cr_expect_eq(shm_mrt_map(mrt->name, getpid(), &m), -FI_EACCES);
	cr_assert_eq(fchmod(fd, 0600), 0);
	close(fd);
	/* a table that names another owner */
	cr_expect_eq(shm_mrt_map(mrt->name, getpid() + 1, &m), -FI_EINVAL);
	/* names that are no table's */
	cr_expect_eq(shm_mrt_map("weft-shm.0.x", getpid(), &m), -FI_EINVAL);
	cr_expect_eq(shm_mrt_map("weft-shm-mrt.0/../x", getpid(), &m),
		     -FI_EINVAL);
}

Test(shm_mrt, sweep_removes_tables_of_dead_creators)
{
	char dead[SHM_NAME_MAX + 1], live[SHM_NAME_MAX + 1];
	int fd;
	pid_t pid;

	pid = dead_pid();
	snprintf(dead, sizeof(dead), "/weft-shm-mrt.%u.%d.0badf00d",
		 (unsigned)geteuid(), (int)pid);
	fd = shm_open(dead, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(live, sizeof(live), "/%s", mrt->name);
	shm_region_sweep();
	fd = shm_open(dead, O_RDONLY, 0);
	cr_expect_lt(fd, 0, "a dead creator's table survived the sweep");
	if (fd >= 0) {
		close(fd);
		shm_unlink(dead);
	}
	fd = shm_open(live, O_RDONLY, 0);
	cr_expect_geq(fd, 0, "the sweep removed a live table");
	if (fd >= 0)
		close(fd);
}

Test(shm_mrt, last_put_withdraws_what_is_still_registered)
{
	struct util_mr_map m2;
	struct shm_mrt *t2;
	struct shm_mrt_map pm;
	_Atomic int32_t *pin;
	uint64_t key, raddr;
	struct iovec iov = { buf, 128 };
	struct fi_mr_attr attr = {
		.mr_iov = &iov, .iov_count = 1, .access = FI_REMOTE_WRITE,
	};

	cr_assert_eq(util_mr_map_init(&m2, NULL,
				      FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, 0,
				      true),
		     0);
	cr_assert_eq(shm_mrt_get(&m2, &t2), 0);
	cr_assert_eq(util_mr_map_insert(&m2, &attr, NULL, &key), 0);
	cr_assert_eq(shm_mrt_map(t2->name, getpid(), &pm), 0);
	cr_assert_eq(shm_mrt_pin(&pm, key, (uintptr_t)buf, 64,
				 FI_REMOTE_WRITE, &raddr, &pin, NULL),
		     0);
	shm_mrt_unpin(pin);
	/* The endpoints are gone, the registration is not: a peer that
	 * still maps the table must not use it any more. */
	shm_mrt_put(t2);
	cr_expect_eq(shm_mrt_pin(&pm, key, (uintptr_t)buf, 64,
				 FI_REMOTE_WRITE, &raddr, &pin, NULL),
		     1);
	shm_mrt_unmap(&pm);
	util_mr_map_fini(&m2);
}

/*
 * A peer learns from the table which accesses the owner counts (counters
 * bound to the registration, fi_mr_bind), as bound before or after the
 * registration was published, so that it tells the owner of what it did
 * itself; none for a registration without counters.
 */
Test(shm_mrt, counted_events_reach_peers)
{
	struct util_domain dom;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	uint64_t k1 = reg(buf, 64, FI_REMOTE_READ | FI_REMOTE_WRITE);
	uint64_t k2 = reg(buf + 64, 64, FI_REMOTE_READ | FI_REMOTE_WRITE);
	uint64_t raddr, ev = ~0ULL;
	struct util_cntr *c;
	struct fid_cntr *cf;
	struct shm_mrt_map m;
	_Atomic int32_t *pin;

	cr_assert_eq(util_domain_init(&dom, NULL, NULL, NULL), 0);
	cr_assert_eq(util_cntr_open(&dom, &ca, &cf, NULL), 0);
	c = util_cntr_of(cf);
	cr_assert_eq(shm_mrt_map(mrt->name, getpid(), &m), 0);
	cr_assert_eq(shm_mrt_pin(&m, k1, (uintptr_t)buf, 8, FI_REMOTE_WRITE,
				 &raddr, &pin, &ev),
		     0);
	shm_mrt_unpin(pin);
	cr_expect_eq(ev, 0, "counted before any counter was bound");

	cr_assert_eq(util_mr_map_bind_cntr(&map, k1, c, FI_REMOTE_WRITE), 0);
	cr_assert_eq(shm_mrt_pin(&m, k1, (uintptr_t)buf, 8, FI_REMOTE_WRITE,
				 &raddr, &pin, &ev),
		     0);
	shm_mrt_unpin(pin);
	cr_expect_eq(ev, FI_REMOTE_WRITE);
	cr_assert_eq(util_mr_map_bind_cntr(&map, k1, c, FI_REMOTE_READ), 0);
	cr_assert_eq(shm_mrt_pin(&m, k1, (uintptr_t)buf, 8, FI_REMOTE_READ,
				 &raddr, &pin, &ev),
		     0);
	shm_mrt_unpin(pin);
	cr_expect_eq(ev, FI_REMOTE_WRITE | FI_REMOTE_READ);
	cr_assert_eq(shm_mrt_pin(&m, k2, (uintptr_t)buf + 64, 8,
				 FI_REMOTE_WRITE, &raddr, &pin, &ev),
		     0);
	shm_mrt_unpin(pin);
	cr_expect_eq(ev, 0, "another registration's counters");

	cr_assert_eq(fi_close(&cf->fid), -FI_EBUSY);
	cr_assert_eq(util_mr_map_remove(&map, k1), 0);
	cr_assert_eq(fi_close(&cf->fid), 0);
	shm_mrt_unmap(&m);
	cr_assert_eq(util_domain_fini(&dom), 0);
}
