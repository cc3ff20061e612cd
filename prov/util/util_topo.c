// SPDX-License-Identifier: BSD-2-Clause
/* The machine's topology from hwloc (weft/util_topo.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "weft/ofi.h"

#include "weft/util_topo.h"

static pthread_once_t topo_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t topo;
static bool topo_loaded;

/*
 * Discovery that would cost more than it tells here: GPU and coprocessor
 * plugins load their vendors' runtimes (threads, seconds), and the x86
 * backend runs cpuid on each CPU by binding the calling thread to it in
 * turn, which would also lose where the thread was (util_topo_here).
 * The pci component (libpciaccess) adds only the devices' names, parsed
 * from pci.ids in every process that asks for NICs (seconds under
 * AddressSanitizer in an emulated machine); Linux's sysfs gives the
 * devices, bridges and bus ids all the same.  Sysfs gives all that is
 * asked of the topology.
 */
static const char *const topo_skip[] = { "x86",	 "pci",	 "opencl",
					  "gl",	 "cuda", "nvml",
					  "rsmi", "levelzero" };

static void topo_load(void)
{
	size_t i;

	if (hwloc_topology_init(&topo))
		return;
	/* An unknown name (a plugin not installed) is no error. */
	for (i = 0; i < sizeof(topo_skip) / sizeof(topo_skip[0]); i++)
		hwloc_topology_set_components(
			topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
			topo_skip[i]);
	/* Of I/O, only what lies on the way to NICs: PCI devices, bridges
	 * and OS devices. */
	hwloc_topology_set_io_types_filter(topo,
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(topo)) {
		hwloc_topology_destroy(topo);
		return;
	}
	topo_loaded = true;
}

/* The library unloads (dlclose, exit): the topology goes with it. */
__attribute__((destructor)) static void topo_unload(void)
{
	if (topo_loaded) {
		topo_loaded = false;
		hwloc_topology_destroy(topo);
	}
}

hwloc_topology_t util_topo(void)
{
	pthread_once(&topo_once, topo_load);
	return topo_loaded ? topo : NULL;
}

int util_topo_here(hwloc_cpuset_t set)
{
	hwloc_topology_t t = util_topo();
	hwloc_const_cpuset_t all;

	if (!t)
		return -FI_ENODATA;
	all = hwloc_topology_get_allowed_cpuset(t);
	/* A thread bound to some of the CPUs runs on those; one free to run
	 * anywhere is where it last ran. */
	if (!hwloc_get_cpubind(t, set, HWLOC_CPUBIND_THREAD) &&
	    !hwloc_bitmap_iszero(set) && !hwloc_bitmap_isincluded(all, set))
		return 0;
	if (!hwloc_get_last_cpu_location(t, set, HWLOC_CPUBIND_THREAD) &&
	    !hwloc_bitmap_iszero(set))
		return 0;
	return -FI_ENODATA;
}

int util_topo_numa_count(void)
{
	hwloc_topology_t t = util_topo();
	int n;

	if (!t)
		return 1;
	n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
	return n > 0 ? n : 1;
}

int util_topo_here_numa(void)
{
	hwloc_topology_t t = util_topo();
	hwloc_cpuset_t set;
	hwloc_obj_t o = NULL;
	int cpu;

	if (!t)
		return -1;
	set = hwloc_bitmap_alloc();
	if (!set)
		return -1;
	if (!hwloc_get_last_cpu_location(t, set, HWLOC_CPUBIND_THREAD) &&
	    (cpu = hwloc_bitmap_first(set)) >= 0)
		o = hwloc_get_pu_obj_by_os_index(t, (unsigned)cpu);
	hwloc_bitmap_free(set);
	/* The first object above the CPU with memory attached holds the
	 * nearest node, possibly behind a memory-side cache. */
	while (o && !o->memory_arity)
		o = o->parent;
	if (!o)
		return -1;
	for (o = o->memory_first_child; o && o->type != HWLOC_OBJ_NUMANODE;
	     o = o->memory_first_child)
		;
	return o ? (int)o->os_index : -1;
}

int util_topo_bind(void *addr, size_t len, int node)
{
	hwloc_topology_t t = util_topo();
	const struct hwloc_topology_support *sup;
	hwloc_nodeset_t set;
	int ret;

	if (!t)
		return -FI_ENOSYS;
	if (node < 0)
		return -FI_EINVAL;
	sup = hwloc_topology_get_support(t);
	if (!sup->membind->set_area_membind || !sup->membind->bind_membind)
		return -FI_ENOSYS;
	set = hwloc_bitmap_alloc();
	if (!set)
		return -FI_ENOMEM;
	hwloc_bitmap_only(set, (unsigned)node);
	ret = hwloc_set_area_membind(t, addr, len, set, HWLOC_MEMBIND_BIND,
				     HWLOC_MEMBIND_BYNODESET);
	if (ret)
		ret = errno == ENOSYS || errno == EXDEV ? -FI_ENOSYS :
							  -FI_EINVAL;
	hwloc_bitmap_free(set);
	return ret;
}

int util_topo_bind_here(void *addr, size_t len)
{
	int node, ret;

	if (util_topo_numa_count() <= 1)
		return -FI_ENODATA;
	node = util_topo_here_numa();
	if (node < 0)
		return -FI_ENODATA;
	ret = util_topo_bind(addr, len, node);
	return ret ? ret : node;
}
