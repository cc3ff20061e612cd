// SPDX-License-Identifier: BSD-2-Clause
/*
 * fi_many_clients: one RDM server, many clients in turn.  The client
 * program starts -I client processes one after the other; each opens its
 * own fabric, domain and endpoint, sends the server its address over the
 * side channel, then one message each way (checked byte for byte) and
 * goes away.  The server keeps one endpoint for all of them: it inserts
 * each client's address, talks to it and removes it again.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fn.h"

static const struct ft_prog prog = {
	.name = "fi_many_clients",
	.summary = "one server, many client processes in turn (RDM)",
	.ep_type = FI_EP_RDM,
	.iters = 8,
	.window = 1,
	.sizes = "64,4k,64k",
};

static struct fn_cfg cfg = { .caps = FI_MSG };
static struct fn_ep ep;

struct hello {
	int32_t status;
	uint32_t name_len;
	char name[256];
};

static size_t size_of(int i)
{
	return ft.opts.sizes[i % ft.opts.nsizes];
}

static int send_hello(int status)
{
	struct hello h = { .status = status };

	if (!status) {
		h.name_len = (uint32_t)ep.name_len;
		memcpy(h.name, ep.name, ep.name_len);
	}
	return ft_oob_send(&h, sizeof(h));
}

static int recv_hello(struct hello *h)
{
	int ret = ft_oob_recv(h, sizeof(*h));

	if (!ret && !h->status && h->name_len > sizeof(h->name))
		ret = -FI_EINVAL;
	return ret ? ret : h->status;
}

static int exchange(bool first, int i, size_t size)
{
	struct fn_comp c;
	int ret;

	memset(ep.buf, 0, 2 * size);
	ft_fill(ep.buf, size, i + (first ? 0 : 1000));
	ret = FN_POST(&ep, "fi_recv",
		      fi_recv(ep.ep, ep.buf + size, size, ep.desc,
			      FI_ADDR_UNSPEC, NULL));
	if (!ret && first)
		ret = fn_wait_note(&ep, 'g');
	if (!ret && !first)
		ret = fn_note('g');
	if (!ret && first)
		ret = FN_POST(&ep, "fi_send", fi_send(ep.ep, ep.buf, size,
						      ep.desc, ep.peer, NULL));
	if (!ret)
		ret = fn_wait_ctx(&ep, &ep.rx, NULL, &c);
	if (!ret)
		FN_CHECK(c.ent.len == size, "client %d: length %zu, expected "
			 "%zu", i, c.ent.len, size);
	if (!ret)
		ret = ft_check(ep.buf + size, size, i + (first ? 1000 : 0),
			       first ? "reply" : "message");
	if (!ret && !first)
		ret = FN_POST(&ep, "fi_send", fi_send(ep.ep, ep.buf, size,
						      ep.desc, ep.peer, NULL));
	if (!ret)
		ret = fn_wait_ctx(&ep, &ep.tx, NULL, &c);
	return ret;
}

static int server(void)
{
	struct hello h;
	int i, ret;

	for (i = 0; i < ft.opts.iters; i++) {
		ret = recv_hello(&h);
		if (ret)
			return ret;
		ret = fi_av_insert(ep.av, h.name, 1, &ep.peer, 0, NULL);
		if (ret != 1) {
			FT_ERR("fi_av_insert", ret);
			return ret < 0 ? ret : -FI_EINVAL;
		}
		ret = exchange(false, i, size_of(i));
		if (!ret)
			ret = fn_wait_note(&ep, 'x');
		if (ret)
			return ret;
		ret = fi_av_remove(ep.av, &ep.peer, 1, 0);
		if (ret) {
			FT_ERR("fi_av_remove", ret);
			return ret;
		}
		printf("client %d: %zu bytes each way verified\n", i,
		       size_of(i));
	}
	return 0;
}

/* One client process: everything of libfabric happens here. */
static int client_child(int i, const struct hello *server_hello)
{
	struct fi_info *info;
	int ret;

	memset(&ep, 0, sizeof(ep));
	ret = fn_getinfo_local(&cfg, &info, &ep.caps);
	if (!ret)
		ret = fn_open(&ep, &cfg, info);
	if (send_hello(ret ? ret : 0) || ret)
		return ret ? ret : -FI_EIO;
	ret = fi_av_insert(ep.av, server_hello->name, 1, &ep.peer, 0, NULL);
	if (ret != 1) {
		FT_ERR("fi_av_insert", ret);
		return ret < 0 ? ret : -FI_EINVAL;
	}
	ret = exchange(true, i, size_of(i));
	if (!ret)
		ret = fn_note('x');
	fn_close(&ep);
	return ret;
}

static int client(const struct hello *h)
{
	int i, status, ret = 0;
	double start;
	pid_t pid;

	for (i = 0; !ret && i < ft.opts.iters; i++) {
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			return -FI_ENOMEM;
		if (!pid)
			_exit(client_child(i, h) ? 1 : 0);
		start = ft_now();
		while (waitpid(pid, &status, WNOHANG) == 0) {
			if (ft_now() - start > 2 * ft.opts.timeout) {
				ft_err("client %d (pid %d) hangs", i, pid);
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				return -FI_ETIMEDOUT;
			}
			ft_alive();
			usleep(10000);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			ft_err("client %d failed", i);
			ret = -FI_EIO;
		}
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct fi_info *info = NULL;
	struct hello h;
	size_t max = 0;
	int i, ret;

	ft_parse(argc, argv, &prog);
	for (i = 0; i < ft.opts.nsizes; i++)
		if (ft.opts.sizes[i] > max)
			max = ft.opts.sizes[i];
	cfg.buf_size = 2 * max + 64;
	ret = ft_oob_open();
	if (ret)
		return fn_exit(NULL, ret);
	if (ft.server) {
		/* the client program opens nothing until it has the address */
		ret = fn_getinfo_local(&cfg, &info, &ep.caps);
		if (!ret)
			ret = fn_open(&ep, &cfg, info);
		if (send_hello(ret) && !ret)
			ret = -FI_EIO;
		if (!ret)
			ret = server();
	} else {
		ret = recv_hello(&h);
		if (!ret)
			ret = client(&h);
	}
	return fn_exit(&ep, ret);
}
