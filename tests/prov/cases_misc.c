// SPDX-License-Identifier: BSD-2-Clause
/*
 * Conformance cases for counters, address vectors, completion levels,
 * FI_CONTEXT/FI_CONTEXT2 and FI_THREAD_SAFE.
 */
#include "config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/*
 * Send and receive counters count completed operations exactly, wake
 * fi_cntr_wait at a threshold, count a truncated receive as an error, and
 * obey fi_cntr_set/fi_cntr_add.
 */
static int case_cntr(const char *prov)
{
	struct cf_opts o = {
	    .caps = FI_MSG,
	    .cntr_mask = (1 << CF_CNTR_SEND) | (1 << CF_CNTR_RECV),
	};
	struct fi_context2 sc[10], rc[10];
	struct cf_mem sm, rm;
	struct fid_cntr *rx;
	struct cf_comp c;
	struct cf_fix f;
	int i, ret;

	cf_open(&f, prov, &o);
	rx = f.ep[1].cntr[CF_CNTR_RECV];
	cf_mem_reg(&f, 0, &sm, 1000, FI_SEND);
	cf_mem_reg(&f, 1, &rm, 10 * 1000, FI_RECV);
	cf_fill(sm.p, 1000, 4);
	for (i = 0; i < 10; i++)
		cf_post(&f, fi_recv(f.ep[1].ep, rm.p + i * 1000, 1000, rm.desc,
				    FI_ADDR_UNSPEC, &rc[i]));
	cf_assert(fi_cntr_read(rx) == 0, "receive counter starts at %llu",
		  (unsigned long long)fi_cntr_read(rx));
	for (i = 0; i < 10; i++)
		cf_post(&f, fi_send(f.ep[0].ep, sm.p, 1000, sm.desc,
				    f.ep[1].addr, &sc[i]));
	/* fi_cntr_wait must itself drive progress to reach the threshold. */
	cf_mark("fi_cntr_wait(10)");
	ret = fi_cntr_wait(rx, 10, CF_WAIT_MS);
	if (ret == -FI_ETIMEDOUT)
		cf_fail("fi_cntr_wait(10) timed out at %llu",
			(unsigned long long)fi_cntr_read(rx));
	cf_assert(!ret, "fi_cntr_wait: %d (%s)", ret, fi_strerror(-ret));
	cf_wait_cntr(&f, 0, CF_CNTR_SEND, 10);
	for (i = 0; i < 10; i++) {
		c = cf_wait_ctx(&f, 1, &rc[i]);
		cf_assert(!c.err, "receive %d: error %d", i, c.err);
		cf_check_fill(rm.p + i * 1000, 1000, 4, "counted receive");
		c = cf_wait_ctx(&f, 0, &sc[i]);
		cf_assert(!c.err, "send %d: error %d", i, c.err);
	}
	cf_expect_none(&f, 1, 50);
	cf_assert(fi_cntr_read(rx) == 10 &&
		      fi_cntr_read(f.ep[0].cntr[CF_CNTR_SEND]) == 10,
		  "counters read recv %llu send %llu, want 10 and 10",
		  (unsigned long long)fi_cntr_read(rx),
		  (unsigned long long)fi_cntr_read(f.ep[0].cntr[CF_CNTR_SEND]));
	cf_assert(!fi_cntr_readerr(rx), "receive error counter %llu",
		  (unsigned long long)fi_cntr_readerr(rx));
	/* A wait already satisfied returns at once. */
	cf_ok(fi_cntr_wait(rx, 5, 1000));

	/* A truncated receive counts as an error, not a success. */
	cf_post(&f,
		fi_recv(f.ep[1].ep, rm.p, 10, rm.desc, FI_ADDR_UNSPEC, &rc[0]));
	cf_post(&f,
		fi_send(f.ep[0].ep, sm.p, 1000, sm.desc, f.ep[1].addr, &sc[0]));
	c = cf_wait_ctx(&f, 1, &rc[0]);
	cf_assert(c.err == FI_ETRUNC, "truncated receive: err %d", c.err);
	cf_wait_ctx(&f, 0, &sc[0]);
	cf_expect_none(&f, 1, 50);
	/* Upstream 1.17 shm does not count it. */
	cf_expect(fi_cntr_readerr(rx) == 1,
		  "receive error counter %llu after "
		  "a truncation, want 1",
		  (unsigned long long)fi_cntr_readerr(rx));
	cf_assert(fi_cntr_read(rx) == 10,
		  "receive counter %llu after a "
		  "truncation, want 10",
		  (unsigned long long)fi_cntr_read(rx));

	/* Application updates. */
	cf_ok(fi_cntr_set(rx, 100));
	cf_ok(fi_cntr_add(rx, 5));
	cf_assert(fi_cntr_read(rx) == 105, "set 100, add 5: %llu",
		  (unsigned long long)fi_cntr_read(rx));
	/* Upstream 1.17 shm never returns from this 100 ms wait. */
	cf_mark("fi_cntr_wait(106, 100 ms)");
	ret = fi_cntr_wait(rx, 106, 100);
	cf_assert(ret == -FI_ETIMEDOUT || ret == -FI_EAVAIL,
		  "fi_cntr_wait for a value never reached: %d", ret);
	cf_ok(fi_cntr_seterr(rx, 0));
	cf_ok(fi_cntr_adderr(rx, 2));
	cf_assert(fi_cntr_readerr(rx) == 2, "seterr 0, adderr 2: %llu",
		  (unsigned long long)fi_cntr_readerr(rx));
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/* One message each way, addressed by to1 (ep1) and to0 (ep0). */
static void av_roundtrip(struct cf_fix *f, fi_addr_t to0, fi_addr_t to1,
			 const char *what)
{
	struct fi_context2 sc, rc;
	struct cf_mem sm, rm;
	struct cf_comp c;
	int d;

	for (d = 0; d < 2; d++) {
		cf_mem_reg(f, d, &sm, 300, FI_SEND);
		cf_mem_reg(f, !d, &rm, 300, FI_RECV);
		cf_fill(sm.p, 300, 50 + d);
		cf_post(f, fi_recv(f->ep[!d].ep, rm.p, 300, rm.desc,
				   FI_ADDR_UNSPEC, &rc));
		cf_post(f, fi_send(f->ep[d].ep, sm.p, 300, sm.desc,
				   d ? to0 : to1, &sc));
		c = cf_wait_ctx(f, !d, &rc);
		cf_assert(!c.err && c.len == 300, "%s: receive err %d", what,
			  c.err);
		cf_check_fill(rm.p, 300, 50 + d, what);
		c = cf_wait_ctx(f, d, &sc);
		cf_assert(!c.err, "%s: send err %d", what, c.err);
		cf_mem_free(&sm);
		cf_mem_free(&rm);
	}
}

/*
 * FI_AV_MAP and FI_AV_TABLE: inserting the endpoints' real names, lookup
 * and straddr round trips, a batch insert, removal (sending to a removed
 * address fails cleanly and delivers nothing) and re-insertion.
 */
static int case_av(const char *prov)
{
	static const enum fi_av_type types[2] = {FI_AV_MAP, FI_AV_TABLE};
	uint8_t buf[CF_MAX_NAME * 2];
	char str[512];
	fi_addr_t two[2];
	struct cf_fix f;
	size_t len;
	int k, i, ret;

	for (k = 0; k < 2; k++) {
		struct cf_opts o = {.caps = FI_MSG, .av_type = types[k]};
		const char *tn = k ? "FI_AV_TABLE" : "FI_AV_MAP";
		struct fi_context2 sc, rc;
		struct cf_mem sm, rm;
		struct cf_comp c;
		ssize_t sret;

		cf_open(&f, prov, &o);
		if (types[k] == FI_AV_TABLE)
			cf_assert(f.ep[0].addr == 0 && f.ep[1].addr == 1,
				  "%s: first inserts gave %llu and %llu, want "
				  "0 and 1",
				  tn, (unsigned long long)f.ep[0].addr,
				  (unsigned long long)f.ep[1].addr);
		for (i = 0; i < 2; i++) {
			len = sizeof(buf);
			memset(buf, 0, sizeof(buf));
			cf_ok(fi_av_lookup(f.av, f.ep[i].addr, buf, &len));
			cf_assert(len == f.ep[i].namelen &&
				      !memcmp(buf, f.ep[i].name, len),
				  "%s: fi_av_lookup of ep%d gave %zu bytes, "
				  "not the %zu-byte name inserted",
				  tn, i, len, f.ep[i].namelen);
			len = sizeof(str);
			cf_assert(fi_av_straddr(f.av, f.ep[i].name, str, &len),
				  "%s: fi_av_straddr returned NULL", tn);
			cf_assert(len > 1 && len <= sizeof(str) &&
				      strlen(str) == len - 1,
				  "%s: fi_av_straddr length %zu for \"%s\"", tn,
				  len, str);
		}
		/* A small buffer: lookup reports the size it needs. */
		len = 1;
		ret = fi_av_lookup(f.av, f.ep[0].addr, buf, &len);
		cf_assert(len == f.ep[0].namelen,
			  "%s: fi_av_lookup with a "
			  "1-byte buffer: ret %d len %zu, want len %zu",
			  tn, ret, len, f.ep[0].namelen);
		av_roundtrip(&f, f.ep[0].addr, f.ep[1].addr, "after insert");

		/*
		 * Remove ep1: sending to it fails and delivers nothing.
		 * fi_av(3) calls the removed fi_addr_t invalid; upstream 1.17
		 * shm still delivers to it and tcp crashes (SIGSEGV).
		 */
		cf_ok(fi_av_remove(f.av, &f.ep[1].addr, 1, 0));
		len = sizeof(buf);
		/* fi_av(3) makes the address invalid, lookup unspecified. */
		ret = fi_av_lookup(f.av, f.ep[1].addr, buf, &len);
		if (!ret)
			cf_note("%s: fi_av_lookup of a removed address "
				"succeeds",
				tn);
		cf_mem_reg(&f, 0, &sm, 100, FI_SEND);
		cf_mem_reg(&f, 1, &rm, 100, FI_RECV);
		cf_post(&f, fi_recv(f.ep[1].ep, rm.p, 100, rm.desc,
				    FI_ADDR_UNSPEC, &rc));
		sret =
		    fi_send(f.ep[0].ep, sm.p, 100, sm.desc, f.ep[1].addr, &sc);
		if (!sret) {
			c = cf_wait_ctx(&f, 0, &sc);
			/* Upstream 1.17 shm completes it; tcp crashes. */
			cf_expect(c.err,
				  "%s: send to a removed address "
				  "completed successfully",
				  tn);
			if (c.err)
				cf_note("%s: send to a removed address: error "
					"completion %d (%s)",
					tn, c.err, fi_strerror(c.err));
		} else {
			cf_note("%s: send to a removed address: returned %zd "
				"(%s)",
				tn, sret, fi_strerror((int)-sret));
		}
		cf_expect_none(&f, 1, 100);
		cf_ok(fi_cancel(&f.ep[1].ep->fid, &rc));
		c = cf_wait_ctx(&f, 1, &rc);
		cf_assert(c.err == FI_ECANCELED,
			  "%s: receive after a send to "
			  "a removed address: err %d",
			  tn, c.err);
		cf_mem_free(&sm);
		cf_mem_free(&rm);

		/* Both names at once, then traffic over the new addresses. */
		memcpy(buf, f.ep[0].name, f.ep[0].namelen);
		cf_assert(f.ep[0].namelen == f.ep[1].namelen,
			  "names of different lengths");
		memcpy(buf + f.ep[0].namelen, f.ep[1].name, f.ep[1].namelen);
		ret = fi_av_insert(f.av, buf, 2, two, 0, NULL);
		cf_assert(ret == 2, "%s: batch insert of 2: %d", tn, ret);
		for (i = 0; i < 2; i++) {
			len = sizeof(str);
			cf_ok(fi_av_lookup(f.av, two[i], str, &len));
			cf_assert(len == f.ep[i].namelen &&
				      !memcmp(str, f.ep[i].name, len),
				  "%s: batch-inserted address %d looks up "
				  "wrong",
				  tn, i);
		}
		av_roundtrip(&f, two[0], two[1], "after re-insert");
		cf_close(&f);
	}
	return 0;
}

/* Insert count addresses; want[i] 1: inserted and working, 0: refused. */
static void av_insert_expect(struct cf_fix *f, const void *addr, size_t count,
			     const int *want, const char *what)
{
	fi_addr_t fa[8];
	size_t i, good = 0;
	int ret;

	for (i = 0; i < count; i++) {
		fa[i] = 12345;
		good += want[i];
	}
	ret = fi_av_insert(f->av, addr, count, fa, 0, NULL);
	cf_assert(ret == (int)good, "%s: fi_av_insert returned %d, want %zu",
		  what, ret, good);
	for (i = 0; i < count; i++) {
		cf_assert(want[i] ? fa[i] != FI_ADDR_NOTAVAIL :
				    fa[i] == FI_ADDR_NOTAVAIL,
			  "%s: address %zu: fi_addr %llu", what, i,
			  (unsigned long long)fa[i]);
		if (want[i])
			av_roundtrip(f, f->ep[0].addr, fa[i], what);
	}
}

/*
 * FI_ADDR_STR: fi_av_insert takes the char ** of fi_av(3) and the strings
 * packed one after another as fi_getname gives them.  Bad strings in
 * either form (short, empty, the name cut inside its prefix, binary) fail
 * their own entry with FI_ADDR_NOTAVAIL; the good one next to them works.
 */
static int case_av_bad_str(const char *prov)
{
	static const char binary[] = "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8";
	struct cf_opts o = {.caps = FI_MSG};
	char cut[16], packed[CF_MAX_NAME + 64];
	const char *names[6];
	struct cf_fix f;
	const char *sep;
	size_t n;

	cf_open(&f, prov, &o);
	if (f.info->addr_format != FI_ADDR_STR) {
		cf_close(&f);
		cf_skip("addresses are not FI_ADDR_STR");
	}
	/* "fi_xxx:/": the name cut inside its prefix */
	sep = strstr((const char *)f.ep[1].name, "://");
	cf_assert(sep, "name \"%s\" has no \"://\"", (char *)f.ep[1].name);
	n = (size_t)(sep - (const char *)f.ep[1].name) + 2;
	cf_assert(n < sizeof(cut) && n >= 7, "name \"%s\"",
		  (char *)f.ep[1].name);
	memcpy(cut, f.ep[1].name, n);
	cut[n] = '\0';

	names[0] = "abc";
	names[1] = "";
	names[2] = cut;
	names[3] = binary;
	names[4] = NULL;
	names[5] = (const char *)f.ep[1].name;
	av_insert_expect(&f, names, 6, (const int[]){0, 0, 0, 0, 0, 1},
			 "char **");

	/* packed: binary, cut, the good name */
	cf_assert(sizeof(binary) + n + 1 + strlen((char *)f.ep[1].name) <
		      sizeof(packed),
		  "name too long");
	memset(packed, 0, sizeof(packed));
	memcpy(packed, binary, sizeof(binary));
	memcpy(packed + sizeof(binary), cut, n + 1);
	strcpy(packed + sizeof(binary) + n + 1, (char *)f.ep[1].name);
	av_insert_expect(&f, packed, 3, (const int[]){0, 0, 1}, "packed");
	/* packed: the name cut one byte shorter ("fi_shm:"), the good name */
	memset(packed, 0, sizeof(packed));
	memcpy(packed, cut, n - 1);
	strcpy(packed + n, (char *)f.ep[1].name);
	av_insert_expect(&f, packed, 2, (const int[]){0, 1},
			 "packed, cut short");
	/* packed: the good name, an empty string, the good name again */
	n = strlen((char *)f.ep[1].name);
	memset(packed, 0, sizeof(packed));
	memcpy(packed, f.ep[1].name, n);
	memcpy(packed + n + 2, f.ep[1].name, n);
	av_insert_expect(&f, packed, 3, (const int[]){1, 0, 1},
			 "packed with an empty string");
	cf_close(&f);
	return 0;
}

/*
 * What a provider cannot honour is refused with -FI_ENODATA: fi_getinfo
 * with a threading value outside the enum or with FI_MULTICAST,
 * fi_endpoint given an info whose caps (or tx caps) hold a capability none
 * of the provider's fi_info offers, fi_domain given threading 99 or such
 * a capability.
 */
static int case_refused(const char *prov)
{
	static const uint64_t bits[] = {FI_COLLECTIVE, FI_MULTICAST, FI_HMEM,
					FI_NAMED_RX_CTX, FI_TRIGGER,
					FI_RMA_PMEM};
	struct cf_opts o = {.caps = FI_MSG};
	struct fi_info *all, *fi, *info;
	uint64_t offered = 0, caps;
	struct fid_domain *dom;
	struct fid_ep *ep;
	struct cf_fix f;
	size_t i;
	int ret, tried = 0;

	o.threading = (enum fi_threading)99;
	info = cf_getinfo(prov, &o, &ret);
	cf_assert(ret == -FI_ENODATA && !info,
		  "fi_getinfo with threading 99: %d, want -FI_ENODATA", ret);
	o.threading = FI_THREAD_UNSPEC;
	o.caps = FI_MSG | FI_MULTICAST;
	info = cf_getinfo(prov, &o, &ret);
	cf_assert(ret == -FI_ENODATA && !info,
		  "fi_getinfo with FI_MULTICAST: %d, want -FI_ENODATA", ret);

	/* Every capability the provider lists for RDM, over all entries. */
	o.caps = 0;
	all = fi_allocinfo();
	cf_assert(all, "fi_allocinfo failed");
	all->fabric_attr->prov_name = strdup(prov);
	all->ep_attr->type = FI_EP_RDM;
	/* The modes the suite supports, as cf_getinfo gives them: a
	 * provider that needs registration modes (verbs) lists nothing to
	 * an application that supports none. */
	all->mode = FI_CONTEXT | FI_CONTEXT2;
	all->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				    FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				    FI_MR_ENDPOINT;
	ret = fi_getinfo(FI_VERSION(1, 17), getenv("CF_NODE"), NULL,
			 getenv("CF_NODE") ? FI_SOURCE : 0, all, &info);
	fi_freeinfo(all);
	if (ret == -FI_ENODATA)
		cf_skip("no FI_EP_RDM entries (a datagram provider: the "
			"dgram_* cases)");
	cf_assert(!ret, "fi_getinfo: %d", ret);
	for (fi = info; fi; fi = fi->next)
		offered |= fi->caps | fi->tx_attr->caps | fi->rx_attr->caps;
	fi_freeinfo(info);

	o.caps = FI_MSG;
	cf_open(&f, prov, &o);
	caps = f.info->caps;
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		if (offered & bits[i])
			continue;
		tried++;
		f.info->caps = caps | bits[i];
		ep = NULL;
		ret = fi_endpoint(f.domain, f.info, &ep, NULL);
		cf_assert(ret == -FI_ENODATA,
			  "fi_endpoint with caps + %s: %d, want -FI_ENODATA",
			  fi_tostr(&bits[i], FI_TYPE_CAPS), ret);
		f.info->caps = caps;
		f.info->tx_attr->caps |= bits[i];
		ret = fi_endpoint(f.domain, f.info, &ep, NULL);
		cf_assert(ret == -FI_ENODATA,
			  "fi_endpoint with tx caps + %s: %d, want "
			  "-FI_ENODATA",
			  fi_tostr(&bits[i], FI_TYPE_CAPS), ret);
		f.info->tx_attr->caps &= ~bits[i];
	}
	/* the info as fi_getinfo gave it still opens */
	cf_ok(fi_endpoint(f.domain, f.info, &ep, NULL));
	cf_ok(fi_close(&ep->fid));

	/* fi_domain: threading outside the enum, a capability not offered */
	f.info->domain_attr->threading = (enum fi_threading)99;
	dom = NULL;
	ret = fi_domain(f.fabric, f.info, &dom, NULL);
	cf_assert(ret == -FI_ENODATA,
		  "fi_domain with threading 99: %d, want -FI_ENODATA", ret);
	f.info->domain_attr->threading = FI_THREAD_UNSPEC;
	if (!(offered & FI_MULTICAST)) {
		f.info->caps = caps | FI_MULTICAST;
		ret = fi_domain(f.fabric, f.info, &dom, NULL);
		cf_assert(ret == -FI_ENODATA,
			  "fi_domain with FI_MULTICAST: %d, want -FI_ENODATA",
			  ret);
		f.info->caps = caps;
	}
	cf_note("%d capabilities not offered, each refused", tried);
	cf_close(&f);
	return 0;
}

