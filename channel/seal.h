/* The secure peer channel's seal: the one place where bytes one agent sends another are sealed, and where
 * bytes another agent sent are opened, for both transports: UDP datagrams (gossip) and TCP frames
 * (push-pull and rendezvous). The protocol cores (membership/, rendezvous/) produce and take plaintext
 * only; the key state is the keyring (membership/keyring.h), which key operations change cluster-wide.
 *
 * Wire forms (unchanged from the agents before this unit, so mixed versions still talk):
 *   datagram: the keyring's sealed layout, at most FTL_UDP_PACKET_MAX bytes;
 *   frame:    the TCP frame of tcp_frame.h whose body is the keyring's sealed layout (and, for a frame too
 *             large for a stranger, the sealed header before it).
 * Opening never trusts a length from the peer for more than what arrived. What does not open is counted
 * by the keyring (by reason) and by the caller (by path). */
#ifndef FTL_CHANNEL_SEAL_H
#define FTL_CHANNEL_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "membership/keyring.h"
#include "tcp_frame.h"
#include "membership/wire.h"

/* The most plaintext one datagram carries once sealed into FTL_UDP_PACKET_MAX bytes. */
#define FTL_SEAL_DATAGRAM_PLAIN_MAX (FTL_UDP_PACKET_MAX - FTL_KEYRING_OVERHEAD)

/* Seals plain[0..len) (len <= FTL_SEAL_DATAGRAM_PLAIN_MAX) into out[FTL_UDP_PACKET_MAX]; FTL_ERR_INVALID
 * if too long. */
ftl_err ftl_seal_datagram(ftl_keyring *kr, const uint8_t *plain, size_t len, uint8_t *out, size_t *out_len);
/* Opens a received datagram into plain[FTL_UDP_PACKET_MAX]; -1 when it does not open (counted). */
int ftl_open_datagram(ftl_keyring *kr, const uint8_t *in, size_t len, uint8_t *plain, size_t *plain_len);

/* The bytes to send for a frame of kind carrying plain[0..len) sealed: malloc'd into *out. FTL_ERR_SYSTEM
 * when out of memory, FTL_ERR_INVALID when too large for any frame. */
ftl_err ftl_seal_frame(ftl_keyring *kr, uint8_t kind, const uint8_t *plain, size_t len, uint8_t **out,
		       size_t *out_len);
/* Opens the body of a frame ftl_tcp_read returned into *plain (malloc'd, the caller frees); -1 when it
 * does not open (counted) or out of memory. */
int ftl_open_frame(ftl_keyring *kr, const uint8_t *body, size_t len, uint8_t **plain, size_t *plain_len);

#endif
