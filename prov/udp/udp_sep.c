/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * udp's scalable endpoints (weft/util_rdm.h), on both kinds of engine
 * endpoint: FI_EP_RDM (udp, udp;ofi_rxd) and FI_EP_DGRAM under the name
 * "sockets".
 *
 * Context pair i is an engine endpoint with a UDP socket of its own, and
 * every pair's socket is bound to the same address, the scalable
 * endpoint's (SO_REUSEPORT): a peer reaches receive context i at that
 * address and every pair sends from it, so a datagram's source names the
 * scalable endpoint whatever context sent it.  Each datagram says which
 * context it is for (udpx_hdr.dst_ctx) and which sent it (src_ctx).  The
 * kernel picks the socket of a reuseport group that takes a datagram by
 * running the group's classic BPF filter over the payload: ours loads
 * dst_ctx and returns the index of that context's socket in the group,
 * which is the order the sockets were bound in, a closed one's place
 * taken by the last (the kernel's rule, mirrored in slot[]).  A datagram
 * for a context that has no socket goes to pair 0's, which drops it.
 *
 * Pair 0 binds the info's source address (fi_setname of the scalable
 * endpoint puts it there: weft/util_rdm.h) as a plain socket would, so
 * that a port in use fails and port 0 gets a port no socket has, and only
 * then allows others at its port.  Only sockets of the same user may join
 * a reuseport group; one of them that binds port 0 with SO_REUSEPORT may
 * be given ours by the kernel, and would take datagrams of ours.
 */
#include "udp_xp.h"

#include <errno.h>
#include <linux/filter.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/util_ifaddr.h"

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

struct udp_sep {
	struct util_rdm_sep base; /* first */
	struct fid_domain *domain;
	pthread_mutex_t lock; /* the group: name, slot[] */
	bool named; /* name holds the address every pair binds */
	struct sockaddr_storage name;
	socklen_t namelen;
	/* The group's sockets in the kernel's order: their contexts. */
	uint32_t nslot;
	uint16_t slot[UDP_SEP_MAX_CTX];
	int slot_fd[UDP_SEP_MAX_CTX];
	bool listening[UDP_SEP_MAX_CTX]; /* pairs that take notes */
	uint32_t pending[UDP_SEP_MAX_CTX]; /* notes not taken yet */
};

static struct udp_sep *usep_of(struct util_rdm_sep *sep)
{
	return container_of(sep, struct udp_sep, base);
}

/* The group's filter: dst_ctx -> its socket's index; anything else (a
 * short datagram, an unknown context) -> index 0, pair 0's socket. */
static int filter_attach(struct udp_sep *s, int fd)
{
	struct sock_filter code[2 + 2 * UDP_SEP_MAX_CTX];
	struct sock_fprog prog = { .filter = code };
	uint32_t i, n = 0, zero = 0;

	for (i = 0; i < s->nslot; i++)
		if (s->slot[i] == 0)
			zero = i;
	code[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS,
						  UDPX_DST_CTX_OFF);
	for (i = 0; i < s->nslot; i++) {
		code[n++] = (struct sock_filter)BPF_JUMP(
			BPF_JMP | BPF_JEQ | BPF_K, s->slot[i], 0, 1);
		code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, i);
	}
	code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, zero);
	prog.len = (unsigned short)n;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
		       sizeof(prog)))
		return weft_errno(errno);
	return 0;
}