/*
 * FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE and FI_DELIVERY_COMPLETE as
 * fi_sendmsg/fi_writemsg flags: accepted, completed, data intact; at
 * FI_DELIVERY_COMPLETE the data is at the target by the time the
 * initiator's completion is read.
 */
static int case_comp_levels(const char *prov)
{
	static const uint64_t lvl[3] = {
	    FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE};
	static const char *const lname[3] = {"FI_INJECT_COMPLETE",
					     "FI_TRANSMIT_COMPLETE",
					     "FI_DELIVERY_COMPLETE"};
	static const size_t sizes[2] = {100, 300000};
	struct cf_opts o = {.caps = FI_MSG | FI_RMA};
	struct fi_context2 sc, rc;
	struct cf_mem sm, rm;
	struct cf_comp c;
	struct cf_fix f;
	bool rma = true;
	int k, s;

	o.caps = FI_MSG | FI_RMA;
	{
		struct fi_info *fi;
		int ret;

		fi = cf_getinfo(prov, &o, &ret);
		fi_freeinfo(fi);
		if (ret) {
			o.caps = FI_MSG;
			rma = false;
			cf_note("no FI_RMA: levels tested on sends only");
		}
	}
	cf_open(&f, prov, &o);
	cf_mem_reg(&f, 0, &sm, 300000, FI_SEND | FI_WRITE);
	cf_mem_reg(&f, 1, &rm, 300000,
		   FI_RECV | FI_REMOTE_WRITE | FI_REMOTE_READ);
	for (k = 0; k < 3; k++) {
		for (s = 0; s < 2; s++) {
			size_t len = sizes[s];
			struct iovec iov = {sm.p, len};
			struct fi_msg msg = {
			    .msg_iov = &iov,
			    .desc = &sm.desc,
			    .iov_count = 1,
			    .addr = f.ep[1].addr,
			    .context = &sc,
			};
			char what[96];

			snprintf(what, sizeof(what), "fi_sendmsg %s %zu bytes",
				 lname[k], len);
			memset(rm.p, 0, len);
			cf_fill(sm.p, len, 10 * k + s);
			cf_post(&f, fi_recv(f.ep[1].ep, rm.p, len, rm.desc,
					    FI_ADDR_UNSPEC, &rc));
			cf_post(&f, fi_sendmsg(f.ep[0].ep, &msg,
					       FI_COMPLETION | lvl[k]));
			/* Harvest only the sender's CQ while waiting. */
			c = cf_wait_ctx(&f, 0, &sc);
			cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
				  fi_strerror(c.err));
			if (lvl[k] == FI_DELIVERY_COMPLETE)
				cf_check_fill(rm.p, len, 10 * k + s, what);
			/* The source buffer is reusable at any level. */
			memset(sm.p, 0, len);
			c = cf_wait_ctx(&f, 1, &rc);
			cf_assert(!c.err && c.len == len, "%s: receive err %d",
				  what, c.err);
			cf_check_fill(rm.p, len, 10 * k + s, what);
			if (!rma)
				continue;

			snprintf(what, sizeof(what),
				 "fi_writemsg %s %zu "
				 "bytes",
				 lname[k], len);
			{
				struct fi_rma_iov riov = {rm.raddr, len,
							  rm.key};
				struct fi_msg_rma wmsg = {
				    .msg_iov = &iov,
				    .desc = &sm.desc,
				    .iov_count = 1,
				    .addr = f.ep[1].addr,
				    .rma_iov = &riov,
				    .rma_iov_count = 1,
				    .context = &sc,
				};

				memset(rm.p, 0, len);
				cf_fill(sm.p, len, 10 * k + s + 5);
				cf_post(&f,
					fi_writemsg(f.ep[0].ep, &wmsg,
						    FI_COMPLETION | lvl[k]));
			}
			c = cf_wait_ctx(&f, 0, &sc);
			cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
				  fi_strerror(c.err));
			if (lvl[k] == FI_DELIVERY_COMPLETE) {
				cf_check_fill(rm.p, len, 10 * k + s + 5, what);
			} else {
				uint64_t end = cf_now_ms() + CF_WAIT_MS;
				uint8_t *want = malloc(len);

				cf_fill(want, len, 10 * k + s + 5);
				while (memcmp(rm.p, want, len)) {
					cf_assert(cf_now_ms() < end,
						  "%s: data "
						  "never reached the target",
						  what);
					cf_progress(&f);
				}
				free(want);
			}
		}
	}
	cf_expect_none(&f, 0, 50);
	cf_expect_none(&f, 1, 0);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/*
 * Bursts both ways at once, as threads of an MPI rank send: under
 * FI_THREAD_SAFE, one thread per endpoint posts its receives, meets the
 * other thread, sends its burst at FI_DELIVERY_COMPLETE and reads only its
 * own CQ until its sends and receives are done; several rounds on the
 * same path.  Each side owes the other a delivery answer for every
 * message, many more than a peer may have unanswered under a provider's
 * flow control, while its own burst has used up what the peer can take.
 */
