// SPDX-License-Identifier: MIT
/* contents.c - expected buffer contents, see contents.h. */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contents.h"
#include "vgpu/abi/kernels.h"

#define VERIFY_STEP (1u << 20)

void sim_contents_init(struct sim_contents *contents, uint64_t bytes)
{
	memset(contents, 0, sizeof(*contents));
	contents->bytes = bytes;
}

void sim_contents_fini(struct sim_contents *contents)
{
	free(contents->data);
	contents->data = NULL;
}

void sim_contents_fill(struct sim_contents *contents, uint64_t seed)
{
	sim_contents_fini(contents);
	contents->known = true;
	contents->seed = seed;
	contents->passes = 0;
}

void sim_contents_unknown(struct sim_contents *contents)
{
	sim_contents_fini(contents);
	contents->known = false;
}

static uint64_t formula_word(const struct sim_contents *contents, uint64_t offset)
{
	uint64_t word = vgpu_fill_word(contents->seed, offset);

	for (unsigned p = 0; p < contents->passes; p++)
		word = vgpu_stream_word(word);
	return word;
}

void sim_contents_stream(struct sim_contents *contents, unsigned passes)
{
	if (!contents->known)
		return;
	if (contents->data)
		vgpu_kernel_reference_stream(contents->data, contents->bytes, passes);
	else
		contents->passes += passes;
}

int sim_contents_materialize(struct sim_contents *contents)
{
	uint64_t *words;

	if (contents->data || !contents->known)
		return 0;
	words = malloc(contents->bytes);
	if (!words)
		return -ENOMEM;
	for (uint64_t i = 0; i < contents->bytes / 8; i++)
		words[i] = htole64(formula_word(contents, 8 * i));
	contents->data = (uint8_t *)words;
	return 0;
}

uint64_t sim_contents_checksum(struct sim_contents *contents)
{
	if (contents->data)
		return vgpu_kernel_reference_checksum(contents->data, contents->bytes);
	return vgpu_kernel_reference_fill_stream_checksum(contents->seed, contents->bytes,
	                                                  contents->passes);
}

int sim_contents_verify(const struct sim_contents *contents, struct vgpu_hal_as *as, uint64_t va,
                        struct vgpu_error *error)
{
	uint64_t *actual = malloc(VERIFY_STEP);
	int err = 0;

	if (!actual)
		return vgpu_error_set(error, -ENOMEM, "out of memory for a verification");
	for (uint64_t offset = 0; !err && offset < contents->bytes; offset += VERIFY_STEP) {
		uint64_t n = contents->bytes - offset;

		if (n > VERIFY_STEP)
			n = VERIFY_STEP;
		err = vgpu_hal_as_read(as, va + offset, actual, n);
		if (err) {
			vgpu_error_set(error, err, "cannot read GPU address %#" PRIx64 ": %s",
			               va + offset, strerror(-err));
			break;
		}
		for (uint64_t i = 0; i < n / 8; i++) {
			uint64_t expected = contents->data
			                            ? le64toh(((const uint64_t *)contents->data)
			                                              [(offset / 8) + i])
			                            : formula_word(contents, offset + 8 * i);

			if (le64toh(actual[i]) != expected) {
				err = vgpu_error_set(error, -EINVAL,
				                     "byte offset %#" PRIx64 " holds %#" PRIx64
				                     ", expected %#" PRIx64,
				                     offset + 8 * i, le64toh(actual[i]), expected);
				break;
			}
		}
	}
	free(actual);
	return err;
}
