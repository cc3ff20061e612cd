/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_tostr, fi_tostr_r: human-readable text for OFI structures and values.
 *
 * The text is byte-for-byte what libfabric 1.17 prints for the same input,
 * because `fi_info -v` shows fi_tostr(info, FI_TYPE_INFO) and scripts parse
 * that YAML-like layout.  Enum values print by name ("Unknown" otherwise,
 * "Provider specific" for addr_format and protocol values with the high bit
 * set); flag sets print as comma-separated names in a fixed order, bits
 * without a name left out; nested structures indent by four spaces.
 *
 * Everything is written through struct tostr_out, which never writes past
 * the caller's buffer and keeps it NUL-terminated, so a short buffer yields
 * a clean prefix of the full text.
 */
#include "weft/core.h"

#include <arpa/inet.h>
#include <endian.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "weft/ofi.h"

/* ---- bounded output ----------------------------------------------------- */

struct tostr_out {
	char *buf;
	size_t len; /* size of buf, > 0 */
	size_t used; /* strlen(buf), < len */
};

static void tostr_init(struct tostr_out *out, char *buf, size_t len)
{
	out->buf = buf;
	out->len = len;
	out->used = 0;
	buf[0] = '\0';
}

__attribute__((format(printf, 2, 3))) static void
tostr_printf(struct tostr_out *out, const char *fmt, ...)
{
	size_t room = out->len - out->used;
	va_list ap;
	int n;

	if (room <= 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(out->buf + out->used, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		out->buf[out->used] = '\0';
		return;
	}
	out->used += (size_t)n < room ? (size_t)n : room - 1;
}

static void tostr_puts(struct tostr_out *out, const char *s)
{
	tostr_printf(out, "%s", s);
}

/* %s of a string that may be NULL, spelled the way glibc spells it. */
static const char *tostr_str(const char *s)
{
	return s ? s : "(null)";
}

/* ---- names -------------------------------------------------------------- */

struct tostr_name {
	uint64_t val;
	const char *name;
};

#define TOSTR_NAME(x) { (uint64_t)(x), #x }

static const struct tostr_name ep_type_names[] = {
	TOSTR_NAME(FI_EP_UNSPEC),      TOSTR_NAME(FI_EP_MSG),
	TOSTR_NAME(FI_EP_DGRAM),       TOSTR_NAME(FI_EP_RDM),
	TOSTR_NAME(FI_EP_SOCK_STREAM), TOSTR_NAME(FI_EP_SOCK_DGRAM),
};

static const struct tostr_name addr_format_names[] = {
	TOSTR_NAME(FI_FORMAT_UNSPEC), TOSTR_NAME(FI_SOCKADDR),
	TOSTR_NAME(FI_SOCKADDR_IN),   TOSTR_NAME(FI_SOCKADDR_IN6),
	TOSTR_NAME(FI_SOCKADDR_IB),   TOSTR_NAME(FI_ADDR_PSMX),
	TOSTR_NAME(FI_ADDR_GNI),      TOSTR_NAME(FI_ADDR_BGQ),
	TOSTR_NAME(FI_ADDR_MLX),      TOSTR_NAME(FI_ADDR_STR),
	TOSTR_NAME(FI_ADDR_PSMX2),    TOSTR_NAME(FI_ADDR_IB_UD),
	TOSTR_NAME(FI_ADDR_EFA),      TOSTR_NAME(FI_ADDR_PSMX3),
	TOSTR_NAME(FI_ADDR_OPX),      TOSTR_NAME(FI_ADDR_CXI),
};

static const struct tostr_name threading_names[] = {
	TOSTR_NAME(FI_THREAD_UNSPEC),	 TOSTR_NAME(FI_THREAD_SAFE),
	TOSTR_NAME(FI_THREAD_FID),	 TOSTR_NAME(FI_THREAD_DOMAIN),
	TOSTR_NAME(FI_THREAD_COMPLETION), TOSTR_NAME(FI_THREAD_ENDPOINT),
};

static const struct tostr_name progress_names[] = {
	TOSTR_NAME(FI_PROGRESS_UNSPEC),
	TOSTR_NAME(FI_PROGRESS_AUTO),
	TOSTR_NAME(FI_PROGRESS_MANUAL),
};

static const struct tostr_name rm_names[] = {
	TOSTR_NAME(FI_RM_UNSPEC),
	TOSTR_NAME(FI_RM_DISABLED),
	TOSTR_NAME(FI_RM_ENABLED),
};

/* FI_PROTO_MXM and FI_PROTO_MRAIL have no name in 1.17's text. */
static const struct tostr_name protocol_names[] = {
	TOSTR_NAME(FI_PROTO_UNSPEC),	    TOSTR_NAME(FI_PROTO_RDMA_CM_IB_RC),
	TOSTR_NAME(FI_PROTO_IWARP),	    TOSTR_NAME(FI_PROTO_IB_UD),
	TOSTR_NAME(FI_PROTO_PSMX),	    TOSTR_NAME(FI_PROTO_UDP),
	TOSTR_NAME(FI_PROTO_SOCK_TCP),	    TOSTR_NAME(FI_PROTO_IWARP_RDM),
	TOSTR_NAME(FI_PROTO_IB_RDM),	    TOSTR_NAME(FI_PROTO_GNI),
	TOSTR_NAME(FI_PROTO_RXM),	    TOSTR_NAME(FI_PROTO_RXD),
	TOSTR_NAME(FI_PROTO_MLX),	    TOSTR_NAME(FI_PROTO_NETWORKDIRECT),
	TOSTR_NAME(FI_PROTO_PSMX2),	    TOSTR_NAME(FI_PROTO_SHM),
	TOSTR_NAME(FI_PROTO_RSTREAM),	    TOSTR_NAME(FI_PROTO_RDMA_CM_IB_XRC),
	TOSTR_NAME(FI_PROTO_EFA),	    TOSTR_NAME(FI_PROTO_PSMX3),
	TOSTR_NAME(FI_PROTO_RXM_TCP),	    TOSTR_NAME(FI_PROTO_OPX),
	TOSTR_NAME(FI_PROTO_CXI),	    TOSTR_NAME(FI_PROTO_XNET),
};

static const struct tostr_name av_type_names[] = {
	TOSTR_NAME(FI_AV_UNSPEC),
	TOSTR_NAME(FI_AV_MAP),
	TOSTR_NAME(FI_AV_TABLE),
};

/* Point-to-point atomic datatypes only: FI_VOID has no name here. */
static const struct tostr_name datatype_names[] = {
	TOSTR_NAME(FI_INT8),	      TOSTR_NAME(FI_UINT8),
	TOSTR_NAME(FI_INT16),	      TOSTR_NAME(FI_UINT16),
	TOSTR_NAME(FI_INT32),	      TOSTR_NAME(FI_UINT32),
	TOSTR_NAME(FI_INT64),	      TOSTR_NAME(FI_UINT64),
	TOSTR_NAME(FI_FLOAT),	      TOSTR_NAME(FI_DOUBLE),
	TOSTR_NAME(FI_FLOAT_COMPLEX), TOSTR_NAME(FI_DOUBLE_COMPLEX),
	TOSTR_NAME(FI_LONG_DOUBLE),   TOSTR_NAME(FI_LONG_DOUBLE_COMPLEX),
	TOSTR_NAME(FI_INT128),	      TOSTR_NAME(FI_UINT128),
};

/* Point-to-point atomic ops only: FI_NOOP has no name here. */
static const struct tostr_name atomic_op_names[] = {
	TOSTR_NAME(FI_MIN),	    TOSTR_NAME(FI_MAX),
	TOSTR_NAME(FI_SUM),	    TOSTR_NAME(FI_PROD),
	TOSTR_NAME(FI_LOR),	    TOSTR_NAME(FI_LAND),
	TOSTR_NAME(FI_BOR),	    TOSTR_NAME(FI_BAND),
	TOSTR_NAME(FI_LXOR),	    TOSTR_NAME(FI_BXOR),
	TOSTR_NAME(FI_ATOMIC_READ), TOSTR_NAME(FI_ATOMIC_WRITE),
	TOSTR_NAME(FI_CSWAP),	    TOSTR_NAME(FI_CSWAP_NE),
	TOSTR_NAME(FI_CSWAP_LE),    TOSTR_NAME(FI_CSWAP_LT),
	TOSTR_NAME(FI_CSWAP_GE),    TOSTR_NAME(FI_CSWAP_GT),
	TOSTR_NAME(FI_MSWAP),
};

static const struct tostr_name eq_event_names[] = {
	TOSTR_NAME(FI_NOTIFY),	    TOSTR_NAME(FI_CONNREQ),
	TOSTR_NAME(FI_CONNECTED),   TOSTR_NAME(FI_SHUTDOWN),
	TOSTR_NAME(FI_MR_COMPLETE), TOSTR_NAME(FI_AV_COMPLETE),
	TOSTR_NAME(FI_JOIN_COMPLETE),
};

static const struct tostr_name op_type_names[] = {
	TOSTR_NAME(FI_OP_RECV),		  TOSTR_NAME(FI_OP_SEND),
	TOSTR_NAME(FI_OP_TRECV),	  TOSTR_NAME(FI_OP_TSEND),
	TOSTR_NAME(FI_OP_READ),		  TOSTR_NAME(FI_OP_WRITE),
	TOSTR_NAME(FI_OP_ATOMIC),	  TOSTR_NAME(FI_OP_FETCH_ATOMIC),
	TOSTR_NAME(FI_OP_COMPARE_ATOMIC), TOSTR_NAME(FI_OP_CNTR_SET),
	TOSTR_NAME(FI_OP_CNTR_ADD),
};

static const struct tostr_name collective_names[] = {
	TOSTR_NAME(FI_BARRIER),	  TOSTR_NAME(FI_BROADCAST),
	TOSTR_NAME(FI_ALLTOALL),  TOSTR_NAME(FI_ALLREDUCE),
	TOSTR_NAME(FI_ALLGATHER), TOSTR_NAME(FI_REDUCE_SCATTER),
	TOSTR_NAME(FI_REDUCE),	  TOSTR_NAME(FI_SCATTER),
	TOSTR_NAME(FI_GATHER),
};

static const struct tostr_name hmem_names[] = {
	TOSTR_NAME(FI_HMEM_SYSTEM), TOSTR_NAME(FI_HMEM_CUDA),
	TOSTR_NAME(FI_HMEM_ROCR),   TOSTR_NAME(FI_HMEM_ZE),
	TOSTR_NAME(FI_HMEM_NEURON), TOSTR_NAME(FI_HMEM_SYNAPSEAI),
};

static const struct tostr_name cq_format_names[] = {
	TOSTR_NAME(FI_CQ_FORMAT_UNSPEC), TOSTR_NAME(FI_CQ_FORMAT_CONTEXT),
	TOSTR_NAME(FI_CQ_FORMAT_MSG),	 TOSTR_NAME(FI_CQ_FORMAT_DATA),
	TOSTR_NAME(FI_CQ_FORMAT_TAGGED),
};

/* The same spellings as FI_LOG_LEVEL and FI_LOG_SUBSYS accept. */
static const struct tostr_name log_level_names[] = {
	{ FI_LOG_WARN, "warn" },
	{ FI_LOG_TRACE, "trace" },
	{ FI_LOG_INFO, "info" },
	{ FI_LOG_DEBUG, "debug" },
};

static const struct tostr_name log_subsys_names[] = {
	{ FI_LOG_CORE, "core" },       { FI_LOG_FABRIC, "fabric" },
	{ FI_LOG_DOMAIN, "domain" },   { FI_LOG_EP_CTRL, "ep_ctrl" },
	{ FI_LOG_EP_DATA, "ep_data" }, { FI_LOG_AV, "av" },
	{ FI_LOG_CQ, "cq" },	       { FI_LOG_EQ, "eq" },
	{ FI_LOG_MR, "mr" },	       { FI_LOG_CNTR, "cntr" },
};

static const struct tostr_name bus_type_names[] = {
	{ FI_BUS_UNKNOWN, "FI_BUS_UNKNOWN" },
	TOSTR_NAME(FI_BUS_PCI),
};

static const struct tostr_name link_state_names[] = {
	TOSTR_NAME(FI_LINK_UNKNOWN),
	TOSTR_NAME(FI_LINK_DOWN),
	TOSTR_NAME(FI_LINK_UP),
};

/* Flag sets, each in the order its names are printed. */
static const struct tostr_name caps_names[] = {
	TOSTR_NAME(FI_MSG),
	TOSTR_NAME(FI_RMA),
	TOSTR_NAME(FI_TAGGED),
	TOSTR_NAME(FI_ATOMIC),
	TOSTR_NAME(FI_MULTICAST),
	TOSTR_NAME(FI_COLLECTIVE),
	TOSTR_NAME(FI_READ),
	TOSTR_NAME(FI_WRITE),
	TOSTR_NAME(FI_RECV),
	TOSTR_NAME(FI_SEND),
	TOSTR_NAME(FI_REMOTE_READ),
	TOSTR_NAME(FI_REMOTE_WRITE),
	TOSTR_NAME(FI_MULTI_RECV),
	TOSTR_NAME(FI_REMOTE_CQ_DATA),
	TOSTR_NAME(FI_TRIGGER),
	TOSTR_NAME(FI_FENCE),
	TOSTR_NAME(FI_VARIABLE_MSG),
	TOSTR_NAME(FI_RMA_PMEM),
	TOSTR_NAME(FI_SOURCE_ERR),
	TOSTR_NAME(FI_LOCAL_COMM),
	TOSTR_NAME(FI_REMOTE_COMM),
	TOSTR_NAME(FI_SHARED_AV),
	TOSTR_NAME(FI_RMA_EVENT),
	TOSTR_NAME(FI_SOURCE),
	TOSTR_NAME(FI_NAMED_RX_CTX),
	TOSTR_NAME(FI_DIRECTED_RECV),
	TOSTR_NAME(FI_HMEM),
};

static const struct tostr_name op_flags_names[] = {
	TOSTR_NAME(FI_MULTICAST),
	TOSTR_NAME(FI_MULTI_RECV),
	TOSTR_NAME(FI_REMOTE_CQ_DATA),
	TOSTR_NAME(FI_MORE),
	TOSTR_NAME(FI_PEEK),
	TOSTR_NAME(FI_TRIGGER),
	TOSTR_NAME(FI_FENCE),
	TOSTR_NAME(FI_COMPLETION),
	TOSTR_NAME(FI_INJECT),
	TOSTR_NAME(FI_INJECT_COMPLETE),
	TOSTR_NAME(FI_TRANSMIT_COMPLETE),
	TOSTR_NAME(FI_DELIVERY_COMPLETE),
	TOSTR_NAME(FI_MATCH_COMPLETE),
	TOSTR_NAME(FI_AFFINITY),
	TOSTR_NAME(FI_CLAIM),
	TOSTR_NAME(FI_DISCARD),
};

static const struct tostr_name msg_order_names[] = {
	TOSTR_NAME(FI_ORDER_RAR),	 TOSTR_NAME(FI_ORDER_RAW),
	TOSTR_NAME(FI_ORDER_RAS),	 TOSTR_NAME(FI_ORDER_WAR),
	TOSTR_NAME(FI_ORDER_WAW),	 TOSTR_NAME(FI_ORDER_WAS),
	TOSTR_NAME(FI_ORDER_SAR),	 TOSTR_NAME(FI_ORDER_SAW),
	TOSTR_NAME(FI_ORDER_SAS),	 TOSTR_NAME(FI_ORDER_RMA_RAR),
	TOSTR_NAME(FI_ORDER_RMA_RAW),	 TOSTR_NAME(FI_ORDER_RMA_WAR),
	TOSTR_NAME(FI_ORDER_RMA_WAW),	 TOSTR_NAME(FI_ORDER_ATOMIC_RAR),
	TOSTR_NAME(FI_ORDER_ATOMIC_RAW), TOSTR_NAME(FI_ORDER_ATOMIC_WAR),
	TOSTR_NAME(FI_ORDER_ATOMIC_WAW),
};

static const struct tostr_name mode_names[] = {
	TOSTR_NAME(FI_CONTEXT),
	TOSTR_NAME(FI_MSG_PREFIX),
	TOSTR_NAME(FI_ASYNC_IOV),
	TOSTR_NAME(FI_RX_CQ_DATA),
	TOSTR_NAME(FI_LOCAL_MR),
	TOSTR_NAME(FI_NOTIFY_FLAGS_ONLY),
	TOSTR_NAME(FI_RESTRICTED_COMP),
	TOSTR_NAME(FI_CONTEXT2),
	TOSTR_NAME(FI_BUFFERED_RECV),
};

static const struct tostr_name cq_flags_names[] = {
	TOSTR_NAME(FI_SEND),	     TOSTR_NAME(FI_RECV),
	TOSTR_NAME(FI_RMA),	     TOSTR_NAME(FI_ATOMIC),
	TOSTR_NAME(FI_MSG),	     TOSTR_NAME(FI_TAGGED),
	TOSTR_NAME(FI_READ),	     TOSTR_NAME(FI_WRITE),
	TOSTR_NAME(FI_REMOTE_READ),  TOSTR_NAME(FI_REMOTE_WRITE),
	TOSTR_NAME(FI_REMOTE_CQ_DATA), TOSTR_NAME(FI_MULTI_RECV),
	TOSTR_NAME(FI_MORE),	     TOSTR_NAME(FI_CLAIM),
};

static const struct tostr_name mr_mode_names[] = {
	TOSTR_NAME(FI_MR_BASIC),      TOSTR_NAME(FI_MR_SCALABLE),
	TOSTR_NAME(FI_MR_LOCAL),      TOSTR_NAME(FI_MR_RAW),
	TOSTR_NAME(FI_MR_VIRT_ADDR),  TOSTR_NAME(FI_MR_ALLOCATED),
	TOSTR_NAME(FI_MR_PROV_KEY),   TOSTR_NAME(FI_MR_MMU_NOTIFY),
	TOSTR_NAME(FI_MR_RMA_EVENT),  TOSTR_NAME(FI_MR_ENDPOINT),
	TOSTR_NAME(FI_MR_HMEM),	      TOSTR_NAME(FI_MR_COLLECTIVE),
};

#define TOSTR_TABLE(t) (t), WEFT_ARRAY_SIZE(t)

/* The name of val in tab, or "Unknown". */
static void tostr_enum(struct tostr_out *out, const struct tostr_name *tab,
		       size_t n, uint64_t val)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (tab[i].val == val) {
			tostr_puts(out, tab[i].name);
			return;
		}
	}
	tostr_puts(out, "Unknown");
}

