"""The run's control key: how the extension tells the runner's own events from lines a training script wrote.

Every process of a run, the user's script included, runs as the same user and can append to events.jsonl
(RFT_EVENTS_FILE is given to the script so our TrainerCallback can report), print anything, and read any file
of the run folder. The events the extension acts on (the spot notice that ends an instance and relaunches the
run elsewhere, the `finished` status, the queue, a restored checkpoint) count only with an HMAC-SHA256 made
with a key the extension writes to `control.key` (0600) before the run starts. The runner reads it and
removes the file before it starts any child, keeps it out of every environment, and makes itself
non-dumpable, so no process of the same user can read it from /proc/<pid>/environ or mem, or ptrace it;
a forked child's copy of our memory is gone at its exec.

Line form: the event's JSON exactly as written, with `,"mac":"<64 hex>"` before its closing brace; the MAC
is over the line without that field. src/core/telemetry/eventAuth.ts checks it.
"""

import ctypes
import hashlib
import hmac
import os
from typing import Optional

from .run_folder import CONTROL_KEY

_PR_SET_DUMPABLE = 4


def take_key(run_dir: str) -> Optional[bytes]:
    """The key, read once and removed from disk; None when the extension wrote none (a run started by hand)."""
    path = os.path.join(run_dir, CONTROL_KEY)
    try:
        with open(path, "r", encoding="ascii") as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    try:
        key = bytes.fromhex(text)
    except ValueError:
        return None
    if len(key) < 16:
        return None
    _no_dumps()
    return key


def _no_dumps() -> None:
    """Linux: /proc/<pid>/environ and mem become root's, and ptrace is refused, for every other process."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def sign_line(line: str, key: bytes) -> str:
    """`{...}` → `{...,"mac":"<hex>"}` (no newline in or out)."""
    mac = hmac.new(key, line.encode("utf-8"), hashlib.sha256).hexdigest()
    return line[:-1] + ',"mac":"' + mac + '"}'
