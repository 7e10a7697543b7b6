import json
import os
import random
import re
import sys
import time
import unittest

from remote_finetune import gpu
from tests import gpu_text
from remote_finetune.events import EventWriter, parse_event_line
from tests.helpers import FIXTURES, RUNNER_DIR, TempDirTest, read

SMI_DIR = os.path.join(FIXTURES, "nvidia-smi")
REAL_DIR = os.path.join(SMI_DIR, "real")
STANDIN_DIR = os.path.join(RUNNER_DIR, "tests", "standins")
TS_PARSER = os.path.join(os.path.dirname(RUNNER_DIR), "src", "core", "telemetry", "nvidiaSmi.ts")

# expected.json uses the TypeScript names; the runner's dicts use these.
TS_TO_PY = {
    "index": "index", "name": "name", "utilizationGpu": "utilization_gpu", "utilizationMemory": "utilization_memory",
    "memoryUsedMiB": "memory_used_mib", "memoryTotalMiB": "memory_total_mib", "temperatureC": "temperature_c",
    "powerDrawW": "power_draw_w", "powerLimitW": "power_limit_w", "clocksSmMHz": "clocks_sm_mhz", "fault": "fault",
    "pid": "pid", "processName": "process_name", "usedMemoryMiB": "used_memory_mib", "gpuUuid": "gpu_uuid",
}


def fx(name):
    return os.path.join(SMI_DIR, name)


def real(name):
    with open(os.path.join(REAL_DIR, name), encoding="utf-8", newline="") as f:
        return f.read()


def hand(name):
    """A hand-written sample in test/fixtures/nvidia-smi (README.md there), read as the real ones are."""
    with open(fx(name), encoding="utf-8", newline="") as f:
        return f.read()


def py_keys(ts_dict):
    return {TS_TO_PY[k]: v for k, v in ts_dict.items()}


CASES = json.loads(real("expected.json"))["cases"]
HAND_CASES = json.loads(hand("expected.json"))["cases"]
# Every sample with an expectation, as (text, case): the real ones, then the hand-written ones.
ALL_SAMPLES = [(real(c["file"]), c) for c in CASES] + [(hand(c["file"]), c) for c in HAND_CASES]
# The first hand-written files, in the runner's own noheader,nounits form (Parser below reads them);
# everything else in the folder needs an expectation in ../expected.json.
OLDER_HAND_WRITTEN = ("a100_lms.csv", "compute_apps.csv", "garbage.txt", "gpu_csv_written.csv", "h100_x8_lms.csv", "no_gpu.txt", "t4_na.csv")


def our_fields_from(name):
    """Our query's ten values as nvidia-smi prints them (units on), from a hand-written --format=csv sample."""
    row = gpu.parse_query_csv(hand(name))["rows"][0]["values"]
    return [row.get(f, "") for f in gpu.QUERY_FIELDS]


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines(True)


def without_units(cells):
    return [re.sub(r" (%|MiB|W|MHz)$", "", c) for c in cells]


class Parser(unittest.TestCase):
    """The same fixture files src/core/telemetry/nvidiaSmi.ts is tested on."""

    def test_argv_is_one_long_lived_query(self):
        argv = gpu.sampler_argv(500)
        self.assertEqual(argv, ["nvidia-smi", "--query-gpu=index,name,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,power.draw,power.limit,clocks.sm",
                                "--format=csv,noheader,nounits", "-lms", "500"])

    def test_fixtures(self):
        a100 = [gpu.parse_gpu_line(l) for l in lines_of(fx("a100_lms.csv"))]
        self.assertEqual(len(a100), 6)
        self.assertEqual(a100[2]["memory_used_mib"], 24580.0)
        self.assertEqual(a100[2]["power_draw_w"], 301.22)
        na = [gpu.parse_gpu_line(l) for l in lines_of(fx("t4_na.csv"))]
        self.assertIsNone(na[1]["utilization_memory"])  # [Not Supported]
        self.assertIsNone(na[1]["power_draw_w"])  # [N/A]
        self.assertEqual(na[1]["memory_used_mib"], 22100.0)
        h100 = [gpu.parse_gpu_line(l) for l in lines_of(fx("h100_x8_lms.csv"))]
        self.assertEqual(sorted({s["index"] for s in h100}), list(range(8)))
        written = [gpu.parse_gpu_csv_line(l) for l in lines_of(fx("gpu_csv_written.csv"))]
        self.assertEqual(written[0]["ts"], 1763737200.512)
        self.assertTrue(all(gpu.parse_gpu_line(l) is None for l in lines_of(fx("garbage.txt")) if l.strip()))
        apps = [gpu.parse_apps_line(l) for l in lines_of(fx("compute_apps.csv"))]
        self.assertEqual(apps[0]["pid"], 4242)
        self.assertIsNone(apps[1]["used_memory_mib"])
        self.assertTrue(gpu_text.looks_like_no_gpu(read(fx("no_gpu.txt"))))


