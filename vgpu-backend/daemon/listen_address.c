// SPDX-License-Identifier: MIT
/* listen_address.c - "off", "HOST:PORT", "[V6]:PORT", "PORT"; see
 * listen_address.h. */
#include "listen_address.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/error.h"

static bool parse_port(const char *text, uint16_t *port)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)text[0]) || strlen(text) > 5)
		return false;
	v = strtoul(text, &end, 10);
	if (*end || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

int vgpud_listen_address_parse(const char *text, struct vgpud_listen_address *out,
                               struct vgpu_error *error)
{
	char host[64];
	const char *port_text, *colon;
	uint16_t port;

	memset(out, 0, sizeof(*out));
	if (!strcmp(text, "off") || !strcmp(text, "no") || !strcmp(text, "none") ||
	    !strcmp(text, "false"))
		return 0;
	if (!*text)
		return vgpu_error_set(error, -EINVAL,
		                      "an empty address: use " VGPUD_LISTEN_ADDRESS_FORMS);
	if (text[0] == '[') {
		const char *close = strchr(text, ']');

		if (!close || close[1] != ':')
			return vgpu_error_set(error, -EINVAL,
			                      "an IPv6 address goes in brackets followed by :PORT, "
			                      "e.g. [::1]:9464");
		if ((size_t)(close - text - 1) >= sizeof(host))
			return vgpu_error_set(error, -EINVAL, "the address is too long");
		memcpy(host, text + 1, (size_t)(close - text - 1));
		host[close - text - 1] = '\0';
		port_text = close + 2;
	} else if ((colon = strrchr(text, ':'))) {
		if (strchr(text, ':') != colon)
			return vgpu_error_set(error, -EINVAL,
			                      "put an IPv6 address in brackets, e.g. [::1]:9464");
		if ((size_t)(colon - text) >= sizeof(host))
			return vgpu_error_set(error, -EINVAL, "the address is too long");
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = '\0';
		port_text = colon + 1;
	} else {
		strcpy(host, "127.0.0.1"); /* a port alone: localhost only */
		port_text = text;
	}
	if (!parse_port(port_text, &port))
		return vgpu_error_set(error, -EINVAL, "the port must be 0..65535 (0: any free "
		                      "port); use " VGPUD_LISTEN_ADDRESS_FORMS);
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (text[0] == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->addr;

		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return vgpu_error_set(error, -EINVAL, "'%s' is not an IPv6 address", host);
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		out->addr_len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&out->addr;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return vgpu_error_set(error, -EINVAL,
			                      "'%s' is not an IPv4 address (vgpud does not look up "
			                      "host names); use " VGPUD_LISTEN_ADDRESS_FORMS, host);
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		out->addr_len = sizeof(*a);
	}
	out->enabled = true;
	return 0;
}

void vgpud_listen_address_format(const struct vgpud_listen_address *address, int port,
                                 char *out, size_t out_len)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (!address->enabled) {
		snprintf(out, out_len, "off");
		return;
	}
	if (address->addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&address->addr;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(out, out_len, "[%s]:%d", host, port >= 0 ? port : ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&address->addr;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(out, out_len, "%s:%d", host, port >= 0 ? port : ntohs(a->sin_port));
	}
}
