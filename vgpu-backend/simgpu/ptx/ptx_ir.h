/* SPDX-License-Identifier: MIT */
/*
 * ptx_ir.h - the lowered form of a PTX module, shared by the loader
 * (ptx_parse.c, ptx_decode.c, ptx_module.c) and the executor (ptx_exec.c,
 * ptx_warp.c). Internal to the library.
 *
 * Every register of a function is one 64-bit slot per lane (predicates
 * hold 0 or 1); values narrower than 64 bits are kept zero or sign extended
 * by their type, and readers truncate. An instruction names registers by
 * index into its function's register file, carries its immediates already
 * converted to the operand type's bits, and its branch targets as
 * instruction indices.
 */
#ifndef SIMGPU_PTX_IR_H
#define SIMGPU_PTX_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "ptx_exec.h"
#include "ptx_module.h"

enum ptx_type {
	PT_NONE,
	PT_B8, PT_B16, PT_B32, PT_B64,
	PT_U8, PT_U16, PT_U32, PT_U64,
	PT_S8, PT_S16, PT_S32, PT_S64,
	PT_F32, PT_F64, PT_PRED,
	PT_F16,             /* cvt only: half precision in .b16 registers */
	PT_COUNT,
};

static inline unsigned ptx_type_size(unsigned t)
{
	static const unsigned char size[PT_COUNT] = {
		0, 1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 1, 2,
	};
	return t < PT_COUNT ? size[t] : 0;
}

/* Set bits of a lane mask (inline: baseline x86-64 has no popcnt). */
static inline unsigned ptx_popcount32(uint32_t x)
{
	x = x - ((x >> 1) & 0x55555555u);
	x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
	x = (x + (x >> 4)) & 0x0f0f0f0fu;
	return (x * 0x01010101u) >> 24;
}

static inline bool ptx_type_signed(unsigned t)
{
	return t >= PT_S8 && t <= PT_S64;
}

static inline bool ptx_type_float(unsigned t)
{
	return t == PT_F32 || t == PT_F64;
}

enum ptx_opcode {
	OP_NOP, OP_MOV, OP_SREG, OP_ADD, OP_SUB, OP_MUL, OP_MAD, OP_DIV,
	OP_REM, OP_ABS, OP_NEG, OP_MIN, OP_MAX, OP_AND, OP_OR, OP_XOR, OP_NOT,
	OP_CNOT, OP_SHL, OP_SHR, OP_SHF, OP_POPC, OP_CLZ, OP_BREV, OP_BFE,
	OP_BFI, OP_BFIND, OP_PRMT, OP_FMA, OP_RCP, OP_SQRT, OP_RSQRT, OP_SIN,
	OP_COS, OP_LG2, OP_EX2, OP_TANH, OP_COPYSIGN, OP_TESTP, OP_SETP,
	OP_SELP, OP_CVT, OP_CVTA, OP_ISSPACEP, OP_LD, OP_ST, OP_ATOM, OP_RED,
	OP_BAR, OP_BAR_WARP, OP_SHFL, OP_VOTE, OP_ACTIVEMASK, OP_BRA,
	OP_CALL, OP_RET, OP_EXIT, OP_TRAP, OP_ADDC, OP_SUBC, OP_MUL24,
	OP_SAD, OP_BAR_RED, OP_REDUX, OP_COUNT,
};

enum ptx_rounding { RND_NONE, RND_RN, RND_RZ, RND_RM, RND_RP,
		    RND_RNI, RND_RZI, RND_RMI, RND_RPI };

enum ptx_cmp {
	CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS,
	CMP_HI, CMP_HS, CMP_EQU, CMP_NEU, CMP_LTU, CMP_LEU, CMP_GTU, CMP_GEU,
	CMP_NUM, CMP_NAN,
};

enum ptx_boolop { BOOL_NONE, BOOL_AND, BOOL_OR, BOOL_XOR };

enum ptx_space { SP_GENERIC, SP_GLOBAL, SP_SHARED, SP_LOCAL, SP_PARAM,
		 SP_CONST };

/* .hi/.lo/.wide; shfl modes; vote modes; shf modes; testp tests. */
enum ptx_mode {
	MODE_NONE, MODE_LO, MODE_HI, MODE_WIDE,
	MODE_UP, MODE_DOWN, MODE_BFLY, MODE_IDX,
	MODE_ALL, MODE_ANY, MODE_UNI, MODE_BALLOT,
	MODE_SHF_L_WRAP, MODE_SHF_L_CLAMP, MODE_SHF_R_WRAP, MODE_SHF_R_CLAMP,
	MODE_FINITE, MODE_INFINITE, MODE_NUMBER, MODE_NOTANUMBER,
	MODE_NORMAL, MODE_SUBNORMAL,
	MODE_PRMT_F4E, MODE_PRMT_B4E, MODE_PRMT_RC8, MODE_PRMT_ECL,
	MODE_PRMT_ECR, MODE_PRMT_RC16,
	MODE_BFIND_SHIFTAMT,
	MODE_RED_POPC, MODE_RED_AND, MODE_RED_OR,
};

