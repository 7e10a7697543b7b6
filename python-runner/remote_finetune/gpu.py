"""GPU sampler: one long-lived nvidia-smi per run, never a process per sample.

gpu.csv holds one line per GPU per sample: the epoch time the line was read, then nvidia-smi's
own CSV fields in QUERY_FIELDS order (`--format=csv,noheader,nounits`), e.g.
`1763737200.512, 0, NVIDIA A100-SXM4-40GB, 37, 12, 10240, 40960, 45, 60.32, 400.00, 1410`.
gpu_procs.csv holds per-process GPU memory the same way (time, then APPS_FIELDS), polled at a
slower pace because `--query-compute-apps` prints nothing when no process uses the GPU, so a
looping instance could not tell "no process" from "no sample". The TypeScript parser is
src/core/telemetry/nvidiaSmi.ts; this module mirrors it (same field aliases, value forms and
failure kinds), and both are tested on the samples in test/fixtures/nvidia-smi (real/ holds output quoted from issue reports).

Real nvidia-smi output does more than its documentation promises: unit suffixes ("400.00 W"),
header rows ("memory.used [MiB]"), bracketed states ("[N/A]", "[Not Supported]", "[Unknown Error]",
"[GPU requires reset]"), CRLF, blank lines and XID messages inside a -lms loop, and error text
instead of CSV when the driver is missing or mismatched or a GPU has fallen off the bus.
"""

import collections
import os
import re
import shutil
import subprocess
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .host_sample import HostProbe
from .run_folder import GPU_CSV, GPU_PROCS_CSV

QUERY_FIELDS = [
    "index", "name", "utilization.gpu", "utilization.memory", "memory.used", "memory.total",
    "temperature.gpu", "power.draw", "power.limit", "clocks.sm",
]
APPS_FIELDS = ["pid", "process_name", "used_memory", "gpu_uuid"]

# The widest real line seen is ~9.7 KB (240 fields, driver 610); far longer is not nvidia-smi CSV,
# and refusing it before splitting bounds the memory and time a runaway writer can cost.
MAX_LINE = 64 * 1024

# Text nvidia-smi prints when the machine has no usable GPU (driver missing, no device). Kept for
# callers that only need yes/no; diagnose() says which case it is.
NO_GPU_MARKERS = (
    "couldn't communicate with the nvidia driver",
    "no devices were found",
    "nvidia-smi has failed",
    "unable to determine the device handle",
    "failed to initialize nvml",
)


def sampler_argv(interval_ms: int, nvidia_smi: str = "nvidia-smi") -> List[str]:
    return [nvidia_smi, "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits", "-lms", str(int(interval_ms))]


def apps_argv(nvidia_smi: str = "nvidia-smi") -> List[str]:
    return [nvidia_smi, "--query-compute-apps=" + ",".join(APPS_FIELDS), "--format=csv,noheader,nounits"]


# A number, optionally with the unit nvidia-smi adds without `nounits`. Strict on purpose: float()
# would also take "nan", "inf", "1e3" and "  12  ".
_NUMBER = re.compile(r"^([+-]?\d+(?:\.\d+)?)(?:\s*(?:%|[KMGT]i?B|W|MHz|GHz|C|\u00b0C|RPM|V|mV|s|ms|us))?$", re.IGNORECASE)
_NO_READING = re.compile(r"^\[[^\]]{0,80}\]$|^N/A$|^ERR!$", re.IGNORECASE)
_FAULT = re.compile(r"^\[(GPU requires reset|GPU is lost)\]$", re.IGNORECASE)


def _value(raw: Optional[str]) -> Optional[float]:
    """A value as a number, units allowed; "[N/A]", "[Not Supported]", "[Unknown Error]",
    "[GPU requires reset]", "N/A", "ERR!" and anything else non-numeric mean "no reading"."""
    s = (raw or "").strip()
    if not s or len(s) > 64:
        return None
    m = _NUMBER.match(s)
    if not m:
        return None
    v = float(m.group(1))
    return v if v == v and v not in (float("inf"), float("-inf")) else None


def _is_reading(raw: str) -> bool:
    return _value(raw) is not None or _NO_READING.match(raw) is not None


