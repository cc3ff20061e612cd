/* SPDX-License-Identifier: BSD-2-Clause */
/* Address vectors (weft/util_av.h). */
#include "weft/util_av.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "weft/stubs.h"
#include "weft/util_coll.h"
#include "util_av_shm.h"

#define AV_NO_SLOT UINT32_MAX
#define AV_GEN_MAX UINT16_MAX
#define AV_INSERT_FLAGS (FI_MORE | FI_SYNC_ERR | FI_AV_USER_ID | FI_EVENT)

/* Insert serials (util_av_slot.serial), process-wide. */
static _Atomic uint64_t av_serial;

static const char av_in_prefix[] = "fi_sockaddr_in://";
static const char av_in6_prefix[] = "fi_sockaddr_in6://";
static const char av_raw_prefix[] = "fi_addr_raw://";

/* ---- default address handling ------------------------------------------ */

static int av_copy_normalize(const struct util_av *av, const void *in,
			     void *out)
{
	if (in != out)
		memmove(out, in, av->addrlen);
	return 0;
}

static size_t av_fixed_size(const struct util_av *av, const void *addr)
{
	return av->addrlen;
}

/*
 * Canonical socket address: family, port, address (and scope id for
 * IPv6); everything else zero, so that an address the kernel handed to the
 * receive path matches the one the application inserted.
 */
static int av_sockaddr_normalize(const struct util_av *av, const void *in,
				 void *out)
{
	const struct sockaddr *sa = in;
	struct sockaddr_in6 sin6;
	struct sockaddr_in sin;

	switch (sa->sa_family) {
	case AF_INET:
		if (av->ops.addr_format == FI_SOCKADDR_IN6)
			return -FI_EINVAL;
		memcpy(&sin, in, sizeof(sin));
		memset(out, 0, av->addrlen);
		((struct sockaddr_in *)out)->sin_family = AF_INET;
		((struct sockaddr_in *)out)->sin_port = sin.sin_port;
		((struct sockaddr_in *)out)->sin_addr = sin.sin_addr;
		return 0;
	case AF_INET6:
		if (av->ops.addr_format == FI_SOCKADDR_IN ||
		    av->addrlen < sizeof(sin6))
			return -FI_EINVAL;
		memcpy(&sin6, in, sizeof(sin6));
		memset(out, 0, av->addrlen);
		((struct sockaddr_in6 *)out)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)out)->sin6_port = sin6.sin6_port;
		((struct sockaddr_in6 *)out)->sin6_addr = sin6.sin6_addr;
		((struct sockaddr_in6 *)out)->sin6_scope_id =
			sin6.sin6_scope_id;
		return 0;
	default:
		return -FI_EINVAL;
	}
}

static size_t av_sockaddr_size(const struct util_av *av, const void *addr)
{
	return ((const struct sockaddr *)addr)->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) :
		       sizeof(struct sockaddr_in);
}

static int av_sockaddr_to_str(const struct util_av *av, const void *addr,
			      char *buf, size_t len)
{
	const struct sockaddr_in6 *sin6 = addr;
	const struct sockaddr_in *sin = addr;
	char host[INET6_ADDRSTRLEN];

	switch (sin->sin_family) {
	case AF_INET:
		if (!inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host)))
			return -FI_EINVAL;
		return snprintf(buf, len, "%s%s:%u", av_in_prefix, host,
				ntohs(sin->sin_port));
	case AF_INET6:
		if (!inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host)))
			return -FI_EINVAL;
		return snprintf(buf, len, "%s[%s]:%u", av_in6_prefix, host,
				ntohs(sin6->sin6_port));
	default:
		return -FI_EINVAL;
	}
}

/* "1.2.3.4:5000" or "[::1]:5000"; the port is required. */
static int av_parse_port(const char *s, in_port_t *port)
{
	unsigned long val;
	char *end;

	if (*s != ':' || !isdigit((unsigned char)s[1]))
		return -FI_EINVAL;
	errno = 0;
	val = strtoul(s + 1, &end, 10);
	if (errno || *end || val > 65535)
		return -FI_EINVAL;
	*port = htons((in_port_t)val);
	return 0;
}

static int av_sockaddr_from_str(const struct util_av *av, const char *str,
				void *addr)
{
	char host[INET6_ADDRSTRLEN];
	const char *end;
	size_t n;

	memset(addr, 0, av->addrlen);
	if (!strncmp(str, av_in_prefix, sizeof(av_in_prefix) - 1)) {
		struct sockaddr_in *sin = addr;

		if (av->ops.addr_format == FI_SOCKADDR_IN6)
			return -FI_EINVAL;
		str += sizeof(av_in_prefix) - 1;
		end = strrchr(str, ':');
		if (!end || (n = (size_t)(end - str)) >= sizeof(host))
			return -FI_EINVAL;
		memcpy(host, str, n);
		host[n] = '\0';
		sin->sin_family = AF_INET;
		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			return -FI_EINVAL;
		return av_parse_port(end, &sin->sin_port);
	}
	if (!strncmp(str, av_in6_prefix, sizeof(av_in6_prefix) - 1)) {
		struct sockaddr_in6 *sin6 = addr;

		if (av->ops.addr_format == FI_SOCKADDR_IN ||
		    av->addrlen < sizeof(*sin6))
			return -FI_EINVAL;
		str += sizeof(av_in6_prefix) - 1;
		end = strchr(str, ']');
		if (*str != '[' || !end ||
		    (n = (size_t)(end - str - 1)) >= sizeof(host))
			return -FI_EINVAL;
		memcpy(host, str + 1, n);
		host[n] = '\0';
		sin6->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -FI_EINVAL;
		return av_parse_port(end + 1, &sin6->sin6_port);
	}
	return -FI_EINVAL;
}

