// SPDX-License-Identifier: MIT
// bfs: breadth-first search over a graph in compressed rows (node i's
// edges are edges[start[i] .. start[i] + degree[i])), one frontier level
// per pair of launches, one thread per node.

// Expand the frontier: every node in it leaves it and gives each
// unvisited neighbour the cost one more than its own, marking the
// neighbour for the next frontier.
extern "C" __global__ void bfs_expand(const int *start, const int *degree, const int *edges,
                                      char *frontier, char *next, const char *visited,
                                      int *cost, int n)
{
	int id = blockIdx.x * blockDim.x + threadIdx.x;

	if (id >= n || !frontier[id])
		return;
	frontier[id] = 0;
	for (int e = start[id]; e < start[id] + degree[id]; e++) {
		int to = edges[e];

		if (!visited[to]) {
			cost[to] = cost[id] + 1;
			next[to] = 1;
		}
	}
}

// Make the marked nodes the new frontier, mark them visited, and tell the
// host another level is needed.
extern "C" __global__ void bfs_update(char *frontier, char *next, char *visited, int *more,
                                      int n)
{
	int id = blockIdx.x * blockDim.x + threadIdx.x;

	if (id >= n || !next[id])
		return;
	frontier[id] = 1;
	visited[id] = 1;
	*more = 1;
	next[id] = 0;
}
