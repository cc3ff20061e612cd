// SPDX-License-Identifier: BSD-2-Clause
/* NIC locality from hwloc (weft/util_nic.h). */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include <rdma/fi_errno.h>

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
