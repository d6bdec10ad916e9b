/* The wire codec: ftl_msg <-> MessagePack (msgpack-c), and the compound packet that carries several
 * messages in one UDP datagram.
 *
 * Packet layout (before sealing by the keyring):
 *   byte 0      FTL_WIRE_VERSION
 *   byte 1..    a MessagePack array (always the 5-byte array32 header, so the count can be patched in
 *               place as messages are appended) of message maps.
 * A message is a MessagePack map with small unsigned-integer keys; key 0 is the message type. Unknown
 * keys are skipped so that versions can mix during a rolling upgrade; a missing required key, a value of
 * the wrong type, or a string/bin over its cap makes the message malformed.
 *
 * A push-pull frame (TCP, possibly large) has its own layout: version byte, then a map for the header
 * with key 16 holding the array of member maps. Its member count is capped by the caller's array.
 *
 * Every decoder is bounded: it reads only [buf, buf+len), allocates nothing sized by the input beyond
 * msgpack-c's zone for one object of at most len bytes, and returns -1 for malformed input with a static
 * reason in the calling thread's diag (base/diag.h), which the caller may log; it counts the drop.
 * The encoders return -1 as well, and leave the diag alone: "does not fit" is the packet builder's
 * everyday answer (the rumor waits for the next packet), not an error; a caller that must report a failed
 * encode (push-pull) says what it was. */
#ifndef FTL_MEMBERSHIP_WIRE_H
#define FTL_MEMBERSHIP_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "message.h"

#define FTL_WIRE_VERSION 1
/* Largest sealed datagram we send; the plaintext budget is this less the keyring's overhead. */
#define FTL_UDP_PACKET_MAX 1400
/* Most messages one compound packet may carry; more is malformed. */
#define FTL_WIRE_MAX_MSGS 64
/* Largest encoding of one message (an alive with full metadata fits). */
#define FTL_WIRE_MSG_MAX 512

/* Encodes one message map into buf. Returns 0 and sets *len, or -1 if cap is too small or the message is
 * one a decoder would refuse (unknown type, empty or unterminated name/address, meta_len > FTL_META_MAX). */
int ftl_wire_encode_msg(const ftl_msg *msg, uint8_t *buf, size_t cap, size_t *len);

/* Builds a compound packet incrementally. The caller owns buf. */
typedef struct ftl_wire_packet {
	uint8_t *buf;
	size_t cap;
	size_t len;      /* bytes used so far */
	uint32_t count;  /* messages added so far */
} ftl_wire_packet;

/* Starts a packet: writes the version byte and an array32 header. cap must be at least 6. */
void ftl_wire_packet_init(ftl_wire_packet *p, uint8_t *buf, size_t cap);
/* Appends one already-encoded message map (from ftl_wire_encode_msg). Returns 0, or -1 if it does not
 * fit (the packet is unchanged) or the packet already holds FTL_WIRE_MAX_MSGS messages. */
int ftl_wire_packet_add_raw(ftl_wire_packet *p, const uint8_t *msg, size_t len);
/* Encodes and appends one message; same result as add_raw, and -1 where ftl_wire_encode_msg refuses. */
int ftl_wire_packet_add(ftl_wire_packet *p, const ftl_msg *msg);
/* Bytes free for another message. */
size_t ftl_wire_packet_room(const ftl_wire_packet *p);
/* Patches the count in and returns the packet's length. */
size_t ftl_wire_packet_finish(ftl_wire_packet *p);

/* Decodes a compound packet into out[0..max). Returns 0 and sets *n, or -1 with the reason in the diag (a
 * static string naming the problem: "truncated", "bad version", "too many messages", "name too long", ...).
 * A packet with more than max messages is malformed. A message of an unknown type (from a newer peer) is
 * skipped: it is not in out[] or *n and is not an error, but counts against max. */
int ftl_wire_decode_packet(const uint8_t *buf, size_t len, ftl_msg *out, size_t max, size_t *n);

/* Encodes a push-pull frame into a malloc'd buffer (*buf, *len; the caller frees it); returns 0, or -1 on
 * allocation failure or a field a decoder would refuse (as ftl_wire_encode_msg, or a state out of range). */
int ftl_wire_encode_push_pull(const ftl_push_pull *hdr, const ftl_pp_member *members, uint8_t **buf,
			      size_t *len);
/* Decodes a push-pull frame; at most max members are accepted (more is malformed). Returns 0 or -1
 * with the reason in the diag. hdr->count tells how many of members[] were filled. */
int ftl_wire_decode_push_pull(const uint8_t *buf, size_t len, ftl_push_pull *hdr, ftl_pp_member *members,
			      size_t max);

#endif