class RealSamples(unittest.TestCase):
    """Every real sample in test/fixtures/nvidia-smi/real (sources in SOURCES.md), and the hand-written
    samples of the formats no citable real sample covers (test/fixtures/nvidia-smi, README.md there),
    through every parser, against the expectations src/core/telemetry/nvidiaSmi.ts is tested on too
    (real/expected.json and ../expected.json)."""

    def test_expectations_cover_every_sample(self):
        files = sorted(f for f in os.listdir(REAL_DIR) if f not in ("expected.json", "SOURCES.md"))
        self.assertEqual(sorted(c["file"] for c in CASES), files)
        hand_files = sorted(f for f in os.listdir(SMI_DIR) if os.path.isfile(fx(f))
                            and f not in ("expected.json", "README.md") and f not in OLDER_HAND_WRITTEN)
        self.assertEqual(sorted(c["file"] for c in HAND_CASES), hand_files)
        readme = read(fx("README.md"))
        for f in hand_files:
            self.assertIn("| `%s` |" % f, readme)

    def test_each_sample_parses_as_expected(self):
        for text, c in ALL_SAMPLES:
            with self.subTest(c["file"]):
                fields = c.get("fields") or gpu.QUERY_FIELDS
                g = gpu_text.parse_gpu_text(text, fields)
                self.assertEqual(len(g["samples"]), c["gpu"]["count"])
                if "first" in c["gpu"]:
                    self.assertEqual(g["samples"][0], py_keys(c["gpu"]["first"]))
                a = gpu_text.parse_apps_text(text)
                self.assertEqual(len(a["samples"]), c["apps"]["count"])
                if "first" in c["apps"]:
                    self.assertEqual(a["samples"][0], py_keys(c["apps"]["first"]))
                if "table" in c:
                    t = gpu.parse_query_csv(text, c["fields"])
                    self.assertEqual(len(t["rows"]), c["table"]["rows"])
                    self.assertEqual(t["rows"][0]["values"], c["table"]["first"])
                d = gpu.diagnose(text)
                self.assertEqual(d["kind"] if d else None, c["problem"])
                self.assertEqual(gpu_text.looks_like_no_gpu(text), c["problem"] is not None)
                self.assertEqual(gpu.cuda_version(text), c["cuda"])
                self.assertEqual(gpu.driver_version(text), c["driver"])

    def test_every_line_through_every_line_parser(self):
        for text, c in ALL_SAMPLES:
            for line in text.split("\n"):
                gpu.parse_gpu_line(line)
                gpu.parse_gpu_csv_line("1763737200.5, " + line)
                gpu.parse_apps_line(line)
                gpu.fault(line)

    def test_crlf_and_lone_cr(self):
        for text, c in ALL_SAMPLES:
            fields = c.get("fields") or gpu.QUERY_FIELDS
            for eol in ("\r\n", "\r"):
                with self.subTest(c["file"], eol=eol):
                    converted = text.replace("\n", eol)
                    self.assertEqual(gpu_text.parse_gpu_text(converted, fields)["samples"], gpu_text.parse_gpu_text(text, fields)["samples"])
                    self.assertEqual(gpu_text.parse_apps_text(converted)["samples"], gpu_text.parse_apps_text(text)["samples"])
                    d = gpu.diagnose(converted)
                    self.assertEqual(d["kind"] if d else None, c["problem"])

    def test_values_with_units_on_our_query(self):
        cells = our_fields_from("h100x2_csv-units.csv")
        self.assertEqual(cells, ["0", "NVIDIA H100 80GB HBM3", "100 %", "23 %", "20471 MiB", "81559 MiB", "61", "642.18 W", "700.00 W", "1980 MHz"])
        want = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "utilization_gpu": 100, "utilization_memory": 23, "memory_used_mib": 20471,
                "memory_total_mib": 81559, "temperature_c": 61, "power_draw_w": 642.18, "power_limit_w": 700, "clocks_sm_mhz": 1980}
        self.assertEqual(gpu.parse_gpu_line(", ".join(cells)), want)
        self.assertEqual(gpu.parse_gpu_line(", ".join(without_units(cells))), want)
        mig = gpu.parse_gpu_line(", ".join(our_fields_from("h100-mig_csv-units.csv")))
        self.assertIsNone(mig["utilization_gpu"])
        self.assertIsNone(mig["utilization_memory"])
        self.assertEqual(mig["power_draw_w"], 402.56)
        self.assertNotIn("fault", mig)

    def test_header_decides_the_columns(self):
        ours = gpu.parse_query_csv(hand("h100x2_csv-units.csv"))
        self.assertEqual(ours["fields"], gpu.QUERY_FIELDS)
        self.assertEqual(ours["header_lines"], [1])
        wide = gpu.parse_query_csv(hand("rtx2080super-win610_csv-wide.csv"))
        self.assertEqual(len(wide["fields"]), 65)
        self.assertEqual(wide["fields"].index("index"), 17)
        row = wide["rows"][0]["values"]
        self.assertEqual(row["kmd_version"], "610.62")
        self.assertEqual(row["clocks_throttle_reasons.active"], "[Requested functionality has been deprecated]")
        self.assertEqual(row["clocks.gr"], "1950 MHz")
        self.assertEqual(row["clocks.max.sm"], "2100 MHz")
        self.assertIsNone(gpu._value(row["clocks_event_reasons.active"]))
        sample = gpu_text.parse_gpu_text(hand("rtx2080super-win610_csv-wide.csv"))["samples"][0]
        self.assertEqual(gpu.parse_gpu_line(", ".join(our_fields_from("rtx2080super-win610_csv-wide.csv"))), sample)
        self.assertNotIn("fault", sample)

    def test_compute_apps_with_header_idle_and_windows_paths(self):
        apps = gpu_text.parse_apps_text(hand("apps_h100-mig_csv-units.csv"))
        self.assertEqual([(p["pid"], p["used_memory_mib"]) for p in apps["samples"]], [(48213, 4586), (48377, 3210), (48502, 1616)])
        self.assertEqual(apps["rejected_lines"], [1])
        self.assertEqual(gpu_text.parse_gpu_text(hand("apps_h100-mig_csv-units.csv"))["samples"], [])
        self.assertEqual(gpu_text.parse_apps_text(hand("apps_idle_csv-header-only.csv")), {"samples": [], "rejected_lines": [1]})
        win = gpu_text.parse_apps_text(hand("apps_windows_csv-paths.csv"))["samples"]
        names = [p["process_name"] for p in win]
        self.assertIn("C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe", names)
        self.assertIn("C:\\Users\\Dana Ortiz\\AppData\\Local\\Programs\\Microsoft VS Code\\Code.exe", names)
        self.assertTrue(all(p["used_memory_mib"] is None and p["gpu_uuid"].startswith("GPU-") for p in win))

    def test_versions_from_banners_version_and_list(self):
        self.assertEqual(gpu.driver_version(hand("version_610.txt")), "610.57.04")
        self.assertEqual(gpu.cuda_version(hand("version_610.txt")), "13.3")
        self.assertEqual(gpu.cuda_version(hand("version_590.txt")), "13.1")
        self.assertEqual(gpu.driver_version(hand("banner_rtx2080super-win_610.txt")), "610.62")
        self.assertEqual(gpu.cuda_version(hand("banner_h100-mig_590.txt")), "13.1")
        self.assertIsNone(gpu.cuda_version(hand("list-gpus_h100-mig.txt")))
        self.assertEqual(gpu.parse_query_csv(hand("list-gpus_h100-mig.txt"))["rejected_lines"], [1, 2, 3, 4, 5])

    def test_broken_board_values(self):
        cells = our_fields_from("h100x2_csv-units.csv")
        cells[2] = cells[6] = "[GPU requires reset]"
        s = gpu.parse_gpu_line(", ".join(cells))
        self.assertEqual(s["fault"], "GPU requires reset")
        self.assertIsNone(s["utilization_gpu"])
        self.assertEqual(s["memory_used_mib"], 20471)
        for v in ("[N/A]", "[Not Supported]", "[Unknown Error]", "N/A", "ERR!", "[Requested functionality has been deprecated]", "", "0x1F", "1e3", "inf", "nan"):
            self.assertIsNone(gpu._value(v), v)

    def test_loop_with_headers_blank_lines_and_xid_messages(self):
        header, row = hand("h100x2_csv-units.csv").split("\n")[:2]
        loop = "\n".join([header, row, "", row, "Xid (PCI:0000:1b:00): 79, pid=1234, GPU has fallen off the bus.", header, row, "", ""])
        r = gpu_text.parse_gpu_text(loop)
        self.assertEqual(len(r["samples"]), 3)
        self.assertTrue(all(s["index"] == 0 and s["name"] == "NVIDIA H100 80GB HBM3" for s in r["samples"]))
        self.assertEqual(r["rejected_lines"], [1, 5, 6])

    def test_failure_messages_match_typescript_word_for_word(self):
        with open(TS_PARSER, encoding="utf-8") as f:
            ts = f.read()
        block = ts[ts.index("const MESSAGES"):ts.index("};", ts.index("const MESSAGES"))]
        # Keys quoted or bare, the value on the same line or the next (as Prettier lays the object out).
        ts_messages = {(q or b): v for q, b, v in re.findall(r"(?:'([a-z-]+)'|\b([a-z]+)):\s*'((?:[^'\\]|\\.)*)'", block)}
        self.assertEqual(ts_messages, gpu.MESSAGES)
        msg = lambda f: gpu.diagnose(real(f))["message"]
        self.assertIn("(the library is 570.124)", msg("err_nvml-mismatch_570.txt"))
        self.assertIn("restart the container", msg("err_nvml-unknown-error.txt"))
        self.assertEqual(gpu.diagnose("", 9)["kind"], "driver-not-loaded")
        self.assertEqual(gpu.diagnose(real("err_windows-not-recognized_pt.txt"), 1)["message"], "nvidia-smi failed (exit 1).")

    def test_hostile_input_never_raises_or_hangs(self):
        good = ", ".join(without_units(our_fields_from("h100x2_csv-units.csv")))
        rnd = random.Random(7)
        junk = bytes(rnd.randrange(256) for _ in range(200000)).decode("utf-8", "replace")
        start = time.time()
        for hostile in (junk, "0, " + "A" * (8 * 1024 * 1024), "0," + "," * (gpu.MAX_LINE - 10), "\x00" + good + "\x00",
                        "\x1b[1;32m" + good + "\x1b[0m", "\x1b]0;title\x07" + good, "\ufeff" + good):
            r = gpu_text.parse_gpu_text(hostile + "\n" + good + "\n")
            self.assertIn(len(r["samples"]), (1, 2))
            self.assertEqual(r["samples"][-1]["power_draw_w"], 642.18)
            gpu_text.parse_apps_text(hostile)
            gpu.diagnose(hostile, 1)
            gpu.cuda_version(hostile)
            gpu.parse_gpu_line(hostile)
        self.assertLess(time.time() - start, 10)
        self.assertEqual(gpu.clean_line("a\x00b\x1b[31mc\x1b[0m\r"), "abc")


