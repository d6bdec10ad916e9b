/* Cluster-wide keyring changes: a key op is applied where it is made and gossiped like a rumor; every
 * node applies each op once (by its serial) and passes it on. "use" installs the key first, so a node
 * that hears "use" before "install" still ends up right; "remove" of a key that is still primary here
 * fails and is counted (rotate in order and let each step reach everyone).
 *
 * Where an op is made, what would cut members off is refused before anything changes: "use" of a key that
 * is not installed here, and what the key census forbids (swim_key_census.c: "use" of a key some live
 * member lacks, "remove" of a key some live member still seals with).
 *
 * Replays. A captured op is still sealed with a key the cluster holds, and a node remembers only the
 * serials it has heard itself, so serials alone would let an old "install K2" put a removed K2 back at a
 * node started after the removal. Key state therefore has a cluster-wide version: each op carries one more
 * than the version where it was made, push-pull carries every node's version (the larger wins), and an op
 * older than the version a node holds never applies (counted as key_ops_stale). A node that joins through
 * seeds applies no op before its first push-pull has told it the version. Ops from agents before versions
 * (version 0) apply only while the cluster has none. Replaying the newest op itself redoes what every
 * node already did. */
#include "swim_internal.h"

#include <stdio.h>
#include <string.h>

static bool is_seen(ftl_swim *s, uint64_t serial)
{
	for (int i = 0; i < s->n_key_serials && i < FTL_SWIM_KEY_SERIALS; i++)
		if (s->key_serials[i] == serial)
			return true;
	s->key_serials[s->n_key_serials++ % FTL_SWIM_KEY_SERIALS] = serial;
	return false;
}

/* Changes the keyring here; FTL_ERR_INVALID with the keyring's reason in the diag. */
static ftl_err apply(ftl_swim *s, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE])
{
	ftl_keyring *kr = s->keyring;
	ftl_err rc;
	if (ftl_keyring_is_insecure(kr))
		rc = ftl_diag_set(FTL_ERR_INVALID,
				  "the cluster runs without encryption (insecure mode): there are no keys to change");
	else if (op == FTL_KEY_REMOVE)
		rc = ftl_keyring_remove(kr, key);
	else {
		rc = ftl_keyring_install(kr, key); /* "use" installs first (see the top of this file) */
		if (rc == FTL_OK && op == FTL_KEY_USE)
			rc = ftl_keyring_use(kr, key);
	}
	if (rc == FTL_OK) {
		s->stats.key_ops_applied++;
		ftl_swim_sync_key_fps(s);
	} else
		s->stats.key_ops_failed++;
	return rc;
}

static void gossip_op(ftl_swim *s, const ftl_msg *msg)
{
	char about[FTL_NAME_MAX];
	snprintf(about, sizeof(about), "#key-op-%016llx", (unsigned long long)msg->u.key_op.serial);
	uint8_t buf[FTL_WIRE_MSG_MAX];
	size_t len;
	if (ftl_wire_encode_msg(msg, buf, sizeof(buf), &len) == 0)
		ftl_bcast_push(&s->bcast, about, buf, len);
}

static bool is_installed(const ftl_keyring *kr, const uint8_t key[FTL_KEY_SIZE])
{
	uint8_t keys[FTL_KEYRING_MAX_KEYS][FTL_KEY_SIZE];
	size_t n = ftl_keyring_list(kr, keys, FTL_KEYRING_MAX_KEYS);
	for (size_t i = 0; i < n; i++)
		if (memcmp(keys[i], key, FTL_KEY_SIZE) == 0)
			return true;
	return false;
}

ftl_err ftl_swim_key_op(ftl_swim *s, int64_t now_us, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE])
{
	if ((unsigned)op >= FTL_KEY_OP_MAX)
		return ftl_diag_set(FTL_ERR_INVALID, "unknown key operation");
	if (!s->is_key_version_known)
		return ftl_diag_set(FTL_ERR_INVALID, "this node has not exchanged state with the cluster yet (no "
				    "push-pull): try again once it has joined");
	if (op == FTL_KEY_USE && !ftl_keyring_is_insecure(s->keyring) && !is_installed(s->keyring, key))
		return ftl_diag_set(FTL_ERR_INVALID,
				    "that key is not installed: `ftlctl keys install KEY` first, and let it reach every "
				    "member (`ftlctl keys list`) before `keys use`");
	if (ftl_swim_key_op_cuts_off(s, op, key))
		return FTL_ERR_INVALID;
	ftl_err err = apply(s, op, key);
	if (err)
		return err;
	ftl_msg msg = {.type = FTL_MSG_KEY_OP};
	msg.u.key_op.version = ++s->key_version;
	msg.u.key_op.serial = ftl_rng_next(&s->rng);
	msg.u.key_op.op = (uint32_t)op;
	strcpy(msg.u.key_op.from, s->name);
	msg.u.key_op.key_len = FTL_KEY_SIZE;
	memcpy(msg.u.key_op.key, key, FTL_KEY_SIZE);
	is_seen(s, msg.u.key_op.serial);
	gossip_op(s, &msg);
	return 0;
}

/* Whether an op of this version may apply here (see the top of this file). */
static bool is_current(const ftl_swim *s, uint64_t version)
{
	if (!s->is_key_version_known)
		return false;
	return version == 0 ? s->key_version == 0 : version >= s->key_version;
}

void ftl_swim_learn_key_version(ftl_swim *s, uint64_t version)
{
	if (version > s->key_version)
		s->key_version = version;
	s->is_key_version_known = true;
}

void ftl_swim_on_key_op(ftl_swim *s, int64_t now_us, const ftl_msg_key_op *k)
{
	if (k->key_len != FTL_KEY_SIZE || k->op >= FTL_KEY_OP_MAX)
		return;
	if (!is_current(s, k->version)) {
		s->stats.key_ops_stale++;
		return;
	}
	if (is_seen(s, k->serial))
		return;
	if (k->version > s->key_version)
		s->key_version = k->version;
	apply(s, (ftl_key_op_kind)k->op, k->key); /* counted as failed when it cannot apply here */
	ftl_msg msg = {.type = FTL_MSG_KEY_OP};
	msg.u.key_op = *k;
	gossip_op(s, &msg);
}
