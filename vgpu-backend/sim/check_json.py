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
    if doc["gpu"].get("sharing") == "spatial":
        fig = vm["contention"]
        for key in ("kernels", "walks", "avg_walk_latency_cycles", "foreign_walks_waited",
                    "foreign_walks_waited_max", "l2_tlb_hit_rate", "mpki",
                    "bandwidth_bytes_per_s", "ipc", "slowdown"):
            assert key in fig, key
        assert fig["kernels"] > 0 and fig["cycles"] > 0 and fig["ipc"] > 0
        assert 0 <= fig["l2_tlb_hit_rate"] <= 1
        if doc["gpu"]["walkers"] == "dws":
            assert fig["foreign_walks_waited_max"] <= 1
    else:
        assert "contention" not in vm
print("json ok:", ", ".join(f'{vm["name"]} {vm["resident"] >> 20} MiB resident'
                            for vm in doc["vms"]))
