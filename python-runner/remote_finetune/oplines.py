"""Progress of a one-off host operation (`merge`, `publish`) as JSON lines on stdout.

The extension runs these over SSH in the foreground and reads stdout line by line: every line is one JSON
object {"op", "stage", ...}; the last is stage "done" (with the result) or "error" (with a message). Anything
the libraries print goes to stderr, so stdout stays parseable. Secrets arrive on stdin as one JSON object,
never in argv (visible in `ps` to every user of the host) and never in a file.
"""

import json
import sys
from typing import Any, Dict, Optional, TextIO


class OpLines:
    def __init__(self, op: str, out: Optional[TextIO] = None) -> None:
        self.op = op
        self._out = out if out is not None else sys.stdout

    def emit(self, stage: str, **fields: Any) -> None:
        line = dict({"op": self.op, "stage": stage}, **{k: v for k, v in fields.items() if v is not None})
        self._out.write(json.dumps(line) + "\n")
        self._out.flush()

    def error(self, message: str) -> int:
        self.emit("error", message=message)
        return 1


def read_stdin_json(stream: Optional[TextIO] = None) -> Dict[str, Any]:
    """The one JSON object the extension writes to stdin (empty stdin: {}). Never echoed anywhere."""
    text = (stream if stream is not None else sys.stdin).read()
    if not text.strip():
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("stdin: expected one JSON object")
    return value


def quiet_stdout() -> TextIO:
    """Sends what the libraries print to stderr (tqdm already writes there) and returns the real stdout."""
    real = sys.stdout
    sys.stdout = sys.stderr
    return real
