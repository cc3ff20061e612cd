/*
 * Endpoint names: the addresses fi_getinfo and fi_av_insertsvc form from a
 * node and a service, the names weft draws at random, and reading an
 * address of a given length (shm.h, man/fi_shm.7).
 */
#include "shm.h"

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
	return shm_name_valid(name) ? 0 : -FI_EINVAL;
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
	if (n < 0 || (size_t)n >= sizeof(name) || !shm_name_valid(name))
		return -FI_EINVAL;
	if (asprintf(addr, SHM_PREFIX "%s", name) < 0)
		return -FI_ENOMEM;
	return 0;
}