enum { BT_N = 200, BT_LEN = 1000, BT_ROUNDS = 8 };

/* Whether buf holds cf_fill's pattern for seed (no failure recorded). */
static bool holds_fill_bt(const uint8_t *buf, size_t len, unsigned int seed)
{
	uint8_t *want = malloc(len);
	bool same;

	if (!want)
		return false;
	cf_fill(want, len, seed);
	same = !memcmp(buf, want, len);
	free(want);
	return same;
}

struct bt_side {
	struct cf_fix *f;
	int i, round;
	pthread_barrier_t *bar;
	struct cf_mem *sm, *rm;
	struct fi_context2 sc[BT_N], rc[BT_N];
	uint8_t seen[BT_N];
	bool met; /* past the barrier */
	char err[200];
};

static void bt_fail(struct bt_side *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void bt_fail(struct bt_side *b, const char *fmt, ...)
{
	va_list ap;

	if (b->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
}

/* Completions of this side's CQ: how many were read, -1 on a failure. */
static int bt_read(struct bt_side *b)
{
	struct fi_cq_tagged_entry e[16];
	struct fid_cq *cq = b->f->ep[b->i].cq;
	ssize_t n, k;

	n = fi_cq_read(cq, e, 16);
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry ee = {0};

		fi_cq_readerr(cq, &ee, 0);
		bt_fail(b, "round %d, endpoint %d: error %d (%s)", b->round,
			b->i, ee.err, fi_strerror(ee.err));
		return -1;
	}
	if (n < 0) {
		bt_fail(b, "round %d, endpoint %d: fi_cq_read %zd", b->round,
			b->i, n);
		return -1;
	}
	for (k = 0; k < n; k++) {
		void *ctx = e[k].op_context;
		const uint8_t *p;
		int m;

		if (ctx >= (void *)b->sc && ctx < (void *)(b->sc + BT_N))
			continue;
		if (ctx < (void *)b->rc || ctx >= (void *)(b->rc + BT_N)) {
			bt_fail(b, "round %d, endpoint %d: context %p",
				b->round, b->i, ctx);
			return -1;
		}
		p = b->rm->p +
		    (size_t)((struct fi_context2 *)ctx - b->rc) * BT_LEN;
		memcpy(&m, p, sizeof(m));
		if (e[k].len != BT_LEN || m < 0 || m >= BT_N || b->seen[m] ||
		    !holds_fill_bt(p + sizeof(m), BT_LEN - sizeof(m),
				   10000 * b->round + 1000 * (1 - b->i) + m)) {
			bt_fail(b, "round %d, endpoint %d: %zu bytes, message "
				"%d, or its data wrong", b->round, b->i,
				e[k].len, m);
			return -1;
		}
		b->seen[m] = 1;
	}
	return (int)n;
}

static void *bt_thread(void *arg)
{
	struct bt_side *b = arg;
	struct cf_fix *f = b->f;
	struct fid_ep *ep = f->ep[b->i].ep;
	fi_addr_t to = f->ep[1 - b->i].addr;
	int left = 2 * BT_N, j, n;
	uint64_t end;
	ssize_t ret;

	memset(b->seen, 0, sizeof(b->seen));
	b->met = false;
	for (j = 0; j < BT_N; j++) {
		end = cf_now_ms() + CF_WAIT_MS;
		while ((ret = fi_trecv(ep, b->rm->p + (size_t)j * BT_LEN,
				       BT_LEN, b->rm->desc, FI_ADDR_UNSPEC,
				       (uint64_t)b->round, 0, &b->rc[j])) ==
			       -FI_EAGAIN &&
		       cf_now_ms() < end)
			if ((n = bt_read(b)) < 0)
				goto out;
			else
				left -= n;
		if (ret) {
			bt_fail(b, "round %d, endpoint %d: fi_trecv %zd",
				b->round, b->i, ret);
			goto out;
		}
	}
	pthread_barrier_wait(b->bar);
	b->met = true;
	for (j = 0; j < BT_N; j++) {
		uint8_t *p = b->sm->p + (size_t)j * BT_LEN;
		struct iovec iov = {p, BT_LEN};
		struct fi_msg_tagged msg = {
		    .msg_iov = &iov,
		    .desc = &b->sm->desc,
		    .iov_count = 1,
		    .addr = to,
		    .tag = (uint64_t)b->round,
		    .context = &b->sc[j],
		};

		memcpy(p, &j, sizeof(j));
		cf_fill(p + sizeof(j), BT_LEN - sizeof(j),
			10000 * b->round + 1000 * b->i + j);
		end = cf_now_ms() + CF_WAIT_MS;
		while ((ret = fi_tsendmsg(ep, &msg,
					  FI_COMPLETION |
						  FI_DELIVERY_COMPLETE)) ==
			       -FI_EAGAIN &&
		       cf_now_ms() < end)
			if ((n = bt_read(b)) < 0)
				goto out;
			else
				left -= n;
		if (ret) {
			bt_fail(b, "round %d, endpoint %d: send %d: %zd (no "
				"room for %d ms)", b->round, b->i, j, ret,
				CF_WAIT_MS);
			goto out;
		}
	}
	end = cf_now_ms() + CF_WAIT_MS;
	while (left > 0) {
		if ((n = bt_read(b)) < 0)
			goto out;
		if (n) {
			left -= n;
			end = cf_now_ms() + CF_WAIT_MS;
		} else if (cf_now_ms() > end) {
			bt_fail(b, "round %d, endpoint %d: %d of %d completions "
				"missing, none for %d ms", b->round, b->i, left,
				2 * BT_N, CF_WAIT_MS);
			goto out;
		}
	}
	return NULL;
out:
	/* The other thread may wait at the barrier still. */
	if (!b->met)
		pthread_barrier_wait(b->bar);
	return NULL;
}

static int case_burst_threads(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED, .threading = FI_THREAD_SAFE};
	static struct bt_side side[2];
	static struct fi_context2 wc[2][2];
	pthread_barrier_t bar;
	struct cf_mem sm[2], rm[2];
	pthread_t th[2];
	struct cf_comp c;
	struct cf_fix f;
	int i, r;

	cf_open(&f, prov, &o);
	for (i = 0; i < 2; i++) {
		cf_mem_reg(&f, i, &sm[i], (size_t)BT_N * BT_LEN, FI_SEND);
		cf_mem_reg(&f, i, &rm[i], (size_t)BT_N * BT_LEN, FI_RECV);
	}
	/* The path, one way then the other: a provider that connects on
	 * demand answers on the connection the first side made. */
	for (i = 0; i < 2; i++) {
		cf_post(&f, fi_trecv(f.ep[1 - i].ep, rm[1 - i].p, BT_LEN,
				     rm[1 - i].desc, FI_ADDR_UNSPEC, 1000, 0,
				     &wc[1 - i][1]));
		cf_post(&f, fi_tsend(f.ep[i].ep, sm[i].p, BT_LEN, sm[i].desc,
				     f.ep[1 - i].addr, 1000, &wc[i][0]));
		c = cf_wait_ctx(&f, i, &wc[i][0]);
		cf_assert(!c.err, "first send %d: error %d", i, c.err);
		c = cf_wait_ctx(&f, 1 - i, &wc[1 - i][1]);
		cf_assert(!c.err, "first receive %d: error %d", 1 - i, c.err);
	}
	for (r = 0; r < BT_ROUNDS; r++) {
		pthread_barrier_init(&bar, NULL, 2);
		for (i = 0; i < 2; i++) {
			side[i].f = &f;
			side[i].i = i;
			side[i].round = r;
			side[i].bar = &bar;
			side[i].sm = &sm[i];
			side[i].rm = &rm[i];
			side[i].err[0] = 0;
			cf_assert(!pthread_create(&th[i], NULL, bt_thread,
						  &side[i]),
				  "pthread_create");
		}
		for (i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&bar);
		for (i = 0; i < 2; i++)
			cf_assert(!side[i].err[0], "%s", side[i].err);
	}
	for (i = 0; i < 2; i++) {
		cf_mem_free(&sm[i]);
		cf_mem_free(&rm[i]);
	}
	cf_close(&f);
	return 0;
}