def fault(raw: Optional[str]) -> Optional[str]:
    """"GPU requires reset" / "GPU is lost" when a value says the board itself is broken."""
    m = _FAULT.match((raw or "").strip())
    return m.group(1) if m else None


def clean_line(line: str) -> str:
    """Drops ANSI escape sequences, other control characters (binary junk, a stray CR) and a BOM."""
    if not any((ord(c) < 0x20 and c != "\t") or c in ("\x7f", "\ufeff") for c in line):
        return line.strip()
    out = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\x1b":
            nxt = line[i + 1] if i + 1 < n else ""
            if nxt == "[":
                i += 2
                while i < n and not ("\x40" <= line[i] <= "\x7e"):
                    i += 1
            elif nxt == "]":
                i += 2
                while i < n and line[i] != "\x07" and not (line[i] == "\x1b" and i + 1 < n and line[i + 1] == "\\"):
                    i += 1
                if i < n and line[i] == "\x1b":
                    i += 1
            else:
                i += 1
            i += 1
            continue
        if (ord(c) < 0x20 and c != "\t") or c in ("\x7f", "\ufeff"):
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out).strip()


# nvidia-smi accepts two spellings for several fields and prints the long one in its header
# ("clocks.sm" is queried, "clocks.current.sm [MHz]" comes back); both map to one name here.
FIELD_ALIASES = {
    "gpu_name": "name",
    "gpu_uuid": "uuid",
    "gpu_serial": "serial",
    "gpu_bus_id": "pci.bus_id",
    "clocks.current.sm": "clocks.sm",
    "clocks.current.graphics": "clocks.gr",
    "clocks.current.memory": "clocks.mem",
    "clocks.current.video": "clocks.video",
    "clocks.max.graphics": "clocks.max.gr",
    "clocks.max.memory": "clocks.max.mem",
    "used_gpu_memory": "used_memory",
}


def canonical_field(cell: str) -> str:
    bare = re.sub(r"\s*\[[^\]]*\]$", "", cell.strip()).lower()
    return FIELD_ALIASES.get(bare, bare)


_KNOWN_FIELDS = set(QUERY_FIELDS) | set(canonical_field(f) for f in APPS_FIELDS) | {
    "timestamp", "driver_version", "count", "uuid", "serial", "pci.bus_id", "pstate", "fan.speed",
    "memory.free", "memory.reserved", "clocks.gr", "clocks.mem", "clocks.max.sm", "power.default_limit",
    "enforced.power.limit", "compute_cap", "mig.mode.current", "process_name", "used_memory",
}
_FIELD_CELL = re.compile(r"^[a-z][a-z0-9_.]*(?:\s\[[^\]]{1,16}\])?$", re.IGNORECASE)
_LINE_BREAK = re.compile(r"\r\n|\n|\r")


def _header_fields(cells: Sequence[str]) -> Optional[List[str]]:
    if not cells or not all(_FIELD_CELL.match(c) for c in cells):
        return None
    fields = [canonical_field(c) for c in cells]
    return fields if any(f in _KNOWN_FIELDS for f in fields) else None


def _free_text_column(columns: Sequence[str]) -> int:
    """The column that gets a value's surplus commas back: a process name before a GPU name."""
    for f in ("process_name", "name"):
        if f in columns:
            return list(columns).index(f)
    return -1


def _split(line: str, expected: int, name_at: int) -> Optional[List[str]]:
    parts = [p.strip() for p in line.split(",")]
    if len(parts) < expected:
        return None
    if len(parts) > expected:
        if name_at < 0:
            return None
        # nvidia-smi does not quote; a comma inside a name would split it, so rejoin it there.
        extra = len(parts) - expected
        parts = parts[:name_at] + [", ".join(parts[name_at:name_at + extra + 1])] + parts[name_at + extra + 1:]
    return parts


