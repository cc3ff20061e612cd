/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a NIC sits, from the machine's topology (hwloc): the PCI address
 * that fi_info's nic->bus_attr reports, so clients can place processes
 * near their NIC.  The topology is read once per process, on first use.
 */
#ifndef WEFT_UTIL_NIC_H
#define WEFT_UTIL_NIC_H

#include <rdma/fi_domain.h>

/*
 * The PCI function behind an OS device (an RDMA device such as "mlx5_0",
 * or a network interface such as "eth0"): fills *bus (FI_BUS_PCI) and
 * returns 0, or -FI_ENODATA when the topology has no PCI device above it
 * (a software device such as rxe0 on a dummy interface, or no topology).
 * Tries each name given (NULL ends the list early).
 */
int util_nic_bus(const char *osdev, const char *netdev,
		 struct fi_bus_attr *bus);

#endif /* WEFT_UTIL_NIC_H */
