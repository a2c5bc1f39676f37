// SPDX-License-Identifier: MIT
/* vgpu_status.c - response status codes and opcodes: errno and names. */
#include "vgpu_proto.h"

int vgpu_status_to_errno(u32 status)
{
	switch (status) {
	case VGPU_STATUS_OK:
		return 0;
	case VGPU_STATUS_INVALID:
		return -EINVAL;
	case VGPU_STATUS_UNSUPPORTED:
		return -EOPNOTSUPP;
	case VGPU_STATUS_NO_MEMORY:
		return -ENOMEM;
	case VGPU_STATUS_NOT_FOUND:
		return -ENOENT;
	case VGPU_STATUS_LIMIT:
		return -ENOSPC;
	case VGPU_STATUS_VERSION:
		return -EPROTONOSUPPORT;
	case VGPU_STATUS_NOT_READY:
		return -ENOTCONN;
	case VGPU_STATUS_INTERNAL:
		return -EIO;
	case VGPU_STATUS_BUSY:
		return -EAGAIN;
	default:
		return -EPROTO;
	}
}

bool vgpu_status_is_known(u32 status)
{
	return status <= VGPU_STATUS_BUSY;
}

const char *vgpu_status_name(u32 status)
{
	switch (status) {
	case VGPU_STATUS_OK:
		return "OK";
	case VGPU_STATUS_INVALID:
		return "INVALID";
	case VGPU_STATUS_UNSUPPORTED:
		return "UNSUPPORTED";
	case VGPU_STATUS_NO_MEMORY:
		return "NO_MEMORY";
	case VGPU_STATUS_NOT_FOUND:
		return "NOT_FOUND";
	case VGPU_STATUS_LIMIT:
		return "LIMIT";
	case VGPU_STATUS_VERSION:
		return "VERSION";
	case VGPU_STATUS_NOT_READY:
		return "NOT_READY";
	case VGPU_STATUS_INTERNAL:
		return "INTERNAL";
	case VGPU_STATUS_BUSY:
		return "BUSY";
	default:
		return "unknown";
	}
}

const char *vgpu_opcode_name(u32 opcode)
{
	switch (opcode) {
	case VGPU_OP_HELLO:
		return "HELLO";
	case VGPU_OP_QUERY:
		return "QUERY";
	case VGPU_OP_ALLOC:
		return "ALLOC";
	case VGPU_OP_FREE:
		return "FREE";
	case VGPU_OP_CHANNEL_CREATE:
		return "CHANNEL_CREATE";
	case VGPU_OP_CHANNEL_DESTROY:
		return "CHANNEL_DESTROY";
	case VGPU_OP_SET_PRIORITY:
		return "SET_PRIORITY";
	case VGPU_OP_STATS:
		return "STATS";
	case VGPU_OP_MODULE_LOAD:
		return "MODULE_LOAD";
	case VGPU_OP_MODULE_UNLOAD:
		return "MODULE_UNLOAD";
	case VGPU_OP_CHANNEL_FAULT:
		return "CHANNEL_FAULT";
	default:
		return "unknown";
	}
}