/* An enum whose values with FI_PROV_SPECIFIC set belong to a provider. */
static void tostr_enum_prov(struct tostr_out *out, const struct tostr_name *tab,
			    size_t n, uint32_t val)
{
	if (val & FI_PROV_SPECIFIC)
		tostr_puts(out, "Provider specific");
	else
		tostr_enum(out, tab, n, val);
}

/* The names of the bits of flags that tab names, comma-separated. */
static void tostr_flags(struct tostr_out *out, const struct tostr_name *tab,
			size_t n, uint64_t flags)
{
	const char *sep = "";
	size_t i;

	for (i = 0; i < n; i++) {
		if (flags & tab[i].val) {
			tostr_printf(out, "%s%s", sep, tab[i].name);
			sep = ", ";
		}
	}
}

/* One "name: [ FLAG, FLAG ]" line of a structure. */
static void tostr_flags_line(struct tostr_out *out, const char *indent,
			     const char *field, const struct tostr_name *tab,
			     size_t n, uint64_t flags)
{
	tostr_printf(out, "%s%s: [ ", indent, field);
	tostr_flags(out, tab, n, flags);
	tostr_puts(out, " ]\n");
}

/*
 * comp_order: FI_ORDER_NONE when no ordering bit is set, FI_ORDER_STRICT
 * when all are, and FI_ORDER_DATA on its own.
 */