def write_standin(dir_path, lives):
    """An nvidia-smi stand-in that replays `lives`: the i-th -lms run prints lives[i] (bytes, exit code);
    the last one repeats. --query-compute-apps prints nothing."""
    os.makedirs(dir_path, exist_ok=True)
    for i, (out, code) in enumerate(lives):
        with open(os.path.join(dir_path, "life%d.bin" % i), "wb") as f:
            f.write(out)
        with open(os.path.join(dir_path, "life%d.code" % i), "w") as f:
            f.write(str(code))
    script = os.path.join(dir_path, "nvidia-smi")
    with open(script, "w") as f:
        f.write("""#!%s
import os, sys
d = %r
if any(a.startswith("--query-compute-apps") for a in sys.argv[1:]):
    sys.exit(0)
state = os.path.join(d, "runs")
n = int(open(state).read()) if os.path.exists(state) else 0
open(state, "w").write(str(n + 1))
i = min(n, %d)
sys.stdout.buffer.write(open(os.path.join(d, "life%%d.bin" %% i), "rb").read())
sys.stdout.flush()
sys.exit(int(open(os.path.join(d, "life%%d.code" %% i)).read()))
""" % (sys.executable, dir_path, len(lives) - 1))
    os.chmod(script, 0o755)
    return script