def parse_query_csv(text: str, fields: Sequence[str] = QUERY_FIELDS) -> Dict[str, Any]:
    """Any `nvidia-smi --query-*=... --format=csv[,noheader][,nounits]` output as rows of named values.

    A header row, wherever it appears, sets the columns for the rows after it; without one the rows
    are read in the order of `fields`. Returns {"fields", "rows": [{"line", "ordinal", "values"}],
    "header_lines", "rejected_lines"}; never raises.
    """
    columns = [canonical_field(f) for f in fields]
    rows, header_lines, rejected = [], [], []
    ordinal = 0
    for i, raw in enumerate(_LINE_BREAK.split(text)):
        if len(raw) > MAX_LINE:
            rejected.append(i + 1)
            continue
        line = clean_line(raw)
        if not line:
            continue
        header = _header_fields([c.strip() for c in line.split(",")])
        if header is not None:
            columns, ordinal = header, 0
            header_lines.append(i + 1)
            rejected.append(i + 1)
            continue
        cells = _split(line, len(columns), _free_text_column(columns))
        if cells is None:
            rejected.append(i + 1)
            continue
        rows.append({"line": i + 1, "ordinal": ordinal, "values": dict(zip(columns, cells))})
        ordinal += 1
    return {"fields": columns, "rows": rows, "header_lines": header_lines, "rejected_lines": rejected}


_NUMERIC_KEYS = [("utilization.gpu", "utilization_gpu"), ("utilization.memory", "utilization_memory"),
                 ("memory.used", "memory_used_mib"), ("memory.total", "memory_total_mib"),
                 ("temperature.gpu", "temperature_c"), ("power.draw", "power_draw_w"),
                 ("power.limit", "power_limit_w"), ("clocks.sm", "clocks_sm_mhz")]


def _sample(values: Dict[str, str], fallback_index: Optional[int] = None) -> Optional[Dict[str, Any]]:
    if "index" in values:
        idx = _value(values["index"])
    else:
        idx = float(fallback_index) if fallback_index is not None else None
    name = values.get("name", "")
    if idx is None or not idx.is_integer() or idx < 0 or not name or name.startswith("["):
        return None
    present = [values[f] for f, _ in _NUMERIC_KEYS if f in values]
    # A block with no GPU metric (a --query-compute-apps header names the GPU too) is not samples,
    # and text where a reading belongs means the columns are not where they were expected.
    if not present or not all(_is_reading(v) for v in present):
        return None
    out = {"index": int(idx), "name": name}  # type: Dict[str, Any]
    for field, key in _NUMERIC_KEYS:
        out[key] = _value(values.get(field))
    for v in values.values():
        f = fault(v)
        if f:
            out["fault"] = f
            break
    return out


def parse_gpu_line(line: str) -> Optional[Dict[str, Any]]:
    """One line of `--query-gpu` output (QUERY_FIELDS order, units allowed), or None when it is not one."""
    if len(line) > MAX_LINE:
        return None
    parts = _split(clean_line(line), len(QUERY_FIELDS), 1)
    if parts is None:
        return None
    return _sample(dict(zip(QUERY_FIELDS, parts)))


def parse_gpu_csv_line(line: str) -> Optional[Dict[str, Any]]:
    """One line of our gpu.csv: the sample time, then a --query-gpu line."""
    head, sep, rest = line.partition(",")
    ts = _value(clean_line(head))
    if not sep or ts is None:
        return None
    sample = parse_gpu_line(rest)
    if sample is not None:
        sample["ts"] = ts
    return sample


# Loose on purpose (drivers before 470 print "MIG-GPU-<uuid>/<gi>/<ci>"): it only has to tell a UUID
# column from a misaligned number.
_GPU_UUID = re.compile(r"^(?:GPU|MIG)-[\w/.-]+$|^\[[^\]]{0,80}\]$", re.IGNORECASE)


def _process(values: Dict[str, str]) -> Optional[Dict[str, Any]]:
    pid = _value(values.get("pid"))
    if pid is None or not pid.is_integer() or pid <= 0:
        return None
    used, uuid = values.get("used_memory"), values.get("uuid")
    if (used is not None and not _is_reading(used)) or (uuid and not _GPU_UUID.match(uuid)):
        return None
    return {"pid": int(pid), "process_name": values.get("process_name", ""), "used_memory_mib": _value(used), "gpu_uuid": uuid or ""}


def parse_apps_line(line: str) -> Optional[Dict[str, Any]]:
    if len(line) > MAX_LINE:
        return None
    fields = [canonical_field(f) for f in APPS_FIELDS]
    parts = _split(clean_line(line), len(fields), 1)
    if parts is None:
        return None
    return _process(dict(zip(fields, parts)))