static void tostr_comp_order_line(struct tostr_out *out, const char *indent,
				  uint64_t order)
{
	const char *sep = "";

	tostr_printf(out, "%scomp_order: [ ", indent);
	if (!(order & FI_ORDER_STRICT)) {
		tostr_puts(out, "FI_ORDER_NONE");
		sep = ", ";
	} else if ((order & FI_ORDER_STRICT) == FI_ORDER_STRICT) {
		tostr_puts(out, "FI_ORDER_STRICT");
		sep = ", ";
	}
	if (order & FI_ORDER_DATA)
		tostr_printf(out, "%sFI_ORDER_DATA", sep);
	tostr_puts(out, " ]\n");
}

/* ---- addresses ---------------------------------------------------------- */

static uint16_t tostr_get16(const void *addr, size_t off)
{
	uint16_t v;

	memcpy(&v, (const uint8_t *)addr + off, sizeof(v));
	return v;
}

static uint32_t tostr_get32(const void *addr, size_t off)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)addr + off, sizeof(v));
	return v;
}

static uint64_t tostr_get64(const void *addr, size_t off)
{
	uint64_t v;

	memcpy(&v, (const uint8_t *)addr + off, sizeof(v));
	return v;
}

/* inet_ntop into str; false if family is neither AF_INET nor AF_INET6. */
static bool tostr_ntop(int family, const void *addr, size_t off, char *str,
		       size_t size)
{
	uint8_t raw[16];

	memcpy(raw, (const uint8_t *)addr + off,
	       family == AF_INET ? 4 : sizeof(raw));
	return inet_ntop(family, raw, str, size) != NULL;
}