int udp_sep_socket(struct udp_sep *s, uint32_t ctx, const struct fi_info *info,
		   uint32_t addr_format, struct sockaddr_storage *name,
		   socklen_t *namelen)
{
	int family = addr_format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
	struct sockaddr_storage at = { 0 };
	int fd, one = 1, ret;

	pthread_mutex_lock(&s->lock);
	if (s->nslot == UDP_SEP_MAX_CTX) {
		ret = -FI_EINVAL;
		goto out;
	}
	if (s->named) {
		at = s->name;
	} else if (info->src_addr && info->src_addrlen <= sizeof(at)) {
		memcpy(&at, info->src_addr, info->src_addrlen);
	} else {
		at.ss_family = (sa_family_t)family;
	}
	if (at.ss_family != family) {
		ret = -FI_EINVAL;
		goto out;
	}
	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = weft_errno(errno);
		goto out;
	}
	/*
	 * The first socket binds as a plain one (a port in use fails, port
	 * 0 gets the kernel's pick, never a port another group has) and
	 * allows the others after; the second one's bind makes the group,
	 * the first at index 0.
	 */
	*namelen = sizeof(*name);
	if ((s->named &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
	    bind(fd, (struct sockaddr *)&at, util_sockaddr_len(&at)) ||
	    (!s->named &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) ||
	    getsockname(fd, (struct sockaddr *)name, namelen)) {
		ret = weft_errno(errno);
		close(fd);
		goto out;
	}
	s->slot[s->nslot] = (uint16_t)ctx;
	s->slot_fd[s->nslot] = fd;
	s->nslot++;
	/* (One socket has no group yet, nor needs a filter.) */
	ret = s->nslot > 1 ? filter_attach(s, fd) : 0;
	if (ret) {
		s->nslot--;
		close(fd);
		goto out;
	}
	if (!s->named) {
		s->name = *name;
		s->namelen = *namelen;
		s->named = true;
	}
	ret = fd;
out:
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void udp_sep_socket_close(struct udp_sep *s, uint32_t ctx, int fd)
{
	uint32_t i;

	pthread_mutex_lock(&s->lock);
	close(fd);
	for (i = 0; i < s->nslot; i++)
		if (s->slot_fd[i] == fd && s->slot[i] == ctx)
			break;
	if (i < s->nslot) {
		/* The kernel moved its last socket into the hole. */
		s->nslot--;
		s->slot[i] = s->slot[s->nslot];
		s->slot_fd[i] = s->slot_fd[s->nslot];
		if (s->nslot > 1)
			filter_attach(s, s->slot_fd[0]);
	}
	pthread_mutex_unlock(&s->lock);
}

struct util_rdm_sep *udp_sep_base(struct udp_sep *s)
{
	return &s->base;
}

size_t udp_sep_errq(struct udp_sep *s, struct sockaddr_storage *out,
		    size_t max)
{
	size_t n = 0;
	uint32_t i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->nslot && n < max; i++)
		n += udpx_errq_take(s->slot_fd[i], out + n, max - n);
	pthread_mutex_unlock(&s->lock);
	return n;
}

void udp_sep_listen(struct udp_sep *s, uint32_t ctx)
{
	pthread_mutex_lock(&s->lock);
	s->listening[ctx] = true;
	util_rdm_inbox_open(&s->base, ctx);
	pthread_mutex_unlock(&s->lock);
}

void udp_sep_taken(struct udp_sep *s, uint32_t ctx, uint32_t n)
{
	pthread_mutex_lock(&s->lock);
	s->pending[ctx] -= WEFT_MIN(n, s->pending[ctx]);
	pthread_mutex_unlock(&s->lock);
}

void udp_sep_unlisten(struct udp_sep *s, uint32_t ctx)
{
	struct dlist_entry *e;

	pthread_mutex_lock(&s->lock);
	s->listening[ctx] = false;
	s->pending[ctx] = 0;
	pthread_mutex_unlock(&s->lock);
	while ((e = util_rdm_inbox_take(&s->base, ctx)))
		free(e);
}

void udp_sep_tell(struct udp_sep *s, uint32_t from, const void *note,
		  size_t len)
{
	struct dlist_entry *e;
	uint32_t i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->base.npair; i++) {
		/* A pair nobody drives gets no more than UDP_SEP_NOTES:
		 * once driven, it reads the error queues itself. */
		if (i == from || !s->listening[i] ||
		    s->pending[i] >= UDP_SEP_NOTES)
			continue;
		e = malloc(len);
		if (!e)
			break;
		memcpy(e, note, len);
		s->pending[i]++;
		util_rdm_inbox_post(&s->base, i, e);
	}
	pthread_mutex_unlock(&s->lock);
}

static int udp_sep_pair_open(struct util_rdm_sep *sep, uint32_t index,
			     struct util_rdm_ep **out)
{
	struct udp_sep *s = usep_of(sep);

	return udpx_pair_open(s->domain, sep->info, s, index, out);
}

static void udp_sep_release(struct util_rdm_sep *sep)
{
	struct udp_sep *s = usep_of(sep);

	pthread_mutex_destroy(&s->lock);
	free(s);
}

static const struct util_rdm_sep_ops udp_sep_ops = {
	.pair_open = udp_sep_pair_open,
	.release = udp_sep_release,
	.max_ctx = UDP_SEP_MAX_CTX,
};

int udp_sep_open(struct fid_domain *domain_fid, struct fi_info *info,
		 struct fid_ep **sep_fid, void *context)
{
	struct util_domain *domain =
		container_of(domain_fid, struct util_domain, domain_fid);
	struct udp_sep *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	s->domain = domain_fid;
	ret = -pthread_mutex_init(&s->lock, NULL);
	if (ret) {
		free(s);
		return ret;
	}
	ret = util_rdm_sep_init(&s->base, domain, info, &udp_sep_ops, sep_fid,
				context);
	if (ret)
		udp_sep_release(&s->base);
	return ret;
}
