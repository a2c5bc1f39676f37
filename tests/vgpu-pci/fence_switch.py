#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""fence_switch.py SOURCE-CONSOLE DESTINATION-CONSOLE - the guest-visible
pause of the GPU at one switch-over of a live migration, from the fence
timeline vgpu-fence-gaps --timeline prints on the guest's serial console
('VGPU-FENCE-T n=N s=SUBMITTED c=COMPLETED', the guest's clock).

The switch is where the guest's console changes files: a fence whose line
reached the source QEMU's console completed before the guest stopped there,
one whose line is in the destination's console completed after it ran again
(the guest's clock stops while QEMU stops its vCPUs, so the switch is one
instant of the guest's timeline, between the two). The fences across the
switch are the first two completed on the destination (the first may have
completed before the stop and been printed after it, when the guest was
stopped between the two); the pause is the longest wait, submission to
completion, among them. Prints one JSON object:
  downtime_ns   that longest wait (0: no fence across the switch)
  fence         its number
  gap_ns        completion to completion across the switch (with the
                workload's pacing between fences)
  source_fences, destination_fences   complete lines in each console
Exit status 0, 1 (no fence on one side: no figure), 2 (usage)."""
import json
import re
import sys

LINE = re.compile(r"^VGPU-FENCE-T n=(\d+) s=(\d+) c=(\d+)$")


def fences(path):
    """{n: (s, c)} of the complete timeline lines of a console file."""
    with open(path, "rb") as f:
        text = f.read().decode("ascii", "replace").replace("\r", "")
    lines = text.split("\n")[:-1]  # the last piece has no newline yet
    out = {}
    for line in lines:
        m = LINE.match(line)
        if m:
            out[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    return out


def main():
    if len(sys.argv) != 3:
        print("usage: fence_switch.py SOURCE-CONSOLE DESTINATION-CONSOLE",
              file=sys.stderr)
        return 2
    before, after = fences(sys.argv[1]), fences(sys.argv[2])
    result = {"source_fences": len(before), "destination_fences": len(after),
              "downtime_ns": 0, "fence": 0, "gap_ns": 0}
    if not before or not after:
        print(json.dumps(result))
        return 1
    last = max(before)
    across = sorted(n for n in after if n > last)[:2]
    if not across:
        print(json.dumps(result))
        return 1
    worst = max(across, key=lambda n: after[n][1] - after[n][0])
    result["downtime_ns"] = after[worst][1] - after[worst][0]
    result["fence"] = worst
    result["gap_ns"] = after[across[0]][1] - before[last][1]
    print(json.dumps(result))
    return 0


sys.exit(main())