static int av_sockaddr_resolve(const struct util_av *av, const char *node,
			       const char *service, void *addr)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai, *res;
	int ret;

	switch (av->ops.addr_format) {
	case FI_SOCKADDR_IN:
		hints.ai_family = AF_INET;
		break;
	case FI_SOCKADDR_IN6:
		hints.ai_family = AF_INET6;
		break;
	default:
		hints.ai_family = AF_UNSPEC;
		break;
	}
	ret = getaddrinfo(node, service, &hints, &res);
	if (ret) {
		FI_INFO(av->prov, FI_LOG_AV, "cannot resolve %s:%s: %s\n",
			node ? node : "", service ? service : "",
			gai_strerror(ret));
		return ret == EAI_MEMORY ? -FI_ENOMEM : -FI_EINVAL;
	}
	ret = -FI_EINVAL;
	for (ai = res; ai; ai = ai->ai_next) {
		if ((size_t)ai->ai_addrlen > av->addrlen)
			continue;
		ret = av_sockaddr_normalize(av, ai->ai_addr, addr);
		if (!ret)
			break;
	}
	freeaddrinfo(res);
	return ret;
}

/* Default FI_ADDR_STR storage: the string itself, NUL-padded. */
static int av_str_normalize(const struct util_av *av, const void *in,
			    void *out)
{
	size_t n = strnlen(in, av->addrlen);

	if (n == av->addrlen || n == 0)
		return -FI_EINVAL;
	memmove(out, in, n);
	memset((char *)out + n, 0, av->addrlen - n);
	return 0;
}

static int av_str_to_str(const struct util_av *av, const void *addr,
			 char *buf, size_t len)
{
	return snprintf(buf, len, "%.*s", (int)av->addrlen,
			(const char *)addr);
}

static int av_str_from_str(const struct util_av *av, const char *str,
			   void *addr)
{
	return av_str_normalize(av, str, addr);
}

static int av_str_resolve(const struct util_av *av, const char *node,
			  const char *service, void *addr)
{
	if (!node || service)
		return -FI_EINVAL;
	return av_str_normalize(av, node, addr);
}

static int av_raw_to_str(const struct util_av *av, const void *addr,
			 char *buf, size_t len)
{
	const uint8_t *p = addr;
	size_t need = sizeof(av_raw_prefix) - 1 + 2 * av->addrlen;
	size_t i, pos;

	pos = (size_t)snprintf(buf, len, "%s", av_raw_prefix);
	for (i = 0; i < av->addrlen; i++, pos += 2) {
		if (pos < len)
			snprintf(buf + pos, len - pos, "%02x", p[i]);
	}
	return (int)need;
}

static int av_no_resolve(const struct util_av *av, const char *node,
			 const char *service, void *addr)
{
	return -FI_ENOSYS;
}

static int av_no_from_str(const struct util_av *av, const char *str,
			  void *addr)
{
	return -FI_ENOSYS;
}

const struct util_av_ops util_av_sockaddr_in_ops = {
	.addr_format = FI_SOCKADDR_IN,
	.addrlen = sizeof(struct sockaddr_in),
};

const struct util_av_ops util_av_sockaddr_in6_ops = {
	.addr_format = FI_SOCKADDR_IN6,
	.addrlen = sizeof(struct sockaddr_in6),
};

const struct util_av_ops util_av_sockaddr_ops = {
	.addr_format = FI_SOCKADDR,
	.addrlen = sizeof(struct sockaddr_in6),
};

const struct util_av_ops util_av_str_ops = {
	.addr_format = FI_ADDR_STR,
	.addrlen = UTIL_AV_STR_ADDRLEN,
};

/* Fill the callbacks a provider left NULL with the format's defaults. */
static int av_ops_resolve(struct util_av_ops *ops,
			  const struct fi_provider *prov)
{
	bool sock = false, str = false;

	switch (ops->addr_format) {
	case FI_SOCKADDR_IN:
		sock = true;
		if (!ops->addrlen)
			ops->addrlen = sizeof(struct sockaddr_in);
		break;
	case FI_SOCKADDR_IN6:
	case FI_SOCKADDR:
		sock = true;
		if (!ops->addrlen)
			ops->addrlen = sizeof(struct sockaddr_in6);
		break;
	case FI_ADDR_STR:
		str = true;
		if (!ops->addrlen)
			ops->addrlen = UTIL_AV_STR_ADDRLEN;
		break;
	default:
		break;
	}
	if (!ops->addrlen || ops->addrlen > UTIL_AV_MAX_ADDRLEN ||
	    (sock && ops->addrlen < sizeof(struct sockaddr_in))) {
		FI_WARN(prov, FI_LOG_AV, "bad address length %zu\n",
			ops->addrlen);
		return -FI_EINVAL;
	}
	/*
	 * FI_ADDR_STR with a binary stored form: the provider parses and
	 * prints; its normalize (if any) works on the binary form.
	 */
	if (str && (!!ops->from_str != !!ops->to_str)) {
		FI_WARN(prov, FI_LOG_AV, "FI_ADDR_STR needs both from_str "
			"and to_str, or neither\n");
		return -FI_EINVAL;
	}
	if (!ops->normalize)
		ops->normalize = sock ? av_sockaddr_normalize :
			      (str && !ops->from_str) ? av_str_normalize :
							 av_copy_normalize;
	if (!ops->addr_size)
		ops->addr_size = sock ? av_sockaddr_size : av_fixed_size;
	if (!ops->to_str)
		ops->to_str = sock ? av_sockaddr_to_str :
			      str ? av_str_to_str :
				    av_raw_to_str;
	if (!ops->from_str)
		ops->from_str = sock ? av_sockaddr_from_str :
				str ? av_str_from_str :
				      av_no_from_str;
	if (!ops->resolve)
		ops->resolve = sock ? av_sockaddr_resolve :
			       str ? av_str_resolve :
				     av_no_resolve;
	return 0;
}

/* ---- slot storage -------------------------------------------------------- */

static inline fi_addr_t av_fi_addr(const struct util_av *av, uint32_t idx,
				   const struct util_av_slot *slot)
{
	if (av->type == FI_AV_MAP)
		return ((fi_addr_t)slot->gen << 32) | idx;
	return idx;
}

static inline void *av_slot_addr(const struct util_av *av,
				 struct util_av_slot *slot)
{
	return (char *)slot + av->addr_off;
}

static inline void *av_slot_priv(const struct util_av *av,
				 struct util_av_slot *slot)
{
	return (char *)slot + av->priv_off;
}

