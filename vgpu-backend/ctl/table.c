// SPDX-License-Identifier: MIT
/* table.c - sizes and aligned tables for vgpuctl, see table.h. */
#include "table.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void format_size(char out[TABLE_CELL], uint64_t bytes)
{
	static const char units[] = "KMGTPE";
	double value = (double)bytes;
	int unit = -1;

	if (bytes < 1024) {
		snprintf(out, TABLE_CELL, "%llu", (unsigned long long)bytes);
		return;
	}
	while (value >= 1024.0 && unit < 5) {
		value /= 1024.0;
		unit++;
	}
	snprintf(out, TABLE_CELL, "%.1f%c", value, units[unit]);
}

static char *cell(const struct table *t, unsigned row, unsigned column)
{
	return t->cells[row * t->columns + column];
}

int table_init(struct table *t, unsigned columns, const char *const *header,
               unsigned left_aligned)
{
	unsigned c;

	memset(t, 0, sizeof(*t));
	if (columns > TABLE_MAX_COLUMNS)
		return -EINVAL;
	t->columns = columns;
	t->left_aligned = left_aligned;
	if (table_row(t))
		return -ENOMEM;
	for (c = 0; c < columns; c++)
		snprintf(cell(t, 0, c), TABLE_CELL, "%s", header[c]);
	return 0;
}

int table_row(struct table *t)
{
	if (t->rows == t->capacity) {
		unsigned capacity = t->capacity ? 2 * t->capacity : 16;
		char (*cells)[TABLE_CELL] = realloc(t->cells, (size_t)capacity * t->columns *
		                                                      TABLE_CELL);

		if (!cells)
			return -ENOMEM;
		t->cells = cells;
		t->capacity = capacity;
	}
	memset(t->cells[t->rows * t->columns], 0, (size_t)t->columns * TABLE_CELL);
	t->rows++;
	return 0;
}

void table_cell(struct table *t, unsigned column, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cell(t, t->rows - 1, column), TABLE_CELL, fmt, ap);
	va_end(ap);
}

void table_print(const struct table *t, FILE *out)
{
	unsigned width[TABLE_MAX_COLUMNS] = { 0 }, r, c;

	for (r = 0; r < t->rows; r++)
		for (c = 0; c < t->columns; c++) {
			size_t len = strlen(cell(t, r, c));

			if (len > width[c])
				width[c] = (unsigned)len;
		}
	for (r = 0; r < t->rows; r++) {
		for (c = 0; c < t->columns; c++) {
			int left = (t->left_aligned >> c) & 1;
			int w = c + 1 == t->columns && left ? 0 : (int)width[c];

			fprintf(out, "%s%*s", c ? "  " : "", left ? -w : w, cell(t, r, c));
		}
		fputc('\n', out);
	}
}

void table_fini(struct table *t)
{
	free(t->cells);
	memset(t, 0, sizeof(*t));
}
