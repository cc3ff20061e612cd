// SPDX-License-Identifier: BSD-2-Clause
/*
 * Helpers of the functional tests: setup with the options a test needs,
 * completion backlogs, agreement on the outcome between the two peers.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fn.h"

/* ---- agreement over the side channel ---- */

/* A real failure beats "not supported", which beats success. */
static int fn_worse(int a, int b)
{
	if (a && a != -FI_ENODATA)
		return a;
	if (b && b != -FI_ENODATA)
		return b;
	return a ? a : b;
}

/*
 * Both sides' results over the side channel.  With an endpoint, its
 * completion queues are read while the peer's word is awaited: under
 * FI_PROGRESS_MANUAL a provider moves data only inside its calls, and a
 * peer may still wait for this side's part (the acknowledgement of a
 * message it discarded while that was still arriving, say).
 */
static int fn_agree_on(struct fn_ep *e, int ret)
{
	struct pollfd pfd = { .fd = ft.oob, .events = POLLIN };
	int32_t mine = ret, theirs = 0;
	double start = ft_now();
	int r;

	if (ft.oob < 0)
		return ret;
	if (ft_oob_send(&mine, sizeof(mine)))
		return ret ? ret : -FI_EIO;
	while (e && e->ep) {
		/* Errors of the queues are the run's business, not this
		 * wait's: the word comes all the same. */
		(void)fn_poll(e);
		r = poll(&pfd, 1, 0);
		if (r > 0 || (r < 0 && errno != EINTR))
			break;
		if (ft_now() - start > ft.opts.timeout)
			break; /* ft_oob_recv says so */
	}
	if (ft_oob_recv(&theirs, sizeof(theirs)))
		return ret ? ret : -FI_EIO;
	if (theirs && theirs != -FI_ENODATA && !ret)
		ft_err("the peer failed: %s", fi_strerror(-theirs));
	return fn_worse(ret, theirs);
}

int fn_agree(int ret)
{
	return fn_agree_on(NULL, ret);
}

int fn_note(char c)
{
	return ft_oob_send(&c, 1);
}

int fn_wait_note(struct fn_ep *e, char want)
{
	struct pollfd pfd = { .fd = ft.oob, .events = POLLIN };
	double start = ft_now();
	char c;
	int ret;

	for (;;) {
		if (e && e->ep) {
			ret = fn_poll(e);
			if (ret)
				return ret;
		}
		ret = poll(&pfd, 1, e && e->ep ? 0 : 100);
		if (ret > 0)
			break;
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ft_now() - start > ft.opts.timeout) {
			ft_err("side channel: no note '%c' within %d s", want,
			       ft.opts.timeout);
			return -FI_ETIMEDOUT;
		}
	}
	ret = ft_oob_recv(&c, 1);
	if (ret)
		return ret;
	if (c != want) {
		ft_err("side channel: note '%c', expected '%c'", c, want);
		return -FI_EIO;
	}
	ft_alive();
	return 0;
}

/* ---- setup ---- */

static struct fi_info *fn_hints(const struct fn_cfg *cfg, uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = caps;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = ft.opts.ep_type;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	if (ft.opts.ep_type != FI_EP_DGRAM)
		h->tx_attr->msg_order = FI_ORDER_SAS;
	if (ft.opts.delivery)
		h->tx_attr->op_flags |= FI_DELIVERY_COMPLETE;
	if (ft.opts.prov)
		h->fabric_attr->prov_name = strdup(ft.opts.prov);
	if (ft.opts.fabric)
		h->fabric_attr->name = strdup(ft.opts.fabric);
	if (ft.opts.domain)
		h->domain_attr->name = strdup(ft.opts.domain);
	if (cfg->dest_addr) {
		h->addr_format = cfg->addr_format;
		h->dest_addr = malloc(cfg->dest_len);
		if (!h->dest_addr) {
			fi_freeinfo(h);
			return NULL;
		}
		memcpy(h->dest_addr, cfg->dest_addr, cfg->dest_len);
		h->dest_addrlen = cfg->dest_len;
	}
	return h;
}

static int fn_getinfo_caps(const struct fn_cfg *cfg, uint64_t caps,
			   struct fi_info **info)
{
	struct fi_info *h = fn_hints(cfg, caps), *fi;
	const char *node = NULL;
	uint64_t flags = 0;
	int ret;

