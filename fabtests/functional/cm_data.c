// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_cm_data: private data of MSG connection management.  The client
 * connects twice.  The server rejects the first request with data of its
 * own: the client's EQ must report FI_ECONNREFUSED with that data.  It
 * accepts the second with reply data: the client's FI_CONNECTED event
 * must carry it.  Each FI_CONNREQ must carry the client's data.  Then one
 * message each way (checked byte for byte), and the client's fi_shutdown
 * reaches the server as FI_SHUTDOWN.  Not supported without FI_EP_MSG.
 */
#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_cm_data",
	.summary = "connect, reject and accept with private data (MSG)",
	.ep_type = FI_EP_MSG,
	.iters = 1,
	.window = 1,
	.sizes = "4k",
};

#define CM_LEN 40
static const char connect_data[2][CM_LEN] = { "connect data #1: please reject",
					      "connect data #2: please accept" };
static const char reject_data[CM_LEN] = "reject data: not this time";
static const char accept_data[CM_LEN] = "accept data: welcome";

struct cm_event {
	struct fi_eq_cm_entry entry;
	char data[256];
};

static struct fn_ep ep;

/* Read one event; -FI_EAVAIL leaves the error entry in err. */
static int eq_read(struct fid_eq *eq, uint32_t *event, struct cm_event *ev,
		   struct fi_eq_err_entry *err, char *err_data)
{
	ssize_t n = fi_eq_sread(eq, event, ev, sizeof(*ev),
				ft.opts.timeout * 1000, 0);

	if (n == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		err->err_data = err_data;
		err->err_data_size = 256;
		n = fi_eq_readerr(eq, err, 0);
		if (n < 0) {
			FT_ERR("fi_eq_readerr", n);
			return (int)n;
		}
		return -FI_EAVAIL;
	}
	if (n < 0) {
		FT_ERR("fi_eq_sread", n);
		return (int)n;
	}
	ft_alive();
	return (int)n;
}

static int expect_data(const char *what, const void *got, size_t len,
		       const char *want)
{
	FN_CHECK(len >= CM_LEN, "%s: %zu bytes of private data, expected %d",
		 what, len, CM_LEN);
	FN_CHECK(!memcmp(got, want, CM_LEN), "%s: private data differs "
		 "(\"%.*s\")", what, CM_LEN, (const char *)got);
	return 0;
}

static int message(bool send, int seed, size_t size)
{
	struct fn_comp c;
	int ret;

	if (send) {
		ft_fill(ep.buf, size, seed);
		ret = FN_POST(&ep, "fi_send", fi_send(ep.ep, ep.buf, size,
						      ep.desc, 0, NULL));
		return ret ? ret : fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	}
	memset(ep.buf, 0, size);
	ret = FN_POST(&ep, "fi_recv", fi_recv(ep.ep, ep.buf, size, ep.desc,
					      0, NULL));
	if (!ret)
		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
	if (!ret)
		FN_CHECK(c.ent.len == size, "message length %zu, expected %zu",
			 c.ent.len, size);
	return ret ? ret : ft_check(ep.buf, size, seed, "message");
}