/* A context with guard bytes on both sides. */
struct guarded_ctx {
	uint8_t pre[64];
	struct fi_context2 ctx;
	uint8_t post[64];
};

/*
 * FI_CONTEXT/FI_CONTEXT2: the provider may use the fi_context(2) we pass,
 * but nothing outside it, and hands back the same pointer.  A provider
 * that asked only for FI_CONTEXT must leave the second half of an
 * fi_context2 alone.
 */
static int case_context(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG | FI_TAGGED};
	static struct guarded_ctx g[8];
	struct cf_mem sm, rm;
	uint64_t mode;
	struct cf_comp c;
	struct cf_fix f;
	size_t limit, j;
	int i;

	cf_open(&f, prov, &o);
	mode = f.info->mode;
	cf_note("provider mode [%s]", fi_tostr(&mode, FI_TYPE_MODE));
	limit = (mode & FI_CONTEXT2)  ? sizeof(struct fi_context2)
		: (mode & FI_CONTEXT) ? sizeof(struct fi_context)
				      : 0;
	memset(g, 0xc3, sizeof(g));
	cf_mem_reg(&f, 0, &sm, 70000, FI_SEND);
	cf_mem_reg(&f, 1, &rm, 4 * 70000, FI_RECV);
	cf_fill(sm.p, 70000, 2);
	for (i = 0; i < 4; i++) {
		size_t len = i & 1 ? 70000 : 64;

		if (i < 2)
			cf_post(&f, fi_recv(f.ep[1].ep, rm.p + i * 70000, len,
					    rm.desc, FI_ADDR_UNSPEC,
					    &g[4 + i].ctx));
		else
			cf_post(&f, fi_trecv(f.ep[1].ep, rm.p + i * 70000, len,
					     rm.desc, FI_ADDR_UNSPEC, i, 0,
					     &g[4 + i].ctx));
	}
	for (i = 0; i < 4; i++) {
		size_t len = i & 1 ? 70000 : 64;

		if (i < 2)
			cf_post(&f, fi_send(f.ep[0].ep, sm.p, len, sm.desc,
					    f.ep[1].addr, &g[i].ctx));
		else
			cf_post(&f, fi_tsend(f.ep[0].ep, sm.p, len, sm.desc,
					     f.ep[1].addr, i, &g[i].ctx));
	}
	for (i = 0; i < 8; i++) {
		c = cf_wait_ctx(&f, i < 4 ? 0 : 1, &g[i].ctx);
		cf_assert(!c.err, "operation %d: error %d", i, c.err);
		if (i >= 4)
			cf_check_fill(rm.p + (i - 4) * 70000, c.len, 2,
				      "received data");
	}
	for (i = 0; i < 8; i++) {
		const uint8_t *p = (const uint8_t *)&g[i].ctx;

		for (j = 0; j < 64; j++)
			cf_assert(g[i].pre[j] == 0xc3 && g[i].post[j] == 0xc3,
				  "operation %d: bytes around its context were "
				  "written",
				  i);
		for (j = limit; j < sizeof(struct fi_context2); j++)
			cf_assert(p[j] == 0xc3,
				  "operation %d: context byte "
				  "%zu written though the mode allows %zu",
				  i, j, limit);
	}
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

