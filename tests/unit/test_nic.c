/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NIC locality: for every network interface of this machine that sysfs
 * shows on a PCI device, util_nic_bus must give that device's address;
 * for one with no bus (lo, dummy interfaces, soft RDMA devices) it must
 * say it has none.  Nearness: util_nic_near against the CPUs sysfs gives
 * the interface's PCI device, with the thread pinned to each CPU in turn;
 * the ordering of equal-ranked items by it, on made-up nearness; and
 * fi_getinfo over tcp, whose order stays util_iface_list's where no rank
 * holds both a near and a far NIC.
 */
#define _GNU_SOURCE 1
#include <criterion/criterion.h>

#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#include "weft/util_ifaddr.h"
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

/* ---- nearness ------------------------------------------------------------ */

/*
 * The CPUs sysfs gives as local to the PCI device under the interface
 * name (the deepest PCI function on its device path), into set; false
 * when it has no PCI device.
 */
static bool sysfs_local_cpus(const char *name, cpu_set_t *set)
{
	char path[PATH_MAX + 32], real[PATH_MAX], list[4096], *p, *tok, *save;
	unsigned int d, b, v, f;
	FILE *fp = NULL;

	snprintf(path, sizeof(path), "/sys/class/net/%s/device", name);
	if (!realpath(path, real))
		return false;
	/* Walk up from the device to the first PCI function. */
	while ((p = strrchr(real, '/')) && p != real) {
		if (sscanf(p + 1, "%x:%x:%x.%x", &d, &b, &v, &f) == 4) {
			snprintf(path, sizeof(path), "%s/local_cpulist", real);
			fp = fopen(path, "r");
			break;
		}
		*p = '\0';
	}
	if (!fp)
		return false;
	p = fgets(list, sizeof(list), fp);
	fclose(fp);
	if (!p)
		return false;
	CPU_ZERO(set);
	for (tok = strtok_r(list, ",\n", &save); tok;
	     tok = strtok_r(NULL, ",\n", &save)) {
		int lo, hi, c;

		if (sscanf(tok, "%d-%d", &lo, &hi) != 2) {
			if (sscanf(tok, "%d", &lo) != 1)
				continue;
			hi = lo;
		}
		for (c = lo; c <= hi && c < CPU_SETSIZE; c++)
			CPU_SET(c, set);
	}
	return true;
}

Test(nic, near_matches_sysfs_local_cpus)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	cpu_set_t allowed, one, local;
	int cpu, located = 0, placeless = 0;

	cr_assert_not_null(ifs);
	cr_assert_eq(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
		for (i = ifs; i->if_index; i++) {
			int near = util_nic_near(NULL, i->if_name);

			if (!sysfs_local_cpus(i->if_name, &local)) {
				cr_assert_eq(near, -1,
					     "%s: no PCI device, but near %d",
					     i->if_name, near);
				placeless++;
				continue;
			}
			cr_assert_eq(near, CPU_ISSET(cpu, &local) ? 1 : 0,
				     "%s seen from cpu %d", i->if_name, cpu);
			located++;
		}
	}
	if_freenameindex(ifs);
	cr_assert_eq(util_nic_near("no-such-device", NULL), -1);
	cr_assert_eq(util_nic_near(NULL, NULL), -1);
	cr_log_info("%d answers for NICs on PCI, %d for interfaces without",
		    located, placeless);
}

/* util_nic_order on letters, one per item. */
static void check_order(const char *in, const int *rank, const int *near,
			const char *want)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%s", in);
	cr_assert_eq(util_nic_order(buf, strlen(buf), 1, rank, near), 0);
	cr_assert_str_eq(buf, want, "%s gave %s, not %s", in, buf, want);
}

Test(nic, order_is_a_stable_tiebreak)
{
	/* One rank: near first, each group in its order. */
	check_order("abcd", (int[]){ 0, 0, 0, 0 }, (int[]){ 0, 1, 0, 1 },
		    "bdac");
	/* Ranks are never crossed. */
	check_order("abcd", (int[]){ 0, 0, 1, 1 }, (int[]){ 0, 0, 1, 1 },
		    "abcd");
	check_order("abcd", (int[]){ 0, 0, 1, 1 }, (int[]){ 0, 1, 0, 1 },
		    "badc");
	/* Without a place (-1), an item keeps its own: the located ones
	 * reorder around it. */
	check_order("abcde", (int[]){ 0, 0, 0, 0, 0 },
		    (int[]){ 0, -1, 0, -1, 1 }, "ebadc");
	/* All near, all far, or placeless: nothing moves. */
	check_order("abc", (int[]){ 0, 0, 0 }, (int[]){ 1, 1, 1 }, "abc");
	check_order("abc", (int[]){ 0, 0, 0 }, (int[]){ 0, -1, 0 }, "abc");
	check_order("abc", (int[]){ 0, 0, 0 }, (int[]){ -1, 1, -1 }, "abc");
	/* Equal ranks that are not adjacent are separate runs. */
	check_order("abc", (int[]){ 0, 1, 0 }, (int[]){ 0, 1, 1 }, "abc");
	cr_assert_eq(util_nic_order(NULL, 0, 1, NULL, NULL), 0);
}

extern struct fi_provider tcp_prov;

/*
 * fi_getinfo over tcp offers interfaces in util_iface_list's order when
 * no rank holds both a near and a far NIC (always so on a machine whose
 * NICs are all near, or have no PCI device): the tiebreak adds nothing.
 */
Test(nic, tcp_order_unchanged_without_a_choice)
{
	struct util_iface ifs[64];
	struct fi_info *hints, *info, *fi;
	size_t n, i, j, k;
	cpu_set_t one, local;
	int cpu = sched_getcpu();

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	n = util_iface_list(getenv("FI_TCP_IFACE"), ifs, 64);
	for (i = 0; i < n; i++) {
		bool near_i, far_i = false;

		if (!sysfs_local_cpus(ifs[i].name, &local))
			continue;
		near_i = CPU_ISSET(cpu, &local);
		for (j = 0; j < n; j++)
			if (util_iface_rank(&ifs[j]) ==
				    util_iface_rank(&ifs[i]) &&
			    sysfs_local_cpus(ifs[j].name, &local) &&
			    CPU_ISSET(cpu, &local) != near_i)
				far_i = true;
		if (far_i)
			cr_skip_test("%s and another interface of its rank "
				     "are at different distances from cpu %d: "
				     "the order may change",
				     ifs[i].name, cpu);
	}

	hints = fi_allocinfo();
	cr_assert_not_null(hints);
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->ep_attr->type = FI_EP_RDM;
	/* The provider's own answer, before the core merges others in. */
	cr_assert_eq(tcp_prov.getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				      &info),
		     0);
	/* One RDM entry per interface address, in the list's order. */
	for (fi = info, k = 0; fi; fi = fi->next, k++) {
		cr_assert_lt(k, n);
		cr_assert_str_eq(fi->domain_attr->name, ifs[k].name,
				 "entry %zu", k);
		cr_assert_str_eq(fi->fabric_attr->name, ifs[k].subnet,
				 "entry %zu", k);
	}
	cr_assert_eq(k, n);
	cr_log_info("%zu tcp entries in interface order", k);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
