// SPDX-License-Identifier: MIT
/* migrate_stream.c - migration stream records, see migrate_stream.h. */
#include "migrate_stream.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The CRC of two parts as of one buffer. */
static uint32_t crc_parts(const void *a, size_t a_len, const void *b, size_t b_len)
{
	static uint32_t table[256];
	static _Atomic int ready;
	uint32_t crc = 0xffffffffu;
	const uint8_t *p;
	size_t len;

	if (!ready) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
		ready = 1;
	}
	for (p = a, len = a_len; len--;)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	for (p = b, len = b_len; len--;)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffffu;
}

uint32_t migrate_crc32(const void *data, size_t len)
{
	return crc_parts(data, len, NULL, 0);
}

void migrate_stream_init(struct migrate_stream *s, int fd)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
}

static int write_all(struct migrate_stream *s, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len && !s->error) {
		/* no SIGPIPE when the destination hung up: an error instead */
		ssize_t n = send(s->fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == ENOTSOCK)
			n = write(s->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->error = n < 0 ? -errno : -EPIPE;
			break;
		}
		p += n;
		len -= (size_t)n;
		s->bytes += (uint64_t)n;
	}
	return s->error;
}

int migrate_write(struct migrate_stream *s, uint16_t type, const void *head, size_t head_len,
                  const void *tail, size_t tail_len)
{
	struct migrate_record_header h = {
		.magic = MIGRATE_MAGIC,
		.type = type,
		.version = 1,
		.length = (uint32_t)(head_len + tail_len),
		.crc32 = crc_parts(head, head_len, tail, tail_len),
	};

	if (head_len + tail_len > MIGRATE_RECORD_MAX)
		return s->error = -EINVAL;
	if (!write_all(s, &h, sizeof(h)) && head_len)
		write_all(s, head, head_len);
	if (!s->error && tail_len)
		write_all(s, tail, tail_len);
	if (!s->error)
		s->records++;
	return s->error;
}

static int read_all(struct migrate_stream *s, void *data, size_t len, bool *eof_at_start)
{
	uint8_t *p = data;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(s->fd, p + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			if (eof_at_start)
				*eof_at_start = got == 0;
			return -EPIPE;
		}
		got += (size_t)n;
		s->bytes += (uint64_t)n;
	}
	return 0;
}

/* The smallest and largest payload of each type. */
static bool length_ok(uint16_t type, uint32_t length)
{
	switch (type) {
	case MIGRATE_REC_BEGIN: return length == sizeof(struct migrate_begin);
	case MIGRATE_REC_BUFFER: return length == sizeof(struct migrate_buffer);
	case MIGRATE_REC_DATA:
		return length > sizeof(struct migrate_data) &&
		       length <= sizeof(struct migrate_data) + MIGRATE_DATA_MAX;
	case MIGRATE_REC_CHANNEL:
		return length >= sizeof(struct migrate_channel) && length <= MIGRATE_RECORD_MAX;
	case MIGRATE_REC_DEVICE:
		return length >= sizeof(struct migrate_device) && length <= MIGRATE_RECORD_MAX;
	case MIGRATE_REC_HANDLES:
		return length >= sizeof(struct migrate_handles) && length <= MIGRATE_RECORD_MAX;
	case MIGRATE_REC_MODULE:
		return length >= sizeof(struct migrate_module) && length <= MIGRATE_RECORD_MAX;
	case MIGRATE_REC_END: return length == sizeof(struct migrate_end);
	default: return false;
	}
}

int migrate_read(struct migrate_stream *s, void *buf, uint16_t *type, uint32_t *length,
                 const char **why)
{
	struct migrate_record_header h;
	bool eof_at_start = false;
	int err;

	*why = "";
	err = read_all(s, &h, sizeof(h), &eof_at_start);
	if (err == -EPIPE && !eof_at_start) {
		*why = "the stream ends inside a record header";
		return -EPROTO;
	}
	if (err)
		return err;
	if (h.magic != MIGRATE_MAGIC) {
		*why = "a record does not start with the stream's magic number";
		return -EPROTO;
	}
	if (h.version != 1 || !length_ok(h.type, h.length)) {
		*why = "a record has an unknown type or version or a length out of bounds for "
		       "its type";
		return -EPROTO;
	}
	err = read_all(s, buf, h.length, NULL);
	if (err == -EPIPE) {
		*why = "the stream ends inside a record";
		return -EPROTO;
	}
	if (err)
		return err;
	if (migrate_crc32(buf, h.length) != h.crc32) {
		*why = "a record's checksum does not match its contents";
		return -EPROTO;
	}
	s->records++;
	*type = h.type;
	*length = h.length;
	return 0;
}
