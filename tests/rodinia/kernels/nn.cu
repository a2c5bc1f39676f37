// SPDX-License-Identifier: MIT
// nn: the distance of every record (a latitude, longitude pair) to a
// target point; the host picks the k nearest.
struct latlong {
	float lat, lng;
};

extern "C" __global__ void euclid(const latlong *records, float *distances, int n, float lat,
                                  float lng)
{
	int id = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;

	if (id < n) {
		float dlat = lat - records[id].lat;
		float dlng = lng - records[id].lng;

		distances[id] = sqrtf(dlat * dlat + dlng * dlng);
	}
}
