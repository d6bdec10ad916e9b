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

#endif /* FTL_EXPORT_H */
