/* Names for the membership enums, for logs, ftlctl and test messages. */
#include "message.h"

const char *const ftl_member_state_strs[FTL_MEMBER_STATE_MAX] = {"alive", "suspect", "dead", "left"};

const char *const ftl_msg_type_strs[FTL_MSG_TYPE_MAX] = {
	"ping", "ping_req", "ack", "nack", "alive", "suspect", "dead", "left", "key_op", "name_taken",
};

const char *const ftl_key_op_strs[FTL_KEY_OP_MAX] = {"install", "use", "remove"};
