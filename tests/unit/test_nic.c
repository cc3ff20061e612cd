/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NIC locality: for every network interface of this machine that sysfs
 * shows on a PCI device, util_nic_bus must give that device's address;
 * for one with no bus (lo, dummy interfaces, soft RDMA devices) it must
 * say it has none.
 */
#include <criterion/criterion.h>

#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "weft/util_nic.h"

/* The PCI address sysfs gives for interface name, or false. */
static bool sysfs_pci(const char *name, unsigned int *dom, unsigned int *bus,
		      unsigned int *dev, unsigned int *fn)
{
	char path[PATH_MAX], real[PATH_MAX], *p, *last = NULL;

	snprintf(path, sizeof(path), "/sys/class/net/%s/device", name);
	if (!realpath(path, real))
		return false;
	/* The deepest path component shaped like a PCI address. */
	for (p = strtok(real, "/"); p; p = strtok(NULL, "/"))
		if (sscanf(p, "%x:%x:%x.%x", dom, bus, dev, fn) == 4)
			last = p;
	return last && sscanf(last, "%x:%x:%x.%x", dom, bus, dev, fn) == 4;
}

Test(nic, interfaces_match_sysfs)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	int with_bus = 0, without = 0;

	cr_assert_not_null(ifs);
	for (i = ifs; i->if_index; i++) {
		struct fi_bus_attr bus;
		unsigned int d, b, v, f;
		int ret = util_nic_bus(NULL, i->if_name, &bus);

		if (sysfs_pci(i->if_name, &d, &b, &v, &f)) {
			cr_assert_eq(ret, 0, "%s: on PCI %x:%x:%x.%x, but %d",
				     i->if_name, d, b, v, f, ret);
			cr_assert_eq(bus.bus_type, FI_BUS_PCI);
			cr_assert_eq(bus.attr.pci.domain_id, d, "%s", i->if_name);
			cr_assert_eq(bus.attr.pci.bus_id, b, "%s", i->if_name);
			cr_assert_eq(bus.attr.pci.device_id, v, "%s", i->if_name);
			cr_assert_eq(bus.attr.pci.function_id, f, "%s",
				     i->if_name);
			with_bus++;
		} else {
			cr_assert_eq(ret, -FI_ENODATA,
				     "%s: no PCI device in sysfs, but %d",
				     i->if_name, ret);
			without++;
		}
	}
	if_freenameindex(ifs);
	cr_log_info("%d interfaces on PCI, %d without", with_bus, without);
	cr_assert_eq(util_nic_bus("no-such-device", NULL, &(struct fi_bus_attr){0}),
		     -FI_ENODATA);
}