/* Make sure the chunk holding slot idx exists.  Lock held. */
static int av_chunk_ensure(struct util_av *av, uint32_t idx)
{
	uint64_t v = (uint64_t)idx + (1u << UTIL_AV_CHUNK0_SHIFT);
	unsigned int k = 63 - __builtin_clzll(v) - UTIL_AV_CHUNK0_SHIFT;
	size_t n = (size_t)1 << (k + UTIL_AV_CHUNK0_SHIFT);
	char *chunk;

	if (av->chunk[k])
		return 0;
	chunk = calloc(n, av->slot_size);
	if (!chunk)
		return -FI_ENOMEM;
	/* Readers on other threads only see slots they were told about
	 * after this store; the release orders the zeroed contents. */
	__atomic_store_n(&av->chunk[k], chunk, __ATOMIC_RELEASE);
	return 0;
}

static int av_free_map_grow(struct util_av *av, uint32_t idx)
{
	size_t words = av->free_words ? av->free_words * 2 : 16;
	uint64_t *map;

	while (words * 64 <= idx)
		words *= 2;
	map = realloc(av->free_map, words * sizeof(*map));
	if (!map)
		return -FI_ENOMEM;
	memset(map + av->free_words, 0,
	       (words - av->free_words) * sizeof(*map));
	av->free_map = map;
	av->free_words = words;
	return 0;
}

/* Lowest free slot below next_idx, or AV_NO_SLOT.  Lock held. */
static uint32_t av_free_lowest(struct util_av *av)
{
	size_t w;

	if (!av->free_count)
		return AV_NO_SLOT;
	for (w = av->free_hint; w < av->free_words; w++) {
		if (av->free_map[w]) {
			av->free_hint = w;
			return (uint32_t)(w * 64 +
					  __builtin_ctzll(av->free_map[w]));
		}
	}
	return AV_NO_SLOT;
}

static inline void av_free_set(struct util_av *av, uint32_t idx)
{
	av->free_map[idx / 64] |= 1ULL << (idx % 64);
	av->free_count++;
	if (idx / 64 < av->free_hint)
		av->free_hint = idx / 64;
}

static inline void av_free_clear(struct util_av *av, uint32_t idx)
{
	av->free_map[idx / 64] &= ~(1ULL << (idx % 64));
	av->free_count--;
}

/* ---- reverse map --------------------------------------------------------- */

