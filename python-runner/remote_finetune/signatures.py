"""Known-failure signatures: one data file (signatures.json) shared with the extension."""

import json
import os
import re
from typing import Dict, List, Optional

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "signatures.json")


class Signature:
    __slots__ = ("id", "regex", "title", "hint", "severity")

    def __init__(self, id: str, regex: "re.Pattern[str]", title: str, hint: str, severity: str = "error") -> None:
        self.id = id
        self.regex = regex
        self.title = title
        self.hint = hint
        self.severity = severity  # "warning": the run goes on (a W&B key refused), reported as a warning event


def load_signatures(path: str = _PATH) -> List[Signature]:
    with open(path, "r", encoding="utf-8") as f:
        data = json.load(f)
    flags = re.IGNORECASE if "i" in data.get("flags", "") else 0
    return [Signature(s["id"], re.compile(s["regex"], flags), s["title"], s["hint"], s.get("severity", "error")) for s in data["signatures"]]


_DEFAULT: Optional[List[Signature]] = None
OWN_PREFIX = "[remote-finetune] "


def match_line(line: str, signatures: Optional[List[Signature]] = None) -> Optional[Signature]:
    """The first signature (in file order) matching this output line, if any."""
    global _DEFAULT
    if signatures is None:
        if _DEFAULT is None:
            _DEFAULT = load_signatures()
        signatures = _DEFAULT
    if line.lstrip().startswith(OWN_PREFIX):
        return None  # our own warnings name failures (bf16, flash-attn) without being them
    for sig in signatures:
        if sig.regex.search(line):
            return sig
    return None


class SignatureScanner:
    """Reports each signature once per run: a traceback repeats its message on many lines."""

    def __init__(self, signatures: Optional[List[Signature]] = None) -> None:
        # Compiled on the first line fed (on the scanner's thread), not while the run is being started: the
        # patterns took 15 ms of the runner's start, before the training command's first line.
        self._signatures = signatures
        self.seen: Dict[str, str] = {}

    @property
    def signatures(self) -> List[Signature]:
        if self._signatures is None:
            self._signatures = load_signatures()
        return self._signatures

    def feed(self, line: str) -> Optional[Signature]:
        sig = match_line(line, self.signatures)
        if sig is None or sig.id in self.seen:
            return None
        self.seen[sig.id] = line
        return sig