/*
 * Layouts read below (offsets in bytes, host order unless noted):
 *  sockaddr_ib: family 0, pkey 2 (big-endian), gid 8..23, service id 24
 *               (big-endian u64: port space in bits 16..27), scope id 40
 *               (big-endian u64, low byte shown)
 *  ib_ud name:  gid 0..15, qpn u32 16, lid u16 20, pkey u16 22, sl u8 26
 *  efa name:    gid 0..15, qpn u16 16, qkey u32 20
 * An address whose family does not fit its format prints as nothing.
 */
static void tostr_sockaddr_in(struct tostr_out *out, const void *addr)
{
	char str[INET6_ADDRSTRLEN];
	sa_family_t family;

	memcpy(&family, addr, sizeof(family));
	if (family != AF_INET && family != AF_INET6)
		return;
	if (!tostr_ntop(family, addr, offsetof(struct sockaddr_in, sin_addr),
			str, sizeof(str)))
		return;
	tostr_printf(out, "fi_sockaddr_in://%s:%" PRIu16, str,
		     ntohs(tostr_get16(addr,
				       offsetof(struct sockaddr_in, sin_port))));
}

static void tostr_sockaddr_in6(struct tostr_out *out, const void *addr)
{
	char str[INET6_ADDRSTRLEN];
	sa_family_t family;

	memcpy(&family, addr, sizeof(family));
	if (family != AF_INET && family != AF_INET6)
		return;
	if (!tostr_ntop(family, addr,
			offsetof(struct sockaddr_in6, sin6_addr), str,
			sizeof(str)))
		return;
	tostr_printf(out, "fi_sockaddr_in6://[%s]:%" PRIu16, str,
		     ntohs(tostr_get16(
			     addr, offsetof(struct sockaddr_in6, sin6_port))));
}

static void tostr_sockaddr_ib(struct tostr_out *out, const void *addr)
{
	char str[INET6_ADDRSTRLEN];
	unsigned int pkey, port_space, scope;

	tostr_ntop(AF_INET6, addr, 8, str, sizeof(str));
	pkey = ntohs(tostr_get16(addr, 2));
	port_space = (be64toh(tostr_get64(addr, 24)) >> 16) & 0xfff;
	scope = be64toh(tostr_get64(addr, 40)) & 0xff;
	tostr_printf(out, "fi_sockaddr_ib://[%s]:0x%x:0x%x:0x%x", str, pkey,
		     port_space, scope);
}