static uint64_t av_hash(const void *addr, size_t len)
{
	const uint8_t *p = addr;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
	uint64_t w;

	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	for (; len; len--, p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

static inline uint32_t *av_bucket_of(struct util_av *av, const void *addr)
{
	return &av->bucket[av_hash(addr, av->addrlen) & av->bucket_mask];
}

static void av_hash_add(struct util_av *av, uint32_t idx,
			struct util_av_slot *slot)
{
	uint32_t *head = av_bucket_of(av, av_slot_addr(av, slot));

	slot->hash_next = *head;
	*head = idx;
}

static void av_hash_del(struct util_av *av, uint32_t idx,
			struct util_av_slot *slot)
{
	uint32_t *link = av_bucket_of(av, av_slot_addr(av, slot));

	while (*link != AV_NO_SLOT) {
		if (*link == idx) {
			*link = slot->hash_next;
			slot->hash_next = AV_NO_SLOT;
			return;
		}
		link = &util_av_slot_at(av, *link)->hash_next;
	}
}

static int av_hash_resize(struct util_av *av, size_t nbuckets)
{
	struct util_av_slot *slot;
	uint32_t *bucket;
	uint32_t i;

	bucket = malloc(nbuckets * sizeof(*bucket));
	if (!bucket)
		return -FI_ENOMEM;
	memset(bucket, 0xff, nbuckets * sizeof(*bucket));
	free(av->bucket);
	av->bucket = bucket;
	av->bucket_mask = (uint32_t)(nbuckets - 1);
	/* Rechain every live slot under the new mask. */
	for (i = 0; i < av->next_idx; i++) {
		slot = util_av_slot_at(av, i);
		if (slot->used)
			av_hash_add(av, i, slot);
	}
	return 0;
}

static fi_addr_t av_hash_find(struct util_av *av, const void *addr)
{
	struct util_av_slot *slot;
	uint32_t idx = *av_bucket_of(av, addr);

	while (idx != AV_NO_SLOT) {
		slot = util_av_slot_at(av, idx);
		if (!memcmp(av_slot_addr(av, slot), addr, av->addrlen))
			return av_fi_addr(av, idx, slot);
		idx = slot->hash_next;
	}
	return FI_ADDR_NOTAVAIL;
}

/* ---- insert and remove, one address -------------------------------------- */

/* Fill slot idx (a free one when reused, else one never used) with a
 * stored address.  Lock held. */
static int av_insert_at_locked(struct util_av *av, uint32_t idx, bool reused,
			       const void *addr, const fi_addr_t *user_id,
			       fi_addr_t *fi_addr)
{
	struct util_av_slot *slot;
	int ret;

	if (!reused) {
		ret = av_chunk_ensure(av, idx);
		if (ret)
			return ret;
		if (idx / 64 >= av->free_words) {
			ret = av_free_map_grow(av, idx);
			if (ret)
				return ret;
		}
	}
	if (av->count + 1 > av->bucket_mask + 1) {
		ret = av_hash_resize(av, ((size_t)av->bucket_mask + 1) * 2);
		if (ret)
			return ret;
	}

	slot = util_av_slot_at(av, idx);
	memcpy(av_slot_addr(av, slot), addr, av->addrlen);
	memset(av_slot_priv(av, slot), 0, av->ops.priv_size);
	slot->has_user_id = user_id != NULL;
	slot->refs = 1;
	slot->user_id = user_id ? *user_id : 0;
	slot->serial = atomic_fetch_add_explicit(&av_serial, 1,
						 memory_order_relaxed) + 1;
	if (av->type == FI_AV_MAP)
		slot->gen = slot->gen == AV_GEN_MAX ? 1 : slot->gen + 1;
	if (av->ops.entry_init) {
		ret = av->ops.entry_init(av, av_fi_addr(av, idx, slot),
					 av_slot_addr(av, slot),
					 av_slot_priv(av, slot));
		if (ret)
			return ret;
	}

	if (reused)
		av_free_clear(av, idx);
	else if (idx >= av->next_idx) /* a named AV's may leave a gap */
		av->next_idx = idx + 1;
	av_hash_add(av, idx, slot);
	__atomic_store_n(&slot->used, 1, __ATOMIC_RELEASE);
	av->count++;
	atomic_fetch_add_explicit(&av->inserts, 1, memory_order_release);
	*fi_addr = av_fi_addr(av, idx, slot);
	return 0;
}

/*
 * A named AV: every entry of the object this process has not yet (the
 * unpublished ones are looked at again next time).  Lock held.
 */
static void av_shm_sync_locked(struct util_av *av)
{
	struct util_av_shm *s = av->shm;
	uint32_t n = util_av_shm_count(av), i, hole = n;
	struct util_av_slot *slot;
	const void *addr;
	fi_addr_t fa;
	int ret;

	for (i = s->synced; i < n; i++) {
		uint32_t st = util_av_shm_state(av, i, &addr);

		if (st == UTIL_AV_SHM_FREE && hole == n)
			hole = i; /* claimed, not written yet */
		if (st != UTIL_AV_SHM_USED)
			continue;
		slot = util_av_slot_at(av, i);
		if (slot && (slot->used || slot->serial))
			continue; /* here already, or removed here */
		ret = av_insert_at_locked(av, i, false, addr, NULL, &fa);
		if (ret)
			FI_WARN(av->prov, FI_LOG_AV,
				"shared AV entry %u: %s\n", i,
				fi_strerror(-ret));
	}
	s->synced = hole;
}

struct util_av_slot *util_av_shm_slot(const struct util_av *cav,
				      fi_addr_t fi_addr)
{
	struct util_av *av = (struct util_av *)cav;
	struct util_av_slot *slot;

	weft_lock(&av->lock);
	av_shm_sync_locked(av);
	slot = util_av_slot_get_local(av, fi_addr);
	weft_unlock(&av->lock);
	return slot;
}

/*
 * Add one stored-form (already normalized) address.  Lock held.  Returns
 * 0 and *fi_addr, or -FI_ENOSPC / -FI_ENOMEM / -FI_EACCES (a named AV
 * opened FI_READ) / what entry_init returned.
 */
static int av_insert_locked(struct util_av *av, const void *addr,
			    const fi_addr_t *user_id, fi_addr_t *fi_addr)
{
	struct util_av_slot *slot;
	fi_addr_t have;
	uint32_t idx;
	int ret;

	if (weft_unlikely(av->shm != NULL)) {
		if (av->shm->readonly) {
			FI_WARN(av->prov, FI_LOG_AV,
				"insert into a shared AV opened with "
				"FI_READ: refused\n");
			return -FI_EACCES;
		}
		av_shm_sync_locked(av);
	}
	/* FI_AV_MAP: an address has one fi_addr_t, however often inserted. */
	if (av->type == FI_AV_MAP && !user_id) {
		have = av_hash_find(av, addr);
		slot = have == FI_ADDR_NOTAVAIL ?
			       NULL :
			       util_av_slot_get_local(av, have);
		if (slot && !slot->has_user_id && slot->refs < UINT32_MAX) {
			slot->refs++;
			*fi_addr = have;
			return 0;
		}
	}
	if (weft_unlikely(av->shm != NULL)) {
		/* The object's next entry, at the same index everywhere;
		 * never one freed. */
		ret = util_av_shm_claim(av, addr, &idx);
		if (ret)
			return ret;
		ret = av_insert_at_locked(av, idx, false, addr, user_id,
					  fi_addr);
		if (ret)
			util_av_shm_kill(av, idx);
		return ret;
	}
	idx = av_free_lowest(av);
	if (idx != AV_NO_SLOT)
		return av_insert_at_locked(av, idx, true, addr, user_id,
					   fi_addr);
	if (av->next_idx >= UTIL_AV_MAX_ENTRIES)
		return -FI_ENOSPC;
	return av_insert_at_locked(av, av->next_idx, false, addr, user_id,
				   fi_addr);
}

static void av_remove_locked(struct util_av *av, uint32_t idx,
			     struct util_av_slot *slot)
{
	if (av->ops.entry_fini)
		av->ops.entry_fini(av, av_fi_addr(av, idx, slot),
				   av_slot_addr(av, slot),
				   av_slot_priv(av, slot));
	av_hash_del(av, idx, slot);
	__atomic_store_n(&slot->used, 0, __ATOMIC_RELEASE);
	av_free_set(av, idx);
	av->count--;
}

int util_av_insert_addr(struct util_av *av, const void *addr,
			fi_addr_t *fi_addr)
{
	uint8_t buf[UTIL_AV_MAX_ADDRLEN];
	int ret;

	ret = av->ops.normalize(av, addr, buf);
	if (ret)
		return ret;
	weft_lock(&av->lock);
	ret = av_insert_locked(av, buf, NULL, fi_addr);
	weft_unlock(&av->lock);
	return ret;
}

fi_addr_t util_av_lookup_addr(struct util_av *av, const void *addr)
{
	uint8_t buf[UTIL_AV_MAX_ADDRLEN];
	fi_addr_t fi_addr;

	if (av->ops.normalize(av, addr, buf))
		return FI_ADDR_NOTAVAIL;
	weft_lock(&av->lock);
	fi_addr = av_hash_find(av, buf);
	/* A named AV: a sender another process inserted since. */
	if (fi_addr == FI_ADDR_NOTAVAIL && av->shm) {
		av_shm_sync_locked(av);
		fi_addr = av_hash_find(av, buf);
	}
	weft_unlock(&av->lock);
	return fi_addr;
}

/* ---- insert calls ---------------------------------------------------------- */

/*
 * One insert call in progress: where results go and how they are
 * reported (fi_addr / FI_SYNC_ERR array for synchronous AVs, EQ events
 * for asynchronous ones).
 */
struct av_insert_call {
	struct util_av *av;
	fi_addr_t *fi_addr;
	int *sync_err;
	void *context;
	uint64_t flags;
	bool async;
	size_t done;
};

static int av_insert_begin(struct util_av *av, struct av_insert_call *call,
			   fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	if (flags & ~AV_INSERT_FLAGS) {
		FI_WARN(av->prov, FI_LOG_AV, "unknown insert flags %#llx\n",
			(unsigned long long)(flags & ~AV_INSERT_FLAGS));
		return -FI_EBADFLAGS;
	}
	if ((flags & FI_AV_USER_ID) && !fi_addr) {
		FI_WARN(av->prov, FI_LOG_AV,
			"FI_AV_USER_ID needs the fi_addr array\n");
		return -FI_EINVAL;
	}
	memset(call, 0, sizeof(*call));
	call->av = av;
	call->fi_addr = fi_addr;
	call->context = context;
	call->flags = flags;
	call->async = av->eq != NULL;
	if (!call->async && ((av->flags | flags) & FI_EVENT)) {
		FI_WARN(av->prov, FI_LOG_AV,
			"FI_EVENT insert without a bound EQ\n");
		return -FI_ENOEQ;
	}
	if (flags & FI_SYNC_ERR) {
		if (call->async || !context) {
			FI_WARN(av->prov, FI_LOG_AV,
				"FI_SYNC_ERR needs a synchronous AV and an "
				"int array as context\n");
			return -FI_EINVAL;
		}
		call->sync_err = context;
	}
	return 0;
}

static void av_write_event(struct av_insert_call *call, uint32_t index,
			   int err)
{
	struct util_av *av = call->av;
	struct fi_eq_err_entry err_entry;
	struct fi_eq_entry entry;
	ssize_t ret;

	if (err) {
		memset(&err_entry, 0, sizeof(err_entry));
		err_entry.fid = &av->av_fid.fid;
		err_entry.context = call->context;
		err_entry.data = index;
		err_entry.err = -err;
		err_entry.prov_errno = -err;
		ret = fi_eq_write(av->eq, FI_AV_COMPLETE, &err_entry,
				  sizeof(err_entry), UTIL_EQ_FLAG_ERROR);
	} else {
		memset(&entry, 0, sizeof(entry));
		entry.fid = &av->av_fid.fid;
		entry.context = call->context;
		entry.data = call->done;
		ret = fi_eq_write(av->eq, FI_AV_COMPLETE, &entry,
				  sizeof(entry), 0);
	}
	if (ret < 0)
		FI_WARN(av->prov, FI_LOG_AV,
			"cannot write FI_AV_COMPLETE %s to the EQ: %s\n",
			err ? "error" : "event", fi_strerror((int)-ret));
}

/* Record the outcome of address i of the call. */
static void av_insert_result(struct av_insert_call *call, size_t i, int ret,
			     fi_addr_t fi_addr)
{
	if (call->fi_addr)
		call->fi_addr[i] = ret ? FI_ADDR_NOTAVAIL : fi_addr;
	/* fi_av(3): "a fabric errno code", positive as in error entries
	 * (and as the 1.17 library writes it). */
	if (call->sync_err)
		call->sync_err[i] = -ret;
	if (!ret)
		call->done++;
	else if (call->async)
		av_write_event(call, (uint32_t)i, ret);
	else
		FI_INFO(call->av->prov, FI_LOG_AV, "address %zu: %s\n", i,
			fi_strerror(-ret));
}

/* Insert address i, given in stored form (not yet normalized). */
static void av_insert_stored(struct av_insert_call *call, size_t i,
			     const void *stored, int ret)
{
	struct util_av *av = call->av;
	uint8_t buf[UTIL_AV_MAX_ADDRLEN];
	fi_addr_t fi_addr = FI_ADDR_NOTAVAIL;
	const fi_addr_t *user_id = NULL;

	if (!ret)
		ret = av->ops.normalize(av, stored, buf);
	if (!ret) {
		if (call->flags & FI_AV_USER_ID)
			user_id = &call->fi_addr[i];
		weft_lock(&av->lock);
		ret = av_insert_locked(av, buf, user_id, &fi_addr);
		weft_unlock(&av->lock);
	}
	av_insert_result(call, i, ret, fi_addr);
}

/* Report the end of an insert call: its return value. */
static int av_insert_end(struct av_insert_call *call)
{
	if (call->async) {
		av_write_event(call, 0, 0);
		return 0;
	}
	return (int)call->done;
}

/*
 * Copy len bytes at p into out without faulting.  Returns 1 when copied, 0
 * when some of them are no readable memory, -1 when the system refuses the
 * check itself (process_vm_readv denied by a seccomp filter).
 */
static int mem_copy_checked(const void *p, void *out, size_t len)
{
	struct iovec local = { out, len };
	struct iovec remote = { (void *)p, len };

	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

	if (n == (ssize_t)len)
		return 1;
	/* A partial copy stops where the mapping ends. */
	return n >= 0 || errno == EFAULT ? 0 : -1;
}

/*
 * FI_ADDR_STR addresses reach fi_av_insert in two layouts.  fi_av(3) says
 * an array of string pointers (char **); clients written against
 * upstream's providers (fabtests, MPI libraries) pass the buffer that
 * fi_getname filled, the strings themselves one after another.  Telling
 * them apart never reads a short string past its end, and never follows a
 * pointer that is not one:
 *  - a buffer beginning with the provider's address prefix is packed: the
 *    compare stops at the first difference, and the bytes of a pointer
 *    never spell "fi_shm:/";
 *  - so is one with no NUL among its first 7 bytes: a user-space pointer
 *    (below 2^48 on x86-64 and aarch64) has zero bytes 6 and 7.  Such
 *    text is no address of this provider, and its entries fail;
 *  - otherwise (short text such as "abc", or a pointer) the first 8 bytes
 *    are read as a pointer through the kernel, which neither faults nor
 *    reads past what is mapped, and so is the first byte it points to: a
 *    buffer whose "pointer" leads nowhere is packed text, and its entries
 *    fail.  Only where the system refuses that check is the buffer taken
 *    as char ** unchecked.
 */
static bool av_str_packed(const struct util_av *av, const void *addr)
{
	const char *p = addr, *prefix = av->ops.str_prefix;
	const char *cand;
	size_t i;
	char c;
	int ret;

	if (prefix && !strncmp(p, prefix, strlen(prefix)))
		return true;
	if (sizeof(void *) < 8)
		return false;
	for (i = 0; i < 7; i++)
		if (!p[i])
			break;
	if (i == 7)
		return true;
	ret = mem_copy_checked(addr, &cand, sizeof(cand));
	if (ret < 0)
		return false;
	if (!ret)
		return true;
	if (!cand)
		return false; /* a NULL entry: it fails in either reading */
	return mem_copy_checked(cand, &c, 1) == 0;
}

static int util_av_insert(struct fid_av *av_fid, const void *addr,
			  size_t count, fi_addr_t *fi_addr, uint64_t flags,
			  void *context)
{
	struct util_av *av = util_av_from_fid(av_fid);
	uint8_t buf[UTIL_AV_MAX_ADDRLEN];
	struct av_insert_call call;
	const char *str, *next = addr;
	bool packed;
	size_t i;
	int ret;

	ret = av_insert_begin(av, &call, fi_addr, flags, context);
	if (ret)
		return ret;
	if (count && !addr)
		return -FI_EINVAL;
	if (count > INT_MAX)
		return -FI_EINVAL;

	packed = av->ops.addr_format == FI_ADDR_STR && count &&
		 av_str_packed(av, addr);
	for (i = 0; i < count; i++) {
		if (av->ops.addr_format != FI_ADDR_STR) {
			av_insert_stored(&call, i,
					 (const char *)addr + i * av->addrlen,
					 0);
			continue;
		}
		if (packed) {
			str = next;
			next += strlen(next) + 1;
		} else {
			str = ((const char *const *)addr)[i];
		}
		ret = str ? av->ops.from_str(av, str, buf) : -FI_EINVAL;
		av_insert_stored(&call, i, buf, ret);
	}
	return av_insert_end(&call);
}

/* Stored form of node/service: an FI_ADDR_STR node, or name resolution. */
static int av_resolve(struct util_av *av, const char *node,
		      const char *service, void *addr)
{
	if (node && !service && strstr(node, "://"))
		return av->ops.from_str(av, node, addr);
	return av->ops.resolve(av, node, service, addr);
}

static int util_av_insertsvc(struct fid_av *av_fid, const char *node,
			     const char *service, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	struct util_av *av = util_av_from_fid(av_fid);
	uint8_t buf[UTIL_AV_MAX_ADDRLEN];
	struct av_insert_call call;
	int ret;

	ret = av_insert_begin(av, &call, fi_addr, flags, context);
	if (ret)
		return ret;
	if (!node && !service)
		return -FI_EINVAL;
	ret = av_resolve(av, node, service, buf);
	av_insert_stored(&call, 0, buf, ret);
	return av_insert_end(&call);
}

/*
 * A numeric range of node names: IPv4 and IPv6 literals count in their
 * address space, other names in the decimal digits they end with
 * ("host09" + 1 = "host10").  The nth one goes to out (NI_MAXHOST bytes).
 */
struct av_node_range {
	int kind; /* AF_INET, AF_INET6, or 0 for a name */
	union {
		struct in_addr in;
		struct in6_addr in6;
	};
	size_t prefix_len;
	int width;
	unsigned long long first;
	const char *node;
};

static int av_node_range_init(struct av_node_range *r, const char *node,
			      size_t nodecnt)
{
	size_t len = strlen(node), p = len;
	char *end;

	memset(r, 0, sizeof(*r));
	r->node = node;
	if (inet_pton(AF_INET, node, &r->in) == 1) {
		r->kind = AF_INET;
		if (nodecnt - 1 > UINT32_MAX - ntohl(r->in.s_addr))
			return -FI_EINVAL;
		return 0;
	}
	if (inet_pton(AF_INET6, node, &r->in6) == 1) {
		r->kind = AF_INET6;
		return 0;
	}
	while (p && isdigit((unsigned char)node[p - 1]))
		p--;
	if (p == len) {
		/* No numeric suffix: only a single node makes sense. */
		return nodecnt > 1 ? -FI_EINVAL : 0;
	}
	if (len - p >= NI_MAXHOST)
		return -FI_EINVAL;
	errno = 0;
	r->first = strtoull(node + p, &end, 10);
	if (errno || nodecnt - 1 > ULLONG_MAX - r->first)
		return -FI_EINVAL;
	r->prefix_len = p;
	r->width = (int)(len - p);
	return 0;
}

static int av_node_range_at(const struct av_node_range *r, size_t n,
			    char *out)
{
	struct in6_addr in6;
	struct in_addr in;
	uint64_t carry = n;
	int i;

	switch (r->kind) {
	case AF_INET:
		in.s_addr = htonl(ntohl(r->in.s_addr) + (uint32_t)n);
		return inet_ntop(AF_INET, &in, out, NI_MAXHOST) ? 0 :
								   -FI_EINVAL;
	case AF_INET6:
		in6 = r->in6;
		for (i = 15; i >= 0 && carry; i--) {
			carry += in6.s6_addr[i];
			in6.s6_addr[i] = (uint8_t)carry;
			carry >>= 8;
		}
		if (carry)
			return -FI_EINVAL;
		return inet_ntop(AF_INET6, &in6, out, NI_MAXHOST) ? 0 :
								     -FI_EINVAL;
	default:
		if (!r->width) {
			if (strlen(r->node) >= NI_MAXHOST)
				return -FI_EINVAL;
			strcpy(out, r->node);
			return 0;
		}
		if (snprintf(out, NI_MAXHOST, "%.*s%0*llu",
			     (int)r->prefix_len, r->node, r->width,
			     r->first + n) >= NI_MAXHOST)
			return -FI_EINVAL;
		return 0;
	}
}

static int util_av_insertsym(struct fid_av *av_fid, const char *node,
			     size_t nodecnt, const char *service,
			     size_t svccnt, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	struct util_av *av = util_av_from_fid(av_fid);
	uint8_t buf[UTIL_AV_MAX_ADDRLEN];
	char host[NI_MAXHOST], svc[16];
	struct av_insert_call call;
	struct av_node_range range;
	unsigned long port = 0;
	size_t n, s, i;
	char *end;
	int ret;

	ret = av_insert_begin(av, &call, fi_addr, flags, context);
	if (ret)
		return ret;
	if (!node || !nodecnt || !svccnt ||
	    nodecnt > INT_MAX / svccnt) {
		FI_WARN(av->prov, FI_LOG_AV,
			"insertsym needs a node and counts >= 1\n");
		return -FI_EINVAL;
	}
	if (service) {
		errno = 0;
		port = strtoul(service, &end, 10);
		if (errno || *end || end == service || port > 65535 ||
		    svccnt - 1 > 65535 - port) {
			FI_WARN(av->prov, FI_LOG_AV,
				"insertsym: service %s + %zu is not a port\n",
				service, svccnt - 1);
			return -FI_EINVAL;
		}
	} else if (svccnt > 1) {
		return -FI_EINVAL;
	}
	ret = av_node_range_init(&range, node, nodecnt);
	if (ret) {
		FI_WARN(av->prov, FI_LOG_AV,
			"insertsym: cannot count %zu nodes from %s\n", nodecnt,
			node);
		return ret;
	}

	for (n = 0, i = 0; n < nodecnt; n++) {
		ret = av_node_range_at(&range, n, host);
		for (s = 0; s < svccnt; s++, i++) {
			if (!ret && service) {
				snprintf(svc, sizeof(svc), "%lu", port + s);
				av_insert_stored(&call, i, buf,
						 av->ops.resolve(av, host, svc,
								 buf));
			} else if (!ret) {
				av_insert_stored(&call, i, buf,
						 av_resolve(av, host, NULL,
							    buf));
			} else {
				av_insert_stored(&call, i, buf, ret);
			}
		}
	}
	return av_insert_end(&call);
}

/* ---- remove, lookup, straddr ---------------------------------------------- */

static int util_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
			  size_t count, uint64_t flags)
{
	struct util_av *av = util_av_from_fid(av_fid);
	struct util_av_slot *slot;
	size_t i;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;

	if (av->shm && av->shm->readonly) {
		FI_WARN(av->prov, FI_LOG_AV,
			"remove from a shared AV opened with FI_READ: "
			"refused\n");
		return -FI_EACCES;
	}
	weft_lock(&av->lock);
	if (av->shm)
		av_shm_sync_locked(av);
	/* All or nothing: a bad fi_addr_t removes none of them. */
	for (i = 0; i < count; i++) {
		if (!util_av_slot_get_local(av, fi_addr[i])) {
			FI_WARN(av->prov, FI_LOG_AV,
				"remove: %#llx is not in the AV\n",
				(unsigned long long)fi_addr[i]);
			ret = -FI_EINVAL;
			goto unlock;
		}
	}
	for (i = 0; i < count; i++) {
		/* NULL again if the array names an address twice. */
		slot = util_av_slot_get_local(av, fi_addr[i]);
		if (slot && slot->refs > 1) {
			slot->refs--; /* inserted again: the last remove goes */
		} else if (slot) {
			av_remove_locked(av, util_av_index(av, fi_addr[i]),
					 slot);
			/* Gone for every process that looks from now on;
			 * its index is never given again. */
			if (av->shm)
				util_av_shm_kill(av,
						 util_av_index(av, fi_addr[i]));
		}
	}
unlock:
	weft_unlock(&av->lock);
	return ret;
}

/*
 * Copy at most *len bytes of the string form of a stored address into
 * buf, NUL-terminated when len > 0; *len becomes the size the whole string
 * needs (with its NUL).
 */
static int av_format(struct util_av *av, const void *stored, char *buf,
		     size_t *len)
{
	char tmp[UTIL_AV_MAX_ADDRLEN * 2 + 64];
	int n;

	n = av->ops.to_str(av, stored, tmp, sizeof(tmp));
	if (n < 0)
		return n;
	if ((size_t)n >= sizeof(tmp))
		return -FI_EINVAL;
	if (*len) {
		memcpy(buf, tmp, WEFT_MIN((size_t)n + 1, *len));
		buf[WEFT_MIN((size_t)n, *len - 1)] = '\0';
	}
	*len = (size_t)n + 1;
	return 0;
}

static int util_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr,
			  void *addr, size_t *addrlen)
{
	struct util_av *av = util_av_from_fid(av_fid);
	uint8_t buf[UTIL_AV_MAX_ADDRLEN];
	struct util_av_slot *slot;
	size_t size;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	weft_lock(&av->lock);
	if (av->shm)
		av_shm_sync_locked(av);
	slot = util_av_slot_get_local(av, fi_addr);
	if (slot)
		memcpy(buf, av_slot_addr(av, slot), av->addrlen);
	weft_unlock(&av->lock);
	if (!slot)
		return -FI_EINVAL;

	if (av->ops.addr_format == FI_ADDR_STR)
		return av_format(av, buf, addr, addrlen);
	size = av->ops.addr_size(av, buf);
	if (*addrlen) /* addr may be NULL when asking for the size only */
		memcpy(addr, buf, WEFT_MIN(size, *addrlen));
	*addrlen = size;
	return 0;
}