class SamplerOnRealAndHostileOutput(TempDirTest):
    """The sampler thread fed real failure texts and hostile bytes by a replaying stand-in."""

    def setUp(self):
        super().setUp()
        self.events = EventWriter(self.path("events.jsonl"))
        self.row = ", ".join(without_units(our_fields_from("h100x2_csv-units.csv"))).encode()

    def event_lines(self):
        p = self.path("events.jsonl")
        if not os.path.exists(p):
            return []
        with open(p, encoding="utf-8") as f:
            return [parse_event_line(l)[0] for l in f]

    def run_sampler(self, lives, until, timeout=10.0):
        exe = write_standin(self.path("smi"), lives)
        s = gpu.GpuSampler(self.tmp, self.events.emit, interval_ms=20, apps_interval_s=5, restart_delay_s=0.05, nvidia_smi=exe).start()
        end = time.time() + timeout
        while time.time() < end and not until(s):
            time.sleep(0.05)
        s.stop()
        return s

    def gpu_rows(self):
        p = self.path("gpu.csv")
        return read(p).splitlines() if os.path.exists(p) else []

    def test_only_real_rows_reach_gpu_csv_whatever_else_is_printed(self):
        hostile = (b"\x00\xff\xfe\x80junk\n" + b"\x1b[32m" + self.row + b"\x1b[0m\n" + self.row + b"\r\n\n"
                   + b"A" * (200 * 1024) + b"\n" + b"Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n" + self.row + b"\n")
        self.run_sampler([(hostile, 0)], until=lambda s: len(self.gpu_rows()) >= 9)
        rows = self.gpu_rows()
        self.assertGreaterEqual(len(rows), 9, "the sampler thread died on hostile output")
        for line in rows:
            sample = gpu.parse_gpu_csv_line(line)
            self.assertIsNotNone(sample, line)
            self.assertEqual(sample["clocks_sm_mhz"], 1980)
            self.assertNotIn("\x1b", line)
        self.assertEqual([e["code"] for e in self.event_lines()], ["gpu-sampler-restarted"])

    def test_each_real_failure_gives_one_clear_no_gpu_event(self):
        for name, code, words in (("err_nvml-mismatch_570.txt", 18, "reboot the host"),
                                  ("err_no-devices.txt", 6, "finds no GPU"),
                                  ("err_nvml-unknown-error.txt", 255, "restart the container"),
                                  ("err_libnvidia-ml-missing.txt", 12, "libnvidia-ml.so"),
                                  ("err_nvml-blocked-wsl.txt", 255, "WSL"),
                                  ("err_driver-not-loaded_curly-quote.txt", 9, "driver is not loaded")):
            with self.subTest(name):
                if os.path.exists(self.path("events.jsonl")):
                    os.remove(self.path("events.jsonl"))
                self.events = EventWriter(self.path("events.jsonl"))
                self.run_sampler([(real(name).encode("utf-8"), code)], until=lambda s: s.no_gpu)
                evs = self.event_lines()
                self.assertEqual([e["code"] for e in evs], ["no-gpu"])
                self.assertTrue(evs[0]["message"].startswith("No NVIDIA GPU on this host: "))
                self.assertIn(words, evs[0]["message"])
                self.assertIn(real(name).splitlines()[0].rstrip("."), evs[0]["message"], "nvidia-smi's own words are kept")

    def test_a_gpu_lost_mid_run_is_reported_once_as_such(self):
        self.run_sampler([(self.row + b"\n" + self.row + b"\n", 1), (real("err_gpu-lost.txt").encode(), 15)],
                         until=lambda s: s.no_gpu)
        codes = [e["code"] for e in self.event_lines()]
        self.assertEqual(codes, ["gpu-sampler-restarted", "gpu-lost"])
        self.assertIn("GPU is lost", self.event_lines()[1]["message"])
        self.assertEqual(len(self.gpu_rows()), 2)


