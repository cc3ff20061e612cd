/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_info: list the fabric interfaces fi_getinfo returns, the providers
 * built into the library, or the parameters they read from the environment.
 *
 * The options and the output keep the layout of the fi_info tool that ships
 * with OFI 1.17, so scripts written against that tool parse ours unchanged.
 * One addition: when fi_getinfo fails, the warnings the library logged while
 * it searched (each provider's first unmet hint) are printed after the
 * error line, under the heading "No provider matched:".
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext.h>

/* the 1.x names that 2.x headers drop (FI_BUFFERED_RECV, FI_EP_SOCK_DGRAM):
 * fi_info parses every name of every version */
#include "weft/ofi.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct name_val {
	const char *name;
	uint64_t val;
};

/* clang-format off */
#define NV(x) { #x, x }

/*
 * The names -c accepts: those of the 1.17 tool (which include the op flags
 * FI_MORE and FI_PEEK) and the capabilities it left out.
 */
static const struct name_val cap_names[] = {
	NV(FI_MSG),	      NV(FI_RMA),	    NV(FI_TAGGED),
	NV(FI_ATOMIC),	      NV(FI_MULTICAST),	    NV(FI_COLLECTIVE),
	NV(FI_READ),	      NV(FI_WRITE),	    NV(FI_RECV),
	NV(FI_SEND),	      NV(FI_REMOTE_READ),   NV(FI_REMOTE_WRITE),
	NV(FI_MULTI_RECV),    NV(FI_REMOTE_CQ_DATA), NV(FI_MORE),
	NV(FI_PEEK),	      NV(FI_TRIGGER),	    NV(FI_FENCE),
	NV(FI_AV_USER_ID),    NV(FI_HMEM),	    NV(FI_VARIABLE_MSG),
	NV(FI_RMA_PMEM),      NV(FI_SOURCE_ERR),    NV(FI_LOCAL_COMM),
	NV(FI_REMOTE_COMM),   NV(FI_SHARED_AV),	    NV(FI_RMA_EVENT),
	NV(FI_SOURCE),	      NV(FI_NAMED_RX_CTX),  NV(FI_DIRECTED_RECV),
};

static const struct name_val mode_names[] = {
	NV(FI_CONTEXT),	      NV(FI_MSG_PREFIX),     NV(FI_ASYNC_IOV),
	NV(FI_RX_CQ_DATA),    NV(FI_LOCAL_MR),	     NV(FI_NOTIFY_FLAGS_ONLY),
	NV(FI_RESTRICTED_COMP), NV(FI_CONTEXT2),     NV(FI_BUFFERED_RECV),
};

static const struct name_val ep_type_names[] = {
	NV(FI_EP_UNSPEC),      NV(FI_EP_MSG),	      NV(FI_EP_DGRAM),
	NV(FI_EP_RDM),	       NV(FI_EP_SOCK_STREAM), NV(FI_EP_SOCK_DGRAM),
};

static const struct name_val addr_format_names[] = {
	NV(FI_FORMAT_UNSPEC), NV(FI_SOCKADDR),	  NV(FI_SOCKADDR_IN),
	NV(FI_SOCKADDR_IN6),  NV(FI_SOCKADDR_IB), NV(FI_ADDR_PSMX),
	NV(FI_ADDR_GNI),      NV(FI_ADDR_BGQ),	  NV(FI_ADDR_MLX),
	NV(FI_ADDR_STR),      NV(FI_ADDR_PSMX2),  NV(FI_ADDR_IB_UD),
	NV(FI_ADDR_EFA),      NV(FI_ADDR_PSMX3),  NV(FI_ADDR_OPX),
	NV(FI_ADDR_CXI),
};
/* clang-format on */

/* What the command line asked for. */
struct info_opts {
	const char *node;
	const char *service;
	uint64_t flags;
	struct fi_info *hints;
	bool use_hints;
	bool list;
	bool verbose;
	bool env;
	const char *env_filter;
	const char *info_filter;
};

/* ---- usage ----------------------------------------------------------- */

/*
 * Help text: option, tabs, description; the tabs are those of the 1.17
 * tool, which mostly line the descriptions up at column 32.
 */
