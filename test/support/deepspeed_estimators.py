"""DeepSpeed's own model-states estimators over a grid, for test/unit/gpu/shardingOracle.test.ts.

Reads a JSON list of {"params", "largest_layer", "gpus_per_node", "nodes"} on stdin and prints one JSON object:
for each case the table that estimate_zero2/zero3_model_states_mem_needs_all_cold print (their public output,
compared token for token) and the exact byte counts of the functions behind those tables.
"""
import contextlib
import io
import json
import sys


def main() -> None:
    from deepspeed.runtime.zero import stage3, stage_1_and_2
    import deepspeed

    out = []
    for case in json.load(sys.stdin):
        p, big, gpn, nodes = case["params"], case["largest_layer"], case["gpus_per_node"], case["nodes"]
        z2 = io.StringIO()
        with contextlib.redirect_stdout(z2):
            stage_1_and_2.estimate_zero2_model_states_mem_needs_all_cold(p, gpn, nodes)
        z3 = io.StringIO()
        with contextlib.redirect_stdout(z3):
            stage3.estimate_zero3_model_states_mem_needs_all_cold(p, big, gpn, nodes)
        exact = []
        for off in (True, False):
            cpu, gpu = stage_1_and_2.estimate_zero2_model_states_mem_needs(p, gpn, nodes, cpu_offload=off)
            exact.append({"stage": 2, "offload_optimizer": off, "offload_param": False, "zero_init": True, "cpu": cpu, "gpu": gpu})
        for off in (True, False):
            for off_p in (True, False):
                if off_p and not off:
                    continue  # the estimator has no such row
                for zi in (True, False):
                    cpu, gpu, _ = stage3.estimate_zero3_model_states_mem_needs(p, big, gpn, nodes, cpu_offload=off,
                                                                              cpu_offload_params=off_p, zero_init=zi)
                    exact.append({"stage": 3, "offload_optimizer": off, "offload_param": off_p, "zero_init": zi, "cpu": cpu, "gpu": gpu})
        out.append({"case": case, "zero2": z2.getvalue(), "zero3": z3.getvalue(), "exact": exact})
    print(json.dumps({"deepspeed": deepspeed.__version__, "results": out}))


if __name__ == "__main__":
    main()
