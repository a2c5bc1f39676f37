/* SPDX-License-Identifier: MIT */
/*
 * vgpu_compat.h - the little the guest-side protocol code needs from its
 * environment, for the Linux kernel (vgpu.ko, built with __KERNEL__) and for
 * userspace (libvgpu-guest, vgpu-tenant, tests).
 *
 * The shared code (vgpu_proto.c, vgpu_mailbox.c, vgpu_status.c) includes
 * only this header and vgpu/abi/device_abi.h. It never calls libc or kernel
 * functions directly; everything goes through the names below:
 *
 *   vgpu_memcpy, vgpu_memset      plain memory copies
 *   vgpu_cpu_to_le{16,32,64}      byte order of the device ABI (little-endian)
 *   vgpu_le{16,32,64}_to_cpu
 *   vgpu_load_acquire32(p)        read a 32-bit index the other side writes;
 *                                 later reads are not reordered before it
 *   vgpu_store_release32(p, v)    publish a 32-bit index; earlier writes are
 *                                 visible to the other side before it
 *   vgpu_wmb(), vgpu_rmb(),       write, read and full barriers between this
 *   vgpu_mb()                     CPU and the device (the host CPUs running
 *                                 vgpud, which share the mailbox pages)
 *   vgpu_cpu_relax()              pause inside a short busy-wait
 *   vgpu_now_ns()                 a monotonic clock, for timeouts
 *   E* errno values               negative errno is the error convention
 *
 * Memory model. BAR2 (the mailbox and channel windows) is ordinary RAM on
 * the host, shared with vgpud; it is never a register file. In the kernel
 * map it cacheable (memremap(..., MEMREMAP_WB)), not with ioremap(), so plain
 * loads and stores are correct; the barriers are the virt_* family, which is
 * exactly "ordering against another CPU through shared memory, even on a UP
 * guest". In userspace the same barriers are __atomic builtins.
 */
#ifndef VGPU_COMPAT_H
#define VGPU_COMPAT_H

#ifdef __KERNEL__

#include <asm/barrier.h>
#include <asm/byteorder.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/ktime.h>
#include <linux/processor.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/types.h>

#define vgpu_memcpy(dst, src, n) memcpy(dst, src, n)
#define vgpu_memset(dst, c, n)   memset(dst, c, n)

#define vgpu_cpu_to_le16(x) ((__force uint16_t)cpu_to_le16(x))
#define vgpu_cpu_to_le32(x) ((__force uint32_t)cpu_to_le32(x))
#define vgpu_cpu_to_le64(x) ((__force uint64_t)cpu_to_le64(x))
#define vgpu_le16_to_cpu(x) le16_to_cpu((__force __le16)(x))
#define vgpu_le32_to_cpu(x) le32_to_cpu((__force __le32)(x))
#define vgpu_le64_to_cpu(x) le64_to_cpu((__force __le64)(x))

#define vgpu_load_acquire32(p)     virt_load_acquire(p)
#define vgpu_store_release32(p, v) virt_store_release(p, v)
#define vgpu_wmb()                 virt_wmb()
#define vgpu_rmb()                 virt_rmb()
#define vgpu_mb()                  virt_mb()

static inline void vgpu_cpu_relax(void)
{
	cpu_relax();
}

static inline uint64_t vgpu_now_ns(void)
{
	return ktime_get_ns();
}

#else /* userspace */

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define vgpu_memcpy(dst, src, n) memcpy(dst, src, n)
#define vgpu_memset(dst, c, n)   memset(dst, c, n)

#define vgpu_cpu_to_le16(x) htole16(x)
#define vgpu_cpu_to_le32(x) htole32(x)
#define vgpu_cpu_to_le64(x) htole64(x)
#define vgpu_le16_to_cpu(x) le16toh(x)
#define vgpu_le32_to_cpu(x) le32toh(x)
#define vgpu_le64_to_cpu(x) le64toh(x)

static inline uint32_t vgpu_load_acquire32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void vgpu_store_release32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

#if defined(__SANITIZE_THREAD__)
#define VGPU_COMPAT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VGPU_COMPAT_TSAN 1
#endif
#endif

#ifdef VGPU_COMPAT_TSAN
/* ThreadSanitizer does not model stand-alone fences (gcc refuses them with
 * -Werror=tsan). The protocol never relies on one alone: every index is
 * published with a release store and read with an acquire load. */
#define vgpu_wmb() __asm__ __volatile__("" ::: "memory")
#define vgpu_rmb() __asm__ __volatile__("" ::: "memory")
#define vgpu_mb()  __asm__ __volatile__("" ::: "memory")
#else
#define vgpu_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define vgpu_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define vgpu_mb()  __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

static inline void vgpu_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static inline uint64_t vgpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* __KERNEL__ */

#endif /* VGPU_COMPAT_H */