def cuda_version(text: str) -> Optional[str]:
    """From the banner ("CUDA Version: 12.4"; "CUDA UMD Version: 13.3" from driver 610) or --version."""
    m = re.search(r"CUDA (?:UMD )?Version\s*:\s*(\d+(?:\.\d+)*)", text[:1024 * 1024], re.IGNORECASE)
    return m.group(1) if m else None


def driver_version(text: str) -> Optional[str]:
    """From the banner ("Driver Version: 550.54.15"; "KMD Version: 610.57.04" from driver 610)."""
    m = re.search(r"(?:Driver|KMD) Version\s*:\s*(\d+(?:\.\d+)+)", text[:1024 * 1024], re.IGNORECASE)
    return m.group(1) if m else None


# Mirrors MESSAGES in src/core/telemetry/nvidiaSmi.ts word for word.
MESSAGES = {
    "not-installed": "nvidia-smi is not installed on this host (no NVIDIA driver), or not on the PATH of a non-interactive shell.",
    "library-missing": "nvidia-smi cannot load the NVIDIA driver library (libnvidia-ml.so): the driver is not installed properly, or a container was started without the NVIDIA runtime (docker --gpus all).",
    "driver-mismatch": "The NVIDIA kernel driver and its user-space library have different versions, which usually follows a driver upgrade without a reboot: reboot the host (or reload the nvidia kernel modules).",
    "access-blocked": "The operating system blocks access to the GPU (WSL without GPU support from the Windows driver): update the Windows NVIDIA driver and WSL.",
    "driver-not-loaded": "The NVIDIA driver is not loaded, so nvidia-smi cannot talk to it: install the driver, or reboot if it was just installed or the kernel was updated.",
    "no-devices": "The NVIDIA driver is loaded but finds no GPU: the GPU is missing, disabled, or taken by another driver (vfio, nouveau).",
    "gpu-lost": "A GPU stopped responding (it fell off the bus or needs a reset): reset the GPU or reboot the host; runs on it will fail until then.",
    "nvml-error": "nvidia-smi could not start NVML. In a container this usually means it lost access to the GPU devices (for example after `systemctl daemon-reload` on the host): restart the container.",
    "failed": "nvidia-smi failed.",
}

# Checked in this order; the first that matches wins. Apostrophes are normalised first (a
# "couldn\u2018t" with a typographic quote was seen in the wild).
_PATTERNS = [
    ("not-installed", re.compile(r"command not found|nvidia-smi: not found|is not recognized as an internal or external command|no such file or directory: '?nvidia-smi|nvidia-smi: no such file or directory", re.IGNORECASE)),
    ("library-missing", re.compile(r"couldn't find libnvidia-ml|libnvidia-ml\.so[.0-9]*: cannot open shared object file", re.IGNORECASE)),
    ("driver-mismatch", re.compile(r"driver/library version mismatch", re.IGNORECASE)),
    ("access-blocked", re.compile(r"gpu access blocked by the operating system", re.IGNORECASE)),
    ("driver-not-loaded", re.compile(r"couldn't communicate with the nvidia driver|nvidia-smi has failed", re.IGNORECASE)),
    ("no-devices", re.compile(r"no devices were found", re.IGNORECASE)),
    ("gpu-lost", re.compile(r"unable to determine the device handle|gpu is lost|fallen off the bus|gpu requires reset", re.IGNORECASE)),
    ("nvml-error", re.compile(r"failed to initialize nvml", re.IGNORECASE)),
]
# nvidia-smi's documented exit codes, for when it printed nothing recognisable.
_EXIT_CODES = {6: "no-devices", 9: "driver-not-loaded", 12: "library-missing", 15: "gpu-lost", 127: "not-installed"}
_APOSTROPHES = re.compile("[\u2018\u2019\u02bc`\u00b4]")