static void tostr_addr(struct tostr_out *out, uint32_t format,
		       const void *addr)
{
	char str[INET6_ADDRSTRLEN];
	sa_family_t family;

	if (!addr) {
		tostr_puts(out, "(null)");
		return;
	}

	switch (format) {
	case FI_SOCKADDR:
		memcpy(&family, addr, sizeof(family));
		if (family == AF_INET)
			tostr_sockaddr_in(out, addr);
		else if (family == AF_INET6)
			tostr_sockaddr_in6(out, addr);
		break;
	case FI_SOCKADDR_IN:
		tostr_sockaddr_in(out, addr);
		break;
	case FI_SOCKADDR_IN6:
		tostr_sockaddr_in6(out, addr);
		break;
	case FI_SOCKADDR_IB:
		tostr_sockaddr_ib(out, addr);
		break;
	case FI_ADDR_PSMX:
		tostr_printf(out, "fi_addr_psmx://%" PRIx64,
			     tostr_get64(addr, 0));
		break;
	case FI_ADDR_GNI:
		tostr_printf(out, "fi_addr_gni://%" PRIx64,
			     tostr_get64(addr, 0));
		break;
	case FI_ADDR_BGQ:
		tostr_printf(out, "fi_addr_bgq://%p", addr);
		break;
	case FI_ADDR_MLX:
		tostr_printf(out, "fi_addr_mlx://%p", addr);
		break;
	case FI_ADDR_STR:
		tostr_puts(out, addr);
		break;
	case FI_ADDR_PSMX2:
		tostr_printf(out, "fi_addr_psmx2://%" PRIx64 ":%" PRIx64,
			     tostr_get64(addr, 0), tostr_get64(addr, 8));
		break;
	case FI_ADDR_IB_UD:
		tostr_ntop(AF_INET6, addr, 0, str, sizeof(str));
		tostr_printf(out, "fi_addr_ib_ud://%s:%" PRIx32 "/%x/%x/%x",
			     str, tostr_get32(addr, 16),
			     tostr_get16(addr, 20), tostr_get16(addr, 22),
			     ((const uint8_t *)addr)[26]);
		break;
	case FI_ADDR_EFA:
		tostr_ntop(AF_INET6, addr, 0, str, sizeof(str));
		tostr_printf(out, "fi_addr_efa://[%s]:%u:%" PRIu32, str,
			     tostr_get16(addr, 16), tostr_get32(addr, 20));
		break;
	case FI_ADDR_PSMX3:
		tostr_printf(out,
			     "fi_addr_psmx3://%" PRIx64 ":%" PRIx64 ":%" PRIx64
			     ":%" PRIx64,
			     tostr_get64(addr, 0), tostr_get64(addr, 8),
			     tostr_get64(addr, 16), tostr_get64(addr, 24));
		break;
	case FI_ADDR_OPX:
		tostr_printf(out, "fi_addr_opx://%016" PRIx64,
			     tostr_get64(addr, 0));
		break;
	case FI_ADDR_CXI:
		tostr_printf(out, "fi_addr_cxi://0x%08" PRIx32,
			     tostr_get32(addr, 0));
		break;
	default:
		/* FI_FORMAT_UNSPEC and formats without a text form. */
		break;
	}
}

/* ---- fids --------------------------------------------------------------- */

/*
 * A fid prints through its own fi_ops.tostr when it has one; otherwise (or
 * when that op fails) as label followed by its address.  The op appends to
 * the text so far.
 */
static void tostr_fid(struct tostr_out *out, const char *label,
		      const struct fid *fid)
{
	size_t start = out->used;
	int ret;

	if (fid && FI_CHECK_OP(fid->ops, struct fi_ops, tostr)) {
		ret = fid->ops->tostr(fid, out->buf + start, out->len - start);
		out->buf[out->len - 1] = '\0';
		if (ret >= 0) {
			out->used = start + strlen(out->buf + start);
			return;
		}
		out->buf[start] = '\0';
	}
	tostr_printf(out, "%s%p\n", label, (const void *)fid);
}

static void tostr_nic(struct tostr_out *out, const char *indent,
		      const struct fid_nic *nic)
{
	const struct fi_device_attr *dev = nic->device_attr;
	const struct fi_bus_attr *bus = nic->bus_attr;
	const struct fi_link_attr *link = nic->link_attr;
	const struct fi_pci_attr *pci;

	tostr_printf(out, "%snic:\n", indent);

	if (dev) {
		tostr_printf(out, "%s    fi_device_attr:\n", indent);
		tostr_printf(out, "%s        name: %s\n", indent,
			     tostr_str(dev->name));
		tostr_printf(out, "%s        device_id: %s\n", indent,
			     tostr_str(dev->device_id));
		tostr_printf(out, "%s        device_version: %s\n", indent,
			     tostr_str(dev->device_version));
		tostr_printf(out, "%s        vendor_id: %s\n", indent,
			     tostr_str(dev->vendor_id));
		tostr_printf(out, "%s        driver: %s\n", indent,
			     tostr_str(dev->driver));
		tostr_printf(out, "%s        firmware: %s\n", indent,
			     tostr_str(dev->firmware));
	} else {
		tostr_printf(out, "%s    fi_device_attr: (null)\n", indent);
	}

	if (bus) {
		tostr_printf(out, "%s    fi_bus_attr:\n", indent);
		tostr_printf(out, "%s        bus_type: ", indent);
		tostr_enum(out, TOSTR_TABLE(bus_type_names), bus->bus_type);
		tostr_puts(out, "\n");
		if (bus->bus_type == FI_BUS_PCI) {
			pci = &bus->attr.pci;
			tostr_printf(out, "%s        fi_pci_attr:\n", indent);
			tostr_printf(out, "%s            domain_id: %u\n",
				     indent, pci->domain_id);
			tostr_printf(out, "%s            bus_id: %u\n", indent,
				     pci->bus_id);
			tostr_printf(out, "%s            device_id: %u\n",
				     indent, pci->device_id);
			tostr_printf(out, "%s            function_id: %u\n",
				     indent, pci->function_id);
		}
	} else {
		tostr_printf(out, "%s    fi_bus_attr: (null)\n", indent);
	}

	if (link) {
		tostr_printf(out, "%s    fi_link_attr:\n", indent);
		tostr_printf(out, "%s        address: %s\n", indent,
			     tostr_str(link->address));
		tostr_printf(out, "%s        mtu: %zu\n", indent, link->mtu);
		tostr_printf(out, "%s        speed: %zu\n", indent,
			     link->speed);
		tostr_printf(out, "%s        state: ", indent);
		tostr_enum(out, TOSTR_TABLE(link_state_names), link->state);
		tostr_puts(out, "\n");
		tostr_printf(out, "%s        network_type: %s\n", indent,
			     tostr_str(link->network_type));
	} else {
		tostr_printf(out, "%s    fi_link_attr: (null)\n", indent);
	}
}

