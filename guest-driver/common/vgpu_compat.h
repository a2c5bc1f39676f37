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
 *   u8, u16, u32, u64             the kernel's fixed-width types (in userspace
 *                                 the same types as <stdint.h>'s)
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

#define vgpu_cpu_to_le16(x) ((__force u16)cpu_to_le16(x))
#define vgpu_cpu_to_le32(x) ((__force u32)cpu_to_le32(x))
#define vgpu_cpu_to_le64(x) ((__force u64)cpu_to_le64(x))
#define vgpu_le16_to_cpu(x) le16_to_cpu((__force __le16)(x))
#define vgpu_le32_to_cpu(x) le32_to_cpu((__force __le32)(x))
#define vgpu_le64_to_cpu(x) le64_to_cpu((__force __le64)(x))

/*
 * Ordering against vgpud's CPUs through the shared mailbox pages (the
 * memory model above); the callers say what each use orders.
 */
#define vgpu_load_acquire32(p)     virt_load_acquire(p)     /* later reads after it */
#define vgpu_store_release32(p, v) virt_store_release(p, v) /* earlier writes before it */
#define vgpu_wmb()                 virt_wmb()               /* writes before later writes */
#define vgpu_rmb()                 virt_rmb()               /* reads before later reads */
#define vgpu_mb()                  virt_mb()                /* all before all later */

static inline void vgpu_cpu_relax(void)
{
	cpu_relax();
}

static inline u64 vgpu_now_ns(void)
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

/* The kernel's names of the fixed-width types, as <stdint.h>'s types. */
typedef __UINT8_TYPE__ u8;
typedef __UINT16_TYPE__ u16;
typedef __UINT32_TYPE__ u32;
typedef __UINT64_TYPE__ u64;

#define vgpu_memcpy(dst, src, n) memcpy(dst, src, n)
#define vgpu_memset(dst, c, n)   memset(dst, c, n)

#define vgpu_cpu_to_le16(x) htole16(x)
#define vgpu_cpu_to_le32(x) htole32(x)
#define vgpu_cpu_to_le64(x) htole64(x)
#define vgpu_le16_to_cpu(x) le16toh(x)
#define vgpu_le32_to_cpu(x) le32toh(x)
#define vgpu_le64_to_cpu(x) le64toh(x)

static inline u32 vgpu_load_acquire32(const u32 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void vgpu_store_release32(u32 *p, u32 v)
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
/*
 * ThreadSanitizer does not model stand-alone fences (gcc refuses them with
 * -Werror=tsan). The protocol never relies on one alone: every index is
 * published with a release store and read with an acquire load. So under
 * it the fences only keep the compiler from moving accesses across them.
 */
#define VGPU_FENCE(order) __atomic_signal_fence(order)
#else
#define VGPU_FENCE(order) __atomic_thread_fence(order)
#endif

static inline void vgpu_wmb(void)
{
	VGPU_FENCE(__ATOMIC_RELEASE);
}

static inline void vgpu_rmb(void)
{
	VGPU_FENCE(__ATOMIC_ACQUIRE);
}

static inline void vgpu_mb(void)
{
	VGPU_FENCE(__ATOMIC_SEQ_CST);
}

/* The CPU's spin-wait hint where the compiler offers one (x86's PAUSE). */
static inline void vgpu_cpu_relax(void)
{
#ifdef __has_builtin
#if __has_builtin(__builtin_ia32_pause)
#define VGPU_COMPAT_PAUSE 1
#endif
#endif
#if defined(VGPU_COMPAT_PAUSE)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static inline u64 vgpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

#endif /* __KERNEL__ */

#endif /* VGPU_COMPAT_H */
