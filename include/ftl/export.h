/* FTL_API marks what libftl.so exports. The library is built with hidden visibility, so everything
 * without this mark (the membership core, the codec, the agent's insides) stays private to it and
 * cannot clash with the embedding program's symbols. */
#ifndef FTL_EXPORT_H
#define FTL_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define FTL_API __attribute__((visibility("default")))
#else
#define FTL_API
#endif

/* FTL_DEPRECATED(fix): a name kept exported for programs built against an older header, whose new code
 * should call fix instead (the compiler says so). Placed after the declarator. */
#if defined(__GNUC__) || defined(__clang__)
#define FTL_DEPRECATED(fix) __attribute__((deprecated("use " fix)))
#else
#define FTL_DEPRECATED(fix)
#endif

#endif /* FTL_EXPORT_H */
