/* The seal of the peer channel (seal.h): datagrams and frame bodies, both by the keyring. */
#include "seal.h"

#include <stdlib.h>

ftl_err ftl_seal_datagram(ftl_keyring *kr, const uint8_t *plain, size_t len, uint8_t *out, size_t *out_len)
{
	if (len > FTL_SEAL_DATAGRAM_PLAIN_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "datagram of %zu bytes: at most %d fit sealed in one packet", len,
				    FTL_SEAL_DATAGRAM_PLAIN_MAX);
	return ftl_keyring_seal(kr, plain, len, out, FTL_UDP_PACKET_MAX, out_len);
}

int ftl_open_datagram(ftl_keyring *kr, const uint8_t *in, size_t len, uint8_t *plain, size_t *plain_len)
{
	return ftl_keyring_open(kr, in, len, plain, FTL_UDP_PACKET_MAX, plain_len, NULL);
}

ftl_err ftl_seal_frame(ftl_keyring *kr, uint8_t kind, const uint8_t *plain, size_t len, uint8_t **out,
		       size_t *out_len)
{
	if (len > FTL_TCP_FRAME_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "%zu bytes to seal: a frame carries at most %u", len,
				    FTL_TCP_FRAME_MAX);
	uint8_t *sealed = malloc(len + FTL_KEYRING_OVERHEAD);
	if (!sealed)
		return ftl_diag_set(FTL_ERR_SYSTEM, "out of memory sealing %zu bytes", len);
	size_t sealed_len;
	ftl_err err = ftl_keyring_seal(kr, plain, len, sealed, len + FTL_KEYRING_OVERHEAD, &sealed_len);
	if (!err)
		err = ftl_tcp_frame_encode(kr, kind, sealed, sealed_len, out, out_len);
	free(sealed);
	return err;
}

int ftl_open_frame(ftl_keyring *kr, const uint8_t *body, size_t len, uint8_t **plain, size_t *plain_len)
{
	/* The plaintext is never longer than what arrived: the buffer is sized by the bytes, not a claim. */
	uint8_t *p = malloc(len + 1);
	if (!p || ftl_keyring_open(kr, body, len, p, len + 1, plain_len, NULL) != 0) {
		free(p);
		return -1;
	}
	*plain = p;
	return 0;
}
