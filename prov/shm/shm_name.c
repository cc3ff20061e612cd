/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Endpoint names: the addresses fi_getinfo and fi_av_insertsvc form from a
 * node and a service, the names weft draws at random, and reading an
 * address of a given length (shm.h, man/fi_shm.7).
 */
#include "shm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define DRAWN_DIGITS 16 /* hex digits after SHM_DRAWN_MARK: 64 bits */

int shm_name_from_addr(const void *addr, size_t addrlen,
		       char name[SHM_NAME_MAX])
{
	const char *s = addr;
	size_t len, plen = strlen(SHM_PREFIX);

	if (!addr)
		return -FI_EINVAL;
	len = strnlen(s, addrlen);
	if (len >= plen && !memcmp(s, SHM_PREFIX, plen)) {
		s += plen;
		len -= plen;
	}
	if (!len || len >= SHM_NAME_MAX)
		return -FI_EINVAL;
	memcpy(name, s, len);
	name[len] = '\0';
	/* A context's name is the endpoint's own to say (shm_name_ctx). */
	return shm_name_valid(name) && !strchr(name, SHM_CTX_MARK) ?
		       0 : -FI_EINVAL;
}

int shm_name_ctx(char name[SHM_NAME_MAX], const char *base, uint32_t ctx)
{
	int n = ctx ? snprintf(name, SHM_NAME_MAX, "%s%c%u", base,
			       SHM_CTX_MARK, ctx) :
		      snprintf(name, SHM_NAME_MAX, "%s", base);

	return n < 0 || n >= SHM_NAME_MAX ? -FI_EINVAL : 0;
}

uint32_t shm_name_split(char *name)
{
	char *mark = strrchr(name, SHM_CTX_MARK), *end;
	unsigned long ctx;

	if (!mark || mark[1] < '1' || mark[1] > '9')
		return 0;
	ctx = strtoul(mark + 1, &end, 10);
	if (*end || ctx > UINT16_MAX)
		return 0;
	*mark = '\0';
	return (uint32_t)ctx;
}

/* Fill `hex` (DRAWN_DIGITS characters, not terminated) from getrandom. */
static int draw_digits(char *hex)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char r[DRAWN_DIGITS / 2];
	size_t got = 0;
	ssize_t n;
	int i;

	while (got < sizeof(r)) {
		n = getrandom(r + got, sizeof(r) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return weft_errno(errno);
		}
		got += (size_t)n;
	}
	for (i = 0; i < DRAWN_DIGITS / 2; i++) {
		hex[2 * i] = digits[r[i] >> 4];
		hex[2 * i + 1] = digits[r[i] & 15];
	}
	return 0;
}

int shm_name_draw(char name[SHM_NAME_MAX], const char *prefix)
{
	size_t plen = strlen(prefix);

	if (plen + 1 + DRAWN_DIGITS >= SHM_NAME_MAX)
		return -FI_EINVAL;
	memcpy(name, prefix, plen);
	name[plen] = SHM_DRAWN_MARK;
	name[plen + 1 + DRAWN_DIGITS] = '\0';
	return draw_digits(name + plen + 1);
}

bool shm_name_drawn(const char *name)
{
	size_t len = strlen(name);

	return len > DRAWN_DIGITS &&
	       name[len - DRAWN_DIGITS - 1] == SHM_DRAWN_MARK &&
	       strspn(name + len - DRAWN_DIGITS, "0123456789abcdef") ==
		       DRAWN_DIGITS;
}

int shm_name_redraw(char name[SHM_NAME_MAX])
{
	if (!shm_name_drawn(name))
		return -FI_EINVAL;
	return draw_digits(name + strlen(name) - DRAWN_DIGITS);
}

