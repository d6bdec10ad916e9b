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
	[FTL_U8] = "u8", [FTL_I8] = "i8", [FTL_BOOL] = "bool",
};

const char *const ftl_reduce_op_strs[FTL_REDUCE_OP_MAX] = {
	[FTL_SUM] = "sum", [FTL_AVG] = "avg", [FTL_MIN] = "min", [FTL_MAX] = "max",
	[FTL_PROD] = "prod", [FTL_BAND] = "band", [FTL_BOR] = "bor", [FTL_BXOR] = "bxor",
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
		[FTL_U8] = 1, [FTL_I8] = 1, [FTL_BOOL] = 1,
	};
	if ((unsigned)dtype >= FTL_DTYPE_MAX)
		return 0;
	return sizes[dtype];
}

static bool is_float(ftl_dtype dtype)
{
	return dtype == FTL_F32 || dtype == FTL_F64 || dtype == FTL_F16 || dtype == FTL_BF16;
}

int ftl_reduce_op_accepts(ftl_reduce_op op, ftl_dtype dtype)
{
	if ((unsigned)op >= FTL_REDUCE_OP_MAX || (unsigned)dtype >= FTL_DTYPE_MAX)
		return 0;
	if (op == FTL_BAND || op == FTL_BOR || op == FTL_BXOR)
		return !is_float(dtype);
	return !(op == FTL_AVG && dtype == FTL_BOOL);
}
