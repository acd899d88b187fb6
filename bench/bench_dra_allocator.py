"""What the device allocator costs per node: a pod with one claim for one GPU, filtered against
every node of a cluster whose nodes each publish one ResourceSlice of 8 GPUs.

Builds ``--nodes`` slices (8 devices each, with attributes and a memory capacity, as a GPU
driver publishes them), a DeviceClass selecting the driver's devices by CEL, and an allocated
state with ``--allocated`` of each node's devices in use; then, ``--rounds`` times, builds an
Allocator (as PreFilter does for each pod, with the slice cache the plugin keeps across
cycles) and allocates the claim on every node (as Filter does). It prints the CPU time per
node: the first round (every slice parsed, every selector compiled and evaluated) and the
median of the others (slices parsed and selector results cached, as in a steady state), and
what each pod's PreFilter costs: the allocated state from the claims' allocations, and the
Allocator.

    python bench/bench_dra_allocator.py [--nodes 500] [--devices 8] [--allocated 4] [--rounds 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from policy_scheduler.model.cel import DeviceSelectors
from policy_scheduler.model.dra import AllocatedState, Allocator
from policy_scheduler.model.dra.devices import SliceCache

DRIVER = "gpu.example.com"


def gpu_slice(node: int, devices: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"node-{node}-gpus", "uid": f"uid-{node}", "resourceVersion": "1"},
        "spec": {
            "driver": DRIVER,
            "nodeName": f"node-{node}",
            "pool": {"name": f"node-{node}", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{index}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "index": {"int": index},
                        "numa": {"int": index // 4},
                        "driverVersion": {"version": "550.54.15"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                }
                for index in range(devices)
            ],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--allocated", type=int, default=4, help="devices in use per node")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()

    slices = [gpu_slice(node, args.devices) for node in range(args.nodes)]
    classes = {
        "gpu": {
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    }
    in_use = [
        {
            "devices": {
                "results": [
                    {"request": "r", "driver": DRIVER, "pool": f"node-{n}", "device": f"gpu-{i}"}
                    for i in range(args.allocated)
                ]
            }
        }
        for n in range(args.nodes)
    ]
    claim = {
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    nodes = [(f"node-{n}", {"kubernetes.io/hostname": f"node-{n}"}) for n in range(args.nodes)]
    selectors = DeviceSelectors()
    cache = SliceCache()
    per_node: list[float] = []
    states: list[float] = []
    construction: list[float] = []
    for _ in range(args.rounds):
        started = time.process_time()
        state = AllocatedState.of(in_use)
        gathered = time.process_time()
        allocator = Allocator(state, classes, slices, selectors, slice_cache=cache)
        built = time.process_time()
        for name, labels in nodes:
            result = allocator.allocate(name, labels, [claim])
            assert isinstance(result, list), result
        done = time.process_time()
        states.append(gathered - started)
        construction.append(built - gathered)
        per_node.append((done - built) / args.nodes)
    steady = statistics.median(per_node[1:]) if len(per_node) > 1 else per_node[0]
    print(
        f"{args.nodes} nodes x {args.devices} devices ({args.allocated} in use each), "
        "1 claim x 1 device, CPU time"
    )
    rows = [
        ("allocate per node, first round (cold)", per_node[0]),
        ("allocate per node, steady (median)", steady),
        ("AllocatedState.of per pod (median)", statistics.median(states)),
        ("Allocator per pod (median)", statistics.median(construction)),
    ]
    for label, seconds in rows:
        print(f"  {label:<40} {seconds * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