static const char *util_av_straddr(struct fid_av *av_fid, const void *addr,
				   char *buf, size_t *len)
{
	struct util_av *av = util_av_from_fid(av_fid);
	uint8_t stored[UTIL_AV_MAX_ADDRLEN];
	const void *src = addr;
	size_t n;

	if (!addr || !len || (*len && !buf))
		return NULL;
	if (av->ops.addr_format == FI_ADDR_STR) {
		/* The address is the string itself. */
		n = strlen(addr);
		if (*len) {
			memcpy(buf, addr, WEFT_MIN(n + 1, *len));
			buf[WEFT_MIN(n, *len - 1)] = '\0';
		}
		*len = n + 1;
		return buf;
	}
	if (!av->ops.normalize(av, addr, stored))
		src = stored;
	else
		FI_INFO(av->prov, FI_LOG_AV, "straddr of a malformed address\n");
	if (av_format(av, src, buf, len)) {
		/* Not printable in its format: print its bytes. */
		n = (size_t)av_raw_to_str(av, addr, buf, *len);
		*len = n + 1;
	}
	return buf;
}

/* ---- the AV object ---------------------------------------------------------- */

static int util_av_close(struct fid *fid)
{
	struct util_av *av = container_of(fid, struct util_av, av_fid.fid);
	struct util_av_slot *slot;
	uint32_t i;

	if (atomic_load_explicit(&av->ref, memory_order_acquire)) {
		FI_WARN(av->prov, FI_LOG_AV, "AV still bound to endpoints\n");
		return -FI_EBUSY;
	}
	for (i = 0; i < av->next_idx; i++) {
		slot = util_av_slot_at(av, i);
		/* (A named AV's slots below next_idx may have no chunk.) */
		if (slot && slot->used && av->ops.entry_fini)
			av->ops.entry_fini(av, av_fi_addr(av, i, slot),
					   av_slot_addr(av, slot),
					   av_slot_priv(av, slot));
	}
	for (i = 0; i < UTIL_AV_CHUNKS; i++)
		free(av->chunk[i]);
	free(av->bucket);
	free(av->free_map);
	util_av_shm_close(av);
	weft_lock_destroy(&av->lock);
	if (av->eq)
		util_eq_put(util_eq_of(av->eq));
	util_domain_put(av->domain);
	free(av);
	return 0;
}

