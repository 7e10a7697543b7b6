"""run_folder.py: the one place the runner names the files of a run folder; events.read_events: the one reader of events.jsonl."""

import ast
import json
import os
import shutil
import tempfile
import unittest
from typing import List, Set

from remote_finetune import run_folder
from remote_finetune.events import EventWriter, EventsRead, make_event, read_events

PACKAGE = os.path.dirname(os.path.abspath(run_folder.__file__))
# Calls whose string arguments are paths or file names.
_PATH_CALLS = {"join", "path", "open", "glob", "exists", "isfile", "isdir", "stat", "unlink", "remove", "replace", "EventWriter"}


def folder_names() -> Set[str]:
    """Every name run_folder.py gives (its upper-case string constants); a %d pattern also as its glob."""
    names = set()
    for key, value in vars(run_folder).items():
        if key.isupper() and isinstance(value, str):
            names.add(value)
    return names


def _docstrings(tree: ast.AST) -> Set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def literal_uses(source: str, filename: str, names: Set[str]) -> List[str]:
    """Where a module spells a run-folder name itself, as `file:line "name"`:
    - a name with a dot in it (events.jsonl, spec.json, …) anywhere but in a docstring;
    - any name as an argument of a path call (os.path.join, open, glob, …), a module constant's value, or one of
      two or more such names in a tuple or list (the stale files, the files whose age counts).
    Words that are also field names (pid, env, exit_code) are free elsewhere: an event's `exit_code` is no path."""
    tree = ast.parse(source, filename=filename)
    docs = _docstrings(tree)
    found = set()

    def hit(node: ast.AST) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            found.add((node.lineno, node.value))

    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value and id(node) not in docs:
            hit(node)
        elif isinstance(node, ast.Call) and _callee(node) in _PATH_CALLS:
            for a in node.args:
                hit(a)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            inside = [e for e in node.elts if isinstance(e, ast.Constant) and e.value in names]
            if len(inside) >= 2:
                for e in inside:
                    hit(e)
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.Assign):
            hit(node.value)
    return ["%s:%d %r" % (filename, line, name) for line, name in sorted(found)]


def package_literal_uses() -> List[str]:
    names = folder_names()
    out: List[str] = []
    for f in sorted(os.listdir(PACKAGE)):
        if f.endswith(".py") and f not in ("run_folder.py", "spec_defaults.py"):
            with open(os.path.join(PACKAGE, f), encoding="utf-8") as fh:
                out.extend(literal_uses(fh.read(), f, names))
    return out


class Names(unittest.TestCase):
    def test_no_runner_module_but_run_folder_spells_a_run_file_name(self):
        found = package_literal_uses()
        self.assertEqual(found, [], "run-folder file names spelled outside run_folder.py (%d): %s" % (len(found), "; ".join(found)))

    def test_the_check_sees_each_way_a_name_is_spelled(self):
        names = folder_names()
        src = ('"""Reads events.jsonl."""\n'
               'import os\n'
               'LOG = "output.log"\n'
               'def f(d):\n'
               '    """spec.json in a docstring is text."""\n'
               '    open(os.path.join(d, "pid"))\n'
               '    for n in ("exit_code", "heartbeat"):\n'
               '        pass\n'
               '    ev = {"exit_code": 0, "pid": 1}\n'
               '    return "gpu.csv"\n')
        self.assertEqual(literal_uses(src, "m.py", names), [
            "m.py:3 'output.log'", "m.py:6 'pid'", "m.py:7 'exit_code'", "m.py:7 'heartbeat'", "m.py:10 'gpu.csv'"])

    def test_the_names_are_the_ones_the_extension_writes_and_reads(self):
        # These cross the wire: the wrapper (src/core/ssh/detachedJob.ts) and the tails read and write them by name.
        self.assertEqual((run_folder.SPEC, run_folder.ENV, run_folder.OUTPUT_LOG, run_folder.EVENTS, run_folder.GPU_CSV),
                         ("spec.json", "env", "output.log", "events.jsonl", "gpu.csv"))
        self.assertEqual(run_folder.STALE_AT_RESTART, ("pid", "exit_code", "heartbeat", "started_at", "train.pgid", "runner.pid"))


