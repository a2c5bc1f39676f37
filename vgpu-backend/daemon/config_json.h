/* SPDX-License-Identifier: MIT */
/*
 * config_json.h - vgpud's effective configuration as JSON (control API
 * "config", vgpud --check-config). Sizes in bytes, times in ms.
 */
#ifndef VGPUD_CONFIG_JSON_H
#define VGPUD_CONFIG_JSON_H

#include <json-c/json.h>

#include "config.h"
#include "profiles.h"

/* profiles: the live set (NULL: config's own). */
struct json_object *vgpud_config_to_json(const struct vgpud_config *config,
                                         struct vgpud_profiles *profiles);

/* One profile as JSON: name, weight, cap, max_instances (+ instances,
 * available when live is given). */
struct json_object *vgpud_profile_to_json(const struct vgpud_profile_spec *spec,
                                          const struct vgpud_profile *live);

#endif /* VGPUD_CONFIG_JSON_H */
