/* The checkpoint file image (layout in checkpoint.h) as pure functions over memory, so that every way a
 * file can be damaged is testable without a disk. A file is trusted only when its length is exactly what
 * its header declares and its checksum (the kind its header names: XXH3-128, or BLAKE2b-256 for old
 * files and by choice) matches: a truncated file, a flipped byte or a half-written temp can then never
 * load as valid. */
#include "checkpoint.h"

#include <assert.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}


const char *const ftl_ckpt_sum_kind_strs[FTL_CKPT_SUM_MAX] = {"none", "blake2b", "xxh3"};

static size_t fixed_bytes(uint32_t version) { return version == 1 ? FTL_CKPT_FIXED_BYTES_V1 : FTL_CKPT_FIXED_BYTES; }

size_t ftl_ckpt_header_bytes(const ftl_ckpt_header *h)
{
	return fixed_bytes(h->version) + (size_t)h->n_buffers * FTL_CKPT_ENTRY_BYTES;
}

size_t ftl_ckpt_sum_bytes(ftl_ckpt_sum_kind kind)
{
	return kind == FTL_CKPT_SUM_BLAKE2B ? 32 : kind == FTL_CKPT_SUM_XXH3 ? 16 : 0;
}

uint64_t ftl_ckpt_payload_offset(const ftl_ckpt_header *h, uint32_t i)
{
	uint64_t off = ftl_ckpt_header_bytes(h);
	for (uint32_t k = 0; k < i && k < h->n_buffers; k++)
		off += h->sizes[k];
	return off;
}

uint64_t ftl_ckpt_file_bytes(const ftl_ckpt_header *h)
{
	return ftl_ckpt_payload_offset(h, h->n_buffers) + h->save_len + ftl_ckpt_sum_bytes(h->sum_kind);
}

void ftl_ckpt_encode_header(const ftl_ckpt_header *h, uint8_t *image)
{
	assert(h->version == FTL_CKPT_VERSION && ftl_ckpt_sum_bytes(h->sum_kind) > 0);
	memset(image, 0, ftl_ckpt_header_bytes(h));
	memcpy(image, FTL_CKPT_MAGIC, sizeof(FTL_CKPT_MAGIC));
	put_u32(image + 8, FTL_CKPT_VERSION);
	put_u32(image + 12, h->n_buffers);
	put_u64(image + 16, h->step);
	put_u64(image + 24, h->view_epoch);
	put_u64(image + 32, h->data_epoch);
	put_u64(image + 40, h->sample_pos);
	put_u32(image + 48, h->world_size);
	put_u32(image + 52, (uint32_t)h->sum_kind);
	put_u64(image + 56, h->save_len);
	put_u64(image + 64, h->job_id);
	for (uint32_t i = 0; i < h->n_buffers; i++) {
		uint8_t *e = image + FTL_CKPT_FIXED_BYTES + (size_t)i * FTL_CKPT_ENTRY_BYTES;
		memcpy(e, h->names[i], strnlen(h->names[i], FTL_CKPT_NAME_BYTES - 1));
		put_u64(e + FTL_CKPT_NAME_BYTES, h->sizes[i]);
	}
}

void ftl_ckpt_checksum(ftl_ckpt_sum_kind kind, const uint8_t *data, size_t len, uint8_t out[FTL_CKPT_SUM_MAX_BYTES])
{
	assert(ftl_ckpt_sum_bytes(kind) > 0);
	if (kind == FTL_CKPT_SUM_BLAKE2B) {
		crypto_generichash(out, 32, data, len, NULL, 0);
		return;
	}
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
	memcpy(out, c.digest, sizeof(c.digest));
}

void ftl_ckpt_seal(const ftl_ckpt_header *h, uint8_t *image)
{
	size_t sum_at = (size_t)(ftl_ckpt_file_bytes(h) - ftl_ckpt_sum_bytes(h->sum_kind));
	ftl_ckpt_checksum(h->sum_kind, image, sum_at, image + sum_at);
}

/* Sizes from an untrusted header: the sum must not wrap around (-1 when it does: a decoder). */
static int declared_file_bytes(const ftl_ckpt_header *h, uint64_t *total)
{
	uint64_t sum = ftl_ckpt_header_bytes(h) + ftl_ckpt_sum_bytes(h->sum_kind);
	for (uint32_t i = 0; i <= h->n_buffers; i++) {
		uint64_t add = i < h->n_buffers ? h->sizes[i] : h->save_len;
		if (sum + add < sum)
			return -1;
		sum += add;
	}
	*total = sum;
	return 0;
}

