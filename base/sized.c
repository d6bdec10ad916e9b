/* The size-stamped copies of sized.h. */
#include "sized.h"

#include <stdio.h>
#include <string.h>

static size_t size_of(const void *s) { return *(const size_t *)s; }

/* FTL_ERR_INVALID naming type's struct_size n and the fix, unless n is one this library knows. */
static ftl_err check_size(size_t n, size_t oldest, size_t full_size, const char *type, const char *verb,
			  const char *fix)
{
	if (n >= oldest && n <= full_size)
		return FTL_OK;
	return ftl_diag_set(FTL_ERR_INVALID,
			    "%s has struct_size %zu, which this libftl does not know (it %s %zu to %zu): %s, and build "
			    "against the headers of the libftl you run with",
			    type, n, verb, oldest, full_size, fix);
}

ftl_err ftl_sized_widen(const void *in, void *full, size_t full_size, size_t oldest, const char *type,
			const char *defaults)
{
	if (!in)
		return ftl_diag_set(FTL_ERR_INVALID, "%s is NULL: start from %s()", type, defaults);
	size_t n = size_of(in);
	char fix[96];
	snprintf(fix, sizeof(fix), "start from %s(), which sets it", defaults);
	ftl_err err = check_size(n, oldest, full_size, type, "reads", fix);
	if (err)
		return err;
	memcpy((char *)full + sizeof(size_t), (const char *)in + sizeof(size_t), n - sizeof(size_t));
	return FTL_OK;
}

void ftl_sized_narrow(const void *full, void *out)
{
	size_t n = size_of(out);
	memcpy((char *)out + sizeof(size_t), (const char *)full + sizeof(size_t), n - sizeof(size_t));
}

ftl_err ftl_sized_out(const void *full, void *out, size_t full_size, size_t oldest, const char *type)
{
	if (!out)
		return ftl_diag_set(FTL_ERR_INVALID, "%s is NULL: pass a struct whose struct_size is sizeof(%s)", type, type);
	char fix[160];
	snprintf(fix, sizeof(fix), "set struct_size = sizeof(%s) before the call (%s x = {.struct_size = sizeof x})",
		 type, type);
	ftl_err err = check_size(size_of(out), oldest, full_size, type, "writes", fix);
	if (err)
		return err;
	ftl_sized_narrow(full, out);
	return FTL_OK;
}

void ftl_sized_fill(void *out, size_t size, const void *full, size_t full_size)
{
	size_t n = size < full_size ? size : full_size;
	if (n >= sizeof(size_t))
		memcpy(out, full, n);
	if (size >= sizeof(size_t))
		memcpy(out, &size, sizeof(size_t));
}
