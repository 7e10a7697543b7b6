"""events.jsonl: the versioned run-event schema shared with the extension.

This mirrors src/core/telemetry/events.ts (zod) field by field. Both sides check the same
fixture files under test/fixtures/events, so a change here without the TypeScript twin (or the
other way round) fails a test. zod semantics kept on purpose: unknown keys are tolerated,
`optional` means absent (never null), numbers must be finite, `int` means an integral value.
"""

import json
import math
import os
import threading
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from .run_folder import EVENTS, path

EVENTS_SCHEMA_VERSION = 1
MAX_SAFE_INTEGER = 2 ** 53 - 1

EVENT_TYPES = ("queued", "assigned", "staging", "started", "metrics", "eval", "checkpoint", "warning", "error", "stalled", "resumed",
               "finished")
METHODS = ("qlora", "lora-bf16", "full", "dpo", "orpo", "own-script")
# One word per end: preempted (the cloud's reclaim notice), stalled (watchdog.on_stall: stop), budget-stopped (the
# spec's budget), stopped (a person's Stop), interrupted (a signal of no known cause), failed, completed.
FINISHED_STATUSES = ("completed", "failed", "interrupted", "stopped", "preempted", "stalled", "budget-stopped")
STALL_ACTIONS = ("notify", "stop")
RESUME_REASONS = ("host-restart",)

Check = Callable[[Any], Optional[str]]


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _finite(x: Any) -> Optional[str]:
    if not _is_number(x):
        return "expected number"
    if isinstance(x, float) and not math.isfinite(x):
        return "expected finite number"
    return None


def _nonneg(x: Any) -> Optional[str]:
    err = _finite(x)
    if err:
        return err
    return "expected number >= 0" if x < 0 else None


def _int(x: Any) -> Optional[str]:
    err = _finite(x)
    if err:
        return err
    if isinstance(x, float) and not x.is_integer():
        return "expected int"
    if abs(x) > MAX_SAFE_INTEGER:  # zod's int() is JavaScript's safe integer
        return "expected safe integer"
    return None


def _nonneg_int(x: Any) -> Optional[str]:
    return _int(x) or ("expected int >= 0" if x < 0 else None)


def _pos_int(x: Any) -> Optional[str]:
    return _int(x) or ("expected int > 0" if x <= 0 else None)


def _pct(x: Any) -> Optional[str]:
    return _finite(x) or ("expected 0..100" if x < 0 or x > 100 else None)


def _string(x: Any) -> Optional[str]:
    return None if isinstance(x, str) else "expected string"


def _enum(values: Tuple[str, ...]) -> Check:
    def check(x: Any) -> Optional[str]:
        return None if isinstance(x, str) and x in values else "expected one of " + "|".join(values)
    return check


def _record_of_finite(x: Any) -> Optional[str]:
    if not isinstance(x, dict):
        return "expected object"
    for k, v in x.items():
        if not isinstance(k, str) or _finite(v):
            return "expected finite number at %s" % k
    return None


def _nullable_int(x: Any) -> Optional[str]:
    return None if x is None else _int(x)


def _bool(x: Any) -> Optional[str]:
    return None if isinstance(x, bool) else "expected boolean"


def _nonneg_int_list(x: Any) -> Optional[str]:
    if not isinstance(x, list):
        return "expected array"
    for i, v in enumerate(x):
        err = _nonneg_int(v)
        if err:
            return "%s at %d" % (err, i)
    return None


_GPU_MEASURE_KEYS = ("torch_peak_allocated_mib", "torch_peak_reserved_mib", "smi_peak_mib")


def _measured(x: Any) -> Optional[str]:
    """finished.measured (measured.py): {gpus: [{index, torch_peak_*_mib?, smi_peak_mib?}], tokens_per_second?, first_step_s?}."""
    if not isinstance(x, dict):
        return "expected object"
    for k in ("tokens_per_second", "first_step_s"):
        if k in x and _nonneg(x[k]):
            return "%s: %s" % (k, _nonneg(x[k]))
    gpus = x.get("gpus", [])
    if not isinstance(gpus, list):
        return "gpus: expected array"
    for i, g in enumerate(gpus):
        if not isinstance(g, dict) or _nonneg_int(g.get("index")):
            return "gpus: expected {index} at %d" % i
        for k in _GPU_MEASURE_KEYS:
            if k in g and _nonneg(g[k]):
                return "gpus: %s %s at %d" % (k, _nonneg(g[k]), i)
    return None


