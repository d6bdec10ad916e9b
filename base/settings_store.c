/* The settings object of ftl/settings.h as a small array of (FTL_* name, text) pairs: a job sets a few
 * dozen at most, so a linear search is the simplest thing that is fast enough. */
#include "settings_store.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "env_names.h"

struct ftl_settings {
	size_t n, cap;
	struct setting {
		char var[FTL_SETTING_NAME_MAX + 1];
		char *value;
	} *items;
};

ftl_settings *ftl_settings_new(void) { return calloc(1, sizeof(ftl_settings)); }

void ftl_settings_delete(ftl_settings *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->items[i].value);
	free(s->items);
	free(s);
}

/* "seeds" -> "FTL_SEEDS": lower-case words joined by '_', or the variable itself. */
static bool to_variable(const char *name, char var[FTL_SETTING_NAME_MAX + 1])
{
	bool is_variable = strncmp(name, "FTL_", 4) == 0;
	const char *allowed = is_variable ? "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_" : "abcdefghijklmnopqrstuvwxyz0123456789_";
	size_t len = strlen(name), prefix = is_variable ? 0 : 4;
	if (len == 0 || len + prefix > FTL_SETTING_NAME_MAX || strspn(name, allowed) != len || name[len - 1] == '_')
		return false;
	memcpy(var, "FTL_", prefix);
	for (size_t i = 0; i <= len; i++)
		var[prefix + i] = is_variable ? name[i] : (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 : name[i]);
	return true;
}

ftl_err ftl_settings_canonical_name(const char *name, char var[FTL_SETTING_NAME_MAX + 1])
{
	if (!name || !to_variable(name, var))
		return ftl_diag_set(FTL_ERR_INVALID,
				    "setting %s: expected a name such as min_workers or FTL_MIN_WORKERS (at most %d "
				    "bytes)",
				    name ? name : "(null)", FTL_SETTING_NAME_MAX - 4);
	return ftl_env_refuse_if_unknown(var);
}

static struct setting *find(const ftl_settings *s, const char *var)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->items[i].var, var) == 0)
			return &s->items[i];
	return NULL;
}

const char *ftl_settings_get(const ftl_settings *s, const char *name)
{
	char var[FTL_SETTING_NAME_MAX + 1];
	if (!s || !name || !to_variable(name, var))
		return NULL;
	struct setting *it = find(s, var);
	return it ? it->value : NULL;
}

ftl_err ftl_settings_put(ftl_settings *s, const char *var, const char *value)
{
	struct setting *it = find(s, var);
	if (!value) {
		if (it) {
			free(it->value);
			*it = s->items[--s->n];
		}
		return FTL_OK;
	}
	char *copy = strdup(value);
	if (!copy)
		return ftl_diag_set(FTL_ERR_SYSTEM, "%s: out of memory", var);
	if (!it) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			struct setting *grown = realloc(s->items, cap * sizeof(*grown));
			if (!grown) {
				free(copy);
				return ftl_diag_set(FTL_ERR_SYSTEM, "%s: out of memory", var);
			}
			s->items = grown;
			s->cap = cap;
		}
		it = &s->items[s->n++];
		memcpy(it->var, var, strlen(var) + 1);
		it->value = NULL;
	}
	free(it->value);
	it->value = copy;
	return FTL_OK;
}

extern char **environ;

ftl_settings *ftl_settings_new_from_environment(void)
{
	ftl_settings *s = ftl_settings_new();
	if (!s)
		ftl_diag_set(FTL_ERR_SYSTEM, "the FTL_* environment: out of memory");
	if (s && ftl_settings_add_env(s, ftl_settings_put) != FTL_OK) {
		ftl_settings_delete(s);
		return NULL;
	}
	return s;
}

ftl_err ftl_settings_add_env(ftl_settings *s, ftl_err (*add)(ftl_settings *s, const char *var, const char *value))
{
	ftl_err err = ftl_env_refuse_unknown();
	for (char **e = environ; !err && e && *e; e++) {
		size_t len = strcspn(*e, "=");
		if (strncmp(*e, "FTL_", 4) != 0 || len > FTL_SETTING_NAME_MAX || !(*e)[len])
			continue;
		char var[FTL_SETTING_NAME_MAX + 1];
		memcpy(var, *e, len);
		var[len] = '\0';
		err = add(s, var, *e + len + 1);
	}
	return err;
}
