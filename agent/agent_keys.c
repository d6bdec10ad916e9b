/* The control socket's `keys` requests: the keyring listed with its census (which live members hold each
 * key, key_census.h), and key changes handed to the node (node.h), whose membership core applies, refuses
 * or gossips them (swim_keys.c). */
#include "agent_internal.h"

#include <string.h>

#include <sodium.h>

#include "base/log.h"

#define LACKING_NAMES_MAX 16 /* names listed per key; the count says how many more */

static json_t *lacking_json(ftl_agent *a, const uint8_t fp[FTL_KEY_FP_SIZE])
{
	const char *names[LACKING_NAMES_MAX];
	uint32_t n = ftl_node_key_lacking(a->node, fp, names, LACKING_NAMES_MAX);
	json_t *arr = json_array();
	for (uint32_t i = 0; i < n && i < LACKING_NAMES_MAX; i++)
		json_array_append_new(arr, json_string(names[i]));
	return arr;
}

/* One census row: the key (null when this member does not hold it), its fingerprint, N of N/M, how many
 * seal with it, and who lacks it. */
static json_t *census_row_json(ftl_agent *a, const ftl_key_census_row *row, uint8_t keys[][FTL_KEY_SIZE],
			       size_t n_keys)
{
	char hex[FTL_KEY_FP_HEX_SIZE], b64[64];
	ftl_key_fp_to_hex(row->fp, hex);
	json_t *key = json_null();
	if (row->local >= 0 && (size_t)row->local < n_keys) {
		ftl_key_to_base64(keys[row->local], b64, sizeof(b64));
		key = json_string(b64);
	}
	return json_pack("{s:o, s:s, s:I, s:I, s:o}", "key", key, "fingerprint", hex, "holders",
			 (json_int_t)row->holders, "primary_of", (json_int_t)row->primaries, "lacking",
			 lacking_json(a, row->fp));
}

static json_t *list_json(ftl_agent *a)
{
	uint8_t keys[FTL_KEYRING_MAX_KEYS][FTL_KEY_SIZE];
	size_t n = ftl_keyring_list(a->keyring, keys, FTL_KEYRING_MAX_KEYS);
	if (n > FTL_KEYRING_MAX_KEYS)
		n = FTL_KEYRING_MAX_KEYS;
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		char b64[64];
		ftl_key_to_base64(keys[i], b64, sizeof(b64));
		json_array_append_new(arr, json_string(b64));
	}
	ftl_key_census c;
	ftl_node_key_census(a->node, &c);
	json_t *rows = json_array();
	for (size_t i = 0; i < c.n_rows; i++)
		json_array_append_new(rows, census_row_json(a, &c.rows[i], keys, n));
	sodium_memzero(keys, sizeof(keys));
	return json_pack("{s:b, s:o, s:I, s:I, s:b, s:o}", "ok", 1, "keys", arr, "members", (json_int_t)c.members,
			 "unreported", (json_int_t)c.unreported, "truncated", c.is_truncated, "census", rows);
}

json_t *ftl_agent_keys_json(ftl_agent *a, const json_t *req)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	if (!op)
		return ftl_control_refusal("keys needs \"op\": list, install, use or remove");
	if (strcmp(op, "list") == 0)
		return list_json(a);
	int kind = -1;
	for (int i = 0; i < FTL_KEY_OP_MAX; i++)
		if (strcmp(op, ftl_key_op_strs[i]) == 0)
			kind = i;
	if (kind < 0)
		return ftl_control_refusal("unknown keys op: expected list, install, use or remove");
	const char *text = json_string_value(json_object_get(req, "key"));
	uint8_t key[FTL_KEY_SIZE];
	if (!text || ftl_key_from_base64(text, key) != 0)
		return ftl_control_refusal("\"key\" must be the base64 of 32 bytes (ftlctl keygen makes one)");
	ftl_err rc = ftl_node_key_op(a->node, ftl_agent_now_us(a), (ftl_key_op_kind)kind, key);
	sodium_memzero(key, sizeof(key));
	ftl_agent_fed(a);
	if (rc != FTL_OK)
		return ftl_control_refusal(ftl_diag_message());
	ftl_log(&a->set.log, FTL_LOG_INFO, "keys", FTL_MSG("key %s applied here and gossiped to the cluster", op),
		FTL_F_STR("op", op));
	return ftl_control_ok();
}
