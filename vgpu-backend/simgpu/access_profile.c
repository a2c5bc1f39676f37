// SPDX-License-Identifier: MIT
/* access_profile.c - per-page access counts of an address space, see access_profile.h. */
#include "access_profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE_SHIFT 12u
#define REGION_SHIFT 21u /* 2 MiB: 512 pages */
#define REGION_PAGES (1u << (REGION_SHIFT - PAGE_SHIFT))

struct access_profile_region {
	uint64_t key; /* va >> REGION_SHIFT */
	uint32_t reads[REGION_PAGES], writes[REGION_PAGES];
};

static unsigned next_sequence; /* atomic */

void access_profile_init(struct access_profile *ap)
{
	const char *dir = getenv("SIMGPU_ACCESS_PROFILE");

	memset(ap, 0, sizeof(*ap));
	if (!dir || !*dir)
		return;
	if (asprintf(&ap->path, "%s/as-%ld-%u.tsv", dir, (long)getpid(),
	             __atomic_add_fetch(&next_sequence, 1, __ATOMIC_RELAXED)) < 0) {
		ap->path = NULL;
		return;
	}
	ap->enabled = true;
}

static struct access_profile_region *region_of(struct access_profile *ap, uint64_t key)
{
	size_t lo = 0, hi = ap->count;
	struct access_profile_region *region;

	if (ap->last && ap->last->key == key)
		return ap->last;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ap->regions[mid]->key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ap->count && ap->regions[lo]->key == key)
		return ap->last = ap->regions[lo];
	if (ap->count == ap->capacity) {
		size_t capacity = ap->capacity ? ap->capacity * 2 : 8;
		struct access_profile_region **grown =
		        realloc(ap->regions, capacity * sizeof(*grown));

		if (!grown)
			return NULL;
		ap->regions = grown;
		ap->capacity = capacity;
	}
	region = calloc(1, sizeof(*region));
	if (!region)
		return NULL;
	region->key = key;
	memmove(&ap->regions[lo + 1], &ap->regions[lo], (ap->count - lo) * sizeof(*ap->regions));
	ap->regions[lo] = region;
	ap->count++;
	return ap->last = region;
}

void access_profile_count(struct access_profile *ap, uint64_t va, bool read, bool write)
{
	struct access_profile_region *region;
	unsigned page;

	if (!ap->enabled)
		return;
	region = region_of(ap, va >> REGION_SHIFT);
	if (!region) {
		ap->lost++;
		return;
	}
	page = (unsigned)(va >> PAGE_SHIFT) & (REGION_PAGES - 1);
	if (read && region->reads[page] < UINT32_MAX)
		region->reads[page]++;
	if (write && region->writes[page] < UINT32_MAX)
		region->writes[page]++;
}

void access_profile_fini(struct access_profile *ap, uint64_t busy_compute_ns,
                         uint64_t busy_copy_ns)
{
	FILE *out = ap->enabled && ap->count ? fopen(ap->path, "w") : NULL;

	if (out) {
		fprintf(out, "# simgpu access profile: 4 KiB pages, compute-engine transactions\n"
		        "# busy_ns compute=%" PRIu64 " copy=%" PRIu64 "\n", busy_compute_ns,
		        busy_copy_ns);
		if (ap->lost)
			fprintf(out, "# lost %" PRIu64 "\n", ap->lost);
		fprintf(out, "# page_va reads writes\n");
		for (size_t r = 0; r < ap->count; r++)
			for (unsigned p = 0; p < REGION_PAGES; p++)
				if (ap->regions[r]->reads[p] || ap->regions[r]->writes[p])
					fprintf(out, "0x%" PRIx64 " %" PRIu32 " %" PRIu32 "\n",
					        (ap->regions[r]->key << REGION_SHIFT) |
					                ((uint64_t)p << PAGE_SHIFT),
					        ap->regions[r]->reads[p], ap->regions[r]->writes[p]);
		fclose(out);
	}
	for (size_t r = 0; r < ap->count; r++)
		free(ap->regions[r]);
	free(ap->regions);
	free(ap->path);
	memset(ap, 0, sizeof(*ap));
}
