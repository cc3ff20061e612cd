/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The udp provider: FI_EP_DGRAM endpoints over UDP sockets.
 *
 * A datagram endpoint is one non-blocking UDP socket, bound when it is
 * opened (fi_getname works at once).  A send is one sendmsg from the
 * caller's iovecs and completes when the kernel took it; a receive is a
 * slot of a ring that the progress fills, several datagrams per
 * recvmmsg, straight into the posted buffers, in the order they were
 * posted.  Datagrams that come while no receive is posted wait in the
 * socket's buffer, and the kernel drops what does not fit there.  fi_join
 * of an IPv4 multicast group opens a socket bound to the group's address
 * and port; its datagrams fill the same ring.
 */
#ifndef WEFT_PROV_UDP_H
#define WEFT_PROV_UDP_H

#include "weft/core.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "weft/ofi.h"

#include "weft/util_ep.h"
#include "weft/util_getinfo.h"
#include "weft/util_mr.h"

/* What 1.17 says of its udp provider: a datagram fits an Ethernet frame
 * (1500 bytes less the IPv4 and UDP headers), on every interface. */
#define UDP_MAX_MSG 1472
#define UDP_IOV_MAX 4
#define UDP_QUEUE_SIZE 1024
/* Multicast groups one endpoint may join at once. */
#define UDP_MC_MAX 16
/* fi_mc_addr of a group: this bit and the group's index, beyond any
 * fi_addr_t an AV hands out. */
#define UDP_MC_ADDR ((fi_addr_t)1 << 62)

extern struct fi_provider udp_prov;
extern const struct util_prov udp_util_prov;

struct udp_domain {
	struct util_mr_domain base; /* first: util_mr_domain_close frees it */
	uint32_t addr_format;
};

int udp_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **ep, void *context);

/* A socket call's errno as -FI_E* (a full socket buffer: -FI_EAGAIN). */
int udp_errno(int err);

#endif /* WEFT_PROV_UDP_H */
