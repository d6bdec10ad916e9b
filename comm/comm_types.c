/* comm_types: names and sizes of the public enums (error codes, element types, reductions, backends),
 * kept apart so that every module can print them without pulling in a backend. */
#include "comm.h"

const char *const ftl_err_strs[FTL_ERR_MAX] = {
	[FTL_OK] = "ok",
	[FTL_ERR_INVALID] = "invalid argument",
	[FTL_ERR_PEER_LOST] = "peer lost",
	[FTL_ERR_ABORTED] = "aborted",
	[FTL_ERR_TIMEOUT] = "timed out",
	[FTL_ERR_SYSTEM] = "system error",
	[FTL_ERR_BACKEND] = "backend error",
	[FTL_ERR_UNSUPPORTED] = "not supported",
	[FTL_ERR_REFUSED] = "refused by the job",
	[FTL_ERR_STATE_LOST] = "state lost",
};

const char *const ftl_dtype_strs[FTL_DTYPE_MAX] = {
	[FTL_F32] = "f32", [FTL_F64] = "f64", [FTL_F16] = "f16",
	[FTL_BF16] = "bf16", [FTL_I32] = "i32", [FTL_I64] = "i64",
};

const char *const ftl_reduce_op_strs[FTL_REDUCE_OP_MAX] = {
	[FTL_SUM] = "sum", [FTL_AVG] = "avg", [FTL_MIN] = "min", [FTL_MAX] = "max",
};

const char *const ftl_comm_backend_strs[FTL_COMM_BACKEND_MAX] = {
	[FTL_COMM_TCP] = "tcp", [FTL_COMM_NCCL] = "nccl",
};

const char *ftl_strerror(ftl_err err)
{
	if ((unsigned)err >= FTL_ERR_MAX)
		return "unknown error";
	return ftl_err_strs[err];
}

size_t ftl_dtype_size(ftl_dtype dtype)
{
	static const size_t sizes[FTL_DTYPE_MAX] = {
		[FTL_F32] = 4, [FTL_F64] = 8, [FTL_F16] = 2, [FTL_BF16] = 2, [FTL_I32] = 4, [FTL_I64] = 8,
	};
	if ((unsigned)dtype >= FTL_DTYPE_MAX)
		return 0;
	return sizes[dtype];
}
