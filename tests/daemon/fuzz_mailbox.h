/* SPDX-License-Identifier: MIT */
/*
 * fuzz_mailbox.h - one fuzz case for vgpud's mailbox: the ring server
 * (mailbox_ring.c), the request parser (mailbox_parse.c) and the guest
 * handle table (handle_table.c), driven by a byte string that plays a
 * hostile guest: it writes request slots, sets ring indices to anything,
 * consumes responses or not, and rings the doorbell with any budget. A
 * model backend answers parsed requests (HELLO state, ALLOC/FREE with
 * handles). Every run checks the server's promises and aborts on a broken
 * one: answers in order with the request's seq, never more than the budget
 * or than the response ring holds, indices that stay sane, statuses that
 * exist, accepted requests whose fields are in range.
 */
#ifndef TESTS_DAEMON_FUZZ_MAILBOX_H
#define TESTS_DAEMON_FUZZ_MAILBOX_H

#include <stddef.h>
#include <stdint.h>

/* Run one case. Returns the number of requests answered. */
unsigned fuzz_mailbox_run(const uint8_t *data, size_t size);

#endif /* TESTS_DAEMON_FUZZ_MAILBOX_H */
