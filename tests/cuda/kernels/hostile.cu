// SPDX-License-Identifier: MIT
// Kernels that misbehave on purpose (program hostile): each must end in a
// CUDA error for its own context only.

// A store to an address the caller chose, outside anything it allocated.
extern "C" __global__ void store_at(unsigned long long address, unsigned value)
{
	*(volatile unsigned *)address = value;
}

// Waits for a flag nothing ever sets: only the watchdog ends it.
extern "C" __global__ void spin_forever(volatile int *flag)
{
	while (*flag == 0)
		;
}

// Does nothing, on as many blocks as it is given.
extern "C" __global__ void nothing(void)
{
}

// Takes 24 bytes of parameters (launched with the wrong size on purpose).
extern "C" __global__ void three_params(int *out, int a, long long b)
{
	out[0] = a + (int)b;
}