enum ptx_sreg {
	SR_TID_X, SR_TID_Y, SR_TID_Z, SR_NTID_X, SR_NTID_Y, SR_NTID_Z,
	SR_CTAID_X, SR_CTAID_Y, SR_CTAID_Z, SR_NCTAID_X, SR_NCTAID_Y,
	SR_NCTAID_Z, SR_LANEID, SR_WARPID, SR_NWARPID, SR_SMID, SR_NSMID,
	SR_GRIDID, SR_CLOCK, SR_CLOCK64, SR_LANEMASK_EQ, SR_LANEMASK_LE,
	SR_LANEMASK_LT, SR_LANEMASK_GE, SR_LANEMASK_GT, SR_GLOBALTIMER,
	SR_DYNAMIC_SMEM_SIZE, SR_TOTAL_SMEM_SIZE,
};

enum ptx_operand_kind {
	OPK_NONE,
	OPK_REG,    /* reg */
	OPK_IMM,    /* imm: bits of the operand's type */
	OPK_SINK,   /* "_" destination */
	OPK_ADDR,   /* [base + imm]: base per addr_base */
	OPK_SYM,    /* the address of a symbol (mov d, sym), per addr_base */
};

enum ptx_addr_base {
	AB_REG,     /* register reg + imm */
	AB_ABS,     /* imm */
	AB_VAR,     /* module variable reg (index) + imm */
	AB_SHARED,  /* shared offset imm (variable offset folded in) */
	AB_KPARAM,  /* kernel parameter block offset imm */
	AB_FRAME,   /* current frame's local offset imm */
};

struct ptx_operand {
	uint8_t kind;
	uint8_t neg;        /* "!p" predicate source */
	uint8_t base;       /* enum ptx_addr_base for OPK_ADDR/OPK_SYM */
	uint8_t pad;
	uint32_t reg;        /* AB_SHARED: 1 when relative to dynamic shared */
	uint64_t imm;
};

#define PTX_NO_GUARD UINT32_MAX
#define PTX_MAX_OPERANDS 6

struct ptx_insn {
	uint8_t op;         /* enum ptx_opcode */
	uint8_t type;       /* the instruction type (cvt: destination) */
	uint8_t type2;      /* cvt/set: source type */
	uint8_t rnd;        /* enum ptx_rounding */
	uint8_t cmp, boolop, space, mode;
	uint8_t vec;        /* 1, 2 or 4 */
	uint8_t ftz, sat, approx;
	uint8_t cls;        /* enum ptx_insn_class */
	uint8_t nops;
	uint8_t uni;        /* .uni branch, or atom op for OP_ATOM/RED */
	uint8_t to;         /* cvta.to */
	uint8_t cc;         /* add/sub/mad carry: 1 sets CC.CF, 2 adds it in */
	uint32_t guard;     /* predicate register, or PTX_NO_GUARD */
	uint32_t guard_neg;
	uint32_t target;    /* bra: instruction index; call: call index */
	uint32_t line;
	struct ptx_operand o[PTX_MAX_OPERANDS];
};

/* A call site: argument and return .param variables (caller frame
 * offsets) and the callee's matching formal parameters. */
struct ptx_call {
	uint32_t callee;
	uint32_t nargs, nrets;
	uint32_t *arg_offset, *arg_size;   /* caller frame, nargs each */
	uint32_t *ret_offset, *ret_size;   /* caller frame, nrets each */
};

struct ptx_func {
	char *name;
	bool is_entry, defined;
	uint32_t line;
	uint32_t nparams, nrets;
	struct ptx_param_info *params;   /* entry: block offsets; func: frame */
	struct ptx_param_info *rets;     /* func return values: frame offsets */
	uint32_t param_bytes;
	uint32_t nregs;
	uint32_t frame_bytes;            /* per-thread local frame */
	uint32_t frame_align;
	uint32_t ninsns;
	struct ptx_insn *insns;
	uint32_t ncalls;
	struct ptx_call *calls;
	bool may_call, has_barrier;
	uint8_t builtin;                 /* an .extern the executor provides */
};

/* .extern functions the executor provides (ptx_func.builtin). */
enum ptx_builtin { BUILTIN_NONE, BUILTIN_VPRINTF, BUILTIN_ASSERTFAIL };

struct ptx_var {
	struct ptx_var_info info;
	uint8_t *init;
};

struct ptx_module {
	char *name;
	uint32_t nfuncs;
	struct ptx_func *funcs;
	uint32_t nentries;
	uint32_t *entry_func;            /* entry index -> function index */
	struct ptx_entry_info *entries;
	uint32_t nvars;
	struct ptx_var *vars;
	struct ptx_var_info *var_infos;
	uint32_t shared_bytes;           /* static .shared, all variables */
	uint32_t shared_align;
	uint32_t ninsns;
};

#endif
