"""`python -m tests_training`: the real-library suite, then one JSON line with its counts and the versions.

The cases are tiny models on CPU, so most of their time is one Python thread (imports, tokenisation, the
trainer's loop) rather than torch's kernels: the modules are split into lanes, one process each with one torch
thread, which nearly halves the wall time on two cores. RFT_TRAINING_LANES=1 runs everything in this process."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# Seconds per module, as a run's "module-seconds" line printed them (lane_weights.json: the hf5 lock on this
# machine kind, under load), to balance the lanes; RFT_TRAINING_WEIGHTS names another such file. A module
# missing there counts DEFAULT_WEIGHT_S per case.
WEIGHTS_FILE = os.path.join(HERE, "lane_weights.json")
DEFAULT_WEIGHT_S = 20.0


class TimedResult(unittest.TextTestResult):
    """Records each case's wall time so the suite can name its slowest cases (CI's time budget is spent here)."""

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        self.durations_s = getattr(self, "durations_s", [])
        self.durations_s.append((time.monotonic() - self._started, test.id()))
        super().stopTest(test)


def versions():
    out = {}
    for name in ("torch", "transformers", "peft", "trl", "datasets", "accelerate", "bitsandbytes"):
        try:
            out[name] = __import__(name).__version__
        except Exception as e:  # a missing library is reported, and the cases that need it fail
            out[name] = "missing (%s)" % type(e).__name__
    return out


def count_cases(module):
    # By its text, so planning imports no test module (each one imports torch and transformers).
    with open(os.path.join(HERE, module + ".py")) as f:
        return len(re.findall(r"^\s+def test_", f.read(), re.M))


def module_names():
    return sorted(f[:-3] for f in os.listdir(HERE) if f.startswith("test_") and f.endswith(".py"))


def modules_left_out():
    """RFT_TRAINING_LEAVE_OUT="mod1 mod2: why": modules this lock does not run, each printed with the reason."""
    text = os.environ.get("RFT_TRAINING_LEAVE_OUT", "")
    names, _, why = text.partition(":")
    return {n: why.strip() or "left out by RFT_TRAINING_LEAVE_OUT" for n in names.split()}


def plan_lanes(modules, lanes, weights, cases):
    """Longest first, each module to the lightest lane: a module stays whole (its cases share class fixtures)."""
    cost = {m: weights.get(m, DEFAULT_WEIGHT_S * max(1, cases.get(m, 1))) for m in modules}
    out = [[] for _ in range(lanes)]
    load = [0.0] * lanes
    for m in sorted(modules, key=lambda m: (-cost[m], m)):
        i = load.index(min(load))
        out[i].append(m)
        load[i] += cost[m]
    return [sorted(lane) for lane in out if lane]


def run_in_process(names):
    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite(loader.loadTestsFromName("tests_training." + m) for m in names)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout, resultclass=TimedResult).run(suite)
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    for test, why in result.skipped:
        print("skipped %s: %s" % (test.id(), why))
    return {"ran": result.testsRun, "failed": bad, "skipped": len(result.skipped),
            "durations": getattr(result, "durations_s", [])}


def report(counts, durations):
    for took, name in sorted(durations, reverse=True)[:15]:
        print("slowest %6.1f s %s" % (took, name))
    per_module = {}
    for took, name in durations:
        module = name.split(".")[1] if name.count(".") >= 2 else name
        per_module[module] = round(per_module.get(module, 0) + took, 1)
    print("module-seconds " + json.dumps(per_module, sort_keys=True))
    print("RFT_TRAINING " + json.dumps(dict(counts, versions=versions())))
    return 0 if counts["failed"] == 0 else 1


def run_lanes(modules, lanes):
    try:
        with open(os.environ.get("RFT_TRAINING_WEIGHTS") or WEIGHTS_FILE) as f:
            weights = json.load(f)
    except FileNotFoundError:
        weights = {}
    cases = {m: count_cases(m) for m in modules}
    plan = plan_lanes(modules, lanes, weights, cases)
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")
    procs = []
    for i, names in enumerate(plan):
        log = tempfile.NamedTemporaryFile("w+", prefix="rft-lane%d-" % i, suffix=".log", delete=False)
        print("lane %d: %s" % (i, " ".join(names)), flush=True)
        procs.append((log, subprocess.Popen([sys.executable, "-m", "tests_training", "--modules", ",".join(names)],
                                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=os.getcwd())))
    counts = {"ran": 0, "failed": 0, "skipped": 0}
    durations = []
    for i, (log, proc) in enumerate(procs):
        code = proc.wait()
        log.seek(0)
        text = log.read()
        log.close()
        os.unlink(log.name)
        print("==== lane %d (exit %d) ====" % (i, code))
        lane = None
        for line in text.splitlines():
            if line.startswith("RFT_TRAINING_LANE "):
                lane = json.loads(line.split(" ", 1)[1])
            else:
                print(line)
        if lane is None:  # a lane that died before its summary fails the suite, with its log above
            print("lane %d ended without its summary (exit %d)" % (i, code))
            counts["failed"] += 1
            continue
        for k in counts:
            counts[k] += lane[k]
        durations += [tuple(d) for d in lane["durations"]]
    sys.stdout.flush()
    return counts, {"durations": durations}


def main(argv):
    if len(argv) >= 2 and argv[0] == "--modules":
        r = run_in_process(argv[1].split(","))
        print("RFT_TRAINING_LANE " + json.dumps(r))
        return 0
    left_out = modules_left_out()
    unknown = sorted(set(left_out) - set(module_names()))
    if unknown:
        print("RFT_TRAINING_LEAVE_OUT names no such module: %s" % " ".join(unknown))
        return 2
    for m in sorted(left_out):
        print("skipped module %s (%d cases): %s" % (m, count_cases(m), left_out[m]))
    modules = [m for m in module_names() if m not in left_out]
    lanes = int(os.environ.get("RFT_TRAINING_LANES") or min(2, os.cpu_count() or 1))
    if lanes <= 1:
        r = run_in_process(modules)
        counts = {k: r[k] for k in ("ran", "failed", "skipped")}
    else:
        counts, r = run_lanes(modules, lanes)
    left = sum(count_cases(m) for m in left_out)
    counts["ran"] += left
    counts["skipped"] += left
    return report(counts, r["durations"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
