/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_HOOK=trace: one log line at trace level (FI_LOG_LEVEL=trace, or a
 * client's imported sink) per call on a hooked object, after the provider
 * answered: the call, the object, its arguments and the result, e.g.
 *
 *   fi_tsend(ep=0x..., buf=0x..., len=8, addr=1, tag=0x1, ctx=0x...) = 0
 *
 * Polling that finds nothing is left out, or a busy loop would bury the
 * rest: reads of CQs and EQs answered -FI_EAGAIN, and counter reads that
 * return the value the last one did.
 */
#include "weft/hook.h"

#include "weft/core.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static struct fi_provider trace_prov = {
	.version = WEFT_PROV_VERSION,
	.fi_version = WEFT_API_VERSION,
	.name = "hook_trace",
};

static enum fi_log_subsys trace_subsys(const struct weft_hook_call *c)
{
	switch (weft_hook_fclass(c->hf)) {
	case FI_CLASS_FABRIC:
		return FI_LOG_FABRIC;
	case FI_CLASS_DOMAIN:
		return c->args & WEFT_HA_BUF || c->args & WEFT_HA_IOV ?
			       FI_LOG_MR :
			       FI_LOG_DOMAIN;
	case FI_CLASS_CQ:
		return FI_LOG_CQ;
	case FI_CLASS_CNTR:
		return FI_LOG_CNTR;
	case FI_CLASS_EQ:
		return FI_LOG_EQ;
	case FI_CLASS_AV:
		return FI_LOG_AV;
	case FI_CLASS_MR:
		return FI_LOG_MR;
	case FI_CLASS_EP:
	case FI_CLASS_SEP:
	case FI_CLASS_TX_CTX:
	case FI_CLASS_RX_CTX:
	case FI_CLASS_SRX_CTX:
		return c->kind == WEFT_HK_OTHER || c->kind >= WEFT_HK_CLOSE ?
			       FI_LOG_EP_CTRL :
			       FI_LOG_EP_DATA;
	default:
		return FI_LOG_CORE;
	}
}

struct trace_buf {
	char s[512];
	size_t n;
};

