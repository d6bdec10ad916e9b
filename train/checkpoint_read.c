/* Reading one checkpoint file whole and verifying it, for the two readers: the resume (checkpoint.c),
 * which also checks the file against the registered shape, and the public reader (checkpoint_reader.c),
 * which takes any shape. A file is read whole and verified before anything looks at its payload, so a
 * damaged file can only be refused, never half-used. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* pread(2) until len bytes are read; -1 with errno (the caller names the file). */
static int read_at(int fd, uint8_t *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t k = pread(fd, buf, len, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO; /* shorter than fstat said: truncated while we read */
			return -1;
		}
		buf += k;
		len -= (size_t)k;
		off += k;
	}
	return 0;
}

ftl_err ftl_ckpt_read_file(const char *path, const ftl_ckpt_header *mine, ftl_ckpt_header *h, uint8_t **image)
{
	*image = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		ftl_err err = ftl_diag_set(FTL_ERR_SYSTEM, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	uint8_t head[FTL_CKPT_HEADER_MAX_BYTES];
	size_t avail = (uint64_t)st.st_size < sizeof(head) ? (size_t)st.st_size : sizeof(head);
	ftl_err err = FTL_ERR_INVALID;
	if (!S_ISREG(st.st_mode))
		err = ftl_diag_set(FTL_ERR_INVALID, "not a regular file");
	else if (read_at(fd, head, avail, 0) != 0)
		err = ftl_diag_set(FTL_ERR_SYSTEM, "cannot read: %s", strerror(errno));
	else if (ftl_ckpt_parse_header(head, avail, (uint64_t)st.st_size, h) == FTL_OK &&
		 (!mine || ftl_ckpt_same_shape(h, mine) == FTL_OK)) {
		*image = malloc((size_t)st.st_size);
		if (!*image)
			err = ftl_diag_set(FTL_ERR_SYSTEM, "no memory to read %lld bytes", (long long)st.st_size);
		else if (read_at(fd, *image, (size_t)st.st_size, 0) != 0)
			err = ftl_diag_set(FTL_ERR_SYSTEM, "cannot read: %s", strerror(errno));
		else
			err = ftl_ckpt_verify(*image, (size_t)st.st_size, h);
	}
	close(fd);
	if (err) {
		free(*image);
		*image = NULL;
	}
	return err;
}