#define MT_N 400
#define MT_LEN(k) (32 + (size_t)(k)*13)

/* The context of each operation says who posted it. */
struct mt_op {
	struct fi_context2 ctx;
	int owner; /* 0,1 senders on ep0; 2,3 receivers on ep1 */
	int k;
	size_t len;
};

struct mt {
	struct cf_fix *f;
	struct cf_mem sm[2], rm[2];
	struct mt_op ops[4][MT_N];
	atomic_int done[4];
	atomic_int dup;
	atomic_int errors;
	uint64_t deadline;
};

struct mt_arg {
	struct mt *m;
	int who;
};

/* Read this thread's endpoint's CQ and credit whoever posted each entry. */
static void mt_poll(struct mt *m, int ep)
{
	struct fi_cq_tagged_entry e[8];
	ssize_t n, i;

	n = fi_cq_read(m->f->ep[ep].cq, e, 8);
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};

		if (fi_cq_readerr(m->f->ep[ep].cq, &err, 0) == 1)
			atomic_fetch_add(&m->errors, 1);
		return;
	}
	for (i = 0; i < n; i++) {
		struct mt_op *op = e[i].op_context;

		if (op->owner >= 2)
			op->len = e[i].len;
		/* ctx first word is provider-owned; the k field marks use. */
		if (op->k < 0)
			atomic_fetch_add(&m->dup, 1);
		op->k = -1 - op->k;
		atomic_fetch_add(&m->done[op->owner], 1);
	}
}

