"""The end-of-run notification, sent by the host itself: it reaches the person with VS Code closed and the
laptop asleep. Where it goes comes from the user's own settings (never the workspace), delivered like a
secret in the run's 0600 env file: RFT_NOTIFY_WEBHOOK (a JSON POST with "text", as Slack, Mattermost and
generic receivers take it, "content" for Discord, and the run's fields) and RFT_NOTIFY_NTFY_URL (an ntfy
topic URL: a plain-text POST with Title, Tags and Priority headers, as ntfy's publishing API documents).

Sending never fails the run and never holds it up for long: one try each, 10 s at most, and a failure is
a warning event that names the kind of target, never its URL (the URL is the secret)."""

import json
import os
import re
import socket
from typing import Any, Callable, Dict, List, Optional, Tuple

from remote_finetune import __version__

from .events import read_events
from .run_folder import OUTPUT_LOG

WEBHOOK = "RFT_NOTIFY_WEBHOOK"
NTFY = "RFT_NOTIFY_NTFY_URL"
NAMES = (WEBHOOK, NTFY)
TIMEOUT_S = 10.0


def targets(env: Dict[str, str]) -> List[Tuple[str, str]]:
    """(kind, url) for each configured target with an http(s) URL."""
    out = []
    for kind, name in (("webhook", WEBHOOK), ("ntfy", NTFY)):
        url = (env.get(name) or "").strip()
        if url.startswith("https://") or url.startswith("http://"):
            out.append((kind, url))
    return out


def summary(run_dir: str, spec_name: Optional[str], finished: Dict[str, Any]) -> Dict[str, Any]:
    """The run's outcome: the `finished` event's fields, with the last step and loss and the first error
    from events.jsonl so far."""
    out: Dict[str, Any] = {"run_id": os.path.basename(run_dir), "name": spec_name or os.path.basename(run_dir), "host": socket.gethostname()}
    for e in read_events(run_dir).events:
        t = e.get("type")
        if t == "metrics":
            if e.get("step") is not None:
                out["step"] = e["step"]
            if e.get("loss") is not None:
                out["loss"] = e["loss"]
        elif t == "error" and "error" not in out:
            out["error"] = str(e.get("message", ""))[:300]
    for k in ("status", "exit_code", "runtime_s", "adapter_path"):
        if finished.get(k) is not None:
            out[k] = finished[k]
    out.setdefault("status", "unknown")
    if out["status"] != "completed":
        line = _last_exception_line(os.path.join(run_dir, OUTPUT_LOG))
        if line:
            out["last_exception"] = line
    return out


_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt)\b(?::.*)?$")


