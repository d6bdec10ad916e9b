/* The round-trip property shared by the fuzz targets (see fuzz_checks.h). */
#include "fuzz_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership/wire.h"
#include "base/diag.h"
#include "wire_equal.h"

/* More than any 4096-byte input can describe (every member takes a few bytes). */
#define FUZZ_MAX_MEMBERS 1024

void fuzz_require(int cond, const char *what, const char *file, int line)
{
	if (cond)
		return;
	fprintf(stderr, "%s:%d: property broken: %s\n", file, line, what);
	abort();
}

/* Encodes msgs[0..n) as one packet into buf (sized for the most a packet may hold); returns its length. */
static size_t encode_packet(const ftl_msg *msgs, size_t n, uint8_t *buf, size_t cap)
{
	ftl_wire_packet p;
	ftl_wire_packet_init(&p, buf, cap);
	for (size_t i = 0; i < n; i++)
		FUZZ_REQUIRE(ftl_wire_packet_add(&p, &msgs[i]) == 0); /* what decoded must be sendable */
	return ftl_wire_packet_finish(&p);
}

void fuzz_check_packet(const uint8_t *data, size_t size)
{
	enum { CAP = 6 + FTL_WIRE_MAX_MSGS * FTL_WIRE_MSG_MAX };
	static ftl_msg first[FTL_WIRE_MAX_MSGS], second[FTL_WIRE_MAX_MSGS];
	static uint8_t enc1[CAP], enc2[CAP];
	size_t n1, n2, len1, len2;
	ftl_diag_clear(); /* a refusal must say why */

	if (ftl_wire_decode_packet(data, size, first, FTL_WIRE_MAX_MSGS, &n1) != 0) {
		FUZZ_REQUIRE(ftl_diag_message()[0] != '\0' && n1 == 0);
		return;
	}
	len1 = encode_packet(first, n1, enc1, CAP);
	FUZZ_REQUIRE(ftl_wire_decode_packet(enc1, len1, second, FTL_WIRE_MAX_MSGS, &n2) == 0);
	FUZZ_REQUIRE(n1 == n2);
	for (size_t i = 0; i < n1; i++)
		FUZZ_REQUIRE(wire_msg_equal(&first[i], &second[i]));
	len2 = encode_packet(second, n2, enc2, CAP);
	FUZZ_REQUIRE(len1 == len2 && memcmp(enc1, enc2, len1) == 0);
}

void fuzz_check_push_pull(const uint8_t *data, size_t size)
{
	static ftl_pp_member first[FUZZ_MAX_MEMBERS], second[FUZZ_MAX_MEMBERS];
	ftl_push_pull hdr1, hdr2;
	uint8_t *enc1, *enc2;
	size_t len1, len2;
	ftl_diag_clear(); /* a refusal must say why */

	if (ftl_wire_decode_push_pull(data, size, &hdr1, first, FUZZ_MAX_MEMBERS) != 0) {
		FUZZ_REQUIRE(ftl_diag_message()[0] != '\0' && hdr1.count == 0);
		return;
	}
	FUZZ_REQUIRE(ftl_wire_encode_push_pull(&hdr1, first, &enc1, &len1) == 0);
	FUZZ_REQUIRE(ftl_wire_decode_push_pull(enc1, len1, &hdr2, second, FUZZ_MAX_MEMBERS) == 0);
	FUZZ_REQUIRE(wire_push_pull_equal(&hdr1, first, &hdr2, second));
	FUZZ_REQUIRE(ftl_wire_encode_push_pull(&hdr2, second, &enc2, &len2) == 0);
	FUZZ_REQUIRE(len1 == len2 && memcmp(enc1, enc2, len1) == 0);
	free(enc1);
	free(enc2);
}
