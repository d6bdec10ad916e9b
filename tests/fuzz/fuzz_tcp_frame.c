/* Fuzz target: the gossip port's TCP frame reader (channel/tcp_frame.c), the first thing that reads what a
 * stranger sends. The input is the byte stream of one connection, read as the transport reads it (step
 * after step, each header skipped). Properties: every step stays inside what arrived; what the reader asks
 * to buffer is never more than the limit for what the peer has proved (FTL_TCP_UNAUTH_MAX before a sealed
 * header opens, the announced frame after); at most one header opens per connection; a frame it returns
 * lies inside the input, and a frame of that kind and body encodes and reads back the same. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_checks.h"
#include "fuzz_fixture.h"
#include "channel/tcp_frame.h"

static void read_stream(ftl_keyring *kr, const uint8_t *data, size_t size)
{
	ftl_tcp_reader r = {0};
	size_t off = 0;
	int headers = 0;
	for (;;) {
		ftl_tcp_result res;
		bool was_announced = r.is_announced;
		ftl_tcp_step st = ftl_tcp_read(&r, kr, data + off, size - off, &res);
		size_t limit = FTL_TCP_PREFIX + (was_announced ? r.want_len : FTL_TCP_UNAUTH_MAX);
		switch (st) {
		case FTL_TCP_NEED_MORE:
			FUZZ_REQUIRE(res.need > size - off && res.need <= limit);
			return;
		case FTL_TCP_SKIP:
			FUZZ_REQUIRE(!was_announced && ++headers == 1);
			FUZZ_REQUIRE(res.used <= size - off && r.want_len >= 2 && r.want_len <= FTL_TCP_FRAME_MAX);
			off += res.used;
			continue;
		case FTL_TCP_DROP:
			FUZZ_REQUIRE(res.why < FTL_TCP_DROP_MAX);
			return;
		case FTL_TCP_FRAME: {
			FUZZ_REQUIRE(res.used <= size - off && res.used <= limit);
			FUZZ_REQUIRE(res.body_len + FTL_TCP_PREFIX == res.used && res.body_len > 0);
			FUZZ_REQUIRE(res.kind == FTL_FRAME_PUSH_PULL || res.kind == FTL_FRAME_RENDEZVOUS);
			const uint8_t *body = data + off + FTL_TCP_PREFIX;
			uint8_t *out;
			size_t out_len;
			FUZZ_REQUIRE(ftl_tcp_frame_encode(kr, res.kind, body, res.body_len, &out, &out_len) == 0);
			ftl_tcp_reader again = {0};
			ftl_tcp_result back;
			FUZZ_REQUIRE(ftl_tcp_read(&again, kr, out, out_len, &back) == FTL_TCP_FRAME);
			FUZZ_REQUIRE(back.body_len == res.body_len &&
				     memcmp(out + FTL_TCP_PREFIX, body, res.body_len) == 0);
			free(out);
			return;
		}
		}
		FUZZ_REQUIRE(!"unknown step");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static ftl_keyring *secure, *insecure;
	if (secure == NULL) {
		uint8_t key[FTL_KEY_SIZE];
		fuzz_fixture_key(key);
		secure = ftl_keyring_new(FUZZ_CLUSTER, key);
		insecure = ftl_keyring_new_insecure(FUZZ_CLUSTER);
		FUZZ_REQUIRE(secure != NULL && insecure != NULL);
	}
	read_stream(secure, data, size);
	read_stream(insecure, data, size);
	return 0;
}
