"""Runs a command and prints, as its last line, the CPU seconds (user + system) it and every process it started spent:
`RFT_CPU {"cpu_s": ...}`. Unlike wall time, CPU time is not stretched by other processes taking turns on the core,
so on a shared machine it says what a run costs, imports, model load and every helper process (the runner's GPU
sampler, its log capture) included."""
import json
import resource
import subprocess
import sys

rc = subprocess.call(sys.argv[1:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("RFT_CPU " + json.dumps({"cpu_s": round(r.ru_utime + r.ru_stime, 3)}), flush=True)
sys.exit(rc)
