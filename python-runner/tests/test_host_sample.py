"""CPU and memory sampling on a host without an NVIDIA GPU (remote_finetune/host_sample.py and the GpuSampler's
fallback), on real /proc captures and the gpu.csv the sampler wrote (test/fixtures/host-samples)."""

import json
import os
import time
import unittest

from remote_finetune import gpu, host_sample
from remote_finetune.events import EventWriter, parse_event_line
from tests.helpers import FIXTURES, TempDirTest, read

HOST_DIR = os.path.join(FIXTURES, "host-samples")
EXPECTED = json.loads(read(os.path.join(HOST_DIR, "expected.json")))
TS_TO_PY = {"ts": "ts", "cpuPct": "cpu_pct", "cpus": "cpus", "memoryUsedMiB": "memory_used_mib", "memoryTotalMiB": "memory_total_mib"}


def fx(name):
    return os.path.join(HOST_DIR, name)


class ProcReading(unittest.TestCase):
    def test_cpu_and_memory_from_real_proc_files(self):
        p = EXPECTED["proc"]
        before = host_sample.cpu_times(read(fx(p["stat_before"])))
        after = host_sample.cpu_times(read(fx(p["stat_after"])))
        self.assertEqual(list(before), p["busy_total_before"])
        self.assertEqual(list(after), p["busy_total_after"])
        self.assertEqual(host_sample.busy_pct(before, after), p["cpu_pct"])
        self.assertEqual(host_sample.cpu_count(read(fx(p["stat_before"]))), p["cpus"])
        self.assertEqual(host_sample.memory_mib(read(fx(p["meminfo"]))), (p["memory_used_mib"], p["memory_total_mib"]))

    def test_probe_turns_two_reads_into_a_line_that_parses_back(self):
        p = EXPECTED["proc"]
        probe = host_sample.HostProbe(fx(p["stat_before"]), fx(p["meminfo"]))
        first = host_sample.parse_line(probe.line(100.0))
        self.assertIsNone(first["cpu_pct"], "one read of /proc/stat says nothing about the interval")
        probe.stat_path = fx(p["stat_after"])
        second = host_sample.parse_line(probe.line(102.0))
        self.assertEqual(second, {"ts": 102.0, "cpu_pct": p["cpu_pct"], "cpus": 2,
                                  "memory_used_mib": p["memory_used_mib"], "memory_total_mib": p["memory_total_mib"]})

    def test_missing_or_garbage_proc_files(self):
        probe = host_sample.HostProbe("/nonexistent/stat", "/nonexistent/meminfo")
        self.assertFalse(probe.available())
        self.assertIsNone(probe.line(1.0))
        self.assertIsNone(host_sample.cpu_times("cpu  a b c d"))
        self.assertIsNone(host_sample.memory_mib("MemFree: 12 kB"))
        # Kernels before 3.14: no MemAvailable.
        self.assertEqual(host_sample.memory_mib("MemTotal: 2048 kB\nMemFree: 512 kB\nBuffers: 512 kB\nCached: 0 kB\n"), (1.0, 2.0))


class GpuCsvLines(unittest.TestCase):
    def test_written_file_parses_as_expected_and_never_as_a_gpu_line(self):
        g = EXPECTED["gpu_csv"]
        lines = read(fx(g["file"])).splitlines()
        self.assertEqual([host_sample.parse_line(l) for l in lines],
                         [{TS_TO_PY[k]: v for k, v in s.items()} for s in g["samples"]])
        self.assertEqual([gpu.parse_gpu_csv_line(l) for l in lines], [None] * len(lines))

    def test_other_lines_are_not_cpu_lines(self):
        for line in EXPECTED["gpu_csv"]["not_cpu_lines"]:
            with self.subTest(line=line):
                self.assertIsNone(host_sample.parse_line(line))


class SamplerWithoutGpu(TempDirTest):
    """No nvidia-smi on PATH (none is on this machine either): the sampler reports it once, then samples /proc."""

    def setUp(self):
        super().setUp()
        self._path = os.environ.get("PATH", "")
        self.addCleanup(lambda: os.environ.__setitem__("PATH", self._path))
        os.environ["PATH"] = self.tmp
        self.events = EventWriter(self.path("events.jsonl"))

    def cpu_lines(self):
        p = self.path("gpu.csv")
        return [host_sample.parse_line(l) for l in read(p).splitlines()] if os.path.exists(p) else []

    def test_cpu_and_memory_go_to_gpu_csv_until_stopped(self):
        if not host_sample.HostProbe().available():
            self.skipTest("this machine has no readable /proc/stat or /proc/meminfo")
        s = gpu.GpuSampler(self.tmp, self.events.emit, interval_ms=50).start()
        ok = self.wait_for(lambda: len(self.cpu_lines()) >= 4)
        s.stop()
        self.assertTrue(ok, "no CPU lines in gpu.csv: %r" % (self.cpu_lines(),))
        rows = self.cpu_lines()
        self.assertTrue(all(r is not None for r in rows), rows)
        self.assertTrue(s.host_sampling)
        self.assertTrue(all(r["cpus"] == os.cpu_count() for r in rows), rows)
        self.assertTrue(all(0 <= r["cpu_pct"] <= 100 for r in rows[1:]), rows)
        self.assertTrue(all(0 < r["memory_used_mib"] < r["memory_total_mib"] for r in rows), rows)
        self.assertTrue(all(abs(r["ts"] - time.time()) < 60 for r in rows))
        n = len(self.cpu_lines())
        time.sleep(0.3)
        self.assertEqual(len(self.cpu_lines()), n, "sampling goes on after stop()")
        evs = [parse_event_line(l)[0] for l in read(self.path("events.jsonl")).splitlines()]
        self.assertEqual([e["code"] for e in evs], ["no-gpu"])
        self.assertIn("shows this host's CPU and memory instead", evs[0]["message"])

    def test_no_proc_means_the_old_message_and_no_file(self):
        probe = host_sample.HostProbe("/nonexistent/stat", "/nonexistent/meminfo")
        s = gpu.GpuSampler(self.tmp, self.events.emit, interval_ms=50, host_probe=probe).start()
        time.sleep(0.2)
        s.stop()
        self.assertFalse(os.path.exists(self.path("gpu.csv")))
        evs = [parse_event_line(l)[0] for l in read(self.path("events.jsonl")).splitlines()]
        self.assertIn("GPU charts stay empty", evs[0]["message"])


if __name__ == "__main__":
    unittest.main()
