/* Fuzz target: ftl_wire_decode_push_pull, the full-state frame a joining or anti-entropy peer sends. */
#include "fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_check_push_pull(data, size);
	return 0;
}