static const struct {
	const char *opt;
	int tabs;
	const char *text;
} usage_lines[] = {
	{ "-h, --help", 3, "display this help and exit" },
	{ "-s, --src_addr=ADDR", 2, "source name or address" },
	{ "-n, --node=NAME", 2, "dest node name or address" },
	{ "-P, --port=PNUM", 2, "port number" },
	{ "-c, --caps=CAP1|CAP2..", 1,
	  "one or more capabilities: FI_MSG|FI_RMA..." },
	{ "-m, --mode=MOD1|MOD2..", 1, "one or more modes, default all modes" },
	{ "-t, --ep_type=EPTYPE", 2,
	  "specify single endpoint type: FI_EP_MSG, FI_EP_DGRAM..." },
	{ "-d, --domain=DOMAIN", 2, "specify the domain name" },
	{ "-f, --fabric=FABRIC", 2, "specify the fabric name" },
	{ "-a, --addr_format=FMT", 2,
	  "specify accepted address format: FI_FORMAT_UNSPEC, FI_SOCKADDR..." },
	{ "-p, --provider=PROV", 2, "specify provider explicitly" },
	{ "-e, --env", 3, "print libfabric environment variables" },
	{ "-g, --getenv=SUBSTR", 2,
	  "print libfabric environment variables with substr" },
	{ "-i, --info=", 2, "print fi_info structures containing substr" },
	{ "-l, --list", 3, "list available libfabric providers" },
	{ "-v, --verbose", 3, "verbose output" },
	{ "--version", 3, "print version info and exit" },
};

static void usage(const char *prog)
{
	size_t i;

	printf("Usage: %s\n", prog);
	for (i = 0; i < ARRAY_SIZE(usage_lines); i++)
		printf("  %s%.*s%s\n", usage_lines[i].opt, usage_lines[i].tabs,
		       "\t\t\t", usage_lines[i].text);
}

static void print_version(void)
{
	static const char dummy;
	uint32_t api = fi_version();

	printf("fi_info: %d.%d.%d\n", FI_MAJOR_VERSION, FI_MINOR_VERSION,
	       FI_REVISION_VERSION);
	printf("libfabric: %s\n", fi_tostr(&dummy, FI_TYPE_VERSION));
	printf("libfabric api: %u.%u\n", FI_MAJOR(api), FI_MINOR(api));
}

/* ---- parsing option values ------------------------------------------- */

static int name_lookup(const struct name_val *tab, size_t n, const char *name,
		       uint64_t *val)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcasecmp(tab[i].name, name)) {
			*val = tab[i].val;
			return 0;
		}
	}
	return -FI_EINVAL;
}

/* "FI_A|FI_B": OR of the named bits; empty items are skipped. */
static int parse_bits(const struct name_val *tab, size_t n, const char *what,
		      const char *arg, uint64_t *bits)
{
	char *copy, *item, *save = NULL;
	uint64_t val, acc = 0;
	int ret = 0;

	copy = strdup(arg);
	if (!copy) {
		fprintf(stderr, "error: out of memory\n");
		return -FI_ENOMEM;
	}
	for (item = strtok_r(copy, "|", &save); item;
	     item = strtok_r(NULL, "|", &save)) {
		ret = name_lookup(tab, n, item, &val);
		if (ret) {
			fprintf(stderr, "error: Unrecognized %s: %s\n", what,
				item);
			break;
		}
		acc |= val;
	}
	free(copy);
	if (!ret)
		*bits = acc;
	return ret;
}

static int parse_one(const struct name_val *tab, size_t n, const char *what,
		     const char *arg, uint64_t *val)
{
	int ret = name_lookup(tab, n, arg, val);

	if (ret)
		fprintf(stderr, "error: Unrecognized %s: %s\n", what, arg);
	return ret;
}

static int set_string(char **dst, const char *arg)
{
	char *copy = strdup(arg);

	if (!copy) {
		fprintf(stderr, "error: out of memory\n");
		return -FI_ENOMEM;
	}
	free(*dst);
	*dst = copy;
	return 0;
}

enum { OPT_VERSION = 256 };

