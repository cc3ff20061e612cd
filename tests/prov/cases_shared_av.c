/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Named AVs shared between processes (FI_SHARED_AV, fi_av(3) name and
 * FI_READ).  proc_shared_av: this process creates a named AV, binds its
 * three endpoints to it and inserts two of them; a second process opens
 * the AV by name with FI_READ, fails to insert into it, and sends to the
 * fi_addr_t values this process got, unchanged; then this process
 * inserts its third endpoint after the reader opened, and the reader
 * sends to that one too.  A provider without FI_SHARED_AV must refuse a
 * named AV.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_tagged.h>

#include "conformance.h"
#include "proc.h"

#define SAV_LEN 100
#define SAV_TAG 0x5a0

struct sav_msg {
	char name[64];
	fi_addr_t fa[3];
};

static const uint64_t sav_caps = FI_MSG | FI_TAGGED | FI_SHARED_AV;

/* A tagged message to fa, tag SAV_TAG + i, filled with seed 300 + i. */
static void sav_send(struct cf_fix *f, fi_addr_t fa, unsigned int i)
{
	static uint8_t buf[SAV_LEN];
	struct fi_context2 ctx;
	struct cf_comp c;

	cf_fill(buf, SAV_LEN, 300 + i);
	cf_post(f, fi_tsend(f->ep[0].ep, buf, SAV_LEN, NULL, fa, SAV_TAG + i,
			    &ctx));
	c = cf_wait_ctx(f, 0, &ctx);
	cf_assert(!c.err, "send to fi_addr %#llx: error %d (%s)",
		  (unsigned long long)fa, c.err, fi_strerror(c.err));
}

bool cf_shared_av_is_role(const char *role)
{
	return !strcmp(role, "av_reader");
}

int cf_shared_av_peer_main(const char *role)
{
	struct cf_opts o = {.caps = sav_caps, .nep = 1, .no_insert = true,
			    .av_flags = FI_READ};
	struct sav_msg m;
	struct cf_fix f;
	fi_addr_t got;
	char b;
	int ret;

	(void)role;
	cf_read_all(PEER_IN, &m, sizeof(m), CF_WAIT_MS);
	o.av_name = m.name;
	cf_open(&f, cf_prov, &o);
	/* Read-only: an insert fails. */
	ret = fi_av_insert(f.av, f.ep[0].name, 1, &got, 0, NULL);
	b = ret == 1 ? 'I' : 'R';
	cf_write_all(PEER_OUT, &b, 1);
	sav_send(&f, m.fa[0], 0);
	sav_send(&f, m.fa[1], 1);
	b = 'A';
	cf_write_all(PEER_OUT, &b, 1);
	/* The third, inserted after we opened. */
	cf_read_all(PEER_IN, &m.fa[2], sizeof(m.fa[2]), CF_WAIT_MS);
	sav_send(&f, m.fa[2], 2);
	cf_close(&f);
	b = 'D';
	cf_write_all(PEER_OUT, &b, 1);
	return 0;
}

/* A receive for message i on endpoint i. */
static void sav_expect(struct cf_fix *f, unsigned int i, uint8_t *buf,
		       struct fi_context2 *ctx)
{
	struct cf_comp c = cf_wait_ctx(f, (int)i, ctx);
	char what[64];

	snprintf(what, sizeof(what), "message to endpoint %u", i);
	cf_assert(!c.err, "%s: error %d (%s)", what, c.err,
		  fi_strerror(c.err));
	cf_assert(c.len == SAV_LEN && c.tag == SAV_TAG + i, "%s: len %zu tag %#llx",
		  what, c.len, (unsigned long long)c.tag);
	cf_check_fill(buf, SAV_LEN, 300 + i, what);
}

static int case_proc_shared_av(const char *prov)
{
	struct cf_opts o = {.caps = sav_caps, .nep = 3, .no_insert = true};
	static uint8_t rbuf[3][SAV_LEN];
	struct fi_context2 rctx[3];
	struct peer_link l;
	struct sav_msg m;
	struct cf_fix f;
	struct fi_info *info;
	unsigned int i;
	int ret, status;
	char b;

	info = cf_getinfo(prov, &o, &ret);
	if (ret == -FI_ENODATA) {
		/* Not offered: a named AV is refused. */
		struct cf_opts p = {.caps = FI_MSG | FI_TAGGED, .nep = 1};
		struct fi_av_attr attr = {.name = "cf-not-shared"};
		struct fid_av *av = NULL;

		cf_open(&f, prov, &p);
		ret = fi_av_open(f.domain, &attr, &av, NULL);
		cf_assert(ret, "a named AV opened on a provider without "
			       "FI_SHARED_AV");
		cf_close(&f);
		return 0;
	}
	cf_assert(!ret, "fi_getinfo: %d", ret);
	fi_freeinfo(info);

	memset(&m, 0, sizeof(m));
	snprintf(m.name, sizeof(m.name), "cf-shared-av-%d", (int)getpid());
	o.av_name = m.name;
	cf_open(&f, prov, &o);
	for (i = 0; i < 3; i++)
		cf_post(&f, fi_trecv(f.ep[i].ep, rbuf[i], SAV_LEN, NULL,
				     FI_ADDR_UNSPEC, SAV_TAG + i, 0,
				     &rctx[i]));
	for (i = 0; i < 2; i++) {
		cf_assert(fi_av_insert(f.av, f.ep[i].name, 1, &m.fa[i], 0,
				       NULL) == 1,
			  "fi_av_insert of endpoint %u", i);
		f.ep[i].addr = m.fa[i];
	}
	cf_spawn_peer("av_reader", &l);
	cf_write_all(l.wfd, &m, sizeof(m));
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS * 2);
	cf_expect(b == 'R', "the reader inserted into an AV opened with "
			    "FI_READ");
	/* Its sends complete once ours are in: drive ours meanwhile. */
	for (i = 0; i < 2; i++)
		sav_expect(&f, i, rbuf[i], &rctx[i]);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	cf_assert(b == 'A', "reader: %c", b);
	cf_assert(fi_av_insert(f.av, f.ep[2].name, 1, &m.fa[2], 0, NULL) == 1,
		  "fi_av_insert of endpoint 2");
	f.ep[2].addr = m.fa[2];
	cf_write_all(l.wfd, &m.fa[2], sizeof(m.fa[2]));
	sav_expect(&f, 2, rbuf[2], &rctx[2]);
	cf_read_all(l.rfd, &b, 1, CF_WAIT_MS);
	status = cf_reap(&l, CF_WAIT_MS);
	cf_assert(WIFEXITED(status) && !WEXITSTATUS(status),
		  "reader ended with status 0x%x", status);
	for (i = 0; i < 3; i++)
		cf_expect_none(&f, (int)i, i ? 0 : 20);
	cf_close(&f);
	close(l.wfd);
	close(l.rfd);
	return 0;
}

const struct cf_case cf_cases_shared_av[] = {
    {"proc_shared_av",
     "FI_SHARED_AV: a second process opens the named AV with FI_READ, "
     "cannot insert, and sends to the creator's fi_addr_t values, one "
     "inserted after it opened; refused where not offered",
     case_proc_shared_av},
    {NULL},
};
