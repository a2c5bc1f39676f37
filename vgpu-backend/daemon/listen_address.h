/* SPDX-License-Identifier: MIT */
/*
 * listen_address.h - the TCP address a vgpud endpoint listens on, as the
 * configuration writes it ([daemon] metrics):
 *
 *   off | no | none          not at all
 *   127.0.0.1:9464           an IPv4 address and a port
 *   [::1]:9464               an IPv6 address in brackets and a port
 *   localhost:9464           127.0.0.1
 *   9464                     a port alone: 127.0.0.1 too
 *   0.0.0.0:9464, [::]:9464  every interface (the endpoint has no
 *                            authentication: firewall it)
 *
 * Port 0 asks the kernel for a free port (tests). Only IP literals and
 * "localhost": vgpud never resolves names at startup. Pure: no I/O.
 */
#ifndef VGPUD_LISTEN_ADDRESS_H
#define VGPUD_LISTEN_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "vgpu/error.h"

struct vgpud_listen_address {
	bool enabled;                  /* false: "off" */
	struct sockaddr_storage addr;  /* AF_INET or AF_INET6, port set */
	socklen_t addr_len;
};

/* What the parser accepts, for error messages. */
#define VGPUD_LISTEN_ADDRESS_FORMS \
	"off, or ADDRESS:PORT with ADDRESS an IP address or localhost " \
	"(127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464), or a port alone (localhost)"

/* 0, or -EINVAL after writing what is wrong into error. */
int vgpud_listen_address_parse(const char *text, struct vgpud_listen_address *out,
                               struct vgpu_error *error);

/* "127.0.0.1:9464" or "[::1]:9464" (port as given; see port arg) into
 * out. port: the port to show, or -1 for the one in address. */
void vgpud_listen_address_format(const struct vgpud_listen_address *address, int port,
                                 char *out, size_t out_len);

#endif /* VGPUD_LISTEN_ADDRESS_H */
