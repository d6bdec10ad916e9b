/* Fuzz target: ftl_wire_decode_packet, the first thing every UDP datagram meets after the keyring. */
#include "fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_check_packet(data, size);
	return 0;
}