int weft_tostr_nic(const struct fid *fid, char *buf, size_t len)
{
	struct tostr_out out;

	if (!fid || !buf || !len)
		return -FI_EINVAL;
	/* Append to whatever text the buffer already holds. */
	out.buf = buf;
	out.len = len;
	out.used = strnlen(buf, len);
	if (out.used == len) {
		buf[len - 1] = '\0';
		return 0;
	}
	tostr_nic(&out, "    ", container_of(fid, struct fid_nic, fid));
	return 0;
}

/* ---- structures --------------------------------------------------------- */

/*
 * Each structure prints as "<indent>fi_<name>:" followed by one line per
 * field, indented four spaces further; a NULL one nested in fi_info prints
 * as "<indent>fi_<name>: (null)".
 */
static void tostr_tx_attr(struct tostr_out *out, const char *indent,
			  const struct fi_tx_attr *attr)
{
	char in[16];

	if (!attr) {
		tostr_printf(out, "%sfi_tx_attr: (null)\n", indent);
		return;
	}
	snprintf(in, sizeof(in), "%s    ", indent);
	tostr_printf(out, "%sfi_tx_attr:\n", indent);
	tostr_flags_line(out, in, "caps", TOSTR_TABLE(caps_names), attr->caps);
	tostr_flags_line(out, in, "mode", TOSTR_TABLE(mode_names), attr->mode);
	tostr_flags_line(out, in, "op_flags", TOSTR_TABLE(op_flags_names),
			 attr->op_flags);
	tostr_flags_line(out, in, "msg_order", TOSTR_TABLE(msg_order_names),
			 attr->msg_order);
	tostr_comp_order_line(out, in, attr->comp_order);
	tostr_printf(out, "%sinject_size: %zu\n", in, attr->inject_size);
	tostr_printf(out, "%ssize: %zu\n", in, attr->size);
	tostr_printf(out, "%siov_limit: %zu\n", in, attr->iov_limit);
	tostr_printf(out, "%srma_iov_limit: %zu\n", in, attr->rma_iov_limit);
	tostr_printf(out, "%stclass: 0x%" PRIx32 "\n", in, attr->tclass);
}

static void tostr_rx_attr(struct tostr_out *out, const char *indent,
			  const struct fi_rx_attr *attr)
{
	char in[16];

	if (!attr) {
		tostr_printf(out, "%sfi_rx_attr: (null)\n", indent);
		return;
	}
	snprintf(in, sizeof(in), "%s    ", indent);
	tostr_printf(out, "%sfi_rx_attr:\n", indent);
	tostr_flags_line(out, in, "caps", TOSTR_TABLE(caps_names), attr->caps);
	tostr_flags_line(out, in, "mode", TOSTR_TABLE(mode_names), attr->mode);
	tostr_flags_line(out, in, "op_flags", TOSTR_TABLE(op_flags_names),
			 attr->op_flags);
	tostr_flags_line(out, in, "msg_order", TOSTR_TABLE(msg_order_names),
			 attr->msg_order);
	tostr_comp_order_line(out, in, attr->comp_order);
	tostr_printf(out, "%stotal_buffered_recv: %zu\n", in,
		     attr->total_buffered_recv);
	tostr_printf(out, "%ssize: %zu\n", in, attr->size);
	tostr_printf(out, "%siov_limit: %zu\n", in, attr->iov_limit);
}

/* An endpoint's context count, which may be FI_SHARED_CONTEXT. */
static void tostr_ctx_cnt_line(struct tostr_out *out, const char *indent,
			       const char *field, size_t cnt)
{
	if (cnt == FI_SHARED_CONTEXT)
		tostr_printf(out, "%s%s: FI_SHARED_CONTEXT\n", indent, field);
	else
		tostr_printf(out, "%s%s: %zu\n", indent, field, cnt);
}

static void tostr_ep_attr(struct tostr_out *out, const char *indent,
			  const struct fi_ep_attr *attr)
{
	char in[16];

	if (!attr) {
		tostr_printf(out, "%sfi_ep_attr: (null)\n", indent);
		return;
	}
	snprintf(in, sizeof(in), "%s    ", indent);
	tostr_printf(out, "%sfi_ep_attr:\n", indent);
	tostr_printf(out, "%stype: ", in);
	tostr_enum(out, TOSTR_TABLE(ep_type_names), (uint32_t)attr->type);
	tostr_printf(out, "\n%sprotocol: ", in);
	tostr_enum_prov(out, TOSTR_TABLE(protocol_names), attr->protocol);
	tostr_puts(out, "\n");
	tostr_printf(out, "%sprotocol_version: %d\n", in,
		     (int)attr->protocol_version);
	tostr_printf(out, "%smax_msg_size: %zu\n", in, attr->max_msg_size);
	tostr_printf(out, "%smsg_prefix_size: %zu\n", in,
		     attr->msg_prefix_size);
	tostr_printf(out, "%smax_order_raw_size: %zu\n", in,
		     attr->max_order_raw_size);
	tostr_printf(out, "%smax_order_war_size: %zu\n", in,
		     attr->max_order_war_size);
	tostr_printf(out, "%smax_order_waw_size: %zu\n", in,
		     attr->max_order_waw_size);
	tostr_printf(out, "%smem_tag_format: 0x%016" PRIx64 "\n", in,
		     attr->mem_tag_format);
	tostr_ctx_cnt_line(out, in, "tx_ctx_cnt", attr->tx_ctx_cnt);
	tostr_ctx_cnt_line(out, in, "rx_ctx_cnt", attr->rx_ctx_cnt);
	tostr_printf(out, "%sauth_key_size: %zu\n", in, attr->auth_key_size);
}

