// SPDX-License-Identifier: MIT
/*
 * bfs - breadth-first search from node 0 of a random graph (each node
 * has 1..8 edges to random nodes, plus a chain 0-1-2-... that keeps every
 * node reachable), one level per pair of launches (kernels/bfs.cu:
 * bfs_expand, bfs_update), the host reading a flag after each level.
 * Every repetition resets the masks and costs from the host and searches
 * again.
 *
 * Buffers and eviction priorities (0 lowest .. 15 highest):
 *   edges     E ints   4  the largest; each edge read once per search
 *   start     N ints   6  read once per frontier node and level check
 *   degree    N ints   6
 *   cost      N ints  10  read and written at random
 *   frontier  N bytes 12  read by every thread of every level
 *   next      N bytes 12  the same
 *   visited   N bytes 12  read for every edge
 *   more      1 int   15  the level flag, every thread may write it
 * The two large buffers (edges, and the nodes' start/degree) get few
 * accesses per page, the small masks many: the order the thesis found.
 *
 * Check: every node's cost equals the CPU's breadth-first search, exactly.
 */
#include <stdio.h>
#include <string.h>

#include "rodinia.h"

int main(int argc, char **argv)
{
	struct rodinia r;
	char summary[160];

	rodinia_start(&r, "bfs", "bfs.ptx", argc, argv, 48u << 20);
	/* about 4.5 edges per node: 4.5 * 4 + 4 + 4 + 4 + 3 bytes per node */
	size_t nodes = r.bytes / 33;
	int n = (int)(nodes < 16 ? 16 : nodes > (1u << 26) ? (1u << 26) : nodes);
	int *start = rodinia_malloc((size_t)n * sizeof(int));
	int *degree = rodinia_malloc((size_t)n * sizeof(int));
	int *edges = rodinia_malloc((size_t)n * 9 * sizeof(int));
	int *cost = rodinia_malloc((size_t)n * sizeof(int));
	int *want = rodinia_malloc((size_t)n * sizeof(int));
	int *queue = rodinia_malloc((size_t)n * sizeof(int));
	char *frontier = rodinia_malloc((size_t)n);
	char *zeros = rodinia_malloc((size_t)n);
	int e = 0;

	for (int i = 0; i < n; i++) {
		int d = 1 + (int)(rodinia_rand(&r) % 8);

		start[i] = e;
		if (i + 1 < n)
			edges[e++] = i + 1;
		for (int k = 0; k < d; k++)
			edges[e++] = (int)(rodinia_rand(&r) % (unsigned)n);
		degree[i] = e - start[i];
	}
	/* the CPU's search */
	for (int i = 0; i < n; i++)
		want[i] = -1;
	want[0] = 0;
	queue[0] = 0;
	for (int head = 0, tail = 1; head < tail; head++) {
		int v = queue[head];

		for (int k = start[v]; k < start[v] + degree[v]; k++)
			if (want[edges[k]] < 0) {
				want[edges[k]] = want[v] + 1;
				queue[tail++] = edges[k];
			}
	}

	CUfunction expand = rodinia_function(&r, "bfs_expand");
	CUfunction update = rodinia_function(&r, "bfs_update");
	CUdeviceptr d_edges = rodinia_alloc((size_t)e * sizeof(int), 4);
	CUdeviceptr d_start = rodinia_alloc((size_t)n * sizeof(int), 6);
	CUdeviceptr d_degree = rodinia_alloc((size_t)n * sizeof(int), 6);
	CUdeviceptr d_cost = rodinia_alloc((size_t)n * sizeof(int), 10);
	CUdeviceptr d_frontier = rodinia_alloc((size_t)n, 12);
	CUdeviceptr d_next = rodinia_alloc((size_t)n, 12);
	CUdeviceptr d_visited = rodinia_alloc((size_t)n, 12);
	CUdeviceptr d_more = rodinia_alloc(sizeof(int), 15);
	unsigned grid = rodinia_blocks((size_t)n, 256);
	int levels = 0;

	CK(cuMemcpyHtoD(d_edges, edges, (size_t)e * sizeof(int)));
	CK(cuMemcpyHtoD(d_start, start, (size_t)n * sizeof(int)));
	CK(cuMemcpyHtoD(d_degree, degree, (size_t)n * sizeof(int)));
	for (unsigned rep = 0; rep < r.repeat; rep++) {
		int more;

		for (int i = 0; i < n; i++)
			cost[i] = -1;
		cost[0] = 0;
		memset(frontier, 0, (size_t)n);
		frontier[0] = 1;
		CK(cuMemcpyHtoD(d_cost, cost, (size_t)n * sizeof(int)));
		CK(cuMemcpyHtoD(d_frontier, frontier, (size_t)n));
		CK(cuMemcpyHtoD(d_visited, frontier, (size_t)n));
		CK(cuMemcpyHtoD(d_next, zeros, (size_t)n));
		levels = 0;
		do {
			more = 0;
			CK(cuMemcpyHtoD(d_more, &more, sizeof(int)));
			void *ep[] = { &d_start, &d_degree, &d_edges, &d_frontier, &d_next,
			               &d_visited, &d_cost, &n };
			void *up[] = { &d_frontier, &d_next, &d_visited, &d_more, &n };
			rodinia_kernels_begin(&r);
			CK(cuLaunchKernel(expand, grid, 1, 1, 256, 1, 1, 0, NULL, ep, NULL));
			CK(cuLaunchKernel(update, grid, 1, 1, 256, 1, 1, 0, NULL, up, NULL));
			rodinia_kernels_end(&r);
			CK(cuMemcpyDtoH(&more, d_more, sizeof(int)));
			if (++levels > n + 1)
				rodinia_fail("round %u: more than %d levels", rep, n + 1);
		} while (more);
		CK(cuMemcpyDtoH(cost, d_cost, (size_t)n * sizeof(int)));
		for (int i = 0; i < n; i++)
			if (cost[i] != want[i])
				rodinia_fail("round %u: node %d has cost %d, expected %d", rep, i,
				             cost[i], want[i]);
	}
	CK(cuMemFree(d_edges));
	CK(cuMemFree(d_start));
	CK(cuMemFree(d_degree));
	CK(cuMemFree(d_cost));
	CK(cuMemFree(d_frontier));
	CK(cuMemFree(d_next));
	CK(cuMemFree(d_visited));
	CK(cuMemFree(d_more));
	snprintf(summary, sizeof(summary), "%d nodes, %d edges, %d levels, %u searches exact", n,
	         e, levels, r.repeat);
	return rodinia_finish(&r, summary);
}