static int util_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct util_av *av = container_of(fid, struct util_av, av_fid.fid);

	if (flags)
		return -FI_EBADFLAGS;
	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (av->eq)
		return -FI_EALREADY;
	av->eq = container_of(bfid, struct fid_eq, fid);
	/* fi_close of the EQ is -FI_EBUSY while the AV may write to it. */
	util_eq_get(util_eq_of(av->eq));
	return 0;
}

static const struct fi_ops util_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = util_av_close,
	.bind = util_av_bind,
	.control = weft_no_control,
	.ops_open = weft_no_ops_open,
	.tostr = weft_no_tostr,
	.ops_set = weft_no_ops_set,
};

static const struct fi_ops_av util_av_ops_av = {
	.size = WEFT_OPS_AV_SIZE,
	.insert = util_av_insert,
	.insertsvc = util_av_insertsvc,
	.insertsym = util_av_insertsym,
	.remove = util_av_remove,
	.lookup = util_av_lookup,
	.straddr = util_av_straddr,
	.av_set = util_av_set_open,
};

static int av_check_attr(struct util_domain *domain,
			 const struct fi_av_attr *attr, enum fi_av_type *type,
			 bool shareable)
{
	const struct fi_provider *prov = domain->prov;

	*type = attr->type;
	if (*type == FI_AV_UNSPEC)
		*type = domain->av_type != FI_AV_UNSPEC ? domain->av_type :
							  FI_AV_TABLE;
	if (*type != FI_AV_MAP && *type != FI_AV_TABLE) {
		FI_WARN(prov, FI_LOG_AV, "unknown AV type %d\n", attr->type);
		return -FI_EINVAL;
	}
	if (domain->av_type != FI_AV_UNSPEC && *type != domain->av_type) {
		FI_WARN(prov, FI_LOG_AV, "AV type differs from the domain's\n");
		return -FI_EINVAL;
	}
	if (!shareable && (attr->name || (attr->flags & FI_READ))) {
		FI_WARN(prov, FI_LOG_AV,
			"named (shared) AVs and FI_READ: %s has no "
			"FI_SHARED_AV\n",
			prov->name);
		return -FI_ENOSYS;
	}
	if ((attr->flags & FI_READ) && !attr->name) {
		FI_WARN(prov, FI_LOG_AV, "FI_READ opens a named AV: no name\n");
		return -FI_EINVAL;
	}
	if (attr->flags & ~(FI_EVENT | FI_SYMMETRIC | FI_READ)) {
		FI_WARN(prov, FI_LOG_AV, "unknown AV flags %#llx\n",
			(unsigned long long)attr->flags);
		return -FI_EINVAL;
	}
	if (attr->rx_ctx_bits < 0 || attr->rx_ctx_bits > 16) {
		FI_WARN(prov, FI_LOG_AV, "rx_ctx_bits %d: at most 16\n",
			attr->rx_ctx_bits);
		return -FI_EINVAL;
	}
	return 0;
}

