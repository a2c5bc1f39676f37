#!/usr/bin/env python3
"""Run vgpu-sim --json on a scenario and check the document's shape."""
import json
import subprocess
import sys

sim, scenario = sys.argv[1], sys.argv[2]
result = subprocess.run([sim, "--json", scenario], capture_output=True, text=True, check=False)
if result.returncode != 0:
    sys.exit(f"vgpu-sim exited {result.returncode}: {result.stderr}")
doc = json.loads(result.stdout)
for key in ("vram", "free", "chunk"):
    assert isinstance(doc["gpu"][key], int), key
assert doc["invariants"] == "ok", doc["invariants"]
assert doc["expects_failed"] == 0
assert len(doc["vms"]) >= 2
for vm in doc["vms"]:
    for key in ("name", "weight", "allocated", "resident", "evicted", "fair_share",
                "evictions", "returns", "modeled_runtime_ns", "verify"):
        assert key in vm, key
    assert vm["verify"] in ("ok", "fail", "not-run")
    assert vm["allocated"] == vm["resident"] + vm["evicted"]
print("json ok:", ", ".join(f'{vm["name"]} {vm["resident"] >> 20} MiB resident'
                            for vm in doc["vms"]))