def diagnose(text: str, code: Optional[int] = None) -> Optional[Dict[str, str]]:
    """What nvidia-smi's output (and exit code, when known) says is wrong, as {"kind", "message",
    "detail"}, or None when it reports no problem. Reads at most the first 256 KiB; never raises."""
    said = [clean_line(l) for l in _LINE_BREAK.split(text[:256 * 1024]) if len(l) <= MAX_LINE]
    said = [l for l in said if l]
    lines = [_APOSTROPHES.sub("'", l) for l in said]
    for kind, pattern in _PATTERNS:
        at = next((i for i, l in enumerate(lines) if pattern.search(l)), None)
        if at is None:
            continue
        message = MESSAGES[kind]
        if kind == "driver-mismatch":
            v = next((m.group(1) for m in (re.search(r"NVML library version:\s*([0-9.]+)", l, re.IGNORECASE) for l in lines) if m), None)
            if v:
                message = message.replace("have different versions", "have different versions (the library is %s)" % v)
        elif kind == "nvml-error":
            m = re.search(r"failed to initialize nvml:\s*(.*)$", lines[at], re.IGNORECASE)
            why = m.group(1).strip() if m else ""
            if re.search(r"insufficient permissions", why, re.IGNORECASE):
                message = "nvidia-smi could not start NVML: Insufficient Permissions. This user cannot open /dev/nvidia*: check the device permissions or the group that may use the GPU."
            elif why:
                message = ("nvidia-smi could not start NVML (%s). In a container this usually means it lost access to the GPU devices "
                           "(for example after `systemctl daemon-reload` on the host): restart the container." % why)
        return {"kind": kind, "message": message, "detail": said[at][:200]}
    if not code:
        return None
    kind = _EXIT_CODES.get(code, "failed")
    message = "nvidia-smi failed (exit %s)." % code if kind == "failed" else MESSAGES[kind]
    return {"kind": kind, "message": message, "detail": said[0][:200] if said else ""}


def _read_lines(stream: Any, limit: int = MAX_LINE) -> Iterator[str]:
    """Decoded lines from a binary pipe. A line longer than `limit` is dropped whole (read on to its
    end in bounded pieces), so a writer that never sends a newline cannot exhaust memory; bytes that
    are not UTF-8 become U+FFFD instead of killing the reading thread."""
    while True:
        chunk = stream.readline(limit + 1)
        if not chunk:
            return
        if len(chunk) > limit and not chunk.endswith(b"\n"):
            while chunk and not chunk.endswith(b"\n"):
                chunk = stream.readline(limit + 1)
            continue
        yield chunk.decode("utf-8", "replace")


