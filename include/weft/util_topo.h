/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The machine's topology (hwloc): where the calling thread runs, which
 * NUMA node is nearest it, and binding memory there.  One topology per
 * process, read on first use and shared by all who ask (NIC locality in
 * util_nic.h, the placement of shm queues).  Control path only.
 */
#ifndef WEFT_UTIL_TOPO_H
#define WEFT_UTIL_TOPO_H

#include <stddef.h>

#include <hwloc.h>

/*
 * The topology, with the I/O objects on the way to NICs (PCI devices,
 * bridges, OS devices); loaded by the first call, from any thread.  NULL
 * when it could not be loaded.  Read only: callers must not change it.
 */
hwloc_topology_t util_topo(void);

/*
 * Where the calling thread runs: its CPU binding when that is narrower
 * than the CPUs the process may use, else the CPU it last ran on.  Fills
 * set; returns 0, or -FI_ENODATA when neither is known.
 */
int util_topo_here(hwloc_cpuset_t set);

/*
 * The OS index of the NUMA node nearest the CPU the calling thread last
 * ran on (its normal memory, not a memory-side cache), or -1 when unknown.
 */
int util_topo_here_numa(void);

/* How many NUMA nodes the topology has (1 when it could not be loaded). */
int util_topo_numa_count(void);

/*
 * Bind the pages of [addr, addr + len) to NUMA node `node` (an OS index):
 * pages allocated from then on come from that node only; pages already
 * there stay where they are.  For a shared file mapping the policy is the
 * file's, and holds for every process and for allocations through the file
 * (fallocate) too.  Returns 0, -FI_ENOSYS when this system cannot bind
 * memory, or -FI_EINVAL.
 */
int util_topo_bind(void *addr, size_t len, int node);

/*
 * util_topo_bind to the calling thread's node (util_topo_here_numa) when
 * the machine has more than one.  Returns the node bound to, -FI_ENODATA
 * when there is nothing to choose (one node) or the thread's node is
 * unknown, -FI_ENOSYS when memory cannot be bound.
 */
int util_topo_bind_here(void *addr, size_t len);

#endif /* WEFT_UTIL_TOPO_H */