# (field, check, required) per event type, in the order of events.ts.
SCHEMA: Dict[str, List[Tuple[str, Check, bool]]] = {
    "queued": [
        ("position", _pos_int, True),
        ("gpus_wanted", _pos_int, False),
    ],
    "assigned": [
        ("gpus", _nonneg_int_list, True),
        ("waited_s", _nonneg, False),
    ],
    "staging": [
        ("uri", _string, True),
        ("bytes_done", _nonneg_int, True),
        ("bytes_total", _nonneg_int, False),
        ("files_total", _nonneg_int, False),
        ("done", _bool, False),
        ("seconds", _nonneg, False),
    ],
    "started": [
        ("run_id", _string, False),
        ("model", _string, True),
        ("method", _enum(METHODS), True),
        ("total_params", _nonneg_int, False),
        ("trainable_params", _nonneg_int, False),
        ("trainable_pct", _pct, False),
        ("world_size", _pos_int, False),
        ("wandb_run_id", _string, False),
        ("wandb_url", _string, False),
    ],
    "metrics": [
        ("step", _nonneg_int, True),
        ("max_steps", _pos_int, False),
        ("epoch", _finite, False),
        ("loss", _finite, False),
        ("learning_rate", _finite, False),
        ("grad_norm", _finite, False),
        ("tokens_per_second", _finite, False),
        ("samples_per_second", _finite, False),
        ("peak_gpu_memory_mb", _finite, False),
        ("extra", _record_of_finite, False),
    ],
    "eval": [
        ("step", _nonneg_int, True),
        ("epoch", _finite, False),
        ("eval_loss", _finite, False),
        ("perplexity", _nonneg, False),
        ("metrics", _record_of_finite, False),
    ],
    "checkpoint": [
        ("step", _nonneg_int, True),
        ("path", _string, True),
        ("uploaded_to", _string, False),
        ("upload_s", _nonneg, False),
    ],
    "warning": [
        ("message", _string, True),
        ("code", _string, False),
    ],
    "error": [
        ("message", _string, True),
        ("signature", _string, False),
        ("hint", _string, False),
    ],
    "stalled": [
        ("stalled_s", _nonneg, True),
        ("threshold_s", _nonneg, True),
        ("action", _enum(STALL_ACTIONS), True),
        ("last_step", _nonneg_int, False),
        ("step_time_s", _nonneg, False),
        ("gpu_util_pct", _pct, False),
        ("process_state", _string, False),
    ],
    "resumed": [
        ("reason", _enum(RESUME_REASONS), True),
        ("from_step", _nonneg_int, False),
        ("interrupted_at", _nonneg, False),
    ],
    "finished": [
        ("status", _enum(FINISHED_STATUSES), True),
        ("exit_code", _nullable_int, True),
        ("runtime_s", _nonneg, False),
        ("adapter_path", _string, False),
        ("measured", _measured, False),
    ],
}


def validate_event(raw: Any) -> Optional[str]:
    """Returns None when `raw` is a valid event, else the reason. Never raises."""
    if not isinstance(raw, dict):
        return "(line): expected object"
    if "v" in raw and raw["v"] != EVENTS_SCHEMA_VERSION:
        return "unsupported events schema version %s" % json.dumps(raw["v"])
    problems = []
    if "v" not in raw or raw["v"] != EVENTS_SCHEMA_VERSION or isinstance(raw["v"], bool):
        problems.append("v: expected %d" % EVENTS_SCHEMA_VERSION)
    err = _nonneg(raw["ts"]) if "ts" in raw else "required"
    if err:
        problems.append("ts: " + err)
    if "mac" in raw and not isinstance(raw["mac"], str):
        problems.append("mac: expected string")
    typ = raw.get("type")
    if typ not in SCHEMA:
        problems.append("type: expected one of " + "|".join(EVENT_TYPES))
        return "; ".join(problems)
    for field, check, required in SCHEMA[typ]:
        if field not in raw:
            if required:
                problems.append(field + ": required")
            continue
        err = check(raw[field])
        if err:
            problems.append("%s: %s" % (field, err))
    return "; ".join(problems) if problems else None