static void tostr_domain_attr(struct tostr_out *out, const char *indent,
			      const struct fi_domain_attr *attr)
{
	char in[16];

	if (!attr) {
		tostr_printf(out, "%sfi_domain_attr: (null)\n", indent);
		return;
	}
	snprintf(in, sizeof(in), "%s    ", indent);
	tostr_printf(out, "%sfi_domain_attr:\n", indent);
	/* 1.17 shows only the low 32 bits of the domain pointer. */
	tostr_printf(out, "%sdomain: 0x%x\n", in,
		     (unsigned int)(uintptr_t)attr->domain);
	tostr_printf(out, "%sname: %s\n", in, tostr_str(attr->name));
	tostr_printf(out, "%sthreading: ", in);
	tostr_enum(out, TOSTR_TABLE(threading_names),
		   (uint32_t)attr->threading);
	tostr_printf(out, "\n%scontrol_progress: ", in);
	tostr_enum(out, TOSTR_TABLE(progress_names),
		   (uint32_t)attr->control_progress);
	tostr_printf(out, "\n%sdata_progress: ", in);
	tostr_enum(out, TOSTR_TABLE(progress_names),
		   (uint32_t)attr->data_progress);
	tostr_printf(out, "\n%sresource_mgmt: ", in);
	tostr_enum(out, TOSTR_TABLE(rm_names), (uint32_t)attr->resource_mgmt);
	tostr_printf(out, "\n%sav_type: ", in);
	tostr_enum(out, TOSTR_TABLE(av_type_names), (uint32_t)attr->av_type);
	tostr_puts(out, "\n");
	tostr_flags_line(out, in, "mr_mode", TOSTR_TABLE(mr_mode_names),
			 (uint32_t)attr->mr_mode);
	tostr_printf(out, "%smr_key_size: %zu\n", in, attr->mr_key_size);
	tostr_printf(out, "%scq_data_size: %zu\n", in, attr->cq_data_size);
	tostr_printf(out, "%scq_cnt: %zu\n", in, attr->cq_cnt);
	tostr_printf(out, "%sep_cnt: %zu\n", in, attr->ep_cnt);
	tostr_printf(out, "%stx_ctx_cnt: %zu\n", in, attr->tx_ctx_cnt);
	tostr_printf(out, "%srx_ctx_cnt: %zu\n", in, attr->rx_ctx_cnt);
	tostr_printf(out, "%smax_ep_tx_ctx: %zu\n", in, attr->max_ep_tx_ctx);
	tostr_printf(out, "%smax_ep_rx_ctx: %zu\n", in, attr->max_ep_rx_ctx);
	tostr_printf(out, "%smax_ep_stx_ctx: %zu\n", in,
		     attr->max_ep_stx_ctx);
	tostr_printf(out, "%smax_ep_srx_ctx: %zu\n", in,
		     attr->max_ep_srx_ctx);
	tostr_printf(out, "%scntr_cnt: %zu\n", in, attr->cntr_cnt);
	tostr_printf(out, "%smr_iov_limit: %zu\n", in, attr->mr_iov_limit);
	tostr_flags_line(out, in, "caps", TOSTR_TABLE(caps_names), attr->caps);
	tostr_flags_line(out, in, "mode", TOSTR_TABLE(mode_names), attr->mode);
	tostr_printf(out, "%sauth_key_size: %zu\n", in, attr->auth_key_size);
	tostr_printf(out, "%smax_err_data: %zu\n", in, attr->max_err_data);
	tostr_printf(out, "%smr_cnt: %zu\n", in, attr->mr_cnt);
	tostr_printf(out, "%stclass: 0x%" PRIx32 "\n", in, attr->tclass);
}

static void tostr_fabric_attr(struct tostr_out *out, const char *indent,
			      const struct fi_fabric_attr *attr)
{
	char in[16];

	if (!attr) {
		tostr_printf(out, "%sfi_fabric_attr: (null)\n", indent);
		return;
	}
	snprintf(in, sizeof(in), "%s    ", indent);
	tostr_printf(out, "%sfi_fabric_attr:\n", indent);
	tostr_printf(out, "%sname: %s\n", in, tostr_str(attr->name));
	tostr_printf(out, "%sprov_name: %s\n", in, tostr_str(attr->prov_name));
	tostr_printf(out, "%sprov_version: %u.%u\n", in,
		     FI_MAJOR(attr->prov_version),
		     FI_MINOR(attr->prov_version));
	tostr_printf(out, "%sapi_version: %u.%u\n", in,
		     FI_MAJOR(attr->api_version), FI_MINOR(attr->api_version));
}

/* One fi_info, not the list behind info->next. */
static void tostr_info(struct tostr_out *out, const struct fi_info *info)
{
	const char *in = "    ";

	tostr_puts(out, "fi_info:\n");
	tostr_flags_line(out, in, "caps", TOSTR_TABLE(caps_names), info->caps);
	tostr_flags_line(out, in, "mode", TOSTR_TABLE(mode_names), info->mode);
	tostr_printf(out, "%saddr_format: ", in);
	tostr_enum_prov(out, TOSTR_TABLE(addr_format_names),
			info->addr_format);
	tostr_puts(out, "\n");
	tostr_printf(out, "%ssrc_addrlen: %zu\n", in, info->src_addrlen);
	tostr_printf(out, "%sdest_addrlen: %zu\n", in, info->dest_addrlen);
	tostr_printf(out, "%ssrc_addr: ", in);
	tostr_addr(out, info->addr_format, info->src_addr);
	tostr_printf(out, "\n%sdest_addr: ", in);
	tostr_addr(out, info->addr_format, info->dest_addr);
	tostr_puts(out, "\n");
	tostr_fid(out, "    handle: ", info->handle);
	tostr_tx_attr(out, in, info->tx_attr);
	tostr_rx_attr(out, in, info->rx_attr);
	tostr_ep_attr(out, in, info->ep_attr);
	tostr_domain_attr(out, in, info->domain_attr);
	tostr_fabric_attr(out, in, info->fabric_attr);
	tostr_fid(out, "    nic: ", info->nic ? &info->nic->fid : NULL);
}

/* ---- entry points ------------------------------------------------------- */

