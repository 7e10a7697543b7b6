"""The run's `env` file (mode 0600, `export KEY='value'` entries) and the redaction of its secret values.

Values are never printed by the runner; the log capture also replaces any exact secret value a
user's script prints with a marker, so a token cannot reach output.log or events.jsonl.
"""

import base64
import os
import re
import stat
import urllib.parse
from typing import Dict, Iterable, List, Optional, Tuple

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
ALWAYS_SECRET = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
# Short values ("1", "true") would turn every log line into markers; real secrets are long.
MIN_SECRET_LEN = 6


# Inside double quotes (dotenv style): these escapes are read, any other backslash stays as written.
_DQ_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
# What may follow a quoted value on its closing line: blanks and a # comment.
_TAIL = re.compile(r"[ \t]*(?:#[^\n]*)?\r?(?:\n|\Z)")
_EXPORT = re.compile(r"export[ \t]+")
_COMMENT = re.compile(r"\s#")


def _quoted_word(text: str, p: int) -> Tuple[Optional[str], int]:
    """The value starting at text[p] (a quote) read as one POSIX shell word, which is how the run
    wrapper's `. ./env` reads it: '...' is literal and may span lines, \\x outside quotes is x (the
    `'\\''` the extension writes for a '), pieces concatenate. "..." reads dotenv's escapes (\\n, \\",
    \\\\); the extension never writes it. Returns (None, p) when a quote is never closed."""
    n = len(text)
    out: List[str] = []
    while p < n:
        c = text[p]
        if c == "'":
            close = text.find("'", p + 1)
            if close == -1:
                return None, p
            out.append(text[p + 1:close])
            p = close + 1
        elif c == '"':
            p += 1
            while True:
                if p >= n:
                    return None, p
                c = text[p]
                if c == '"':
                    p += 1
                    break
                if c == "\\" and p + 1 < n and text[p + 1] in _DQ_ESCAPES:
                    out.append(_DQ_ESCAPES[text[p + 1]])
                    p += 2
                    continue
                out.append(c)
                p += 1
        elif c == "\\" and p + 1 < n and text[p + 1] not in "\r\n":
            out.append(text[p + 1])
            p += 2
        elif c in " \t\r\n#":
            break
        else:
            out.append(c)
            p += 1
    return "".join(out), p


def parse_env(text: str) -> Tuple[Dict[str, str], List[str]]:
    """dotenv-style entries: KEY=VALUE, `export KEY=VALUE`, # comments, quoted values.

    The extension writes one `export KEY='value'` per variable (src/core/ssh/envFile.ts), which the
    wrapper also sources with /bin/sh; a quoted value is read exactly as the shell reads it, so a
    value may span lines and hold quotes, $, backticks or `export X=...` lines without any of it
    being interpreted. Unquoted values end at the line's end or at a ` #` comment.

    Problems name the line number only, never the line, because the line may hold a secret.
    """
    env: Dict[str, str] = {}
    problems: List[str] = []
    n = len(text)
    pos = 0
    line = 1
    while pos < n:
        nl = text.find("\n", pos)
        end = n if nl == -1 else nl
        nxt = n if nl == -1 else nl + 1
        raw = text[pos:end]
        s = raw.strip()
        if s and not s.startswith("#"):
            off = pos + len(raw) - len(raw.lstrip())
            m = _EXPORT.match(text, off, end)
            if m:
                off = m.end()
            eq = text.find("=", off, end)
            key = text[off:eq].strip() if eq != -1 else ""
            if eq == -1 or not _KEY.match(key):
                problems.append("env line %d: expected KEY=VALUE" % line)
            else:
                v = eq + 1
                while v < end and text[v] in " \t":
                    v += 1
                if v < end and text[v] in "'\"":
                    value, after = _quoted_word(text, v)
                    tail = _TAIL.match(text, after) if value is not None else None
                    if value is None:
                        problems.append("env line %d: unclosed quote" % line)
                    elif tail is None:
                        problems.append("env line %d: text after the closing quote" % (line + text.count("\n", pos, after)))
                    else:
                        env[key] = value
                        nxt = tail.end()
                else:
                    value = text[v:end].rstrip("\r")
                    c = _COMMENT.search(value)
                    env[key] = (value if c is None else value[:c.start()]).strip()
        line += text.count("\n", pos, nxt)
        pos = nxt
    return env, problems


