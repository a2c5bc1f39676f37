/* SPDX-License-Identifier: MIT */
/*
 * error.h - the host side's one error carrier (the core, vgpud, the local
 * transport, the HALs and their opener), in the manner of QEMU's Error **.
 *
 * A function that can fail with something to say takes a
 * `struct vgpu_error *error` as its last parameter and returns an int: 0
 * (or a count) on success, a negative errno on failure. The rules:
 *
 *  - The callee fills, the caller reads. A function that fails sets the
 *    carrier (code = the negative errno it returns, msg = what was wrong and
 *    what to do) before it returns, normally in one step:
 *        return vgpu_error_set(error, -ENOMEM, "out of memory for ...");
 *    A function that succeeds leaves the carrier as it found it: never both
 *    a message and success.
 *  - error may be NULL: the caller only wants the errno, the sentence is
 *    discarded. Every helper here accepts NULL.
 *  - A caller that passes the failure on adds context with vgpu_error_prefix
 *    ("VM 'a': " + the callee's sentence), or copies a carrier of its own
 *    into the caller's with vgpu_error_propagate.
 *  - The last vgpu_error_set wins; a function that wants to keep a deeper
 *    callee's more precise sentence checks vgpu_error_is_set first.
 *  - A carrier belongs to one thread at a time (usually a local of the
 *    caller); nothing here locks.
 *  - Convert at the edges only: to a protocol status (vgpu_status) where a
 *    reply leaves vgpud (daemon/requests.c), to a string where a message
 *    leaves the process (logs, control JSON: vgpu_error_msg).
 *
 * Header-only, no state: any thread, any library of the host side.
 */
#ifndef VGPU_ERROR_H
#define VGPU_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VGPU_ERROR_MSG_MAX 512 /* including the terminating NUL */

struct vgpu_error {
	int code;                     /* 0: no error; else the negative errno */
	char msg[VGPU_ERROR_MSG_MAX]; /* "" while code is 0 */
};

#define VGPU_ERROR_INIT { 0, "" }

/* Back to "no error". NULL is ignored. */
static inline void vgpu_error_clear(struct vgpu_error *error)
{
	if (!error)
		return;
	error->code = 0;
	error->msg[0] = '\0';
}

/* Has a callee failed into error? false for NULL. */
static inline bool vgpu_error_is_set(const struct vgpu_error *error)
{
	return error && error->code;
}

/* The sentence, for a log line or a reply: "no error" when none is set
 * (or error is NULL). */
static inline const char *vgpu_error_msg(const struct vgpu_error *error)
{
	return vgpu_error_is_set(error) && error->msg[0] ? error->msg : "no error";
}

static inline int vgpu_error_vset(struct vgpu_error *error, int code, const char *fmt,
                                  va_list ap) __attribute__((format(printf, 3, 0)));

static inline int vgpu_error_vset(struct vgpu_error *error, int code, const char *fmt,
                                  va_list ap)
{
	if (error) {
		error->code = code;
		vsnprintf(error->msg, sizeof(error->msg), fmt, ap);
	}
	return code;
}

/* Fail: record code (a negative errno) and the sentence; returns code. */
static inline int vgpu_error_set(struct vgpu_error *error, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline int vgpu_error_set(struct vgpu_error *error, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vgpu_error_vset(error, code, fmt, ap);
	va_end(ap);
	return code;
}

/* Put context in front of a set sentence ("VM 'a': " + msg); nothing when
 * none is set. Returns error's code (0 when none is set or error is NULL). */
static inline int vgpu_error_prefix(struct vgpu_error *error, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline int vgpu_error_prefix(struct vgpu_error *error, const char *fmt, ...)
{
	char prefix[VGPU_ERROR_MSG_MAX];
	size_t room = sizeof(error->msg) - 1, plen, mlen;
	va_list ap;

	if (!vgpu_error_is_set(error))
		return 0;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	plen = strlen(prefix);
	mlen = strlen(error->msg);
	if (mlen > room - plen)
		mlen = room - plen;
	memmove(error->msg + plen, error->msg, mlen);
	memcpy(error->msg, prefix, plen);
	error->msg[plen + mlen] = '\0';
	return error->code;
}

/* The sentence into a fixed field where it leaves the process (a protocol
 * reply's message): truncated to len - 1 bytes, always terminated; ""
 * when none is set. Returns buf. */
static inline char *vgpu_error_text(const struct vgpu_error *error, char *buf, size_t len)
{
	size_t n = vgpu_error_is_set(error) ? strlen(error->msg) : 0;

	if (!len)
		return buf;
	if (n > len - 1)
		n = len - 1;
	if (n)
		memcpy(buf, error->msg, n);
	buf[n] = '\0';
	return buf;
}

/* Pass a carrier of one's own on to the caller's (dst may be NULL; src
 * unset leaves dst alone). Returns src's code. */
static inline int vgpu_error_propagate(struct vgpu_error *dst, const struct vgpu_error *src)
{
	if (!vgpu_error_is_set(src))
		return 0;
	if (dst && dst != src)
		*dst = *src;
	return src->code;
}

#ifdef __cplusplus
}
#endif

#endif /* VGPU_ERROR_H */