	if (!h)
		return -FI_ENOMEM;
	if (ft.server) {
		node = ft.opts.src_addr;
		flags = node ? FI_SOURCE : 0;
	} else if (ft.opts.ep_type != FI_EP_MSG) {
		node = ft.opts.dst_addr;
	}
	ret = fi_getinfo(FI_VERSION(1, 17), node, NULL, flags, h, info);
	if (ret == -FI_ENODATA && node && !ft.server)
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, info);
	fi_freeinfo(h);
	if (ret)
		return ret;
	fi = *info;
	if (cfg->cq_data && fi->domain_attr->cq_data_size < 4) {
		fi_freeinfo(fi);
		*info = NULL;
		return -FI_ENODATA;
	}
	return 0;
}

int fn_getinfo_local(const struct fn_cfg *cfg, struct fi_info **info,
		     uint64_t *caps)
{
	int ret = -FI_ENODATA;

	*info = NULL;
	if (cfg->opt_caps) {
		ret = fn_getinfo_caps(cfg, cfg->caps | cfg->opt_caps, info);
		if (!ret)
			*caps = cfg->caps | cfg->opt_caps;
	}
	if (ret == -FI_ENODATA) {
		ret = fn_getinfo_caps(cfg, cfg->caps, info);
		if (!ret)
			*caps = cfg->caps;
	}
	if (ret == -FI_ENODATA)
		fprintf(stderr, "%s: fi_getinfo: provider %s has no %s "
			"endpoint with the capabilities this test needs\n",
			ft.prog->name, ft.opts.prov ? ft.opts.prov : "(any)",
			ft_ep_type_str(ft.opts.ep_type));
	else if (ret)
		FT_ERR("fi_getinfo", ret);
	return ret;
}

int fn_getinfo(const struct fn_cfg *cfg, struct fi_info **info,
	       uint64_t *caps)
{
	uint64_t mine = 0, theirs = 0;
	int ret;

	ret = fn_agree(fn_getinfo_local(cfg, info, &mine));
	if (!ret && (ft_oob_send(&mine, sizeof(mine)) ||
		     ft_oob_recv(&theirs, sizeof(theirs))))
		ret = -FI_EIO;
	if (ret) {
		fi_freeinfo(*info);
		*info = NULL;
		return ret;
	}
	*caps = mine & theirs;
	return 0;
}

static int fn_open_cq(struct fn_ep *e, struct fn_cq *cq)
{
	struct fi_cq_attr attr = {
		.format = FI_CQ_FORMAT_TAGGED,
		.size = FN_BACKLOG,
		.wait_obj = FI_WAIT_NONE,
	};
	int ret;

	cq->head = cq->tail = 0;
	ret = fi_cq_open(e->domain, &attr, &cq->cq, NULL);
	if (ret)
		FT_ERR("fi_cq_open", ret);
	return ret;
}

static int fn_open_cntr(struct fn_ep *e, struct fid_cntr **cntr)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	int ret;

	ret = fi_cntr_open(e->domain, &attr, cntr, NULL);
	if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL) {
		attr.wait_obj = FI_WAIT_NONE;
		ret = fi_cntr_open(e->domain, &attr, cntr, NULL);
	}
	if (ret)
		FT_ERR("fi_cntr_open", ret);
	return ret;
}

static int fn_bind(struct fn_ep *e, const struct fn_cfg *cfg)
{
	uint64_t sel = cfg->counters ? FI_SELECTIVE_COMPLETION : 0;
	uint64_t tx_ev = FI_SEND, rx_ev = FI_RECV;
	int ret;

	ret = fi_ep_bind(e->ep, &e->tx.cq->fid, FI_TRANSMIT | sel);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->rx.cq->fid, FI_RECV | sel);
	if (e->caps & FI_RMA) {
		tx_ev |= FI_WRITE | FI_READ;
		if (e->caps & FI_RMA_EVENT)
			rx_ev |= FI_REMOTE_WRITE | FI_REMOTE_READ;
	}
	if (!ret && e->txcntr)
		ret = fi_ep_bind(e->ep, &e->txcntr->fid, tx_ev);
	if (!ret && e->rxcntr)
		ret = fi_ep_bind(e->ep, &e->rxcntr->fid, rx_ev);
	if (!ret && e->av)
		ret = fi_ep_bind(e->ep, &e->av->fid, 0);
	if (!ret && e->eq)
		ret = fi_ep_bind(e->ep, &e->eq->fid, 0);
	if (ret)
		FT_ERR("fi_ep_bind", ret);
	return ret;
}

