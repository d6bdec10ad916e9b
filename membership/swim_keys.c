/* Cluster-wide keyring changes: a key op is applied where it is made and gossiped like a rumor; every
 * node applies each op once (by its serial) and passes it on. "use" installs the key first, so a node
 * that hears "use" before "install" still ends up right; "remove" of a key that is still primary here
 * fails and is counted (rotate in order and let each step reach everyone). */
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

static int apply(ftl_swim *s, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE], const char **err)
{
	ftl_keyring *kr = s->keyring;
	int rc = -1;
	*err = NULL;
	if (ftl_keyring_is_insecure(kr))
		*err = "the cluster runs without encryption (insecure mode): there are no keys to change";
	else if (op == FTL_KEY_INSTALL && (rc = ftl_keyring_install(kr, key)) != 0)
		*err = "the keyring is full: remove an old key first";
	else if (op == FTL_KEY_USE && ((rc = ftl_keyring_install(kr, key)) != 0 || (rc = ftl_keyring_use(kr, key)) != 0))
		*err = "the key could not be installed (keyring full)";
	else if (op == FTL_KEY_REMOVE && (rc = ftl_keyring_remove(kr, key)) != 0)
		*err = "that key is the primary or is not installed: `use` another key first";
	if (rc == 0)
		s->stats.key_ops_applied++;
	else
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

int ftl_swim_key_op(ftl_swim *s, int64_t now_us, ftl_key_op_kind op, const uint8_t key[FTL_KEY_SIZE],
		    const char **err)
{
	if ((unsigned)op >= FTL_KEY_OP_MAX) {
		*err = "unknown key operation";
		return -1;
	}
	if (apply(s, op, key, err) != 0)
		return -1;
	ftl_msg msg = {.type = FTL_MSG_KEY_OP};
	msg.u.key_op.serial = ftl_rng_next(&s->rng);
	msg.u.key_op.op = (uint32_t)op;
	strcpy(msg.u.key_op.from, s->name);
	msg.u.key_op.key_len = FTL_KEY_SIZE;
	memcpy(msg.u.key_op.key, key, FTL_KEY_SIZE);
	is_seen(s, msg.u.key_op.serial);
	gossip_op(s, &msg);
	return 0;
}

void ftl_swim_on_key_op(ftl_swim *s, int64_t now_us, const ftl_msg_key_op *k)
{
	if (k->key_len != FTL_KEY_SIZE || k->op >= FTL_KEY_OP_MAX || is_seen(s, k->serial))
		return;
	const char *err;
	apply(s, (ftl_key_op_kind)k->op, k->key, &err);
	ftl_msg msg = {.type = FTL_MSG_KEY_OP};
	msg.u.key_op = *k;
	gossip_op(s, &msg);
}
