/* Fuzz target: rdv_decode, the first thing every rendezvous message meets after the keyring. Beyond "does
 * not crash": what decodes must re-encode, decode again to the same message, and encode to the same bytes. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_checks.h"
#include "rendezvous/rdv_msg.h"
#include "rdv_samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rdv_msg first, second;
	uint8_t *enc1, *enc2;
	size_t len1, len2;
	ftl_diag_clear(); /* a refusal must say why */

	if (rdv_decode(data, size, &first) != 0) {
		FUZZ_REQUIRE(ftl_diag_message()[0] != '\0' && first.view.members == NULL);
		return 0;
	}
	FUZZ_REQUIRE(first.view.n <= FTL_RDV_MAX_MEMBERS && first.view.blob_len <= FTL_RDV_BLOB_MAX);
	FUZZ_REQUIRE(rdv_encode(&first, &enc1, &len1) == 0); /* what decoded must be sendable */
	FUZZ_REQUIRE(rdv_decode(enc1, len1, &second) == 0);
	FUZZ_REQUIRE(rdv_msg_equal(&first, &second));
	FUZZ_REQUIRE(rdv_encode(&second, &enc2, &len2) == 0);
	FUZZ_REQUIRE(len1 == len2 && memcmp(enc1, enc2, len1) == 0);
	free(enc1);
	free(enc2);
	rdv_msg_free(&first);
	rdv_msg_free(&second);
	return 0;
}
