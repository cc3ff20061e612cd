/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parameters: fi_param_define, fi_param_get, fi_getparams, fi_freeparams.
 * A parameter NAME of provider PROV is read from the environment variable
 * FI_<PROV>_<NAME> (upper case; core parameters are FI_<NAME>).
 */
#include "weft/core.h"

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "weft/list.h"

struct param {
	struct dlist_entry entry;
	const struct fi_provider *prov;
	char *name; /* as defined */
	char *env_name; /* FI_<PROV>_<NAME> */
	char *help;
	enum fi_param_type type;
};

static struct dlist_entry params = DLIST_HEAD_INIT(params);
static pthread_mutex_t params_lock = PTHREAD_MUTEX_INITIALIZER;

static bool is_core(const struct fi_provider *prov)
{
	return !prov || prov == &weft_core_prov || !prov->name ||
	       !strcmp(prov->name, "core");
}

static char *env_name_of(const struct fi_provider *prov, const char *name)
{
	char *buf, *p;
	size_t len;

	len = strlen("FI__") + strlen(name) + 1 +
	      (is_core(prov) ? 0 : strlen(prov->name) + 1);
	buf = malloc(len);
	if (!buf)
		return NULL;
	if (is_core(prov))
		snprintf(buf, len, "FI_%s", name);
	else
		snprintf(buf, len, "FI_%s_%s", prov->name, name);
	for (p = buf; *p; p++)
		*p = (char)(*p == '-' ? '_' : toupper((unsigned char)*p));
	return buf;
}

/* Caller holds params_lock. */
static struct param *param_find(const struct fi_provider *prov,
				const char *name)
{
	struct dlist_entry *e;

	dlist_foreach(&params, e) {
		struct param *p = container_of(e, struct param, entry);

		if (is_core(p->prov) == is_core(prov) &&
		    (is_core(prov) || !strcasecmp(p->prov->name, prov->name)) &&
		    !strcasecmp(p->name, name))
			return p;
	}
	return NULL;
}

static void param_free(struct param *p)
{
	free(p->name);
	free(p->env_name);
	free(p->help);
	free(p);
}

WEFT_EXPORT int fi_param_define(const struct fi_provider *provider,
				const char *param_name,
				enum fi_param_type type,
				const char *help_string_fmt, ...)
{
	struct param *p;
	va_list ap;
	int ret;

	if (!param_name || !*param_name || (unsigned)type > FI_PARAM_SIZE_T)
		return -FI_EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	p->prov = provider;
	p->type = type;
	p->name = strdup(param_name);
	p->env_name = env_name_of(provider, param_name);
	if (help_string_fmt) {
		va_start(ap, help_string_fmt);
		ret = vasprintf(&p->help, help_string_fmt, ap);
		va_end(ap);
		if (ret < 0)
			p->help = NULL;
	} else {
		p->help = strdup("");
	}
	if (!p->name || !p->env_name || !p->help) {
		param_free(p);
		return -FI_ENOMEM;
	}

	pthread_mutex_lock(&params_lock);
	if (param_find(provider, param_name)) {
		pthread_mutex_unlock(&params_lock);
		param_free(p);
		return -FI_EALREADY;
	}
	dlist_insert_tail(&p->entry, &params);
	pthread_mutex_unlock(&params_lock);
	return 0;
}

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on", "y" };
	static const char *const no[] = { "0", "no", "false", "off", "n" };
	size_t i;

	for (i = 0; i < WEFT_ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = 0;
			return 0;
		}
	}
	return -FI_EINVAL;
}

WEFT_EXPORT int fi_param_get(struct fi_provider *provider,
			     const char *param_name, void *value)
{
	enum fi_param_type type;
	const char *str;
	char *env, *end;
	struct param *p;
	long long ll;
	unsigned long long ull;

	if (!param_name || !value)
		return -FI_EINVAL;
	pthread_mutex_lock(&params_lock);
	p = param_find(provider, param_name);
	if (!p) {
		pthread_mutex_unlock(&params_lock);
		FI_WARN(&weft_core_prov, FI_LOG_CORE,
			"parameter %s was never defined by %s\n", param_name,
			is_core(provider) ? "core" : provider->name);
		return -FI_ENOENT;
	}
	type = p->type;
	env = p->env_name;
	str = getenv(env);
	pthread_mutex_unlock(&params_lock);
	if (!str)
		return -FI_ENODATA;

	switch (type) {
	case FI_PARAM_STRING:
		*(char **)value = (char *)str;
		return 0;
	case FI_PARAM_INT:
		errno = 0;
		ll = strtoll(str, &end, 0);
		if (errno || end == str || *end || ll < INT_MIN || ll > INT_MAX)
			goto err_bad;
		*(int *)value = (int)ll;
		return 0;
	case FI_PARAM_BOOL:
		if (parse_bool(str, (int *)value))
			goto err_bad;
		return 0;
	case FI_PARAM_SIZE_T:
		errno = 0;
		if (*str == '-')
			goto err_bad;
		ull = strtoull(str, &end, 0);
		if (errno || end == str || *end || ull > SIZE_MAX)
			goto err_bad;
		*(size_t *)value = (size_t)ull;
		return 0;
	}
err_bad:
	FI_WARN(&weft_core_prov, FI_LOG_CORE, "%s=%s is not a valid %s\n", env,
		str,
		type == FI_PARAM_BOOL ? "boolean" :
		type == FI_PARAM_INT  ? "integer" :
					"size");
	return -FI_EINVAL;
}

WEFT_EXPORT int fi_getparams(struct fi_param **params_out, int *count)
{
	struct fi_param *arr;
	struct dlist_entry *e;
	int n = 0, i = 0;

	if (!params_out || !count)
		return -FI_EINVAL;
	pthread_mutex_lock(&params_lock);
	dlist_foreach(&params, e)
		n++;
	/* One more, zeroed, so fi_freeparams finds the end. */
	arr = calloc((size_t)n + 1, sizeof(*arr));
	if (!arr) {
		pthread_mutex_unlock(&params_lock);
		return -FI_ENOMEM;
	}
	dlist_foreach(&params, e) {
		struct param *p = container_of(e, struct param, entry);
		const char *val = getenv(p->env_name);

		arr[i].name = strdup(p->env_name);
		arr[i].type = p->type;
		arr[i].help_string = strdup(p->help);
		arr[i].value = val ? strdup(val) : NULL;
		if (!arr[i].name || !arr[i].help_string || (val && !arr[i].value)) {
			pthread_mutex_unlock(&params_lock);
			fi_freeparams(arr);
			return -FI_ENOMEM;
		}
		i++;
	}
	pthread_mutex_unlock(&params_lock);
	*params_out = arr;
	*count = n;
	return 0;
}

WEFT_EXPORT void fi_freeparams(struct fi_param *arr)
{
	struct fi_param *p;

	if (!arr)
		return;
	for (p = arr; p->name; p++) {
		free((char *)p->name);
		free((char *)p->help_string);
		free((char *)p->value);
	}
	free(arr);
}

void weft_param_cleanup(void)
{
	struct dlist_entry *e, *tmp;

	pthread_mutex_lock(&params_lock);
	dlist_foreach_safe(&params, e, tmp) {
		dlist_remove(e);
		param_free(container_of(e, struct param, entry));
	}
	pthread_mutex_unlock(&params_lock);
}