def read_env_file(path: str) -> Tuple[Dict[str, str], List[str]]:
    """Reads the env file; a missing file is an empty env. Warns when others can read it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}, []
    problems: List[str] = []
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        problems.append("%s is readable by other users (mode %o); it should be 0600" % (os.path.basename(path), st.st_mode & 0o777))
    # newline="": a value's \r stays as written (the shell that sources the file keeps it too).
    with open(path, "r", encoding="utf-8", newline="") as f:
        env, more = parse_env(f.read())
    return env, problems + more


def is_secret_name(name: str) -> bool:
    # RFT_NOTIFY_*: a webhook URL or an ntfy topic is as good as a password to whoever reads it.
    return name in ALWAYS_SECRET or name.startswith("RFT_NOTIFY_") or bool(_SECRET_NAME.search(name))


def secret_items(env: Dict[str, str]) -> List[Tuple[str, str]]:
    return [(k, v) for k, v in env.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LEN]


def encoded_forms(value: str) -> List[str]:
    """The forms a secret takes when a library or a script prints it encoded: percent-encoded (a token in a
    URL: https://user:TOKEN@host, ?key=TOKEN) and base64 (Basic auth headers, configs), the latter at each of
    the three byte alignments it can have inside a longer base64 text, in standard and URL-safe alphabets,
    keeping only the characters the secret alone decides (as GitHub Actions masks secrets)."""
    raw = value.encode("utf-8")
    out = set()
    for q in (urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value, safe="")):
        if q != value:
            out.add(q)
    for offset, skip in ((0, 0), (1, 2), (2, 3)):
        enc = base64.b64encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
        end = len(enc) if ((offset + len(raw)) * 8) % 6 == 0 else len(enc) - 1
        part = enc[skip:end]
        if len(part) >= MIN_SECRET_LEN:
            out.add(part)
            out.add(part.translate(str.maketrans("+/", "-_")))
    out.discard(value)
    return sorted(out)


class Redactor:
    """Replaces secret values, exact or encoded (encoded_forms), with `[REDACTED:NAME]`, longest first."""

    def __init__(self, secrets: Iterable[Tuple[str, str]]) -> None:
        plain = {(k, v) for k, v in secrets if len(v) >= MIN_SECRET_LEN}
        forms = plain | {(k, e) for k, v in plain for e in encoded_forms(v)}
        items = sorted(forms, key=lambda kv: -len(kv[1]))
        self._items = [(v, "[REDACTED:%s]" % k) for k, v in items]
        self._bitems = [(v.encode("utf-8"), m.encode("utf-8")) for v, m in self._items]
        self._pattern: Optional[re.Pattern] = re.compile("|".join(re.escape(v) for v, _ in self._items)) if self._items else None
        self._bpattern: Optional[re.Pattern] = re.compile(b"|".join(re.escape(v) for v, _ in self._bitems)) if self._bitems else None
        self._marks = dict(self._items)
        self._bmarks = dict(self._bitems)
        self.max_len = max((len(v) for v, _ in self._bitems), default=0)

    def secret_bytes(self) -> List[bytes]:
        return [v for v, _ in self._bitems]

    def __bool__(self) -> bool:
        return bool(self._items)

    def text(self, s: str) -> str:
        if self._pattern is None:
            return s
        return self._pattern.sub(lambda m: self._marks[m.group(0)], s)

    def bytes(self, b: bytes) -> bytes:
        if self._bpattern is None:
            return b
        return self._bpattern.sub(lambda m: self._bmarks[m.group(0)], b)
