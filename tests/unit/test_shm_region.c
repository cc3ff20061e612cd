/* SPDX-License-Identifier: BSD-2-Clause */
/* shm regions and the inbound MPSC queue, across real processes. */
#define _GNU_SOURCE 1 /* fallocate */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dead_pid.h"
#include "weft/core.h"
#include "shm_queue.h"
#include "shm_region.h"
#include "weft/util_topo.h"

static const struct shm_region_attr attr = {
	.queue_slots = 64,
	.max_peers = 16,
	.bounce_count = 4,
	.bounce_size = 1000,
};

static void unique_name(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "test-%s-%d", what, (int)getpid());
}

Test(shm_region, create_map_and_layout)
{
	struct shm_map own, peer;
	char name[SHM_NAME_MAX];

	unique_name(name, sizeof(name), "layout");
	cr_assert_eq(shm_region_create(name, &attr, &own), 0);
	cr_assert_eq(shm_region_create(name, &attr, &peer), -FI_EADDRINUSE);
	cr_assert_eq(shm_region_map(name, &peer), 0);
	cr_assert_eq(peer.hdr->pid, getpid());
	cr_assert_str_eq(peer.hdr->name, name);
	cr_assert_eq(shm_map_queue(&peer)->slots, 64);
	/* bounce buffers do not overlap the end of the region */
	cr_assert_leq((char *)shm_map_bounce(&peer, 7)->data + 1000,
		      (char *)peer.hdr + peer.size);
	cr_assert_eq(peer.hdr->bounce_size % SHM_CACHELINE, 0);
	shm_region_unmap(&peer);
	shm_region_unmap(&own);
	/* The owner's unmap removed the file. */
	cr_assert_eq(shm_region_map(name, &peer), -FI_ENOENT);
}

Test(shm_region, bad_names_and_attrs)
{
	struct shm_map m;
	struct shm_region_attr bad = attr;
	char longname[SHM_NAME_MAX + 1];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[SHM_NAME_MAX] = '\0';
	cr_assert_eq(shm_region_create("a/b", &attr, &m), -FI_EINVAL);
	cr_assert_eq(shm_region_create("", &attr, &m), -FI_EINVAL);
	cr_assert_eq(shm_region_create(longname, &attr, &m), -FI_EINVAL);
	bad.queue_slots = 48;
	cr_assert_eq(shm_region_create("x", &bad, &m), -FI_EINVAL);
	cr_assert_eq(shm_region_map("no-such-region", &m), -FI_ENOENT);
}