static void *mt_thread(void *p)
{
	struct mt_arg *a = p;
	struct mt *m = a->m;
	struct cf_fix *f = m->f;
	int who = a->who, ep = who < 2 ? 0 : 1, t = who & 1, k;
	ssize_t ret;

	for (k = 0; k < MT_N; k++) {
		struct mt_op *op = &m->ops[who][k];

		op->owner = who;
		op->k = k;
		do {
			if (who < 2)
				ret =
				    fi_tsend(f->ep[0].ep, m->sm[t].p + k * 8,
					     MT_LEN(k), m->sm[t].desc,
					     f->ep[1].addr, 100 + t, &op->ctx);
			else
				ret = fi_trecv(f->ep[1].ep,
					       m->rm[t].p + k * 8192, 8192,
					       m->rm[t].desc, FI_ADDR_UNSPEC,
					       100 + t, 0, &op->ctx);
			if (ret == -FI_EAGAIN)
				mt_poll(m, ep);
		} while (ret == -FI_EAGAIN && cf_now_ms() < m->deadline);
		if (ret) {
			atomic_fetch_add(&m->errors, 1);
			return NULL;
		}
	}
	while (atomic_load(&m->done[who]) < MT_N && cf_now_ms() < m->deadline)
		mt_poll(m, ep);
	return NULL;
}

/*
 * FI_THREAD_SAFE: two threads send tagged messages on one endpoint while
 * two threads post receives and poll on the other; every message arrives
 * intact, every operation completes once.
 */
static int case_thread_safe(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED, .threading = FI_THREAD_SAFE};
	static struct mt m;
	struct mt_arg args[4];
	pthread_t th[4];
	struct cf_fix f;
	int i, k, t;

	cf_open(&f, prov, &o);
	m.f = &f;
	m.deadline = cf_now_ms() + 40000; /* inside the case deadline */
	for (t = 0; t < 2; t++) {
		cf_mem_reg(&f, 0, &m.sm[t], MT_N * 8 + 8192, FI_SEND);
		cf_fill(m.sm[t].p, MT_N * 8 + 8192, 70 + t);
		cf_mem_reg(&f, 1, &m.rm[t], (size_t)MT_N * 8192, FI_RECV);
	}
	/* Receivers first, so most receives are posted before the sends. */
	for (i = 3; i >= 0; i--) {
		args[i] = (struct mt_arg){&m, i};
		cf_assert(!pthread_create(&th[i], NULL, mt_thread, &args[i]),
			  "pthread_create");
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	cf_assert(!atomic_load(&m.errors), "%d operations failed",
		  atomic_load(&m.errors));
	cf_assert(!atomic_load(&m.dup), "%d duplicate completions",
		  atomic_load(&m.dup));
	for (i = 0; i < 4; i++)
		cf_assert(atomic_load(&m.done[i]) == MT_N,
			  "thread %d: %d of "
			  "%d operations completed",
			  i, atomic_load(&m.done[i]), MT_N);
	/*
	 * Receive k of tag t holds message k of sender t if the provider
	 * orders same-tag messages; else the length says which it holds.
	 */
	for (t = 0; t < 2; t++) {
		for (k = 0; k < MT_N; k++) {
			size_t len = m.ops[2 + t][k].len;
			size_t src = (len - 32) / 13;
			uint8_t *want = m.sm[t].p + src * 8;

			cf_assert(len >= 32 && (len - 32) % 13 == 0 &&
				      src < MT_N,
				  "receive %d of tag %d: length "
				  "%zu matches no message",
				  k, 100 + t, len);
			cf_assert(
			    !memcmp(m.rm[t].p + (size_t)k * 8192, want, len),
			    "receive %d of tag %d: data "
			    "differs from message %zu",
			    k, 100 + t, src);
		}
	}
	for (t = 0; t < 2; t++) {
		cf_mem_free(&m.sm[t]);
		cf_mem_free(&m.rm[t]);
	}
	cf_close(&f);
	return 0;
}

#define AUTO_N 8
#define AUTO_LEN ((size_t)1 << 20)

/*
 * FI_PROGRESS_AUTO: once its sends are posted, the sending side makes no
 * call at all, yet eight 1 MiB messages (more than a socket or a bounce
 * buffer holds) arrive intact at a receiver that only reads its own CQ;
 * the send completions are there when the sender looks at last.  The
 * provider's progress thread runs beside the application's calls on
 * both endpoints throughout.
 */