static void put(struct trace_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct trace_buf *b, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (b->n >= sizeof(b->s))
		return;
	va_start(ap, fmt);
	w = vsnprintf(b->s + b->n, sizeof(b->s) - b->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		b->n += (size_t)w;
}

/* A counter's last value read, so that polling it logs only changes. */
static int trace_open(struct weft_hook_fid *hf, unsigned slot)
{
	if (weft_hook_fclass(hf) != FI_CLASS_CNTR)
		return 0;
	hf->priv[slot] = calloc(1, 2 * sizeof(uint64_t));
	return hf->priv[slot] ? 0 : -FI_ENOMEM;
}

static bool trace_quiet(const struct weft_hook_call *c, unsigned slot)
{
	uint64_t *last;

	switch (c->kind) {
	case WEFT_HK_CQ_READ:
	case WEFT_HK_CQ_READFROM:
	case WEFT_HK_CQ_READERR:
	case WEFT_HK_CQ_SREAD:
	case WEFT_HK_CQ_SREADFROM:
	case WEFT_HK_EQ_READ:
	case WEFT_HK_EQ_SREAD:
	case WEFT_HK_EQ_READERR:
		return c->ret == -FI_EAGAIN;
	case WEFT_HK_CNTR_READ:
	case WEFT_HK_CNTR_READERR:
		last = c->hf->priv[slot];
		if (!last)
			return false;
		last += c->kind == WEFT_HK_CNTR_READERR;
		if (*last == (uint64_t)c->ret)
			return true;
		*last = (uint64_t)c->ret;
		return false;
	default:
		return false;
	}
}

/* The context of each completion a CQ read returned (the formats all
 * start with op_context; their sizes differ). */
static void trace_completions(struct trace_buf *b,
			      const struct weft_hook_call *c)
{
	static const size_t sizes[] = {
		[FI_CQ_FORMAT_UNSPEC] = sizeof(struct fi_cq_entry),
		[FI_CQ_FORMAT_CONTEXT] = sizeof(struct fi_cq_entry),
		[FI_CQ_FORMAT_MSG] = sizeof(struct fi_cq_msg_entry),
		[FI_CQ_FORMAT_DATA] = sizeof(struct fi_cq_data_entry),
		[FI_CQ_FORMAT_TAGGED] = sizeof(struct fi_cq_tagged_entry),
	};
	enum fi_cq_format f = c->hf->cq_format;
	size_t i, n = c->ret > 0 ? (size_t)c->ret : 0;

	if (!c->entries || (unsigned)f >= WEFT_ARRAY_SIZE(sizes) ||
	    c->kind == WEFT_HK_CQ_READERR)
		return;
	put(b, " [");
	for (i = 0; i < n && i < 8; i++) {
		void *ctx = *(void **)((char *)c->entries + i * sizes[f]);

		put(b, "%sctx=%p", i ? " " : "", ctx);
		if (c->src_addr)
			put(b, " src=%" PRIu64, (uint64_t)c->src_addr[i]);
	}
	put(b, "%s]", n > 8 ? " ..." : "");
}

static void trace_after(struct weft_hook_call *c, unsigned slot)
{
	enum fi_log_subsys subsys = trace_subsys(c);
	struct trace_buf b = { .n = 0 };
	unsigned a = c->args;

	if (!fi_log_enabled(&trace_prov, FI_LOG_TRACE, subsys) ||
	    trace_quiet(c, slot))
		return;
	put(&b, "%s(%s=%p", c->fn,
	    weft_hook_class_name(weft_hook_fclass(c->hf)),
	    (void *)&c->hf->u.fid);
	if (a & WEFT_HA_BUF)
		put(&b, ", buf=%p, len=%zu", c->buf, c->len);
	if (a & WEFT_HA_IOV)
		put(&b, ", iov=%p, count=%zu, len=%zu", (void *)c->iov,
		    c->count, c->len);
	if (a & WEFT_HA_COUNT)
		put(&b, ", count=%zu", c->count);
	if (a & WEFT_HA_ADDR)
		put(&b, ", addr=%" PRIu64, (uint64_t)c->addr);
	if (a & WEFT_HA_TAG)
		put(&b, ", tag=0x%" PRIx64 ", ignore=0x%" PRIx64, c->tag,
		    c->ignore);
	if (a & WEFT_HA_RMA)
		put(&b, ", raddr=0x%" PRIx64 ", key=0x%" PRIx64, c->raddr,
		    c->rkey);
	if (a & WEFT_HA_ATOMIC)
		put(&b, ", len=%zu, datatype=%d, op=%d", c->len, c->datatype,
		    c->op);
	if (a & WEFT_HA_DATA)
		put(&b, ", data=0x%" PRIx64, c->data);
	if (a & WEFT_HA_FID)
		put(&b, ", fid=%p", (void *)c->arg);
	if (a & WEFT_HA_IVAL)
		put(&b, ", arg=%ld", c->ival);
	if (a & WEFT_HA_FLAGS)
		put(&b, ", flags=0x%" PRIx64, c->flags);
	if (a & WEFT_HA_CTX)
		put(&b, ", ctx=%p", c->context);
	if (c->kind == WEFT_HK_CNTR_READ || c->kind == WEFT_HK_CNTR_READERR)
		put(&b, ") = %" PRIu64, (uint64_t)c->ret);
	else
		put(&b, ") = %zd", c->ret);
	if (c->ret < 0 && c->kind != WEFT_HK_CNTR_READ &&
	    c->kind != WEFT_HK_CNTR_READERR)
		put(&b, " (%s)", fi_strerror((int)-c->ret));
	if (c->ret > 0 && c->kind >= WEFT_HK_CQ_READ &&
	    c->kind <= WEFT_HK_CQ_SREADFROM)
		trace_completions(&b, c);
	if ((c->kind == WEFT_HK_EQ_READ || c->kind == WEFT_HK_EQ_SREAD) &&
	    c->ret > 0 && c->entries)
		put(&b, " [event=%ld fid=%p]", c->ival,
		    (void *)*(struct fid **)c->entries);
	fi_log(&trace_prov, FI_LOG_TRACE, subsys, c->fn, 0, "%s\n", b.s);
}

static void trace_release(struct weft_hook_fid *hf, unsigned slot)
{
	free(hf->priv[slot]);
	hf->priv[slot] = NULL;
}

const struct weft_hook_ops weft_hook_trace = {
	.name = "trace",
	.open = trace_open,
	.after = trace_after,
	.release = trace_release,
};
