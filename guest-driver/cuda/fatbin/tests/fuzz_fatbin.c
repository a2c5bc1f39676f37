// SPDX-License-Identifier: MIT
/* fuzz_fatbin.c - one input through vgpu_fatbin_ptx (fuzz_fatbin.h). */
#include "fuzz_fatbin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fatbin.h"

static void broken(const char *what, int rc)
{
	fprintf(stderr, "fuzz_fatbin: %s (rc %d)\n", what, rc);
	abort();
}

int fuzz_fatbin_run(const uint8_t *data, size_t size)
{
	char why[256], *ptx = (char *)1;
	size_t len = 12345;

	if (size >= 4 && data[0] == 0xb1 && data[1] == 0x43 && data[2] == 0x62 &&
	    data[3] == 0x46) /* VGPU_FATBIN_WRAPPER_MAGIC, little-endian */
		return -EINVAL;
	unsigned char *copy = malloc(size ? size : 1);
	if (!copy)
		return -ENOMEM;
	if (size)
		memcpy(copy, data, size);
	int rc = vgpu_fatbin_ptx(copy, size, &ptx, &len, why, sizeof(why));
	if (rc == 0) {
		if (!ptx || len == 0 || strlen(ptx) != len)
			broken("success without a non-empty PTX of the returned length", rc);
		free(ptx);
	} else {
		if (rc != -EINVAL && rc != -ENOENT && rc != -ENOMEM)
			broken("unexpected error", rc);
		if (ptx || len)
			broken("failure left a result", rc);
		if (!why[0] || !memchr(why, '\0', sizeof(why)))
			broken("failure without a message", rc);
	}
	free(copy);
	return rc;
}
