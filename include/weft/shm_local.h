/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shm transport inside another provider's RDM endpoint.
 *
 * A tcp (or verbs) RDM endpoint reaches the peers on its own host through
 * shared memory and every other peer through the network, behind one AV,
 * one matching queue and one set of completions: the engine
 * (util_rdm.h) asks this transport first about each new peer
 * (util_rdm_ep_attr.local_ops).  Addresses stay the owner's socket addresses;
 * the region of an endpoint is named after its address and its network
 * namespace, so a peer's region is found from the address the application
 * inserted, and a sender's address from the region name in its slots:
 *
 *     <netns inode>-4-<IPv4, hex>-<port, hex>
 *     <netns inode>-6-<IPv6, hex>-<port, hex>
 *
 * The same address in another network namespace (another container, a
 * test's second host) is another endpoint, and another user's regions are
 * never opened (shm's names are per user): such peers stay on the network.
 * A peer whose region cannot be found or claimed stays on the network too.
 */
#ifndef WEFT_SHM_LOCAL_H
#define WEFT_SHM_LOCAL_H

#include <stddef.h>
#include <sys/socket.h>

#include "weft/util_rdm.h"

/*
 * The engine's local transport (util_rdm_local_ops): a provider names
 * &shm_local_ops in util_rdm_ep_attr.local_ops, and the engine opens,
 * starts and closes it with the endpoint.  At FI_ENABLE its region is
 * named after the address fi_getname reports and, for pair i > 0 of a
 * scalable endpoint, that pair.
 */
extern const struct util_rdm_local_ops shm_local_ops;
/*
 * Message orders toward peers reached through shm, for an application
 * that asked for `asked` (its hints' msg_order): SAS, SAR and SAW always;
 * RMA keeping its place behind earlier messages and RMA (RAS, WAS, RAR,
 * RAW, WAR, WAW) only when asked, since keeping it makes an RMA operation
 * issued after a send wait for the peer to read that send.  The owning
 * provider's fi_getinfo reports these; the transport keeps what its
 * endpoint's info says (the tx and rx msg_order).
 */
uint64_t shm_local_orders(uint64_t asked);

/* The region name of an address, or -FI_EINVAL (exposed for tests). */
int shm_local_name(const void *addr, size_t addrlen, char *name,
		   size_t size);

#endif /* WEFT_SHM_LOCAL_H */
