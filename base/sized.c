/* The size-stamped copies of sized.h. */
#include "sized.h"

#include <string.h>

static size_t size_of(const void *s) { return *(const size_t *)s; }

ftl_err ftl_sized_widen(const void *in, void *full, size_t full_size, size_t oldest, const char *type,
			const char *defaults)
{
	if (!in)
		return ftl_diag_set(FTL_ERR_INVALID, "%s is NULL: start from %s()", type, defaults);
	size_t n = size_of(in);
	if (n < oldest || n > full_size)
		return ftl_diag_set(FTL_ERR_INVALID,
				    "%s has struct_size %zu, which this libftl does not know (it reads %zu to %zu): "
				    "start from %s(), which sets it, and build against the headers of the libftl "
				    "you run with",
				    type, n, oldest, full_size, defaults);
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
	size_t n = size_of(out);
	if (n < oldest || n > full_size)
		return ftl_diag_set(FTL_ERR_INVALID,
				    "%s has struct_size %zu, which this libftl does not know (it writes %zu to %zu): set "
				    "struct_size = sizeof(%s) before the call (%s x = {.struct_size = sizeof x}), and build "
				    "against the headers of the libftl you run with",
				    type, n, oldest, full_size, type, type);
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