int shm_addr_resolve(const char *node, const char *service, bool source,
		     char **addr)
{
	char name[SHM_NAME_MAX];
	const char *base = "";
	bool exact = false;
	int n, ret;

	if (node) {
		exact = !strncmp(node, SHM_PREFIX, strlen(SHM_PREFIX));
		base = exact ? node + strlen(SHM_PREFIX) : node;
	}
	if (service) {
		n = snprintf(name, sizeof(name), "%s:%s", base, service);
	} else if (node && (exact || !source)) {
		n = snprintf(name, sizeof(name), "%s", base);
	} else {
		/* A host without a service, or nothing: a name of its own,
		 * as binding an IP address to port 0 gets a free port. */
		char prefix[SHM_NAME_MAX];

		n = snprintf(prefix, sizeof(prefix), "%s%s", base,
			     node ? ":" : "");
		if (n < 0 || (size_t)n >= sizeof(prefix))
			return -FI_EINVAL;
		ret = shm_name_draw(name, prefix);
		if (ret)
			return ret;
		n = (int)strlen(name);
	}
	if (n < 0 || (size_t)n >= sizeof(name) || !shm_name_valid(name) ||
	    strchr(name, SHM_CTX_MARK))
		return -FI_EINVAL;
	if (asprintf(addr, SHM_PREFIX "%s", name) < 0)
		return -FI_ENOMEM;
	return 0;
}

/* ---- names this process's endpoints hold --------------------------------- */

static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dlist_entry held = DLIST_HEAD_INIT(held);
static uint32_t held_serial; /* for ".N"; under held_lock */

static bool held_by_another(const struct shm_xp *ep)
{
	struct dlist_entry *e;

	dlist_foreach(&held, e) {
		const struct shm_xp *o =
			container_of(e, struct shm_xp, name_entry);

		if (o != ep && !strcmp(o->name, ep->name))
			return true;
	}
	return false;
}

/* Under held_lock: change ep->name (at least once when `change`) until no
 * other endpoint holds it. */
static int name_make_unique(struct shm_xp *ep, bool change)
{
	char base[SHM_NAME_MAX];
	int tries, n, ret;

	memcpy(base, ep->name, sizeof(base));
	/* A context's name is its endpoint's: never another. */
	if (ep->name_fixed || strchr(ep->name, SHM_CTX_MARK))
		return change || held_by_another(ep) ? -FI_EADDRINUSE : 0;
	for (tries = 0; change || held_by_another(ep); tries++) {
		change = false;
		if (tries == 64) {
			ret = -FI_EADDRINUSE;
			goto err_restore;
		}
		if (shm_name_drawn(ep->name)) {
			ret = shm_name_redraw(ep->name);
			if (ret)
				goto err_restore;
			continue;
		}
		n = snprintf(ep->name, sizeof(ep->name), "%s.%u", base,
			     ++held_serial);
		if (n < 0 || (size_t)n >= sizeof(ep->name)) {
			ret = -FI_EADDRINUSE;
			goto err_restore;
		}
	}
	return 0;

err_restore:
	memcpy(ep->name, base, sizeof(base));
	return ret;
}

int shm_name_hold(struct shm_xp *ep)
{
	int ret;

	pthread_mutex_lock(&held_lock);
	ret = name_make_unique(ep, false);
	if (!ret && !ep->name_held) {
		dlist_insert_tail(&ep->name_entry, &held);
		ep->name_held = true;
	}
	pthread_mutex_unlock(&held_lock);
	return ret;
}

int shm_name_redraw_held(struct shm_xp *ep)
{
	int ret;

	if (!shm_name_drawn(ep->name))
		return -FI_EINVAL;
	pthread_mutex_lock(&held_lock);
	ret = name_make_unique(ep, true);
	pthread_mutex_unlock(&held_lock);
	return ret;
}

void shm_name_release(struct shm_xp *ep)
{
	pthread_mutex_lock(&held_lock);
	if (ep->name_held) {
		dlist_remove(&ep->name_entry);
		ep->name_held = false;
	}
	pthread_mutex_unlock(&held_lock);
}

bool shm_name_held_here(const char *name)
{
	struct dlist_entry *e;
	bool found = false;

	pthread_mutex_lock(&held_lock);
	dlist_foreach(&held, e) {
		const struct shm_xp *o =
			container_of(e, struct shm_xp, name_entry);

		if (!strcmp(o->name, name)) {
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&held_lock);
	return found;
}