def _last_exception_line(path: str) -> Optional[str]:
    """The last `SomeError: …` line of the (already redacted) output.log's tail: what a Python traceback
    ends with, and what a person reading the notification on a phone needs most."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 65536))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        line = line.strip()
        if _EXCEPTION.match(line):
            return line[:300]
    return None


def _duration(s: Any) -> str:
    try:
        s = int(float(s))
    except (TypeError, ValueError):
        return "?"
    return "%dh%02dm" % (s // 3600, (s % 3600) // 60) if s >= 3600 else "%dm%02ds" % (s // 60, s % 60)


def message(s: Dict[str, Any]) -> Tuple[str, str]:
    """(title, body) in words."""
    title = "%s %s on %s" % (s["name"], s["status"], s["host"])
    parts = ["after %s" % _duration(s.get("runtime_s"))]
    if s.get("step") is not None:
        parts.append("step %s" % s["step"])
    if s.get("loss") is not None:
        parts.append("loss %.4g" % float(s["loss"]))
    if s.get("exit_code") not in (None, 0):
        parts.append("exit code %s" % s["exit_code"])
    body = ", ".join(parts)
    if s.get("last_exception"):
        body += "\n" + s["last_exception"]
    if s.get("error") and s["error"] != s.get("last_exception"):
        body += "\n" + s["error"]
    if s.get("adapter_path"):
        body += "\nadapter: %s" % s["adapter_path"]
    return title, body


# Discord's front refuses urllib's default "Python-urllib/3.x" (403, error code 1010) before the webhook is
# even read, so every POST names the runner.
USER_AGENT = "RemoteFineTune-Runner/%s (+notifications)" % __version__


def _post(url: str, data: bytes, headers: Dict[str, str]) -> None:
    # Imported here: urllib.request and http.client were a tenth of the runner's start, before the run's first line.
    import urllib.request

    req = urllib.request.Request(url, data=data, method="POST", headers={**headers, "User-Agent": USER_AGENT})
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:  # noqa: S310 (the URL is the user's own setting)
        r.read(65536)


def _deliver(kind: str, url: str, title: str, body: str, run: Dict[str, Any], tags: str, priority: str) -> None:
    """One target as its kind wants it: a webhook gets JSON (Slack reads `text`, Discord `content`), ntfy a plain
    body with the title, tags and priority in headers."""
    if kind == "webhook":
        payload = {"text": "%s: %s" % (title, body), "content": "%s: %s" % (title, body), "run": run}
        _post(url, json.dumps(payload).encode("utf-8"), {"Content-Type": "application/json"})
        return
    # Header values must be latin-1: a run name in another script goes in the body only.
    # Control characters (a run name is workspace text) would end the header early.
    safe_title = re.sub(r"[\x00-\x1f\x7f]", " ", title).encode("latin-1", "replace").decode("latin-1")
    _post(url, body.encode("utf-8"), {"Title": safe_title, "Tags": tags, "Priority": priority, "Content-Type": "text/plain; charset=utf-8"})


def _reason(e: Exception) -> Any:
    """What a warning says of a failed POST: the HTTP status, else the kind of error (never the URL)."""
    import urllib.error

    return e.code if isinstance(e, urllib.error.HTTPError) else type(e).__name__


# ntfy tags (shown as emoji) and priority per end, one word each as in the events: a preempted or stalled run must not
# read as failed or completed on a phone either.
END_TAGS = {
    "completed": ("white_check_mark", "default"),
    "failed": ("x", "high"),
    "stopped": ("stop_sign", "default"),
    "interrupted": ("pause_button", "default"),
    "preempted": ("cloud", "default"),
    "stalled": ("hourglass", "high"),
    "budget-stopped": ("money_with_wings", "default"),
}


def send_finished(run_dir: str, env: Dict[str, str], spec_name: Optional[str], finished: Dict[str, Any],
                  warn: Callable[[str], None]) -> List[str]:
    """Sends the notification to each target, just before the `finished` event is written (so a failure is
    reported inside the run's events); returns the kinds that were sent."""
    sent: List[str] = []
    goals = targets(env)
    if not goals:
        return sent
    s = summary(run_dir, spec_name, finished)
    title, body = message(s)
    for kind, url in goals:
        try:
            tags, priority = END_TAGS.get(s["status"], ("x", "high"))
            _deliver(kind, url, title, body, s, tags, priority)
            sent.append(kind)
        except (OSError, ValueError) as e:  # urllib's URLError and HTTPError are OSErrors
            warn("the end-of-run %s notification was not delivered (%s)" % (kind, _reason(e)))
    return sent


def send_note(run_dir: str, env: Dict[str, str], spec_name: Optional[str], what: str, body: str, urgent: bool,
              warn: Callable[[str], None]) -> List[str]:
    """A notification during the run (the budget's 80% warning and its stop), to the same targets as the
    end-of-run one and under the same rules (one try each, a failure is a warning naming only the kind)."""
    sent: List[str] = []
    title = "%s on %s: %s" % (spec_name or os.path.basename(run_dir), socket.gethostname(), what)
    for kind, url in targets(env):
        try:
            run = {"run_id": os.path.basename(run_dir), "name": spec_name or os.path.basename(run_dir), "note": what}
            _deliver(kind, url, title, body, run, "money_with_wings" if urgent else "warning", "high" if urgent else "default")
            sent.append(kind)
        except (OSError, ValueError) as e:
            warn("the %s notification (%s) was not delivered (%s)" % (kind, what, _reason(e)))
    return sent