class ReadEvents(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rft-events-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.path = os.path.join(self.dir, "events.jsonl")

    def write(self, data: bytes) -> None:
        with open(self.path, "ab") as f:
            f.write(data)

    def line(self, type_: str, **fields) -> bytes:
        return (json.dumps(make_event(type_, ts=1.0, **fields)) + "\n").encode("utf-8")

    def test_a_missing_file_reads_as_no_events(self):
        self.assertEqual(read_events(self.dir), EventsRead([], 0, 0, False))

    def test_bad_lines_are_skipped_and_counted_and_blank_lines_are_neither(self):
        self.write(self.line("metrics", step=1, loss=2.0))
        self.write(b"not json\n")
        self.write(b'{"v":1,"ts":1,"type":"metrics","step":"two"}\n')  # the schema refuses it, as the extension does
        self.write(b'{"v":2,"ts":1,"type":"warning","message":"later schema"}\n')
        self.write(b"[1,2]\n")
        self.write(b"\n   \n")
        self.write(b'{"v":1,"ts":1,"type":"metrics","step":3,"loss":NaN}\n')  # JSON.parse refuses NaN
        self.write(self.line("metrics", step=4, loss=1.5))
        r = read_events(self.dir)
        self.assertEqual([e["step"] for e in r.events], [1, 4])
        self.assertEqual(r.skipped, 5)
        self.assertEqual(r.offset, os.path.getsize(self.path))
        self.assertFalse(r.partial)

    def test_a_partial_last_line_is_left_for_the_next_read(self):
        first = self.line("metrics", step=1, loss=2.0)
        whole = self.line("metrics", step=2, loss=1.0)
        self.write(first + whole[:10])
        r = read_events(self.dir)
        self.assertEqual(([e["step"] for e in r.events], r.skipped, r.offset, r.partial), ([1], 0, len(first), True))
        self.write(whole[10:])
        r2 = read_events(self.dir, r.offset)
        self.assertEqual(([e["step"] for e in r2.events], r2.skipped, r2.offset, r2.partial), ([2], 0, len(first) + len(whole), False))
        self.assertEqual(read_events(self.dir, r2.offset), EventsRead([], 0, r2.offset, False))

    def test_unicode_survives_and_a_bad_byte_costs_only_its_line(self):
        w = EventWriter(self.path)
        w.emit("warning", message="données: 学習率 ⚠ 🚀", code="x")
        self.write(b'{"v":1,"ts":1,"type":"warning","message":"\xff\xfe"}\n')  # not UTF-8: read as U+FFFD
        self.write(b'{"v":1,"ts":1,"type":"warning","message":"ok"}\xc3\n')  # a cut multi-byte character
        w.emit("warning", message="after", code="y")
        r = read_events(self.dir)
        self.assertEqual([e["message"] for e in r.events], ["données: 学習率 ⚠ 🚀", "\ufffd\ufffd", "after"])
        self.assertEqual(r.skipped, 1)
        self.assertEqual(r.offset, os.path.getsize(self.path))

    def test_signed_lines_read_as_events(self):
        w = EventWriter(self.path, mac_key=b"k" * 32)
        w.emit("finished", status="completed", exit_code=0, runtime_s=1.0)
        r = read_events(self.dir)
        self.assertEqual([(e["type"], len(e["mac"])) for e in r.events], [("finished", 64)])


class ReadersAgree(unittest.TestCase):
    """The runner's consumers of events.jsonl see the same events from one messy file: lines that are not
    events (another array, an object without the schema's fields, bytes that are not UTF-8) and a line still
    being written count for none of them."""

    def test_every_consumer_reads_only_the_events(self):
        from remote_finetune import boot_resume, evaluate, measured, notify
        d = tempfile.mkdtemp(prefix="rft-readers-")
        self.addCleanup(shutil.rmtree, d, True)
        with open(os.path.join(d, "events.jsonl"), "wb") as f:
            for ev in (make_event("metrics", ts=10.0, step=1, loss=2.0, tokens_per_second=100.0), [1, 2],
                       {"type": "metrics", "step": 99, "loss": 0.1, "tokens_per_second": 9e9},
                       make_event("checkpoint", ts=11.0, step=1, path="out/checkpoint-1"),
                       make_event("metrics", ts=12.0, step=2, loss=1.0, tokens_per_second=300.0)):
                f.write((json.dumps(ev) + "\n").encode("utf-8"))
            f.write(b'{"v":1,"ts":13,"type":"error","message":"\xff"}\n')
            f.write(b'{"v":1,"ts":14,"type":"metrics","step":50,"loss":0.5')
        s = notify.summary(d, "n", {"status": "failed"})
        self.assertEqual((s["step"], s["loss"], s["error"]), (2, 1.0, "\ufffd"))
        self.assertEqual(evaluate._last_step(d), 2)
        self.assertEqual(boot_resume.newest_checkpoint_step(d), 1)
        self.assertEqual(measured._tokens_per_second(d, 0.0), 300.0)


if __name__ == "__main__":
    unittest.main()
