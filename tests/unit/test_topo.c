/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared topology: where the calling thread runs and its NUMA node,
 * checked against what the kernel says (sched_getcpu, sysfs), and binding
 * shared memory to a node before its pages exist, checked by asking the
 * kernel where the pages went.
 */
#define _GNU_SOURCE 1
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "weft/util_topo.h"

/* Pin the calling thread to the CPU it runs on; returns that CPU. */
static int pin_here(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	cr_assert_geq(cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
	cr_assert_eq(sched_getcpu(), cpu);
	return cpu;
}

/* The NUMA node sysfs puts a CPU on (its nodeN entry), or -1. */
static int sysfs_node_of(int cpu)
{
	char path[PATH_MAX];
	struct stat st;
	int node;

	for (node = 0; node < 4096; node++) {
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/node%d", cpu, node);
		if (!stat(path, &st))
			return node;
	}
	return -1;
}

Test(topo, here_is_where_the_thread_runs)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	int cpu;

	cr_assert_not_null(util_topo(), "hwloc could not load the topology");
	cr_assert_eq(util_topo(), util_topo(), "one topology per process");
	cr_assert_geq(util_topo_numa_count(), 1);

	/* Free to run anywhere: the CPU it last ran on, one of ours. */
	cr_assert_eq(util_topo_here(set), 0);
	cr_assert_eq(hwloc_bitmap_weight(set), 1);
	cr_assert(hwloc_bitmap_isincluded(
		set, hwloc_topology_get_allowed_cpuset(util_topo())));

	/* Bound to one CPU: that CPU, and its node is sysfs's. */
	cpu = pin_here();
	cr_assert_eq(util_topo_here(set), 0);
	cr_assert(hwloc_bitmap_isset(set, (unsigned)cpu));
	cr_assert_eq(hwloc_bitmap_weight(set), 1);
	if (sysfs_node_of(cpu) >= 0)
		cr_assert_eq(util_topo_here_numa(), sysfs_node_of(cpu),
			     "cpu %d", cpu);
	else
		cr_assert_eq(util_topo_here_numa(), 0,
			     "cpu %d: no node in sysfs, so node 0", cpu);
	hwloc_bitmap_free(set);
}

/*
 * Bind a shared mapping whose file has no pages yet, then allocate them
 * through the file (as shm regions are made): the policy is the file's
 * and the pages are on the node.
 */
Test(topo, bind_before_the_pages_exist)
{
	hwloc_topology_t t = util_topo();
	const size_t len = 64 * 4096;
	hwloc_membind_policy_t policy;
	hwloc_bitmap_t nodes;
	char name[64];
	size_t off;
	char *p;
	int fd, node, ret;

	cr_assert_not_null(t);
	pin_here();
	node = util_topo_here_numa();
	cr_assert_geq(node, 0);
	snprintf(name, sizeof(name), "/weft-test-topo.%d", (int)getpid());
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	shm_unlink(name);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(p, MAP_FAILED);

	ret = util_topo_bind(p, len, node);
	if (ret == -FI_ENOSYS)
		cr_skip_test("this system cannot bind memory to a NUMA node");
	cr_assert_eq(ret, 0);
	cr_assert_eq(util_topo_bind(p, len, -1), -FI_EINVAL);
	cr_assert_eq(posix_fallocate(fd, 0, (off_t)len), 0);
	for (off = 0; off < len; off += 4096)
		(void)*(volatile char *)(p + off);

	nodes = hwloc_bitmap_alloc();
	cr_assert_eq(hwloc_get_area_membind(t, p, len, nodes, &policy,
					    HWLOC_MEMBIND_BYNODESET),
		     0, "%s", strerror(errno));
	cr_assert_eq(policy, HWLOC_MEMBIND_BIND);
	cr_assert(hwloc_bitmap_isset(nodes, (unsigned)node));
	cr_assert_eq(hwloc_bitmap_weight(nodes), 1);

	hwloc_bitmap_zero(nodes);
	if (hwloc_get_area_memlocation(t, p, len, nodes,
				       HWLOC_MEMBIND_BYNODESET))
		cr_skip_test("where pages are cannot be asked here: %s",
			     strerror(errno));
	cr_assert(hwloc_bitmap_isset(nodes, (unsigned)node), "node %d",
		  node);
	cr_assert_eq(hwloc_bitmap_weight(nodes), 1);
	hwloc_bitmap_free(nodes);
	munmap(p, len);
	close(fd);
}

Test(topo, bind_here_needs_two_nodes)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ret;

	cr_assert_neq(p, MAP_FAILED);
	ret = util_topo_bind_here(p, 4096);
	if (util_topo_numa_count() == 1)
		cr_assert_eq(ret, -FI_ENODATA);
	else
		cr_assert(ret >= 0 || ret == -FI_ENOSYS, "%d", ret);
	munmap(p, 4096);
}