/*
 * Enum-valued types read an int from data, FI_TYPE_MR_MODE an int of flag
 * bits, the other flag types a uint64_t; FI_TYPE_VERSION ignores the value
 * and names the API version of this library.
 */
WEFT_EXPORT char *fi_tostr_r(char *buf, size_t len, const void *data,
			     enum fi_type datatype)
{
	struct tostr_out out;
	uint64_t flags = 0;
	uint32_t val = 0;

	if (!buf || !len)
		return NULL;
	buf[0] = '\0';
	if (!data)
		return NULL;

	tostr_init(&out, buf, len);

	switch (datatype) {
	case FI_TYPE_CAPS:
	case FI_TYPE_OP_FLAGS:
	case FI_TYPE_MSG_ORDER:
	case FI_TYPE_MODE:
	case FI_TYPE_CQ_EVENT_FLAGS:
		memcpy(&flags, data, sizeof(flags));
		break;
	case FI_TYPE_EP_TYPE:
	case FI_TYPE_ADDR_FORMAT:
	case FI_TYPE_THREADING:
	case FI_TYPE_PROGRESS:
	case FI_TYPE_PROTOCOL:
	case FI_TYPE_AV_TYPE:
	case FI_TYPE_ATOMIC_TYPE:
	case FI_TYPE_ATOMIC_OP:
	case FI_TYPE_EQ_EVENT:
	case FI_TYPE_MR_MODE:
	case FI_TYPE_OP_TYPE:
	case FI_TYPE_COLLECTIVE_OP:
	case FI_TYPE_HMEM_IFACE:
	case FI_TYPE_CQ_FORMAT:
	case FI_TYPE_LOG_LEVEL:
	case FI_TYPE_LOG_SUBSYS:
		memcpy(&val, data, sizeof(val));
		break;
	default:
		/* Structures, FI_TYPE_VERSION and unknown types. */
		break;
	}

	switch (datatype) {
	case FI_TYPE_INFO:
		tostr_info(&out, data);
		break;
	case FI_TYPE_EP_TYPE:
		tostr_enum(&out, TOSTR_TABLE(ep_type_names), val);
		break;
	case FI_TYPE_CAPS:
		tostr_flags(&out, TOSTR_TABLE(caps_names), flags);
		break;
	case FI_TYPE_OP_FLAGS:
		tostr_flags(&out, TOSTR_TABLE(op_flags_names), flags);
		break;
	case FI_TYPE_ADDR_FORMAT:
		tostr_enum_prov(&out, TOSTR_TABLE(addr_format_names), val);
		break;
	case FI_TYPE_TX_ATTR:
		tostr_tx_attr(&out, "", data);
		break;
	case FI_TYPE_RX_ATTR:
		tostr_rx_attr(&out, "", data);
		break;
	case FI_TYPE_EP_ATTR:
		tostr_ep_attr(&out, "", data);
		break;
	case FI_TYPE_DOMAIN_ATTR:
		tostr_domain_attr(&out, "", data);
		break;
	case FI_TYPE_FABRIC_ATTR:
		tostr_fabric_attr(&out, "", data);
		break;
	case FI_TYPE_THREADING:
		tostr_enum(&out, TOSTR_TABLE(threading_names), val);
		break;
	case FI_TYPE_PROGRESS:
		tostr_enum(&out, TOSTR_TABLE(progress_names), val);
		break;
	case FI_TYPE_PROTOCOL:
		tostr_enum_prov(&out, TOSTR_TABLE(protocol_names), val);
		break;
	case FI_TYPE_MSG_ORDER:
		tostr_flags(&out, TOSTR_TABLE(msg_order_names), flags);
		break;
	case FI_TYPE_MODE:
		tostr_flags(&out, TOSTR_TABLE(mode_names), flags);
		break;
	case FI_TYPE_AV_TYPE:
		tostr_enum(&out, TOSTR_TABLE(av_type_names), val);
		break;
	case FI_TYPE_ATOMIC_TYPE:
		tostr_enum(&out, TOSTR_TABLE(datatype_names), val);
		break;
	case FI_TYPE_ATOMIC_OP:
		tostr_enum(&out, TOSTR_TABLE(atomic_op_names), val);
		break;
	case FI_TYPE_VERSION:
		/* the API weft implements, not the headers it was built on */
		tostr_printf(&out, "%u.%u.0", FI_MAJOR(WEFT_API_VERSION),
			     FI_MINOR(WEFT_API_VERSION));
		break;
	case FI_TYPE_EQ_EVENT:
		tostr_enum(&out, TOSTR_TABLE(eq_event_names), val);
		break;
	case FI_TYPE_CQ_EVENT_FLAGS:
		tostr_flags(&out, TOSTR_TABLE(cq_flags_names), flags);
		break;
	case FI_TYPE_MR_MODE:
		tostr_flags(&out, TOSTR_TABLE(mr_mode_names), val);
		break;
	case FI_TYPE_OP_TYPE:
		tostr_enum(&out, TOSTR_TABLE(op_type_names), val);
		break;
	case FI_TYPE_FID:
		tostr_fid(&out, "fid: ", data);
		break;
	case FI_TYPE_COLLECTIVE_OP:
		tostr_enum(&out, TOSTR_TABLE(collective_names), val);
		break;
	case FI_TYPE_HMEM_IFACE:
		tostr_enum(&out, TOSTR_TABLE(hmem_names), val);
		break;
	case FI_TYPE_CQ_FORMAT:
		tostr_enum(&out, TOSTR_TABLE(cq_format_names), val);
		break;
	case FI_TYPE_LOG_LEVEL:
		tostr_enum(&out, TOSTR_TABLE(log_level_names), val);
		break;
	case FI_TYPE_LOG_SUBSYS:
		tostr_enum(&out, TOSTR_TABLE(log_subsys_names), val);
		break;
	default:
		tostr_puts(&out, "Unknown type");
		break;
	}
	return buf;
}

#define TOSTR_BUF_SIZE 8192

WEFT_EXPORT char *fi_tostr(const void *data, enum fi_type datatype)
{
	static __thread char buf[TOSTR_BUF_SIZE];

	return fi_tostr_r(buf, sizeof(buf), data, datatype);
}