class GpuSampler:
    """Runs nvidia-smi -lms in a thread, appends gpu.csv, restarts it if it dies.

    `emit(type, **fields)` reports events (EventWriter.emit). No GPU (no nvidia-smi on PATH,
    or it says so) gives exactly one warning event with code "no-gpu", nvidia-smi is not started
    again, and gpu.csv gets the host's CPU and memory instead (host_sample.py) until stop().
    A GPU that stops answering after samples were taken gives one warning with code "gpu-lost".
    """

    def __init__(self, run_dir: str, emit: Callable[..., Any], interval_ms: int = 2000,
                 apps_interval_s: float = 10.0, restart_delay_s: float = 2.0, nvidia_smi: str = "nvidia-smi",
                 clock: Callable[[], float] = time.time, host_probe: Optional[HostProbe] = None) -> None:
        self.run_dir = run_dir
        self.emit = emit
        self.interval_ms = interval_ms
        self.apps_interval_s = apps_interval_s
        self.restart_delay_s = restart_delay_s
        self.nvidia_smi = nvidia_smi
        self.clock = clock
        self.starts = 0
        self.no_gpu = False
        self.host_probe = host_probe if host_probe is not None else HostProbe()
        self.host_sampling = False
        self._stop = threading.Event()
        # _stop ends nvidia-smi's loops (also when the host has no GPU); _closed ends everything.
        self._closed = threading.Event()
        self._proc = None  # type: Optional[subprocess.Popen]
        self._threads = []  # type: List[threading.Thread]
        self._restart_reported = False

    def start(self) -> "GpuSampler":
        exe = shutil.which(self.nvidia_smi)
        if exe is None:
            self._report_no_gpu("nvidia-smi was not found on PATH")
            return self
        self.nvidia_smi = exe
        for target in (self._loop, self._apps_loop):
            t = threading.Thread(target=target, name="rft-" + target.__name__, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._closed.set()
        self._stop.set()
        p = self._proc
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
        for t in list(self._threads):
            t.join(timeout)

    def _report_no_gpu(self, why: str, code: str = "no-gpu") -> None:
        if not self.no_gpu:
            self.no_gpu = True
            host = code == "no-gpu" and not self._closed.is_set() and self.host_probe.available()
            if code == "no-gpu":
                instead = "The GPU panel shows this host's CPU and memory instead" if host else "GPU charts stay empty"
                message = "No NVIDIA GPU on this host: " + why.strip().rstrip(".") + ". " + instead + "; training will run on CPU or fail."
            else:
                message = "The GPU stopped answering, so GPU sampling stopped: " + why.strip().rstrip(".") + "."
            self.emit("warning", message=message, code=code)
            if host:
                self.host_sampling = True
                t = threading.Thread(target=self._host_loop, name="rft-host-sampler", daemon=True)
                t.start()
                self._threads.append(t)
        self._stop.set()

    def _host_loop(self) -> None:
        out_path = os.path.join(self.run_dir, GPU_CSV)
        while not self._closed.is_set():
            line = self.host_probe.line(self.clock())
            if line:
                try:
                    with open(out_path, "a", encoding="utf-8") as out:
                        out.write(line)
                except OSError:
                    return
            self._closed.wait(self.interval_ms / 1000.0)

    @staticmethod
    def _explain(text: str, code: Optional[int]) -> str:
        """One clear reason from nvidia-smi's last words: what it means, then what it said."""
        problem = diagnose(text, code)
        said = next((clean_line(l) for l in reversed(text.splitlines()) if clean_line(l)), "")
        if problem is None:
            return said[:200] or "nvidia-smi exited with code %s" % code
        detail = problem["detail"] or said[:200]
        return problem["message"].rstrip(".") + (' (nvidia-smi said: "%s")' % detail.rstrip(".") if detail else "")

    def _loop(self) -> None:
        out_path = os.path.join(self.run_dir, GPU_CSV)
        ever_sampled = False
        while not self._stop.is_set():
            self.starts += 1
            try:
                self._proc = subprocess.Popen(sampler_argv(self.interval_ms, self.nvidia_smi), stdout=subprocess.PIPE,
                                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            except OSError as e:
                self._report_no_gpu("nvidia-smi could not start (%s)" % e.strerror)
                return
            sampled = False
            # Only the last lines that were not samples matter, and a chatty failure must not grow this.
            other = collections.deque(maxlen=20)  # type: collections.deque
            assert self._proc.stdout is not None
            with open(out_path, "a", encoding="utf-8") as out:
                for line in _read_lines(self._proc.stdout):
                    clean = clean_line(line)
                    if parse_gpu_line(clean) is None:
                        if clean:
                            other.append(clean)
                        continue
                    sampled = ever_sampled = True
                    out.write("%.3f, %s\n" % (self.clock(), clean))
                    out.flush()
            self._proc.stdout.close()
            code = self._proc.wait()
            if self._stop.is_set():
                return
            text = "\n".join(other)
            if not sampled and not ever_sampled:
                self._report_no_gpu(self._explain(text, code))
                return
            if not sampled and diagnose(text) is not None:
                self._report_no_gpu(self._explain(text, code), code="gpu-lost")
                return
            if not self._restart_reported:
                self._restart_reported = True
                self.emit("warning", message="nvidia-smi exited (code %s); the GPU sampler restarted it" % code, code="gpu-sampler-restarted")
            self._stop.wait(self.restart_delay_s)

    def _apps_loop(self) -> None:
        out_path = os.path.join(self.run_dir, GPU_PROCS_CSV)
        while not self._stop.is_set():
            try:
                r = subprocess.run(apps_argv(self.nvidia_smi), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   stdin=subprocess.DEVNULL, timeout=30)
                text = r.stdout[:1024 * 1024].decode("utf-8", "replace")
                rows = [clean_line(l) for l in _LINE_BREAK.split(text) if parse_apps_line(l) is not None]
                if rows:
                    now = self.clock()
                    with open(out_path, "a", encoding="utf-8") as out:
                        out.write("".join("%.3f, %s\n" % (now, row) for row in rows))
            except (OSError, subprocess.SubprocessError, ValueError):
                pass  # the main loop reports a missing GPU; per-process memory is a bonus
            self._stop.wait(self.apps_interval_s)
