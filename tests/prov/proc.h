/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the two-process cases share (cases_proc.c): a peer process started
 * from this same program in a role, the pipes the two talk over before
 * the provider joins them, and the end of the peer.
 */
#ifndef WEFT_TESTS_PROC_H
#define WEFT_TESTS_PROC_H

#include <sys/types.h>

#include "conformance.h"

/* The peer's ends of the pipes. */
#define PEER_IN 3
#define PEER_OUT 4

struct peer_link {
	pid_t pid;
	int wfd, rfd;
};

/* A name as it travels over the pipes. */
struct peer_name {
	uint8_t v[CF_MAX_NAME];
	uint32_t len;
};

/* Start this program as "-R role"; it dies with us, and is only ever
 * stopped by its PID. */
void cf_spawn_peer(const char *role, struct peer_link *l);
void cf_write_all(int fd, const void *buf, size_t len);
/* Fails the case after timeout_ms without the bytes, or on EOF. */
void cf_read_all(int fd, void *buf, size_t len, int timeout_ms);
/* The same, reading f's queues while it waits: under FI_PROGRESS_MANUAL
 * the peer's last transfers may need this side's calls (a transport that
 * acknowledges in the provider, as udp's does). */
void cf_read_all_progress(struct cf_fix *f, int fd, void *buf, size_t len,
			  int timeout_ms);
void cf_send_name(int fd, const struct cf_ep *e);
void cf_read_name(int fd, struct peer_name *n);
fi_addr_t cf_insert_name(struct cf_fix *f, const struct peer_name *n);
/* Read the other side's name and insert it into our AV. */
fi_addr_t cf_recv_name(int fd, struct cf_fix *f);
/* Wait for the peer to exit (its status), killing it after timeout_ms. */
int cf_reap(struct peer_link *l, int timeout_ms);

/* The peer roles of the random-kill cases (cases_kill.c). */
bool cf_kill_is_role(const char *role);
int cf_kill_peer_main(const char *role);
/* The target roles of the registration-counter cases (cases_mr_cntr.c). */
bool cf_mr_cntr_is_role(const char *role);
int cf_mr_cntr_peer_main(const char *role);
/* The peer of the inject cases (cases_inject.c). */
bool cf_inject_is_role(const char *role);
int cf_inject_peer_main(const char *role);
/* The peer of proc_trigger (cases_trigger.c). */
bool cf_trigger_is_role(const char *role);
int cf_trigger_peer_main(const char *role);
/* The members of the collective cases (cases_coll.c). */
bool cf_coll_is_role(const char *role);
int cf_coll_peer_main(const char *role);
/* The target of the fence cases (cases_fence.c). */
bool cf_fence_is_role(const char *role);
int cf_fence_peer_main(const char *role);
/* The peer of the datagram cases (cases_dgram.c). */
bool cf_dgram_is_role(const char *role);
int cf_dgram_peer_main(const char *role);
/* The reader of proc_shared_av (cases_shared_av.c). */
bool cf_shared_av_is_role(const char *role);
int cf_shared_av_peer_main(const char *role);
/* The peer of cm_peer_killed (cases_cm.c). */
int cf_cm_victim_main(void);

#endif