ftl_err ftl_ckpt_parse_header(const uint8_t *buf, size_t avail, uint64_t file_len, ftl_ckpt_header *h)
{
	memset(h, 0, sizeof(*h));
	if (avail < FTL_CKPT_FIXED_BYTES_V1)
		return ftl_diag_set(FTL_ERR_INVALID, "truncated: %llu bytes, shorter than a checkpoint header (%u)",
			      (unsigned long long)file_len, FTL_CKPT_FIXED_BYTES_V1);
	if (memcmp(buf, FTL_CKPT_MAGIC, sizeof(FTL_CKPT_MAGIC)) != 0)
		return ftl_diag_set(FTL_ERR_INVALID, "not a checkpoint file (bad magic)");
	h->version = get_u32(buf + 8);
	if (h->version != 1 && h->version != FTL_CKPT_VERSION)
		return ftl_diag_set(FTL_ERR_INVALID, "format version %u, this build reads versions 1 and %u", h->version,
			      FTL_CKPT_VERSION);
	uint32_t kind = get_u32(buf + 52);
	if (h->version == 1) /* its word 52 was reserved, 0: BLAKE2b was the only kind */
		kind = kind == 0 ? FTL_CKPT_SUM_BLAKE2B : FTL_CKPT_SUM_MAX;
	if (kind >= FTL_CKPT_SUM_MAX || ftl_ckpt_sum_bytes((ftl_ckpt_sum_kind)kind) == 0)
		return ftl_diag_set(FTL_ERR_INVALID, "corrupt header: checksum kind %u", get_u32(buf + 52));
	h->sum_kind = (ftl_ckpt_sum_kind)kind;
	h->n_buffers = get_u32(buf + 12);
	if (h->n_buffers > FTL_MAX_BUFFERS)
		return ftl_diag_set(FTL_ERR_INVALID, "corrupt header: %u buffers (at most %d)", h->n_buffers, FTL_MAX_BUFFERS);
	if (avail < ftl_ckpt_header_bytes(h))
		return ftl_diag_set(FTL_ERR_INVALID, "truncated: %llu bytes, shorter than its header (%zu)",
			      (unsigned long long)file_len, ftl_ckpt_header_bytes(h));
	h->step = get_u64(buf + 16);
	h->view_epoch = get_u64(buf + 24);
	h->data_epoch = get_u64(buf + 32);
	h->sample_pos = get_u64(buf + 40);
	h->world_size = get_u32(buf + 48);
	h->save_len = get_u64(buf + 56);
	h->job_id = h->version == 1 ? 0 : get_u64(buf + 64);
	for (uint32_t i = 0; i < h->n_buffers; i++) {
		const uint8_t *e = buf + fixed_bytes(h->version) + (size_t)i * FTL_CKPT_ENTRY_BYTES;
		memcpy(h->names[i], e, FTL_CKPT_NAME_BYTES);
		h->names[i][FTL_CKPT_NAME_BYTES - 1] = '\0';
		h->sizes[i] = get_u64(e + FTL_CKPT_NAME_BYTES);
	}
	uint64_t want;
	if (declared_file_bytes(h, &want) != 0)
		return ftl_diag_set(FTL_ERR_INVALID, "corrupt header: sizes overflow");
	if (file_len < want)
		return ftl_diag_set(FTL_ERR_INVALID, "truncated: %llu bytes, its header declares %llu",
			      (unsigned long long)file_len, (unsigned long long)want);
	if (file_len > want)
		return ftl_diag_set(FTL_ERR_INVALID, "corrupt: %llu bytes, its header declares %llu",
			      (unsigned long long)file_len, (unsigned long long)want);
	return FTL_OK;
}

ftl_err ftl_ckpt_verify(const uint8_t *image, size_t len, ftl_ckpt_header *h)
{
	ftl_err err = ftl_ckpt_parse_header(image, len, len, h);
	if (err)
		return err;
	size_t sum_len = ftl_ckpt_sum_bytes(h->sum_kind);
	uint8_t sum[FTL_CKPT_SUM_MAX_BYTES];
	ftl_ckpt_checksum(h->sum_kind, image, len - sum_len, sum);
	if (memcmp(sum, image + len - sum_len, sum_len) != 0)
		return ftl_diag_set(FTL_ERR_INVALID, "checksum mismatch (%s): the file is corrupt",
				    ftl_ckpt_sum_kind_strs[h->sum_kind]);
	return FTL_OK;
}

ftl_err ftl_ckpt_same_shape(const ftl_ckpt_header *file, const ftl_ckpt_header *mine)
{
	if (file->n_buffers != mine->n_buffers)
		return ftl_diag_set(FTL_ERR_INVALID, "shape mismatch: %u buffers in the file, %u registered", file->n_buffers,
			      mine->n_buffers);
	for (uint32_t i = 0; i < file->n_buffers; i++) {
		if (strcmp(file->names[i], mine->names[i]) != 0)
			return ftl_diag_set(FTL_ERR_INVALID, "shape mismatch: buffer %u is '%s' in the file, '%s' registered", i,
				      file->names[i], mine->names[i]);
		if (file->sizes[i] != mine->sizes[i])
			return ftl_diag_set(FTL_ERR_INVALID, "shape mismatch: buffer '%s' is %llu bytes in the file, %llu registered",
				      file->names[i], (unsigned long long)file->sizes[i],
				      (unsigned long long)mine->sizes[i]);
	}
	return FTL_OK;
}