int fn_open(struct fn_ep *e, const struct fn_cfg *cfg, struct fi_info *info)
{
	struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC, .count = 64 };
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	uint64_t access = FI_SEND | FI_RECV;
	void *p;
	int ret;

	e->info = info;
	e->peer = FI_ADDR_UNSPEC;
	ret = e->fabric ? 0 : fi_fabric(info->fabric_attr, &e->fabric, NULL);
	if (ret) {
		FT_ERR("fi_fabric", ret);
		return ret;
	}
	ret = fi_domain(e->fabric, info, &e->domain, NULL);
	if (ret) {
		FT_ERR("fi_domain", ret);
		return ret;
	}
	ret = fn_open_cq(e, &e->tx);
	if (!ret)
		ret = fn_open_cq(e, &e->rx);
	if (!ret && cfg->counters)
		ret = fn_open_cntr(e, &e->txcntr);
	if (!ret && cfg->counters)
		ret = fn_open_cntr(e, &e->rxcntr);
	if (ret)
		return ret;
	if (info->ep_attr->type == FI_EP_MSG)
		ret = fi_eq_open(e->fabric, &eq_attr, &e->eq, NULL);
	else
		ret = fi_av_open(e->domain, &av_attr, &e->av, NULL);
	if (ret) {
		FT_ERR(e->av ? "fi_eq_open" : "fi_av_open", ret);
		return ret;
	}
	ret = fi_endpoint(e->domain, info, &e->ep, NULL);
	if (ret) {
		FT_ERR("fi_endpoint", ret);
		return ret;
	}
	ret = fn_bind(e, cfg);
	if (ret)
		return ret;
	ret = fi_enable(e->ep);
	if (ret) {
		FT_ERR("fi_enable", ret);
		return ret;
	}
	if (cfg->set_opts) {
		ret = cfg->set_opts(e->ep);
		if (ret)
			return ret;
	}

	e->buf_size = cfg->buf_size ? cfg->buf_size : (1UL << 20);
	if (posix_memalign(&p, 4096, e->buf_size))
		return -FI_ENOMEM;
	e->buf = p;
	memset(e->buf, 0, e->buf_size);
	if (e->caps & FI_RMA)
		access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	ret = fi_mr_reg(e->domain, e->buf, e->buf_size, access, 0, 0x77, 0,
			&e->mr, NULL);
	if (ret) {
		FT_ERR("fi_mr_reg", ret);
		return ret;
	}
	e->desc = fi_mr_desc(e->mr);
	if (info->ep_attr->type != FI_EP_MSG) {
		e->name_len = sizeof(e->name);
		ret = fi_getname(&e->ep->fid, e->name, &e->name_len);
		if (ret)
			FT_ERR("fi_getname", ret);
	}
	return ret;
}

struct fn_wire {
	uint64_t addr;
	uint64_t key;
	uint32_t name_len;
};