Test(shm_region, stale_region_is_reclaimed)
{
	struct shm_map m;
	char name[SHM_NAME_MAX];
	int status;
	pid_t pid;

	unique_name(name, sizeof(name), "stale");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		/* Die without cleaning up, as a killed process would. */
		_exit(shm_region_create(name, &attr, &m) ? 1 : 0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(WEXITSTATUS(status), 0);
	cr_assert_eq(shm_region_map(name, &m), 0);
	cr_assert_not(shm_region_owner_alive(m.hdr));
	shm_region_unmap(&m);
	cr_assert_eq(shm_region_create(name, &attr, &m), 0);
	cr_assert_eq(m.hdr->pid, getpid());
	shm_region_unmap(&m);
}

Test(shm_queue, full_ring_refuses_then_frees)
{
	struct shm_map m;
	struct shm_slot *s;
	char name[SHM_NAME_MAX];
	uint64_t pos;
	int i;

	unique_name(name, sizeof(name), "full");
	cr_assert_eq(shm_region_create(name, &attr, &m), 0);
	for (i = 0; i < 64; i++) {
		s = shm_queue_claim(shm_map_queue(&m), m.queue_slots, &pos);
		cr_assert_not_null(s);
		s->tag = (uint64_t)i;
		shm_queue_publish(s, pos);
	}
	cr_assert_null(
		shm_queue_claim(shm_map_queue(&m), m.queue_slots, &pos));
	s = shm_queue_peek(shm_map_queue(&m), m.queue_slots);
	cr_assert_not_null(s);
	cr_assert_eq(s->tag, 0);
	shm_queue_release(shm_map_queue(&m), m.queue_slots, s);
	s = shm_queue_claim(shm_map_queue(&m), m.queue_slots, &pos);
	cr_assert_not_null(s);
	cr_assert_eq(pos, 64);
	s->tag = 64;
	shm_queue_publish(s, pos);
	for (i = 1; i <= 64; i++) {
		s = shm_queue_peek(shm_map_queue(&m), m.queue_slots);
		cr_assert_not_null(s);
		cr_assert_eq(s->tag, (uint64_t)i);
		shm_queue_release(shm_map_queue(&m), m.queue_slots, s);
	}
	cr_assert_null(shm_queue_peek(shm_map_queue(&m), m.queue_slots));
	shm_region_unmap(&m);
}

#define PRODUCERS 3
#define PER_PRODUCER 200000

Test(shm_queue, many_producer_processes_nothing_lost, .timeout = 60)
{
	uint64_t next[PRODUCERS] = { 0 };
	struct shm_map own;
	char name[SHM_NAME_MAX];
	pid_t pids[PRODUCERS];
	uint64_t got = 0;
	int p, status;

	unique_name(name, sizeof(name), "mpsc");
	cr_assert_eq(shm_region_create(name, &attr, &own), 0);
	for (p = 0; p < PRODUCERS; p++) {
		pids[p] = fork();
		cr_assert_geq(pids[p], 0);
		if (!pids[p]) {
			struct shm_map peer;
			uint64_t i, pos;

			if (shm_region_map(name, &peer))
				_exit(2);
			for (i = 0; i < PER_PRODUCER; i++) {
				struct shm_slot *s;

				while (!(s = shm_queue_claim(
						 shm_map_queue(&peer),
						 peer.queue_slots, &pos)))
					;
				s->src = (uint32_t)p;
				s->tag = i;
				s->data = i * 7 + (uint64_t)p;
				shm_queue_publish(s, pos);
			}
			shm_region_unmap(&peer);
			_exit(0);
		}
	}
	while (got < (uint64_t)PRODUCERS * PER_PRODUCER) {
		struct shm_slot *s =
			shm_queue_peek(shm_map_queue(&own), own.queue_slots);

		if (!s)
			continue;
		cr_assert_lt(s->src, PRODUCERS);
		/* Each producer's messages arrive in its order, intact. */
		cr_assert_eq(s->tag, next[s->src], "producer %u: got %llu, "
			     "expected %llu", s->src,
			     (unsigned long long)s->tag,
			     (unsigned long long)next[s->src]);
		cr_assert_eq(s->data, s->tag * 7 + s->src);
		next[s->src]++;
		got++;
		shm_queue_release(shm_map_queue(&own), own.queue_slots, s);
	}
	for (p = 0; p < PRODUCERS; p++) {
		cr_assert_eq(waitpid(pids[p], &status, 0), pids[p]);
		cr_assert_eq(WEXITSTATUS(status), 0);
		cr_assert_eq(next[p], PER_PRODUCER);
	}
	cr_assert_null(shm_queue_peek(shm_map_queue(&own), own.queue_slots));
	shm_region_unmap(&own);
}

Test(shm_region, sweep_removes_only_dead_owners)
{
	struct shm_map m, live;
	char dead[SHM_NAME_MAX], alive[SHM_NAME_MAX], path[128];
	int status, fd;
	pid_t pid;

	unique_name(dead, sizeof(dead), "sweep-dead");
	unique_name(alive, sizeof(alive), "sweep-live");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(shm_region_create(dead, &attr, &m) ? 1 : 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(WEXITSTATUS(status), 0);
	cr_assert_eq(shm_region_create(alive, &attr, &live), 0);
	/* A file another process is still creating (no header yet). */
	snprintf(path, sizeof(path), "/weft-shm.%u.test-sweep-new-%d",
		 (unsigned)getuid(), (int)getpid());
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);

	shm_region_sweep();
	cr_assert_eq(shm_region_map(dead, &m), -FI_ENOENT);
	cr_assert_eq(shm_region_map(alive, &m), 0);
	shm_region_unmap(&m);
	fd = shm_open(path, O_RDONLY, 0);
	cr_assert_geq(fd, 0, "a region being created was removed");
	close(fd);
	shm_unlink(path);
	shm_region_unmap(&live);
}

/*
 * The inbound bounce buffer pool: each buffer is handed out once until
 * given back, an empty pool says -FI_EAGAIN, and a buffer given back by
 * another process (the receiver that copied out of it) is handed out
 * again.
 */
Test(shm_region, bounce_pools)
{
	struct shm_map own, peer;
	char name[SHM_NAME_MAX];
	struct shm_queue *q;
	uint32_t idx, seen = 0, i;
	size_t stride;
	pid_t pid;
	int status;

	unique_name(name, sizeof(name), "pools");
	cr_assert_eq(shm_region_create(name, &attr, &own), 0);
	q = shm_map_queue(&own);
	stride = shm_map_bounce_stride(&own);
	for (i = 0; i < attr.bounce_count; i++) {
		cr_assert_eq(shm_buf_pop(&q->buf_free, shm_map_bounce(&own, 0),
					 stride, attr.bounce_count, &idx), 0);
		cr_assert_lt(idx, attr.bounce_count);
		cr_assert_eq(seen & (1u << idx), 0, "buffer %u twice", idx);
		seen |= 1u << idx;
	}
	cr_assert_eq(shm_buf_pop(&q->buf_free, shm_map_bounce(&own, 0), stride,
				 attr.bounce_count, &idx), -FI_EAGAIN);
	/* The owner's outbound buffers follow, untouched. */
	for (i = attr.bounce_count; i < 2 * attr.bounce_count; i++)
		cr_assert_eq(atomic_load(&shm_map_bounce(&own, i)->busy), 0);
	/* Another process gives buffer 2 back. */
	pid = fork();
	if (!pid) {
		if (shm_region_map(name, &peer))
			_exit(1);
		shm_buf_push(&shm_map_queue(&peer)->buf_free,
			     shm_map_bounce(&peer, 0), stride, 2);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && !WEXITSTATUS(status));
	cr_assert_eq(shm_buf_pop(&q->buf_free, shm_map_bounce(&own, 0), stride,
				 attr.bounce_count, &idx), 0);
	cr_assert_eq(idx, 2);
	cr_assert_eq(shm_buf_pop(&q->buf_free, shm_map_bounce(&own, 0), stride,
				 attr.bounce_count, &idx), -FI_EAGAIN);
	shm_region_unmap(&own);
}

/*
 * The small buffers: a section of their own after the bounce buffers,
 * named from 2 x bounce_count on, each handed out once until given back;
 * the accessors take only their indices and at most small_size bytes.
 */
Test(shm_region, small_pool)
{
	struct shm_region_attr a = attr;
	struct shm_map own, peer;
	char name[SHM_NAME_MAX];
	struct shm_queue *q;
	uint32_t idx, i, first;
	uint64_t seen = 0;

	a.small_count = 40;
	a.small_size = 300;
	unique_name(name, sizeof(name), "small");
	cr_assert_eq(shm_region_create(name, &a, &own), 0);
	cr_assert_eq(shm_region_map(name, &peer), 0);
	cr_assert_eq(peer.small_count, 40);
	cr_assert_eq(peer.small_size, 320, "rounded to a cache line");
	cr_assert_geq(peer.small, (char *)shm_map_bounce(&peer, 8),
		      "after both bounce pools");
	cr_assert_leq((char *)shm_map_small(&peer, 39)->data + 320,
		      (char *)peer.hdr + peer.size);
	first = (uint32_t)shm_map_small_first(&peer);
	cr_assert_eq(first, 8);
	q = shm_map_queue(&peer);
	for (i = 0; i < 40; i++) {
		cr_assert_eq(shm_buf_pop(&q->small_free, shm_map_small(&peer, 0),
					 shm_map_small_stride(&peer), 40, &idx),
			     0);
		cr_assert_lt(idx, 40);
		cr_assert_eq(seen & (1ull << idx), 0, "small buffer %u twice",
			     idx);
		seen |= 1ull << idx;
		cr_assert(shm_map_buf_inbound(&peer, first + idx));
		cr_assert_eq(shm_map_bounce_in(&own, first + idx, 320),
			     shm_map_small(&own, idx));
		cr_assert_null(shm_map_bounce_in(&own, first + idx, 321));
	}
	cr_assert_eq(shm_buf_pop(&q->small_free, shm_map_small(&peer, 0),
				 shm_map_small_stride(&peer), 40, &idx),
		     -FI_EAGAIN);
	/* The large pools are apart: outbound buffers are not inbound, and
	 * nothing lies past the small ones. */
	cr_assert(shm_map_buf_inbound(&peer, 3));
	cr_assert_not(shm_map_buf_inbound(&peer, 4));
	cr_assert_null(shm_map_bounce_in(&peer, 4, 1));
	cr_assert_not(shm_map_buf_inbound(&peer, first + 40));
	cr_assert_null(shm_map_bounce_in(&peer, first + 40, 1));
	shm_buf_push(&q->small_free, shm_map_small(&own, 0),
		     shm_map_small_stride(&own), 17);
	cr_assert_eq(shm_buf_pop(&q->small_free, shm_map_small(&own, 0),
				 shm_map_small_stride(&own), 40, &idx),
		     0);
	cr_assert_eq(idx, 17);
	shm_region_unmap(&peer);
	shm_region_unmap(&own);
}

Test(shm_region, forked_child_leaves_the_region_alone)
{
	struct shm_map own, m;
	char name[SHM_NAME_MAX];
	int status;
	pid_t pid;

	unique_name(name, sizeof(name), "fork");
	cr_assert_eq(shm_region_create(name, &attr, &own), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		/* A child dropping what it inherited, as fi_close would. */
		shm_region_unmap(&own);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(WEXITSTATUS(status), 0);
	cr_assert_eq(shm_region_map(name, &m), 0,
		     "a forked child removed its parent's region");
	shm_region_unmap(&m);
	shm_region_unmap(&own);
}

/* Files creators left before publishing: removed once their maker is gone. */
Test(shm_region, sweep_removes_unpublished_of_dead_creators)
{
	char dead[64], alive[64];
	int fd;
	pid_t pid;

	pid = dead_pid();
	snprintf(dead, sizeof(dead), "/weft-shm-new.%u.%d.7",
		 (unsigned)getuid(), (int)pid);
	snprintf(alive, sizeof(alive), "/weft-shm-new.%u.%d.999999",
		 (unsigned)getuid(), (int)getpid());
	fd = shm_open(dead, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	fd = shm_open(alive, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	close(fd);

	shm_region_sweep();
	fd = shm_open(dead, O_RDONLY, 0);
	cr_assert_lt(fd, 0, "a dead creator's file was left");
	fd = shm_open(alive, O_RDONLY, 0);
	cr_assert_geq(fd, 0, "a live creator's file was removed");
	close(fd);
	shm_unlink(alive);
}

/*
 * posix_fallocate as the library calls it, which a test may pause: the
 * process then stops in shm_region_create with its file made but not yet
 * set up, until the test lets it go on.
 */
static bool pause_in_fallocate;
static int paused_fd = -1, go_fd = -1;

int posix_fallocate(int fd, off_t offset, off_t len)
{
	char c = 'p';

	if (pause_in_fallocate && (write(paused_fd, &c, 1) != 1 ||
				   read(go_fd, &c, 1) != 1))
		return EIO;
	return fallocate(fd, 0, offset, len) ? errno : 0;
}

/*
 * Two processes create regions of the same name at once: one gets the
 * name, the other -FI_EADDRINUSE.  The second must not take a region still
 * being set up for a dead creator's leftover, remove it and make its own,
 * leaving the first with a region nobody can find.
 */
Test(shm_region, creators_of_one_name_at_once, .timeout = 60)
{
	struct shm_map own, m;
	char name[SHM_NAME_MAX], c;
	int paused[2], go[2], status, ret;
	pid_t pid;

	unique_name(name, sizeof(name), "race");
	cr_assert_eq(pipe(paused), 0);
	cr_assert_eq(pipe(go), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		close(paused[0]);
		close(go[1]);
		paused_fd = paused[1];
		go_fd = go[0];
		pause_in_fallocate = true;
		ret = shm_region_create(name, &attr, &own);
		_exit(!ret ? 0 : ret == -FI_EADDRINUSE ? 1 : 2);
	}
	close(paused[1]);
	close(go[0]);
	/* The child is inside shm_region_create now, its file made. */
	cr_assert_eq(read(paused[0], &c, 1), 1);
	ret = shm_region_create(name, &attr, &own);
	cr_assert_eq(write(go[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(ret, 0);
	cr_assert_eq(WEXITSTATUS(status), 1,
		     "both creators got the name (child status %d)", status);
	cr_assert_eq(shm_region_map(name, &m), 0);
	cr_assert_eq(m.hdr->pid, getpid());
	shm_region_unmap(&m);
	shm_region_unmap(&own);
	close(paused[0]);
	close(go[1]);
}

/*
 * kill as the library calls it (shm_region_owner_alive asks whether a
 * region's owner lives), which a test may pause the same way.
 */
static bool pause_in_kill;

int kill(pid_t pid, int sig)
{
	char c = 'p';

	/* Paused once: the test closes the pipe to let it go on. */
	if (pause_in_kill && write(paused_fd, &c, 1) == 1 &&
	    read(go_fd, &c, 1) < 0)
		return -1;
	return (int)syscall(SYS_kill, pid, sig);
}

/*
 * A sweep judges a dead process's region stale while another process takes
 * the name over: the sweep must remove the stale file it judged, never the
 * live region now under that name.
 */
Test(shm_region, sweep_spares_a_region_made_while_it_judged, .timeout = 60)
{
	struct shm_map own, m;
	char name[SHM_NAME_MAX], c;
	int paused[2], go[2], status;
	pid_t pid;

	unique_name(name, sizeof(name), "judged");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(shm_region_create(name, &attr, &m) ? 1 : 0); /* left */
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(WEXITSTATUS(status), 0);

	cr_assert_eq(pipe(paused), 0);
	cr_assert_eq(pipe(go), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		close(paused[0]);
		close(go[1]);
		paused_fd = paused[1];
		go_fd = go[0];
		pause_in_kill = true;
		shm_region_sweep();
		_exit(0);
	}
	close(paused[1]);
	close(go[0]);
	/* The sweep is asking whether the dead owner lives. */
	cr_assert_eq(read(paused[0], &c, 1), 1);
	cr_assert_eq(shm_region_create(name, &attr, &own), 0);
	/* Let the sweep go on; it may ask again about other regions. */
	close(go[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	close(paused[0]);
	cr_assert_eq(shm_region_map(name, &m), 0,
		     "the sweep removed a live region");
	cr_assert_eq(m.hdr->pid, getpid());
	shm_region_unmap(&m);
	shm_region_unmap(&own);
}

/*
 * A region's memory is on the NUMA node of the thread that creates it
 * (the endpoint's owner, which reads what peers write there).  With more
 * than one node, the thread's own memory policy points at another node,
 * so only the region's binding puts the pages where they are expected.
 */
Test(shm_region, memory_on_the_creators_node)
{
	hwloc_topology_t t = util_topo();
	hwloc_membind_policy_t policy;
	hwloc_bitmap_t nodes, cpu;
	struct shm_map m;
	char name[SHM_NAME_MAX];
	int node, other = -1;
	size_t off;

	cr_assert_not_null(t);
	cpu = hwloc_bitmap_alloc();
	nodes = hwloc_bitmap_alloc();
	cr_assert_eq(hwloc_get_last_cpu_location(t, cpu, HWLOC_CPUBIND_THREAD),
		     0);
	cr_assert_eq(hwloc_set_cpubind(t, cpu, HWLOC_CPUBIND_THREAD), 0);
	node = util_topo_here_numa();
	cr_assert_geq(node, 0);
	if (util_topo_numa_count() > 1) {
		hwloc_obj_t o = NULL;

		while ((o = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE,
						       o)))
			if ((int)o->os_index != node)
				other = (int)o->os_index;
		hwloc_bitmap_only(nodes, (unsigned)other);
		if (hwloc_set_membind(t, nodes, HWLOC_MEMBIND_BIND,
				      HWLOC_MEMBIND_THREAD |
					      HWLOC_MEMBIND_BYNODESET))
			cr_skip_test("memory cannot be bound here: %s",
				     strerror(errno));
	}

	unique_name(name, sizeof(name), "numa");
	cr_assert_eq(shm_region_create(name, &attr, &m), 0);
	for (off = 0; off < m.size; off += 4096)
		(void)*(volatile char *)((char *)m.hdr + off);
	hwloc_bitmap_zero(nodes);
	if (hwloc_get_area_memlocation(t, m.hdr, m.size, nodes,
				       HWLOC_MEMBIND_BYNODESET))
		cr_skip_test("where pages are cannot be asked here: %s",
			     strerror(errno));
	cr_assert(hwloc_bitmap_isset(nodes, (unsigned)node),
		  "not on node %d", node);
	cr_assert_eq(hwloc_bitmap_weight(nodes), 1,
		     "pages on nodes other than %d", node);
	if (other >= 0) {
		cr_assert_eq(hwloc_get_area_membind(t, m.hdr, m.size, nodes,
						    &policy,
						    HWLOC_MEMBIND_BYNODESET),
			     0);
		cr_assert_eq(policy, HWLOC_MEMBIND_BIND);
		cr_assert(hwloc_bitmap_isset(nodes, (unsigned)node));
		cr_assert_eq(hwloc_bitmap_weight(nodes), 1);
	}
	cr_log_info("region on node %d of %d", node, util_topo_numa_count());
	shm_region_unmap(&m);
	hwloc_bitmap_free(nodes);
	hwloc_bitmap_free(cpu);
}
