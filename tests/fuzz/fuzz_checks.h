/* What every fuzz target checks beyond "does not crash": a frame that decodes must re-encode, decode
 * again to the same thing, and encode to the same bytes a second time. A mismatch aborts, so libFuzzer
 * (or the replay driver) reports it like a crash. */
#ifndef FTL_TESTS_FUZZ_CHECKS_H
#define FTL_TESTS_FUZZ_CHECKS_H

#include <stddef.h>
#include <stdint.h>

/* The libFuzzer entry point each target defines; the replay driver calls it too. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decodes data as a compound packet; when it decodes, checks the round-trip property. */
void fuzz_check_packet(const uint8_t *data, size_t size);
/* The same for a push-pull frame. */
void fuzz_check_push_pull(const uint8_t *data, size_t size);

/* Aborts with a message naming the broken property. */
#define FUZZ_REQUIRE(cond) fuzz_require((cond), #cond, __FILE__, __LINE__)
void fuzz_require(int cond, const char *what, const char *file, int line);

#endif
