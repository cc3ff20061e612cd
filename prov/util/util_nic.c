// SPDX-License-Identifier: BSD-2-Clause
/* NIC locality from hwloc (weft/util_nic.h). */
#include "config.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "weft/ofi.h"

#include "weft/util_nic.h"
#include "weft/util_topo.h"

/* The PCI device above the OS device called name, or NULL. */
static hwloc_obj_t pci_of(hwloc_topology_t topo, const char *name)
{
	hwloc_obj_t o = NULL, p;

	if (!name || !*name)
		return NULL;
	while ((o = hwloc_get_next_osdev(topo, o))) {
		if (!o->name || strcmp(o->name, name))
			continue;
		for (p = o->parent; p; p = p->parent)
			if (p->type == HWLOC_OBJ_PCI_DEVICE)
				return p;
		return NULL;
	}
	return NULL;
}

int util_nic_bus(const char *osdev, const char *netdev,
		 struct fi_bus_attr *bus)
{
	hwloc_topology_t topo = util_topo();
	hwloc_obj_t p;

	if (!topo)
		return -FI_ENODATA;
	p = pci_of(topo, osdev);
	if (!p)
		p = pci_of(topo, netdev);
	if (!p)
		return -FI_ENODATA;
	memset(bus, 0, sizeof(*bus));
	bus->bus_type = FI_BUS_PCI;
	bus->attr.pci.domain_id = (uint16_t)p->attr->pcidev.domain;
	bus->attr.pci.bus_id = p->attr->pcidev.bus;
	bus->attr.pci.device_id = p->attr->pcidev.dev;
	bus->attr.pci.function_id = p->attr->pcidev.func;
	return 0;
}

int util_nic_near(const char *osdev, const char *netdev)
{
	hwloc_topology_t topo = util_topo();
	hwloc_cpuset_t here;
	hwloc_obj_t p, cpus;
	int ret = -1;

	if (!topo)
		return -1;
	p = pci_of(topo, osdev);
	if (!p)
		p = pci_of(topo, netdev);
	if (!p)
		return -1; /* a virtual interface: no place of its own */
	cpus = hwloc_get_non_io_ancestor_obj(topo, p);
	here = hwloc_bitmap_alloc();
	if (cpus && cpus->cpuset && here && !util_topo_here(here))
		ret = hwloc_bitmap_isincluded(here, cpus->cpuset);
	hwloc_bitmap_free(here);
	return ret;
}

int util_nic_order(void *items, size_t n, size_t size, const int *rank,
		   const int *near)
{
	char *base = items, *copy;
	size_t a, b, i, k;
	int pass;

	/* Nothing to do unless some run holds a near and a far NIC. */
	for (a = 0; a < n; a = b) {
		bool has_near = false, has_far = false;

		for (b = a; b < n && rank[b] == rank[a]; b++) {
			has_near |= near[b] == 1;
			has_far |= near[b] == 0;
		}
		if (has_near && has_far)
			break;
	}
	if (a >= n)
		return 0;
	copy = malloc(n * size);
	if (!copy)
		return -FI_ENOMEM;
	memcpy(copy, base, n * size);
	for (a = 0; a < n; a = b) {
		for (b = a; b < n && rank[b] == rank[a]; b++)
			;
		/* The places the located items take in this run, in order:
		 * first to the near ones, then to the far ones; items
		 * without a place (near -1) stay where they are. */
		k = a;
		for (pass = 1; pass >= 0; pass--) {
			for (i = a; i < b; i++) {
				if (near[i] != pass)
					continue;
				while (near[k] < 0)
					k++;
				memcpy(base + k * size, copy + i * size, size);
				k++;
			}
		}
	}
	free(copy);
	return 0;
}
