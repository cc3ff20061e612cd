/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a NIC sits, from the machine's topology (hwloc): the PCI address
 * that fi_info's nic->bus_attr reports, so clients can place processes
 * near their NIC.  The topology is read once per process, on first use.
 */
#ifndef WEFT_UTIL_NIC_H
#define WEFT_UTIL_NIC_H

#include <stddef.h>

#include "weft/ofi.h"

/*
 * The PCI function behind an OS device (an RDMA device such as "mlx5_0",
 * or a network interface such as "eth0"): fills *bus (FI_BUS_PCI) and
 * returns 0, or -FI_ENODATA when the topology has no PCI device above it
 * (a software device such as rxe0 on a dummy interface, or no topology).
 * Tries each name given (NULL ends the list early).
 */
int util_nic_bus(const char *osdev, const char *netdev,
		 struct fi_bus_attr *bus);

/*
 * Whether the NIC (named as for util_nic_bus) is near the calling thread:
 * 1 when the CPUs nearest its PCI device (the first object above it that
 * is not I/O, a package or a NUMA node) hold where the thread runs
 * (util_topo_here: its binding, or the CPU it last ran on), 0 when they do
 * not, -1 when it has no PCI device (lo, veth, dummy, soft RDMA devices)
 * or the thread's place is unknown.
 */
int util_nic_near(const char *osdev, const char *netdev);

/*
 * Put near NICs first, as a stable tiebreak after a provider's own order:
 * items is an array of n items of `size` bytes already in that order,
 * rank[i] the provider's rank of item i and near[i] its util_nic_near.
 * Within each run of consecutive items of equal rank, the items with
 * near 1 take the places of the items with a locality (near 0 or 1),
 * first, then those with near 0, each group keeping its order; items with
 * near -1 keep their places.  So nothing moves unless a run holds both a
 * near and a far NIC.  rank and near are not permuted.  Returns 0, or
 * -FI_ENOMEM with the items unchanged.
 */
int util_nic_order(void *items, size_t n, size_t size, const int *rank,
		   const int *near);

#endif /* WEFT_UTIL_NIC_H */
