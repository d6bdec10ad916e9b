/* What an output struct's size stamp promises a program built against an older header: the library fills
 * the fields that header knew and writes not one byte past its struct_size. Each test keeps a frozen copy of
 * the struct as first stamped (0.3.2), with a guard of pattern bytes after it, and lets the library fill
 * it: the day the struct grows, a library that forgot to accept the old size (its "oldest" bound) or that
 * writes the new fields regardless fails here. */
#ifndef FTL_TESTS_OLDER_LAYOUT_H
#define FTL_TESTS_OLDER_LAYOUT_H

#include <stddef.h>
#include <string.h>

#define OLDER_LAYOUT_PATTERN 0x5a
#define OLDER_LAYOUT_GUARD 64

/* Fills s (size bytes, then the guard) with the pattern and stamps it with its size. */
static inline void older_layout_prepare(void *s, size_t size)
{
	memset(s, OLDER_LAYOUT_PATTERN, size + OLDER_LAYOUT_GUARD);
	memcpy(s, &size, sizeof size); /* struct_size opens every output struct */
}

/* Whether the guard after s's size bytes still holds the pattern. */
static inline int older_layout_guard_is_untouched(const void *s, size_t size)
{
	const unsigned char *b = (const unsigned char *)s + size;
	for (size_t i = 0; i < OLDER_LAYOUT_GUARD; i++)
		if (b[i] != OLDER_LAYOUT_PATTERN)
			return 0;
	return 1;
}

#endif
