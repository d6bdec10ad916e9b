/* Public configuration structs that keep their ABI as they grow: each starts with struct_size, the size
 * the caller's header gave it (set by the struct's default macro), and the library reads and writes only
 * that many bytes. A program built against an older header (a smaller struct) gets defaults for the
 * fields it does not know; one built against a newer header than the library is refused, since the
 * library cannot read fields it has never heard of. Growth happens only at a struct's end. */
#ifndef FTL_BASE_SIZED_H
#define FTL_BASE_SIZED_H

#include <stddef.h>

#include "base/diag.h"

/* Copies the caller's struct in (its struct_size bytes, the size field aside) over full, a defaulted
 * struct of this library's size full_size. FTL_ERR_INVALID, with the diag naming type and defaults (the
 * function that sets struct_size), when in is NULL or its size is under oldest (the first size-stamped
 * layout) or over full_size. */
ftl_err ftl_sized_widen(const void *in, void *full, size_t full_size, size_t oldest, const char *type,
			const char *defaults);

/* Copies full back into out, only out's struct_size bytes (the size field aside). */
void ftl_sized_narrow(const void *full, void *out);

/* An output struct (the library fills it): full, this library's whole struct, copied into out, only out's
 * struct_size bytes (the size field aside). FTL_ERR_INVALID, with the diag naming the type and the fix,
 * and nothing written, when out is NULL or its struct_size is under oldest (unset, most often) or over
 * full_size (a newer header than this library's). */
ftl_err ftl_sized_out(const void *full, void *out, size_t full_size, size_t oldest, const char *type);

/* A defaulted struct of this library's size full_size into out, a struct of the caller's size: the first
 * min(size, full_size) bytes, with struct_size = size (widen judges it later). */
void ftl_sized_fill(void *out, size_t size, const void *full, size_t full_size);

#endif