class SamplerWithStandIn(TempDirTest):
    """nvidia-smi here is tests/standins/nvidia-smi, a stand-in script first on PATH (no GPU on this machine)."""

    def setUp(self):
        super().setUp()
        self.log = self.path("standin.log")
        self._env = dict(os.environ)
        self.addCleanup(self._restore)
        os.environ["PATH"] = STANDIN_DIR + os.pathsep + os.environ.get("PATH", "")
        os.environ["RFT_STANDIN_LOG"] = self.log
        os.environ["RFT_STANDIN_GPU_FIXTURE"] = fx("h100_x8_lms.csv")
        os.environ["RFT_STANDIN_APPS_FIXTURE"] = fx("compute_apps.csv")
        self.events = EventWriter(self.path("events.jsonl"))

    def _restore(self):
        os.environ.clear()
        os.environ.update(self._env)

    def invocations(self):
        return [json.loads(l) for l in lines_of(self.log)] if os.path.exists(self.log) else []

    def event_lines(self):
        p = self.path("events.jsonl")
        return [parse_event_line(l)[0] for l in lines_of(p)] if os.path.exists(p) else []

    def test_one_process_many_samples_written_with_time(self):
        s = gpu.GpuSampler(self.tmp, self.events.emit, interval_ms=50, apps_interval_s=0.2).start()
        ok = self.wait_for(lambda: os.path.exists(self.path("gpu.csv")) and len(lines_of(self.path("gpu.csv"))) >= 40)
        s.stop()
        self.assertTrue(ok)
        loops = [a for a in self.invocations() if "-lms" in a]
        self.assertEqual(len(loops), 1, "one long-lived nvidia-smi, not one per sample")
        self.assertEqual(loops[0], gpu.sampler_argv(50)[1:])
        rows = [gpu.parse_gpu_csv_line(l) for l in lines_of(self.path("gpu.csv"))]
        self.assertTrue(all(r is not None for r in rows))
        self.assertTrue(all(abs(r["ts"] - time.time()) < 60 for r in rows))
        procs = [l for l in lines_of(self.path("gpu_procs.csv"))]
        self.assertGreaterEqual(len(procs), 2)
        self.assertEqual(self.event_lines(), [])

    def test_restarted_when_it_dies_and_reported_once(self):
        os.environ["RFT_STANDIN_MODE"] = "die-after:3"
        s = gpu.GpuSampler(self.tmp, self.events.emit, interval_ms=20, apps_interval_s=5, restart_delay_s=0.05).start()
        ok = self.wait_for(lambda: len([a for a in self.invocations() if "-lms" in a]) >= 3)
        s.stop()
        self.assertTrue(ok, "nvidia-smi was not restarted")
        self.assertGreaterEqual(len(read(self.path("gpu.csv")).splitlines()), 6)  # two whole lives of 3 lines each
        codes = [e["code"] for e in self.event_lines()]
        self.assertEqual(codes, ["gpu-sampler-restarted"])

    def test_no_gpu_gives_one_clear_event_and_stops(self):
        os.environ["RFT_STANDIN_MODE"] = "no-gpu"
        s = gpu.GpuSampler(self.tmp, self.events.emit, interval_ms=20, apps_interval_s=5, restart_delay_s=0.01).start()
        self.wait_for(lambda: s.no_gpu)
        time.sleep(0.3)
        s.stop()
        evs = self.event_lines()
        self.assertEqual(len(evs), 1)
        self.assertEqual(evs[0]["type"], "warning")
        self.assertEqual(evs[0]["code"], "no-gpu")
        self.assertIn("couldn't communicate with the NVIDIA driver", evs[0]["message"])
        self.assertEqual(len([a for a in self.invocations() if "-lms" in a]), 1)

    def test_no_nvidia_smi_on_path(self):
        os.environ["PATH"] = self.tmp
        s = gpu.GpuSampler(self.tmp, self.events.emit).start()
        s.stop()
        evs = self.event_lines()
        self.assertEqual([e["code"] for e in evs], ["no-gpu"])
        self.assertIn("not found on PATH", evs[0]["message"])


if __name__ == "__main__":
    unittest.main()