int fn_exchange(struct fn_ep *e)
{
	struct fn_wire mine = { 0 }, theirs;
	char name[256];
	int ret;

	mine.addr = (e->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		    (uint64_t)(uintptr_t)e->buf : 0;
	mine.key = fi_mr_key(e->mr);
	mine.name_len = (uint32_t)e->name_len;
	ret = ft_oob_send(&mine, sizeof(mine));
	if (!ret)
		ret = ft_oob_send(e->name, e->name_len);
	if (!ret)
		ret = ft_oob_recv(&theirs, sizeof(theirs));
	if (ret)
		return ret;
	if (theirs.name_len > sizeof(name)) {
		ft_err("peer name of %u bytes is too long", theirs.name_len);
		return -FI_EINVAL;
	}
	ret = ft_oob_recv(name, theirs.name_len);
	if (ret)
		return ret;
	e->raddr = theirs.addr;
	e->rkey = theirs.key;
	if (!e->av)
		return 0;
	ret = fi_av_insert(e->av, name, 1, &e->peer, 0, NULL);
	if (ret != 1) {
		FT_ERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	return 0;
}

void fn_close(struct fn_ep *e)
{
	if (e->ep)
		ft_close_fid(&e->ep->fid, "fi_close(ep)");
	if (e->mr)
		ft_close_fid(&e->mr->fid, "fi_close(mr)");
	if (e->av)
		ft_close_fid(&e->av->fid, "fi_close(av)");
	if (e->txcntr)
		ft_close_fid(&e->txcntr->fid, "fi_close(cntr)");
	if (e->rxcntr)
		ft_close_fid(&e->rxcntr->fid, "fi_close(cntr)");
	if (e->tx.cq)
		ft_close_fid(&e->tx.cq->fid, "fi_close(cq)");
	if (e->rx.cq)
		ft_close_fid(&e->rx.cq->fid, "fi_close(cq)");
	if (e->eq)
		ft_close_fid(&e->eq->fid, "fi_close(eq)");
	if (e->domain)
		ft_close_fid(&e->domain->fid, "fi_close(domain)");
	if (e->fabric)
		ft_close_fid(&e->fabric->fid, "fi_close(fabric)");
	fi_freeinfo(e->info);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

int fn_setup(struct fn_ep *e, const struct fn_cfg *cfg)
{
	struct fi_info *info;
	int ret;

	memset(e, 0, sizeof(*e));
	ret = ft_oob_open();
	if (ret)
		return ret;
	ret = fn_getinfo(cfg, &info, &e->caps);
	if (ret)
		return ret;
	ret = fn_agree(fn_open(e, cfg, info));
	if (!ret)
		ret = fn_agree(fn_exchange(e));
	return ret;
}

int fn_exit(struct fn_ep *e, int ret)
{
	ret = fn_agree_on(e, ret);
	if (e)
		fn_close(e);
	ft_fini();
	if (!ret)
		return 0;
	if (ret == -FI_ENODATA)
		return FT_EXIT_NOTSUPP;
	return 1;
}

/* ---- completions ---- */

static int fn_poll_cq(struct fn_cq *cq, const char *which)
{
	struct fn_comp *c;
	ssize_t n;

	while (cq->tail - cq->head < FN_BACKLOG) {
		c = &cq->q[cq->tail % FN_BACKLOG];
		memset(c, 0, sizeof(*c));
		n = fi_cq_read(cq->cq, &c->ent, 1);
		if (n == -FI_EAGAIN)
			return 0;
		if (n == -FI_EAVAIL) {
			n = fi_cq_readerr(cq->cq, &c->errent, 0);
			if (n < 0) {
				FT_ERR("fi_cq_readerr", n);
				return (int)n;
			}
			/* the man page says positive; some providers negate */
			c->err = c->errent.err < 0 ? -c->errent.err :
				 c->errent.err ? c->errent.err : FI_EOTHER;
		} else if (n < 0) {
			ft_err("fi_cq_read(%s): %s", which,
			       fi_strerror((int)-n));
			return (int)n;
		}
		cq->tail++;
		ft_alive();
	}
	return 0;
}

int fn_poll(struct fn_ep *e)
{
	int ret = fn_poll_cq(&e->tx, "transmit");

	if (!ret)
		ret = fn_poll_cq(&e->rx, "receive");
	return ret;
}

int fn_next(struct fn_ep *e, struct fn_cq *cq, struct fn_comp *c)
{
	double start = ft_now();
	int ret;

	while (cq->head == cq->tail) {
		ret = fn_poll(e);
		if (ret)
			return ret;
		if (cq->head != cq->tail)
			break;
		if (ft_now() - start > ft.opts.timeout) {
			ft_err("no %s completion within %d s",
			       cq == &e->tx ? "transmit" : "receive",
			       ft.opts.timeout);
			return -FI_ETIMEDOUT;
		}
	}
	*c = cq->q[cq->head % FN_BACKLOG];
	cq->head++;
	return 0;
}

int fn_wait_ctx(struct fn_ep *e, struct fn_cq *cq, void *ctx,
		struct fn_comp *c)
{
	int ret = fn_next(e, cq, c);

	if (ret)
		return ret;
	if (c->err) {
		ft_err("%s completion error: %s (%d)",
		       cq == &e->tx ? "transmit" : "receive",
		       fi_strerror(c->err), c->err);
		return -c->err;
	}
	if (ctx && c->ent.op_context != ctx) {
		ft_err("completion for context %p, expected %p",
		       c->ent.op_context, ctx);
		return -FI_EIO;
	}
	return 0;
}

int fn_cq_quiet(struct fn_ep *e, struct fn_cq *cq, int ms)
{
	int ret = fn_spin(e, ms);

	if (ret)
		return ret;
	if (cq->head != cq->tail) {
		ft_err("unexpected %s completion (context %p, flags 0x%llx)",
		       cq == &e->tx ? "transmit" : "receive",
		       cq->q[cq->head % FN_BACKLOG].ent.op_context,
		       (unsigned long long)cq->q[cq->head % FN_BACKLOG].ent.flags);
		return -FI_EIO;
	}
	return 0;
}

int fn_spin(struct fn_ep *e, int ms)
{
	double end = ft_now() + ms / 1000.0;
	int ret;

	do {
		ret = fn_poll(e);
		if (ret)
			return ret;
	} while (ft_now() < end);
	ft_alive();
	return 0;
}
