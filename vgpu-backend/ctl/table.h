/* SPDX-License-Identifier: MIT */
/*
 * table.h - vgpuctl's human output: sizes ("512.0M") and aligned tables
 * whose columns are as wide as their widest cell.
 */
#ifndef VGPUCTL_TABLE_H
#define VGPUCTL_TABLE_H

#include <stdint.h>
#include <stdio.h>

#define TABLE_MAX_COLUMNS 16
#define TABLE_CELL 32

/* bytes as "0", "4.0K", "512.0M", "1.5G" (binary units). */
void format_size(char out[TABLE_CELL], uint64_t bytes);

struct table {
	unsigned columns, rows, capacity;
	char (*cells)[TABLE_CELL]; /* rows * columns, row 0 = header */
	unsigned left_aligned;     /* bit c: column c is left-aligned */
};

/* A table with the given header cells; left_aligned as in struct table. */
int table_init(struct table *t, unsigned columns, const char *const *header,
               unsigned left_aligned);
/* Start a new row; then table_cell for each column in order. */
int table_row(struct table *t);
void table_cell(struct table *t, unsigned column, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void table_print(const struct table *t, FILE *out);
void table_fini(struct table *t);

#endif /* VGPUCTL_TABLE_H */
