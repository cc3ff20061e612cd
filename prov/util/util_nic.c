// SPDX-License-Identifier: BSD-2-Clause
/* NIC locality from hwloc (weft/util_nic.h). */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include <hwloc.h>
#include <rdma/fi_errno.h>

#include "weft/util_nic.h"

static pthread_once_t nic_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t nic_topo;
static bool nic_loaded;

static void nic_load(void)
{
	if (hwloc_topology_init(&nic_topo))
		return;
	/* Only what lies on the way to NICs: PCI devices, bridges and OS
	 * devices, not every cache of every core. */
	hwloc_topology_set_io_types_filter(nic_topo,
					   HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(nic_topo)) {
		hwloc_topology_destroy(nic_topo);
		return;
	}
	nic_loaded = true;
}

/* The PCI device above the OS device called name, or NULL. */
static hwloc_obj_t pci_of(const char *name)
{
	hwloc_obj_t o = NULL, p;

	if (!name || !*name)
		return NULL;
	while ((o = hwloc_get_next_osdev(nic_topo, o))) {
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
	hwloc_obj_t p;

	pthread_once(&nic_once, nic_load);
	if (!nic_loaded)
		return -FI_ENODATA;
	p = pci_of(osdev);
	if (!p)
		p = pci_of(netdev);
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
