// SPDX-License-Identifier: MIT
/* scenario.c - parsing vgpu-sim scenarios, see scenario.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu/util.h"

#include "scenario.h"

#define MAX_WORDS 16
#define MAX_NAMES 4096

struct parser {
	const char *path;
	unsigned line;
	char *error;
	size_t error_len;
	struct sim_scenario *scenario;
	bool have_gpu;
	/* Declared VMs and live buffers ("vm/buffer"), for name checks. */
	char (*vms)[SIM_NAME_MAX];
	size_t vm_count;
	char (*buffers)[2 * SIM_NAME_MAX];
	bool *buffer_live;
	size_t buffer_count;
};

static int syntax(struct parser *p, const char *format, ...) __attribute__((format(printf, 2, 3)));

static int syntax(struct parser *p, const char *format, ...)
{
	char message[384];
	va_list args;

	va_start(args, format);
	vsnprintf(message, sizeof(message), format, args);
	va_end(args);
	snprintf(p->error, p->error_len, "%s:%u: %s", p->path, p->line, message);
	return -EINVAL;
}

static int parse_number(const char *text, uint64_t *out)
{
	char *end;

	if (!isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	*out = strtoull(text, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

/* key=value: returns the value for key, or NULL if word is not key=... */
static const char *option(const char *word, const char *key)
{
	size_t length = strlen(key);

	return !strncmp(word, key, length) && word[length] == '=' ? word + length + 1 : NULL;
}

static int check_name(struct parser *p, const char *what, const char *name)
{
	size_t length = strlen(name);

	if (!length || length >= SIM_NAME_MAX)
		return syntax(p, "%s name '%s' must be 1 to %d characters", what, name,
		              SIM_NAME_MAX - 1);
	for (size_t i = 0; i < length; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_-.", name[i]))
			return syntax(p, "%s name '%s' may only use letters, digits, '_', '-', '.'",
			              what, name);
	return 0;
}

static bool vm_declared(struct parser *p, const char *name)
{
	for (size_t i = 0; i < p->vm_count; i++)
		if (!strcmp(p->vms[i], name))
			return true;
	return false;
}

static int need_vm(struct parser *p, const char *name)
{
	if (!vm_declared(p, name))
		return syntax(p, "unknown VM '%s'; declare it first with 'vm %s'", name, name);
	return 0;
}

static long find_buffer(struct parser *p, const char *vm, const char *buffer)
{
	char key[2 * SIM_NAME_MAX];

	snprintf(key, sizeof(key), "%s/%s", vm, buffer);
	for (size_t i = 0; i < p->buffer_count; i++)
		if (!strcmp(p->buffers[i], key))
			return (long)i;
	return -1;
}

static int need_live_buffer(struct parser *p, const char *vm, const char *buffer)
{
	long index = find_buffer(p, vm, buffer);

	if (index < 0 || !p->buffer_live[index])
		return syntax(p, "VM '%s' has no buffer '%s' at this point; allocate it first with "
		              "'alloc %s %s <size>'",
		              vm, buffer, vm, buffer);
	return 0;
}

static int mark_buffer(struct parser *p, const char *vm, const char *buffer, bool live)
{
	long index = find_buffer(p, vm, buffer);

	if (index < 0) {
		if (p->buffer_count == MAX_NAMES)
			return syntax(p, "too many buffer names (at most %d)", MAX_NAMES);
		index = (long)p->buffer_count++;
		snprintf(p->buffers[index], sizeof(p->buffers[index]), "%s/%s", vm, buffer);
	}
	p->buffer_live[index] = live;
	return 0;
}

static struct sim_step *new_step(struct parser *p, enum sim_step_kind kind)
{
	struct sim_scenario *s = p->scenario;
	struct sim_step *step;

	if (s->step_count == s->step_capacity) {
		size_t capacity = s->step_capacity ? 2 * s->step_capacity : 64;
		struct sim_step *steps = realloc(s->steps, capacity * sizeof(*steps));

		if (!steps)
			return NULL;
		s->steps = steps;
		s->step_capacity = capacity;
	}
	step = &s->steps[s->step_count++];
	memset(step, 0, sizeof(*step));
	step->kind = kind;
	step->line = p->line;
	return step;
}

static int parse_gpu(struct parser *p, char **words, int count)
{
	struct sim_gpu_config *gpu = &p->scenario->gpu;
	bool have_vram = false;

	if (p->have_gpu)
		return syntax(p, "a second 'gpu' line; a scenario describes one GPU");
	if (p->vm_count)
		return syntax(p, "'gpu' must come before the first 'vm'");
	gpu->line = p->line;
	gpu->chunk = 4ull << 20;
	snprintf(gpu->policy, sizeof(gpu->policy), "random");
	gpu->seed = 1;
	for (int i = 1; i < count; i++) {
		const char *value;

		if ((value = option(words[i], "vram"))) {
			if (vgpu_parse_bytes(value, &gpu->vram) || gpu->vram < (1u << 20))
				return syntax(p, "vram '%s' is not a size of at least 1M", value);
			have_vram = true;
		} else if ((value = option(words[i], "chunk"))) {
			if (vgpu_parse_bytes(value, &gpu->chunk) || !gpu->chunk || gpu->chunk % 4096)
				return syntax(p, "chunk '%s' is not a positive multiple of 4K", value);
		} else if ((value = option(words[i], "policy"))) {
			if (strcmp(value, "random") && strcmp(value, "priority") &&
			    strcmp(value, "refbits"))
				return syntax(p, "policy '%s' is unknown; use random, priority or "
				              "refbits", value);
			snprintf(gpu->policy, sizeof(gpu->policy), "%s", value);
		} else if ((value = option(words[i], "seed"))) {
			if (parse_number(value, &gpu->seed))
				return syntax(p, "seed '%s' is not a number", value);
		} else if ((value = option(words[i], "host_mem"))) {
			if (vgpu_parse_bytes(value, &gpu->host_mem))
				return syntax(p, "host_mem '%s' is not a size", value);
		} else if ((value = option(words[i], "return_interval"))) {
			uint64_t ms;

			if (parse_number(value, &ms) || ms > 3600000)
				return syntax(p, "return_interval '%s' is not a number of ms", value);
			gpu->return_interval_ms = (uint32_t)ms;
		} else if ((value = option(words[i], "sharing"))) {
			if (simgpu_sharing_parse(value, &gpu->sharing))
				return syntax(p, "sharing '%s' is unknown; use time-sliced or spatial",
				              value);
		} else if ((value = option(words[i], "walkers"))) {
			if (simgpu_walkers_parse(value, &gpu->walkers))
				return syntax(p, "walkers '%s' is unknown; use shared, static, dws or "
				              "dws++", value);
		} else if ((value = option(words[i], "memsched"))) {
			if (simgpu_memsched_parse(value, &gpu->memsched))
				return syntax(p, "memsched '%s' is unknown; use frfcfs, rr, prio, its "
				              "or weis", value);
		} else {
			return syntax(p, "unknown gpu option '%s'; use vram=, chunk=, policy=, seed=, "
			              "host_mem=, return_interval=, sharing=, walkers=, memsched=",
			              words[i]);
		}
	}
	if (!have_vram)
		return syntax(p, "'gpu' needs vram=<size>");
	p->have_gpu = true;
	return 0;
}

static int parse_vm(struct parser *p, char **words, int count)
{
	struct sim_step *step;
	int err;

	if (count < 2)
		return syntax(p, "usage: vm <name> [weight=<n>] [cap=<size>] [chunk=<size>]");
	if ((err = check_name(p, "VM", words[1])))
		return err;
	if (vm_declared(p, words[1]))
		return syntax(p, "VM '%s' is declared twice", words[1]);
	if (p->vm_count == MAX_NAMES)
		return syntax(p, "too many VMs");
	if (!(step = new_step(p, STEP_VM)))
		return -ENOMEM;
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	step->weight = 1;
	for (int i = 2; i < count; i++) {
		const char *value;
		uint64_t number;

		if ((value = option(words[i], "weight"))) {
			if (parse_number(value, &number) || !number || number > 1000000)
				return syntax(p, "weight '%s' must be 1 to 1000000", value);
			step->weight = (uint32_t)number;
		} else if ((value = option(words[i], "cap"))) {
			if (vgpu_parse_bytes(value, &step->cap))
				return syntax(p, "cap '%s' is not a size", value);
		} else if ((value = option(words[i], "chunk"))) {
			if (vgpu_parse_bytes(value, &step->chunk) || !step->chunk || step->chunk % 4096)
				return syntax(p, "chunk '%s' is not a positive multiple of 4K", value);
		} else {
			return syntax(p, "unknown vm option '%s'; use weight=, cap=, chunk=", words[i]);
		}
	}
	snprintf(p->vms[p->vm_count++], SIM_NAME_MAX, "%s", words[1]);
	return 0;
}

static int parse_alloc(struct parser *p, char **words, int count)
{
	struct sim_step *step;
	int err;

	if (count < 4)
		return syntax(p, "usage: alloc <vm> <buffer> <size> [prio=<0..15>] [nofill]");
	if ((err = need_vm(p, words[1])) || (err = check_name(p, "buffer", words[2])))
		return err;
	{
		long index = find_buffer(p, words[1], words[2]);

		if (index >= 0 && p->buffer_live[index])
			return syntax(p, "VM '%s' already has a buffer '%s'; free it first or pick "
			              "another name", words[1], words[2]);
	}
	if (!(step = new_step(p, STEP_ALLOC)))
		return -ENOMEM;
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	snprintf(step->buffers[0], sizeof(step->buffers[0]), "%s", words[2]);
	step->buffer_count = 1;
	if (vgpu_parse_bytes(words[3], &step->size) || !step->size)
		return syntax(p, "'%s' is not a size above 0 (e.g. 64K, 32M, 2G)", words[3]);
	step->priority = 7;
	step->fill = true;
	for (int i = 4; i < count; i++) {
		const char *value;
		uint64_t number;

		if ((value = option(words[i], "prio"))) {
			if (parse_number(value, &number) || number > 15)
				return syntax(p, "prio '%s' must be 0 to 15", value);
			step->priority = (unsigned)number;
		} else if (!strcmp(words[i], "nofill")) {
			step->fill = false;
		} else {
			return syntax(p, "unknown alloc option '%s'; use prio=<0..15> or nofill",
			              words[i]);
		}
	}
	return mark_buffer(p, words[1], words[2], true);
}

static int parse_free(struct parser *p, char **words, int count)
{
	struct sim_step *step;
	int err;

	if (count != 3)
		return syntax(p, "usage: free <vm> <buffer>");
	if ((err = need_vm(p, words[1])) || (err = need_live_buffer(p, words[1], words[2])))
		return err;
	if (!(step = new_step(p, STEP_FREE)))
		return -ENOMEM;
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	snprintf(step->buffers[0], sizeof(step->buffers[0]), "%s", words[2]);
	step->buffer_count = 1;
	return mark_buffer(p, words[1], words[2], false);
}

static int parse_run(struct parser *p, char **words, int count)
{
	static const char *const kernels[] = { "stream", "stencil", "gups", "checksum" };
	struct sim_step *step;
	char *list, *save = NULL, *name;
	int err;

	if (count < 4 || count > 5)
		return syntax(p, "usage: run <vm> stream|stencil|gups|checksum <buffer>[,<buffer>...] "
		              "[passes=<n>]");
	if ((err = need_vm(p, words[1])))
		return err;
	if (!(step = new_step(p, STEP_RUN)))
		return -ENOMEM;
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	step->kernel = (enum sim_kernel)-1;
	for (int k = 0; k < 4; k++)
		if (!strcmp(words[2], kernels[k]))
			step->kernel = (enum sim_kernel)k;
	if ((int)step->kernel < 0)
		return syntax(p, "unknown kernel '%s'; use stream, stencil, gups or checksum",
		              words[2]);
	list = words[3];
	while ((name = strtok_r(list, ",", &save))) {
		list = NULL;
		if (step->buffer_count == SIM_RUN_BUFFERS_MAX)
			return syntax(p, "at most %d buffers per run", SIM_RUN_BUFFERS_MAX);
		if ((err = need_live_buffer(p, step->vm, name)))
			return err;
		snprintf(step->buffers[step->buffer_count++], SIM_NAME_MAX, "%s", name);
	}
	if (!step->buffer_count)
		return syntax(p, "run needs at least one buffer");
	if (step->kernel == KERNEL_STENCIL && step->buffer_count != 2)
		return syntax(p, "stencil needs two buffers: <in>,<out>");
	step->passes = 1;
	if (count == 5) {
		const char *value = option(words[4], "passes");
		uint64_t number;

		if (!value || parse_number(value, &number) || !number || number > 4096)
			return syntax(p, "'%s' should be passes=<1..4096>", words[4]);
		step->passes = (unsigned)number;
	}
	return 0;
}

const char *const sim_quantity_names[SIM_QUANTITIES] = {
	"resident", "evicted", "allocated", "fair_share", "kernels", "walks", "walks_waited_max",
};

static int parse_expect(struct parser *p, char **words, int count)
{
	const char *const *quantities = sim_quantity_names;
	static const char *const compares[] = { "=", "<=", ">=", "~" };
	struct sim_step *step;
	int err;

	if (count != 5)
		return syntax(p, "usage: expect <vm>[:<buffer>] resident|evicted|allocated|"
		              "fair_share|kernels|walks|walks_waited_max =|<=|>=|~ <size>|<vm>");
	if (!(step = new_step(p, STEP_EXPECT)))
		return -ENOMEM;
	{
		char *colon = strchr(words[1], ':');

		if (colon) {
			*colon = '\0';
			step->of_buffer = true;
			snprintf(step->buffers[0], sizeof(step->buffers[0]), "%s", colon + 1);
			step->buffer_count = 1;
		}
		if ((err = need_vm(p, words[1])))
			return err;
		if (colon && (err = need_live_buffer(p, words[1], colon + 1)))
			return err;
	}
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	step->quantity = (enum sim_quantity)-1;
	for (int q = 0; q < SIM_QUANTITIES; q++)
		if (!strcmp(words[2], quantities[q]))
			step->quantity = (enum sim_quantity)q;
	if ((int)step->quantity < 0)
		return syntax(p, "unknown quantity '%s'; use resident, evicted, allocated, "
		              "fair_share, kernels, walks or walks_waited_max", words[2]);
	step->compare = (enum sim_compare)-1;
	for (int c = 0; c < 4; c++)
		if (!strcmp(words[3], compares[c]))
			step->compare = (enum sim_compare)c;
	if ((int)step->compare < 0)
		return syntax(p, "unknown comparison '%s'; use =, <=, >= or ~", words[3]);
	if (step->of_buffer && step->quantity >= QUANTITY_FAIR_SHARE)
		return syntax(p, "a buffer has no fair share; use resident, evicted or allocated");
	if (vgpu_parse_bytes(words[4], &step->size)) {
		if (step->of_buffer)
			return syntax(p, "'%s' is not a size", words[4]);
		if (!vm_declared(p, words[4]))
			return syntax(p, "'%s' is neither a size nor a declared VM", words[4]);
		snprintf(step->other_vm, sizeof(step->other_vm), "%s", words[4]);
	}
	return 0;
}

static int parse_tick(struct parser *p, char **words, int count)
{
	struct sim_step *step;
	uint64_t number;

	if (count != 2 || parse_number(words[1], &number))
		return syntax(p, "usage: tick <ms>");
	if (!(step = new_step(p, STEP_TICK)))
		return -ENOMEM;
	step->size = number;
	return 0;
}

static int parse_verify(struct parser *p, char **words, int count)
{
	struct sim_step *step;
	int err;

	if (count != 2)
		return syntax(p, "usage: verify <vm>|all");
	if (strcmp(words[1], "all") && (err = need_vm(p, words[1])))
		return err;
	if (!(step = new_step(p, STEP_VERIFY)))
		return -ENOMEM;
	step->all = !strcmp(words[1], "all");
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	return 0;
}

static int parse_weight(struct parser *p, char **words, int count)
{
	struct sim_step *step;
	uint64_t number;
	int err;

	if (count != 3 || parse_number(words[2], &number) || !number || number > 1000000)
		return syntax(p, "usage: weight <vm> <1..1000000>");
	if ((err = need_vm(p, words[1])))
		return err;
	if (!(step = new_step(p, STEP_WEIGHT)))
		return -ENOMEM;
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	step->size = number;
	return 0;
}

static int parse_prio(struct parser *p, char **words, int count)
{
	struct sim_step *step;
	uint64_t number;
	int err;

	if (count != 4 || parse_number(words[3], &number) || number > 15)
		return syntax(p, "usage: prio <vm> <buffer> <0..15>");
	if ((err = need_vm(p, words[1])) || (err = need_live_buffer(p, words[1], words[2])))
		return err;
	if (!(step = new_step(p, STEP_PRIO)))
		return -ENOMEM;
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	snprintf(step->buffers[0], sizeof(step->buffers[0]), "%s", words[2]);
	step->size = number;
	return 0;
}

static int parse_destroy(struct parser *p, char **words, int count)
{
	struct sim_step *step;
	int err;

	if (count != 2)
		return syntax(p, "usage: destroy <vm>");
	if ((err = need_vm(p, words[1])))
		return err;
	if (!(step = new_step(p, STEP_DESTROY)))
		return -ENOMEM;
	snprintf(step->vm, sizeof(step->vm), "%s", words[1]);
	/* Its name and buffers are gone (a later 'vm' may reuse the name). */
	for (size_t i = 0; i < p->vm_count; i++)
		if (!strcmp(p->vms[i], words[1]))
			p->vms[i][0] = '\0';
	for (size_t i = 0; i < p->buffer_count; i++)
		if (!strncmp(p->buffers[i], words[1], strlen(words[1])) &&
		    p->buffers[i][strlen(words[1])] == '/')
			p->buffer_live[i] = false;
	return 0;
}

/* The commands after the 'gpu' line. */
static const struct {
	const char *name;
	int (*parse)(struct parser *p, char **words, int count);
} commands[] = {
	{ "vm", parse_vm },         { "alloc", parse_alloc },   { "free", parse_free },
	{ "run", parse_run },       { "expect", parse_expect }, { "tick", parse_tick },
	{ "verify", parse_verify }, { "weight", parse_weight }, { "prio", parse_prio },
	{ "destroy", parse_destroy },
};

static int parse_line(struct parser *p, char *text)
{
	char *words[MAX_WORDS], *save = NULL, *word;
	int count = 0;

	if ((word = strchr(text, '#')))
		*word = '\0';
	while ((word = strtok_r(count ? NULL : text, " \t\r\n", &save))) {
		if (count == MAX_WORDS)
			return syntax(p, "too many words on one line");
		words[count++] = word;
	}
	if (!count)
		return 0;
	if (!strcmp(words[0], "gpu"))
		return parse_gpu(p, words, count);
	if (!p->have_gpu)
		return syntax(p, "'%s' before the 'gpu' line; start with 'gpu vram=<size> ...'",
		              words[0]);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(words[0], commands[i].name))
			return commands[i].parse(p, words, count);
	return syntax(p, "unknown command '%s'; use gpu, vm, alloc, free, run, tick, verify, "
	              "expect, weight, prio or destroy", words[0]);
}

int sim_scenario_load(const char *path, struct sim_scenario *out, char *error, size_t error_len)
{
	struct parser p = { .path = path, .error = error, .error_len = error_len, .scenario = out };
	char line[1024];
	FILE *file;
	int err = 0;

	memset(out, 0, sizeof(*out));
	file = fopen(path, "r");
	if (!file) {
		snprintf(error, error_len, "%s: cannot open: %s", path, strerror(errno));
		return -errno;
	}
	out->path = strdup(path);
	p.vms = calloc(MAX_NAMES, sizeof(*p.vms));
	p.buffers = calloc(MAX_NAMES, sizeof(*p.buffers));
	p.buffer_live = calloc(MAX_NAMES, sizeof(*p.buffer_live));
	if (!out->path || !p.vms || !p.buffers || !p.buffer_live)
		err = -ENOMEM;
	while (!err && fgets(line, sizeof(line), file)) {
		p.line++;
		if (!strchr(line, '\n') && !feof(file)) {
			err = syntax(&p, "line longer than %zu characters", sizeof(line) - 2);
			break;
		}
		err = parse_line(&p, line);
	}
	if (!err && !p.have_gpu) {
		p.line = p.line ? p.line : 1;
		err = syntax(&p, "no 'gpu' line; a scenario starts with 'gpu vram=<size> ...'");
	}
	if (err == -ENOMEM)
		snprintf(error, error_len, "%s: out of memory", path);
	fclose(file);
	free(p.vms);
	free(p.buffers);
	free(p.buffer_live);
	if (err)
		sim_scenario_free(out);
	return err;
}

void sim_scenario_free(struct sim_scenario *scenario)
{
	free(scenario->steps);
	free(scenario->path);
	memset(scenario, 0, sizeof(*scenario));
}