static int av_open(struct util_domain *domain, struct fi_av_attr *attr,
		   const struct util_av_ops *ops, struct fid_av **av_fid,
		   void *context, bool shareable)
{
	struct util_av_ops full;
	enum fi_av_type type;
	struct util_av *av;
	size_t nbuckets;
	int ret;

	if (!domain || !attr || !ops || !av_fid)
		return -FI_EINVAL;
	ret = av_check_attr(domain, attr, &type, shareable);
	if (ret)
		return ret;
	full = *ops;
	ret = av_ops_resolve(&full, domain->prov);
	if (ret)
		return ret;

	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = (struct fi_ops *)&util_av_fi_ops;
	av->av_fid.ops = (struct fi_ops_av *)&util_av_ops_av;
	av->domain = domain;
	av->prov = domain->prov;
	av->ops = full;
	av->type = type;
	av->flags = attr->flags;
	av->rx_ctx_bits = attr->rx_ctx_bits;
	av->addr_mask = attr->rx_ctx_bits ?
				(~0ULL >> attr->rx_ctx_bits) : ~0ULL;
	av->addrlen = full.addrlen;
	av->addr_off = sizeof(struct util_av_slot);
	av->priv_off = av->addr_off + ((full.addrlen + 7) & ~(size_t)7);
	av->slot_size = av->priv_off + ((full.priv_size + 7) & ~(size_t)7);
	atomic_init(&av->ref, 0);
	atomic_init(&av->inserts, 0);

	/* Endpoints' progress threads look senders up (FI_SOURCE, peers
	 * that connect to us) while the application inserts. */
	ret = weft_lock_init(&av->lock,
			     util_domain_progress_needs_lock(domain));
	if (ret)
		goto err_free_av;
	nbuckets = 64;
	while (nbuckets < attr->count && nbuckets < UTIL_AV_MAX_ENTRIES)
		nbuckets *= 2;
	ret = av_hash_resize(av, nbuckets);
	if (ret)
		goto err_destroy_lock;
	if (attr->name) {
		ret = util_av_shm_open(av, attr, &type);
		if (ret)
			goto err_free_bucket;
		av->type = type;
		if (!attr->map_addr)
			attr->map_addr = av->shm->hdr;
	}

	attr->type = type;
	util_domain_get(domain);
	*av_fid = &av->av_fid;
	return 0;

err_free_bucket:
	free(av->bucket);
err_destroy_lock:
	weft_lock_destroy(&av->lock);
err_free_av:
	free(av);
	return ret;
}

int util_av_open(struct util_domain *domain, struct fi_av_attr *attr,
		 const struct util_av_ops *ops, struct fid_av **av_fid,
		 void *context)
{
	return av_open(domain, attr, ops, av_fid, context, false);
}

int util_av_open_shared(struct util_domain *domain, struct fi_av_attr *attr,
			const struct util_av_ops *ops, struct fid_av **av_fid,
			void *context)
{
	return av_open(domain, attr, ops, av_fid, context, true);
}