static const struct option long_opts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "src_addr", required_argument, NULL, 's' },
	{ "node", required_argument, NULL, 'n' },
	{ "port", required_argument, NULL, 'P' },
	{ "caps", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "ep_type", required_argument, NULL, 't' },
	{ "domain", required_argument, NULL, 'd' },
	{ "fabric", required_argument, NULL, 'f' },
	{ "addr_format", required_argument, NULL, 'a' },
	{ "provider", required_argument, NULL, 'p' },
	{ "env", no_argument, NULL, 'e' },
	{ "getenv", required_argument, NULL, 'g' },
	{ "info", required_argument, NULL, 'i' },
	{ "list", no_argument, NULL, 'l' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/*
 * Fill opts from argv.  Returns true to go on; false to end the program
 * with *status: --help and --version act at once, and a bad value ends it
 * with the (positive) error code.
 */
static bool parse_args(int argc, char **argv, struct info_opts *opts,
		       int *status)
{
	struct fi_info *hints = opts->hints;
	uint64_t val;
	int ret, c;

	while ((c = getopt_long(argc, argv, "s:n:P:c:m:t:a:p:d:f:eg:i:lhv",
				long_opts, NULL)) != -1) {
		ret = 0;
		switch (c) {
		case 's':
			opts->node = optarg;
			opts->flags |= FI_SOURCE;
			break;
		case 'n':
			opts->node = optarg;
			break;
		case 'P':
			opts->service = optarg;
			break;
		case 'c':
			ret = parse_bits(cap_names, ARRAY_SIZE(cap_names),
					 "capability", optarg, &val);
			if (!ret)
				hints->caps |= val;
			opts->use_hints = true;
			break;
		case 'm':
			ret = parse_bits(mode_names, ARRAY_SIZE(mode_names),
					 "mode", optarg, &val);
			if (!ret)
				hints->mode = val;
			opts->use_hints = true;
			break;
		case 't':
			ret = parse_one(ep_type_names, ARRAY_SIZE(ep_type_names),
					"endpoint type", optarg, &val);
			if (!ret)
				hints->ep_attr->type = (enum fi_ep_type)val;
			opts->use_hints = true;
			break;
		case 'a':
			ret = parse_one(addr_format_names,
					ARRAY_SIZE(addr_format_names),
					"address format", optarg, &val);
			if (!ret)
				hints->addr_format = (uint32_t)val;
			opts->use_hints = true;
			break;
		case 'p':
			ret = set_string(&hints->fabric_attr->prov_name, optarg);
			opts->use_hints = true;
			break;
		case 'd':
			ret = set_string(&hints->domain_attr->name, optarg);
			opts->use_hints = true;
			break;
		case 'f':
			ret = set_string(&hints->fabric_attr->name, optarg);
			opts->use_hints = true;
			break;
		case 'e':
			opts->env = true;
			break;
		case 'g':
			opts->env = true;
			opts->env_filter = optarg;
			break;
		case 'i':
			opts->info_filter = optarg;
			break;
		case 'l':
			opts->list = true;
			break;
		case 'v':
			opts->verbose = true;
			break;
		case OPT_VERSION:
			print_version();
			*status = EXIT_SUCCESS;
			return false;
		case 'h':
		default:
			/* getopt_long has said what was wrong, if anything. */
			usage(argv[0]);
			*status = EXIT_FAILURE;
			return false;
		}
		if (ret) {
			*status = -ret;
			return false;
		}
	}
	return true;
}

/* ---- capturing the library's explanations ----------------------------- */

/*
 * While fi_getinfo runs, warn-level messages from the library are kept so
 * that a failed search can say why.  At other times the logger asks for
 * nothing, which is the library's own default when FI_LOG_LEVEL is unset.
 */
static struct {
	bool capturing;
	char **msgs;
	size_t count;
	size_t cap;
} capture;

static int capture_enabled(const struct fi_provider *prov,
			   enum fi_log_level level, enum fi_log_subsys subsys,
			   uint64_t flags)
{
	return capture.capturing && level == FI_LOG_WARN;
}

static int capture_ready(const struct fi_provider *prov,
			 enum fi_log_level level, enum fi_log_subsys subsys,
			 uint64_t flags, uint64_t *showtime)
{
	return capture_enabled(prov, level, subsys, flags);
}

/*
 * Store "<provider>: <message>" without its trailing newline, unless the
 * message already starts with the provider's name; skip repeats.
 */
static void capture_log(const struct fi_provider *prov,
			enum fi_log_level level, enum fi_log_subsys subsys,
			const char *func, int line, const char *msg)
{
	const char *name = prov && prov->name ? prov->name : "core";
	size_t len, nlen = strlen(name), i;
	char *text, **grown;

	if (!capture_enabled(prov, level, subsys, 0) || !msg)
		return;
	len = strlen(msg);
	while (len && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
		len--;
	if (!len)
		return;
	if (!strncmp(msg, name, nlen) && msg[nlen] == ':')
		text = strndup(msg, len);
	else if (asprintf(&text, "%s: %.*s", name, (int)len, msg) < 0)
		text = NULL;
	if (!text)
		return;
	for (i = 0; i < capture.count; i++) {
		if (!strcmp(capture.msgs[i], text)) {
			free(text);
			return;
		}
	}
	if (capture.count == capture.cap) {
		size_t cap = capture.cap ? capture.cap * 2 : 8;

		grown = realloc(capture.msgs, cap * sizeof(*grown));
		if (!grown) {
			free(text);
			return;
		}
		capture.msgs = grown;
		capture.cap = cap;
	}
	capture.msgs[capture.count++] = text;
}

static struct fi_ops_log capture_ops = {
	.size = sizeof(struct fi_ops_log),
	.enabled = capture_enabled,
	.ready = capture_ready,
	.log = capture_log,
};

static struct fid_logging capture_fid = {
	.ops = &capture_ops,
};

/*
 * Import the capturing logger, unless the user asked for the library's own
 * log with FI_LOG_LEVEL: then its messages already reach stderr.  Returns
 * true if the logger is in place.
 */
static bool capture_import(void)
{
	const char *level = getenv("FI_LOG_LEVEL");

	if (level && *level)
		return false;
	return fi_import_log(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), 0,
			     &capture_fid) == 0;
}

static void capture_print(int err)
{
	size_t i;

	if (!capture.count)
		return;
	fprintf(stderr, "%s\n",
		err == -FI_ENODATA ? "No provider matched:" :
				     "The library reported:");
	for (i = 0; i < capture.count; i++)
		fprintf(stderr, "    %s\n", capture.msgs[i]);
}

static void capture_free(void)
{
	size_t i;

	for (i = 0; i < capture.count; i++)
		free(capture.msgs[i]);
	free(capture.msgs);
	capture.msgs = NULL;
	capture.count = capture.cap = 0;
}

/* ---- output ---------------------------------------------------------- */

static const char *str_or_null(const char *s)
{
	return s ? s : "(null)";
}

/* fi_tostr returns one buffer per thread: print each result before the next. */
static void print_summary(const struct fi_info *info)
{
	const struct fi_fabric_attr *fab = info->fabric_attr;
	const struct fi_domain_attr *dom = info->domain_attr;
	const struct fi_ep_attr *ep = info->ep_attr;

	printf("provider: %s\n", str_or_null(fab ? fab->prov_name : NULL));
	printf("    fabric: %s\n", str_or_null(fab ? fab->name : NULL));
	printf("    domain: %s\n", str_or_null(dom ? dom->name : NULL));
	printf("    version: %d.%d\n", fab ? FI_MAJOR(fab->prov_version) : 0,
	       fab ? FI_MINOR(fab->prov_version) : 0);
	if (ep) {
		printf("    type: %s\n", fi_tostr(&ep->type, FI_TYPE_EP_TYPE));
		printf("    protocol: %s\n",
		       fi_tostr(&ep->protocol, FI_TYPE_PROTOCOL));
	}
}

static void print_list_entry(const struct fi_info *info)
{
	const struct fi_fabric_attr *fab = info->fabric_attr;

	printf("%s:\n", str_or_null(fab ? fab->prov_name : NULL));
	printf("    version: %d.%d\n", fab ? FI_MAJOR(fab->prov_version) : 0,
	       fab ? FI_MINOR(fab->prov_version) : 0);
}

/*
 * -v, and -i (which always shows whole structures): fi_tostr of each entry
 * whose text contains the -i substring, ignoring case.
 */
static void print_verbose(const struct fi_info *list, const char *filter)
{
	const struct fi_info *cur;
	const char *text;

	for (cur = list; cur; cur = cur->next) {
		text = fi_tostr(cur, FI_TYPE_INFO);
		if (!text)
			continue;
		if (filter && !strcasestr(text, filter))
			continue;
		printf("---\n%s", text);
	}
}

static void print_infos(const struct fi_info *list,
			const struct info_opts *opts)
{
	const struct fi_info *cur;

	if (opts->verbose || opts->info_filter) {
		print_verbose(list, opts->info_filter);
		return;
	}
	for (cur = list; cur; cur = cur->next) {
		if (opts->list)
			print_list_entry(cur);
		else
			print_summary(cur);
	}
}

static const char *param_type_name(enum fi_param_type type)
{
	switch (type) {
	case FI_PARAM_STRING:
		return "String";
	case FI_PARAM_INT:
		return "Integer";
	case FI_PARAM_BOOL:
		return "Boolean (0/1, on/off, true/false, yes/no)";
	case FI_PARAM_SIZE_T:
		return "size_t";
	}
	return "Unknown";
}

/*
 * -e and -g: each parameter as two comment lines, then NAME=value if the
 * variable is set, then a blank line.  The 1.17 tool quotes a value that
 * contains a space with '"' and brackets any other value with NUL bytes;
 * the NULs are kept so that the output stays byte for byte the same.
 */
static int print_params(const char *filter)
{
	struct fi_param *params;
	int count, i, ret;

	ret = fi_getparams(&params, &count);
	if (ret) {
		fprintf(stderr, "fi_getparams: %d\n", ret);
		return ret;
	}
	for (i = 0; i < count; i++) {
		const struct fi_param *p = &params[i];

		if (filter && !strcasestr(p->name, filter))
			continue;
		printf("# %s: %s\n", p->name, param_type_name(p->type));
		printf("# %s\n", str_or_null(p->help_string));
		if (p->value) {
			char delim = strchr(p->value, ' ') ? '"' : '\0';

			printf("%s=", p->name);
			putchar(delim);
			fputs(p->value, stdout);
			putchar(delim);
			putchar('\n');
		}
		putchar('\n');
	}
	fi_freeparams(params);
	return 0;
}

/* ---- main ------------------------------------------------------------ */

/* The hints -c, -m, -t, -a, -p, -d and -f start from: accept every mode. */
static struct fi_info *hints_alloc(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->mode = ~0ULL;
	hints->domain_attr->mode = ~0ULL;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	return hints;
}

static int run(const struct info_opts *opts)
{
	struct fi_info *list = NULL;
	uint64_t flags = opts->flags;
	bool captured;
	int ret;

	if (opts->list)
		flags |= FI_PROV_ATTR_ONLY;

	captured = capture_import();
	capture.capturing = captured;
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
			 opts->node, opts->service, flags,
			 opts->use_hints ? opts->hints : NULL, &list);
	capture.capturing = false;
	if (ret) {
		fprintf(stderr, "fi_getinfo: %d\n", ret);
		if (captured)
			capture_print(ret);
		capture_free();
		return ret;
	}
	capture_free();

	if (opts->env)
		ret = print_params(opts->env_filter);
	else
		print_infos(list, opts);
	fi_freeinfo(list);
	return ret;
}

int main(int argc, char **argv)
{
	struct info_opts opts = { 0 };
	int ret;

	opts.hints = hints_alloc();
	if (!opts.hints) {
		fprintf(stderr, "fi_allocinfo: %s\n", fi_strerror(FI_ENOMEM));
		return EXIT_FAILURE;
	}
	if (!parse_args(argc, argv, &opts, &ret)) {
		fi_freeinfo(opts.hints);
		return ret;
	}
	ret = run(&opts);
	fi_freeinfo(opts.hints);
	fflush(stdout);
	return ret < 0 ? -ret : ret;
}