def parse_event_line(line: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """(event, None) or (None, reason), as parseEventLine in events.ts."""
    try:
        # JSON.parse refuses NaN/Infinity; so must we, or the two sides would disagree.
        raw = json.loads(line, parse_constant=_refuse_constant)
    except (ValueError, TypeError):
        return None, "not JSON"
    err = validate_event(raw)
    return (None, err) if err else (raw, None)


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def _clean(value: Any) -> Any:
    """Drops what JSON.parse or the schema would refuse (NaN losses happen when training diverges)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            c = _clean(v)
            if c is not None:
                out[k] = c
        return out
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def make_event(type_: str, ts: Optional[float] = None, **fields: Any) -> Dict[str, Any]:
    ev: Dict[str, Any] = {"v": EVENTS_SCHEMA_VERSION, "ts": round(time.time() if ts is None else ts, 3), "type": type_}
    for k, v in fields.items():
        c = _clean(v)
        if c is None or c == {} and k in ("extra", "metrics"):
            continue
        ev[k] = c
    return ev


class EventWriter:
    """Appends events to events.jsonl, one line per write, from any thread.

    Each event is validated before it is written: a line the extension would refuse is a bug
    here, and raising in a training loop would be worse, so it becomes a warning event instead.
    """

    def __init__(self, path: str, redact: Optional[Callable[[str], str]] = None, mac_key: Optional[bytes] = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._redact = redact or (lambda s: s)
        # The runner's own writer signs its lines (control_key.py); a child's writer has no key.
        self._mac_key = mac_key

    def emit(self, type_: str, **fields: Any) -> Dict[str, Any]:
        ev = make_event(type_, **fields)
        for key in ("message", "hint"):
            if isinstance(ev.get(key), str):
                ev[key] = self._redact(ev[key])
        err = validate_event(ev)
        if err:
            ev = make_event("warning", message="runner produced an invalid %s event: %s" % (type_, err), code="invalid-event")
        line = json.dumps(ev, separators=(",", ":"), allow_nan=False)
        if self._mac_key is not None:
            from .control_key import sign_line
            line = sign_line(line, self._mac_key)
        line += "\n"
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                # One write() per line with O_APPEND: lines from several processes never interleave.
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        return ev


class EventsRead(NamedTuple):
    events: List[Dict[str, Any]]
    skipped: int  # complete lines that are not events (not JSON, or refused by the schema)
    offset: int  # bytes consumed: where the next read of a growing file starts
    partial: bool  # a last line without its newline is left for the next read


def read_events(run_dir: str, offset: int = 0) -> EventsRead:
    """The valid events of the run's events.jsonl from byte `offset` on, as the extension reads them
    (parse_event_line): a line either side would refuse is skipped and counted; a blank line is neither.
    A last line without its newline is still being written (one write per line, EventWriter) and is left
    for the next read. Bytes that are not UTF-8 become U+FFFD, so one bad byte costs at most its line. A missing
    or unreadable file reads as no events."""
    events: List[Dict[str, Any]] = []
    skipped = 0
    partial = False
    try:
        with open(path(run_dir, EVENTS), "rb") as f:
            f.seek(offset)
            for raw in f:
                if not raw.endswith(b"\n"):
                    partial = True
                    break
                offset += len(raw)
                line = raw.decode("utf-8", errors="replace")
                if not line.strip():
                    continue
                event, _err = parse_event_line(line)
                if event is None:
                    skipped += 1
                else:
                    events.append(event)
    except OSError:
        pass
    return EventsRead(events, skipped, offset, partial)