static int server(const struct fn_cfg *cfg, struct fi_info *info)
{
	struct fi_eq_attr eq_attr = { .size = 16, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_eq *eq = NULL;
	struct fid_pep *pep = NULL;
	struct fi_eq_err_entry err;
	struct cm_event ev;
	char name[256], err_data[256];
	size_t len = sizeof(name);
	uint32_t event, len32;
	int i, n, ret;

	ret = fi_fabric(info->fabric_attr, &ep.fabric, NULL);
	if (!ret)
		ret = fi_eq_open(ep.fabric, &eq_attr, &eq, NULL);
	if (!ret)
		ret = fi_passive_ep(ep.fabric, info, &pep, NULL);
	if (!ret)
		ret = fi_pep_bind(pep, &eq->fid, 0);
	if (!ret)
		ret = fi_listen(pep);
	if (!ret)
		ret = fi_getname(&pep->fid, name, &len);
	if (ret) {
		FT_ERR("listen", ret);
		goto out;
	}
	len32 = (uint32_t)len;
	ret = ft_oob_send(&len32, sizeof(len32));
	if (!ret)
		ret = ft_oob_send(&info->addr_format, sizeof(info->addr_format));
	if (!ret)
		ret = ft_oob_send(name, len);
	for (i = 0; !ret && i < 2; i++) {
		n = eq_read(eq, &event, &ev, &err, err_data);
		if (n < 0) {
			ret = n;
			if (n == -FI_EAVAIL)
				ft_err("listening EQ error: %s",
				       fi_strerror(err.err));
			break;
		}
		if (event != FI_CONNREQ) {
			ft_err("event %u, expected FI_CONNREQ", event);
			ret = -FI_EIO;
			break;
		}
		ret = expect_data("FI_CONNREQ", ev.data,
				  n - sizeof(ev.entry), connect_data[i]);
		if (ret) {
			fi_freeinfo(ev.entry.info);
			break;
		}
		if (i == 0) {
			ret = fi_reject(pep, ev.entry.info->handle,
					reject_data, CM_LEN);
			fi_freeinfo(ev.entry.info);
			if (ret)
				FT_ERR("fi_reject", ret);
			continue;
		}
		ret = fn_open(&ep, cfg, ev.entry.info);
		if (!ret)
			ret = fi_accept(ep.ep, accept_data, CM_LEN);
		if (ret)
			break;
		n = eq_read(ep.eq, &event, &ev, &err, err_data);
		if (n < 0 || event != FI_CONNECTED) {
			ft_err("fi_accept: no FI_CONNECTED (%d, event %u)", n,
			       event);
			ret = n < 0 ? n : -FI_EIO;
		}
	}
	if (!ret)
		ret = message(false, 1, ft.opts.sizes[0]);
	if (!ret)
		ret = message(true, 2, ft.opts.sizes[0]);
	if (!ret) {
		/* the disconnect may only be seen by driving the CQs */
		double start = ft_now();

		do {
			n = (int)fi_eq_read(ep.eq, &event, &ev, sizeof(ev), 0);
			if (n == -FI_EAGAIN)
				n = fn_poll(&ep) ? -FI_EIO : -FI_EAGAIN;
		} while (n == -FI_EAGAIN &&
			 ft_now() - start < ft.opts.timeout);
		if (n < 0 || event != FI_SHUTDOWN) {
			ft_err("no FI_SHUTDOWN after the client's fi_shutdown "
			       "(%d, event %u)", n, event);
			ret = n < 0 ? n : -FI_EIO;
		}
	}
	if (!ret)
		printf("connect data, reject data, accept data, messages and "
		       "shutdown verified\n");
out:
	if (pep)
		fi_close(&pep->fid);
	if (eq)
		fi_close(&eq->fid);
	fi_freeinfo(info);
	return ret;
}

static int client_connect(const struct fn_cfg *cfg, struct fi_info *info,
			  int i)
{
	struct fi_eq_err_entry err;
	struct cm_event ev;
	char err_data[256];
	uint32_t event;
	int n, ret;

	ret = fn_open(&ep, cfg, info);
	if (!ret)
		ret = fi_connect(ep.ep, info->dest_addr, connect_data[i],
				 CM_LEN);
	if (ret) {
		FT_ERR("fi_connect", ret);
		return ret;
	}
	n = eq_read(ep.eq, &event, &ev, &err, err_data);
	if (i == 0) {
		FN_CHECK(n == -FI_EAVAIL && err.err == FI_ECONNREFUSED,
			 "rejected connection: %s, expected FI_ECONNREFUSED",
			 n == -FI_EAVAIL ? fi_strerror(err.err) :
			 n < 0 ? fi_strerror(-n) : "an event");
		return expect_data("rejection", err.err_data,
				   err.err_data_size, reject_data);
	}
	if (n == -FI_EAVAIL)
		ft_err("connect: %s", fi_strerror(err.err));
	if (n < 0)
		return n;
	FN_CHECK(event == FI_CONNECTED, "event %u, expected FI_CONNECTED",
		 event);
	return expect_data("FI_CONNECTED", ev.data, n - sizeof(ev.entry),
			   accept_data);
}

static int client(struct fn_cfg *cfg)
{
	struct fi_info *info;
	char name[256];
	uint32_t len32, format;
	uint64_t caps;
	int i, ret;

	ret = ft_oob_recv(&len32, sizeof(len32));
	if (!ret)
		ret = ft_oob_recv(&format, sizeof(format));
	if (!ret && len32 > sizeof(name))
		ret = -FI_EINVAL;
	if (!ret)
		ret = ft_oob_recv(name, len32);
	if (ret)
		return ret;
	cfg->dest_addr = name;
	cfg->dest_len = len32;
	cfg->addr_format = format;
	for (i = 0; !ret && i < 2; i++) {
		ret = fn_getinfo_local(cfg, &info, &caps);
		if (ret)
			return ret;
		ep.caps = caps;
		ret = client_connect(cfg, info, i);
		if (!i)
			fn_close(&ep);
	}
	if (!ret)
		ret = message(true, 1, ft.opts.sizes[0]);
	if (!ret)
		ret = message(false, 2, ft.opts.sizes[0]);
	if (!ret) {
		ret = fi_shutdown(ep.ep, 0);
		if (ret)
			FT_ERR("fi_shutdown", ret);
		fn_close(&ep);
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct fn_cfg cfg = { .caps = FI_MSG };
	struct fi_info *info;
	uint64_t caps;
	int ret;

	ft_parse(argc, argv, &prog);
	if (ft.opts.ep_type != FI_EP_MSG) {
		fprintf(stderr, "%s: connection data needs -e msg\n", prog.name);
		return FT_EXIT_NOTSUPP;
	}
	cfg.buf_size = ft.opts.sizes[0] + 64;
	ret = ft_oob_open();
	/* both sides: is there a MSG endpoint at all? */
	if (!ret)
		ret = fn_getinfo(&cfg, &info, &caps);
	if (!ret && !ft.server)
		fi_freeinfo(info);
	if (!ret)
		ret = ft.server ? server(&cfg, info) : client(&cfg);
	return fn_exit(&ep, ret);
}