static int case_progress_auto(const char *prov)
{
	struct cf_opts o = {.caps = FI_TAGGED,
			    .data_progress = FI_PROGRESS_AUTO};
	struct fi_context2 sc[AUTO_N], rc[AUTO_N];
	struct fi_cq_tagged_entry e;
	bool got[AUTO_N] = {false};
	struct cf_mem sm, rm;
	struct cf_fix f;
	int k, n, ret;
	uint64_t end;

	cf_open(&f, prov, &o);
	cf_assert(f.info->domain_attr->data_progress == FI_PROGRESS_AUTO,
		  "fi_getinfo answered data_progress %d to a request for "
		  "FI_PROGRESS_AUTO",
		  f.info->domain_attr->data_progress);
	cf_mem_reg(&f, 0, &sm, AUTO_N * AUTO_LEN, FI_SEND);
	cf_mem_reg(&f, 1, &rm, AUTO_N * AUTO_LEN, FI_RECV);
	cf_fill(sm.p, AUTO_N * AUTO_LEN, 41);
	for (k = 0; k < AUTO_N; k++)
		cf_post(&f, fi_trecv(f.ep[1].ep, rm.p + k * AUTO_LEN, AUTO_LEN,
				     rm.desc, FI_ADDR_UNSPEC, 500 + k, 0,
				     &rc[k]));
	end = cf_now_ms() + CF_WAIT_MS;
	for (k = 0; k < AUTO_N; k++) {
		cf_mark("fi_tsend under FI_PROGRESS_AUTO");
		/* -FI_EAGAIN clears without our help: only sleep. */
		while ((ret = (int)fi_tsend(f.ep[0].ep, sm.p + k * AUTO_LEN,
					    AUTO_LEN, sm.desc, f.ep[1].addr,
					    500 + k, &sc[k])) == -FI_EAGAIN &&
		       cf_now_ms() < end)
			cf_sleep_ms(1);
		cf_assert(!ret, "fi_tsend %d: %d (%s)", k, ret,
			  fi_strerror(-ret));
	}
	/* The receiver reads its own CQ only. */
	cf_mark("fi_cq_read of the receiver's CQ alone");
	for (n = 0; n < AUTO_N && cf_now_ms() < end;) {
		ret = (int)fi_cq_read(f.ep[1].cq, &e, 1);
		if (ret == -FI_EAGAIN) {
			cf_sleep_ms(1);
			continue;
		}
		cf_assert(ret == 1, "fi_cq_read: %d (%s)", ret,
			  fi_strerror(-ret));
		k = (int)(e.tag - 500);
		cf_assert(k >= 0 && k < AUTO_N && e.op_context == &rc[k] &&
			      !got[k] && e.len == AUTO_LEN,
			  "receive completion: tag %llu ctx %p len %zu",
			  (unsigned long long)e.tag, e.op_context, e.len);
		got[k] = true;
		n++;
	}
	cf_assert(n == AUTO_N,
		  "%d of %d messages arrived in %d ms while the sender made "
		  "no call",
		  n, AUTO_N, CF_WAIT_MS);
	cf_check_fill(rm.p, AUTO_N * AUTO_LEN, 41, "messages moved by the "
		      "progress thread");
	cf_mark("fi_cq_read of the sender's CQ");
	memset(got, 0, sizeof(got));
	for (n = 0; n < AUTO_N && cf_now_ms() < end;) {
		ret = (int)fi_cq_read(f.ep[0].cq, &e, 1);
		if (ret == -FI_EAGAIN) {
			cf_sleep_ms(1);
			continue;
		}
		cf_assert(ret == 1, "fi_cq_read (sender): %d (%s)", ret,
			  fi_strerror(-ret));
		for (k = 0; k < AUTO_N && e.op_context != &sc[k]; k++)
			;
		cf_assert(k < AUTO_N && !got[k],
			  "send completion: ctx %p", e.op_context);
		got[k] = true;
		n++;
	}
	cf_assert(n == AUTO_N, "%d of %d send completions", n, AUTO_N);
	cf_assert(fi_cq_read(f.ep[0].cq, &e, 1) == -FI_EAGAIN &&
			  fi_cq_read(f.ep[1].cq, &e, 1) == -FI_EAGAIN,
		  "a completion more than the operations posted");
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/* A thread blocked in fi_cq_sread on endpoint 1's CQ. */
struct sread_arg {
	struct fid_cq *cq;
	int timeout_ms;
	ssize_t ret;
	uint64_t took_ms;
	struct fi_cq_tagged_entry e;
};

static void *sread_thread(void *p)
{
	struct sread_arg *a = p;
	uint64_t t0 = cf_now_ms();

	cf_mark("fi_cq_sread in a second thread");
	a->ret = fi_cq_sread(a->cq, &a->e, 1, NULL, a->timeout_ms);
	a->took_ms = cf_now_ms() - t0;
	return NULL;
}

/* Drive endpoint 0 alone (its CQ only) until the thread is done. */
static void sread_join(struct cf_fix *f, pthread_t th, struct sread_arg *a)
{
	struct fi_cq_tagged_entry e;

	(void)a;
	while (pthread_tryjoin_np(th, NULL))
		(void)fi_cq_read(f->ep[0].cq, &e, 0);
}

/*
 * The CQ calls themselves: fi_cq_read and fi_cq_readerr on an empty CQ
 * return -FI_EAGAIN; fi_cq_sread times out with -FI_EAGAIN, returns an
 * entry that arrives while it blocks, returns -FI_EAVAIL for an error
 * entry, and is woken by fi_cq_signal.
 */
static int case_cq_calls(const char *prov)
{
	struct cf_opts o = {.caps = FI_MSG,
			    .threading = FI_THREAD_SAFE,
			    .cq_wait = FI_WAIT_UNSPEC};
	struct fi_cq_err_entry err = {0};
	struct fi_cq_tagged_entry e;
	struct fi_context2 sc, rc;
	struct sread_arg a;
	struct cf_mem sm, rm;
	struct fid_cq *cq;
	pthread_t th;
	struct cf_fix f;
	ssize_t ret;
	uint64_t t0;

	cf_open(&f, prov, &o);
	cq = f.ep[1].cq;
	cf_mem_reg(&f, 0, &sm, 1000, FI_SEND);
	cf_mem_reg(&f, 1, &rm, 1000, FI_RECV);
	ret = fi_cq_read(cq, &e, 1);
	cf_assert(ret == -FI_EAGAIN, "fi_cq_read of an empty CQ: %zd", ret);
	ret = fi_cq_readerr(cq, &err, 0);
	cf_assert(ret == -FI_EAGAIN, "fi_cq_readerr of an empty CQ: %zd", ret);
	t0 = cf_now_ms();
	cf_mark("fi_cq_sread(300 ms) on an empty CQ");
	ret = fi_cq_sread(cq, &e, 1, NULL, 300);
	cf_assert(ret == -FI_EAGAIN, "fi_cq_sread timing out: %zd (%s)", ret,
		  fi_strerror((int)-ret));
	cf_assert(cf_now_ms() - t0 >= 250 && cf_now_ms() - t0 < 5000,
		  "fi_cq_sread(300 ms) returned after %llu ms",
		  (unsigned long long)(cf_now_ms() - t0));

	/* An entry arriving while the thread blocks wakes it. */
	cf_post(&f,
		fi_recv(f.ep[1].ep, rm.p, 1000, rm.desc, FI_ADDR_UNSPEC, &rc));
	a = (struct sread_arg){.cq = cq, .timeout_ms = CF_WAIT_MS};
	cf_assert(!pthread_create(&th, NULL, sread_thread, &a), "thread");
	cf_sleep_ms(100);
	cf_fill(sm.p, 1000, 12);
	cf_post(&f,
		fi_send(f.ep[0].ep, sm.p, 1000, sm.desc, f.ep[1].addr, &sc));
	sread_join(&f, th, &a);
	cf_assert(a.ret == 1 && a.e.op_context == &rc && a.e.len == 1000,
		  "fi_cq_sread while a message arrives: ret %zd ctx %p len "
		  "%zu",
		  a.ret, a.e.op_context, a.e.len);
	cf_check_fill(rm.p, 1000, 12, "message read by fi_cq_sread");

	/* An error entry: -FI_EAVAIL, then fi_cq_readerr and strerror. */
	cf_post(&f,
		fi_recv(f.ep[1].ep, rm.p, 10, rm.desc, FI_ADDR_UNSPEC, &rc));
	a = (struct sread_arg){.cq = cq, .timeout_ms = CF_WAIT_MS};
	cf_assert(!pthread_create(&th, NULL, sread_thread, &a), "thread");
	cf_post(&f,
		fi_send(f.ep[0].ep, sm.p, 1000, sm.desc, f.ep[1].addr, &sc));
	sread_join(&f, th, &a);
	cf_assert(a.ret == -FI_EAVAIL,
		  "fi_cq_sread with an error entry on "
		  "top: %zd, want -FI_EAVAIL",
		  a.ret);
	ret = fi_cq_readerr(cq, &err, 0);
	cf_assert(ret == 1 && err.err == FI_ETRUNC && err.op_context == &rc,
		  "fi_cq_readerr: ret %zd err %d", ret, err.err);
	cf_assert(fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0),
		  "fi_cq_strerror returned NULL");

	/* fi_cq_signal wakes a thread blocked with nothing to read. */
	a = (struct sread_arg){.cq = cq, .timeout_ms = CF_WAIT_MS};
	cf_assert(!pthread_create(&th, NULL, sread_thread, &a), "thread");
	cf_sleep_ms(200);
	cf_ok(fi_cq_signal(cq));
	sread_join(&f, th, &a);
	cf_assert(a.ret == -FI_EAGAIN && a.took_ms < CF_WAIT_MS / 2,
		  "fi_cq_sread after fi_cq_signal: %zd after %llu ms", a.ret,
		  (unsigned long long)a.took_ms);
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

/*
 * Transmits counted only (a send counter, no transmit CQ; MPI's one-sided
 * layers bind this way): sends with and without FI_COMPLETION and an
 * inject are each counted once, none is refused for want of a CQ, and
 * each arrives.
 */
static int case_cntr_only_tx(const char *prov)
{
	struct cf_opts o = {
	    .caps = FI_MSG,
	    .cntr_mask = 1 << CF_CNTR_SEND,
	    .no_tx_cq = true,
	};
	struct fi_context2 sc[3], rc[3];
	struct cf_mem sm, rm;
	struct fid_cntr *tx;
	struct cf_comp c;
	struct cf_fix f;
	int i;

	cf_open(&f, prov, &o);
	tx = f.ep[0].cntr[CF_CNTR_SEND];
	cf_mem_reg(&f, 0, &sm, 3 * 64, FI_SEND);
	cf_mem_reg(&f, 1, &rm, 3 * 64, FI_RECV);
	for (i = 0; i < 3; i++) {
		cf_fill(sm.p + 64 * i, 64, 0x600 + (unsigned int)i);
		cf_post(&f, fi_recv(f.ep[1].ep, rm.p + 64 * i, 64, rm.desc,
				    FI_ADDR_UNSPEC, &rc[i]));
	}
	cf_post(&f, fi_send(f.ep[0].ep, sm.p, 64, sm.desc, f.ep[1].addr,
			    &sc[0]));
	{
		struct iovec iov = {sm.p + 64, 64};
		void *desc = sm.desc;
		struct fi_msg msg = {.msg_iov = &iov, .desc = &desc,
				     .iov_count = 1, .addr = f.ep[1].addr,
				     .context = &sc[1]};

		cf_post(&f, fi_sendmsg(f.ep[0].ep, &msg, FI_COMPLETION));
	}
	cf_post(&f, fi_inject(f.ep[0].ep, sm.p + 128, 64, f.ep[1].addr));
	for (i = 0; i < 3; i++) {
		c = cf_wait_ctx(&f, 1, &rc[i]);
		cf_assert(!c.err, "receive %d: error %d (%s)", i, c.err,
			  fi_strerror(c.err));
		cf_check_fill(rm.p + 64 * i, 64, 0x600 + (unsigned int)i,
			      "a counted send's message");
	}
	cf_wait_cntr(&f, 0, CF_CNTR_SEND, 3);
	cf_expect_none(&f, 0, 100);
	cf_expect(fi_cntr_read(tx) == 3 && !fi_cntr_readerr(tx),
		  "the send counter reads %llu (%llu errors) after 3 sends",
		  (unsigned long long)fi_cntr_read(tx),
		  (unsigned long long)fi_cntr_readerr(tx));
	cf_mem_free(&sm);
	cf_mem_free(&rm);
	cf_close(&f);
	return 0;
}

const struct cf_case cf_cases_misc[] = {
    {"cntr_only_tx",
     "transmits of an endpoint with a send counter and no transmit CQ: "
     "counted once each, with or without FI_COMPLETION, and delivered",
     case_cntr_only_tx},
    {"cq_calls",
     "fi_cq_read/readerr on empty, fi_cq_sread timeout/wakeup/error, "
     "fi_cq_signal",
     case_cq_calls},
    {"cntr", "send/recv counters, fi_cntr_wait, error counts, set/add",
     case_cntr},
    {"av",
     "FI_AV_MAP and FI_AV_TABLE: insert, lookup, straddr, remove, "
     "re-insert",
     case_av},
    {"av_bad_str",
     "FI_ADDR_STR: bad strings, as char ** and packed, fail their own "
     "entry",
     case_av_bad_str},
    {"refused",
     "threading 99 and FI_MULTICAST in fi_getinfo, caps not offered in "
     "fi_endpoint and fi_domain: -FI_ENODATA",
     case_refused},
    {"comp_levels",
     "FI_INJECT/TRANSMIT/DELIVERY_COMPLETE on sends and "
     "writes",
     case_comp_levels},
    {"burst_threads",
     "FI_THREAD_SAFE: a thread per endpoint sends 200 messages at "
     "FI_DELIVERY_COMPLETE to the other at once, 8 rounds: all complete",
     case_burst_threads},
    {"context",
     "FI_CONTEXT/FI_CONTEXT2: only the context is written, "
     "returned as given",
     case_context},
    {"progress_auto",
     "FI_PROGRESS_AUTO: 1 MiB messages delivered while the sender makes no "
     "call",
     case_progress_auto},
    {"thread_safe",
     "FI_THREAD_SAFE: 2 sender and 2 receiver threads on "
     "two endpoints",
     case_thread_safe},
    {NULL},
};
