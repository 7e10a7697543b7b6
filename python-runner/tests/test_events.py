import json
import os
import threading
import unittest

from remote_finetune import events
from tests.helpers import FIXTURES, TempDirTest

EVENTS_DIR = os.path.join(FIXTURES, "events")


def fixture_lines(name):
    with open(os.path.join(EVENTS_DIR, name), encoding="utf-8") as f:
        return [l for l in f.read().split("\n") if l]


class SharedFixtures(unittest.TestCase):
    """The same files test/unit/telemetry/events.test.ts checks with the zod schema."""

    def test_every_valid_fixture_line_is_accepted(self):
        files = [f for f in sorted(os.listdir(EVENTS_DIR)) if f.endswith(".jsonl") and not f.startswith("invalid")]
        self.assertGreaterEqual(len(files), 2)
        n = 0
        for f in files:
            for line in fixture_lines(f):
                ev, err = events.parse_event_line(line)
                self.assertIsNone(err, "%s: %s" % (f, line))
                self.assertIn(ev["type"], events.EVENT_TYPES)
                n += 1
        self.assertGreaterEqual(n, 10)

    def test_every_invalid_fixture_line_is_refused_with_a_reason(self):
        lines = fixture_lines("invalid_lines.jsonl")
        self.assertGreaterEqual(len(lines), 4)
        for line in lines:
            ev, err = events.parse_event_line(line)
            self.assertIsNone(ev, line)
            self.assertTrue(err)
        self.assertIn("version 2", events.parse_event_line(lines[1])[1])

    def test_fixtures_cover_every_event_type(self):
        seen = set()
        for f in os.listdir(EVENTS_DIR):
            if f.endswith(".jsonl") and not f.startswith("invalid"):
                seen.update(json.loads(l)["type"] for l in fixture_lines(f))
        self.assertEqual(seen, set(events.EVENT_TYPES))


class SchemaRules(unittest.TestCase):
    def ok(self, **kw):
        return events.validate_event(dict({"v": 1, "ts": 1.0}, **kw))

    def test_zod_semantics(self):
        self.assertIsNone(self.ok(type="metrics", step=10.0, loss=1.0, unknown_key="tolerated"))
        self.assertIn("step", self.ok(type="metrics", step=1.5))
        self.assertIn("step", self.ok(type="metrics", step=-1))
        self.assertIn("step", self.ok(type="metrics", step=True))
        self.assertIn("safe integer", self.ok(type="metrics", step=2 ** 53))
        self.assertIn("loss", self.ok(type="metrics", step=1, loss=None))  # optional is not nullable
        self.assertIsNone(self.ok(type="finished", status="failed", exit_code=None))
        self.assertIn("exit_code", self.ok(type="finished", status="failed"))
        self.assertIn("status", self.ok(type="finished", status="crashed", exit_code=1))
        self.assertIn("trainable_pct", self.ok(type="started", model="m", method="qlora", trainable_pct=101))
        self.assertIn("method", self.ok(type="started", model="m", method="ppo"))
        self.assertIn("extra", self.ok(type="metrics", step=1, extra={"a": "x"}))
        self.assertIn("ts", events.validate_event({"v": 1, "ts": -1, "type": "warning", "message": "m"}))
        self.assertIn("v", events.validate_event({"ts": 1, "type": "warning", "message": "m"}))

    def test_nan_is_refused_as_json_parse_would(self):
        _, err = events.parse_event_line('{"v":1,"ts":1,"type":"metrics","step":1,"loss":NaN}')
        self.assertEqual(err, "not JSON")


class Writer(TempDirTest):
    def test_writes_valid_lines_drops_nonfinite_and_redacts_messages(self):
        p = self.path("events.jsonl")
        w = events.EventWriter(p, redact=lambda s: s.replace("hf_secret123", "[REDACTED]"))
        w.emit("metrics", step=3, loss=float("nan"), learning_rate=1e-4, extra={"x": float("inf"), "y": 2})
        w.emit("error", message="token hf_secret123 refused", signature="gated-repo")
        w.emit("metrics", step=-5)  # a runner bug: becomes a warning, not a bad line
        lines = open(p, encoding="utf-8").read().splitlines()
        parsed = [events.parse_event_line(l) for l in lines]
        self.assertTrue(all(err is None for _, err in parsed), parsed)
        self.assertNotIn("loss", parsed[0][0])
        self.assertEqual(parsed[0][0]["extra"], {"y": 2})
        self.assertNotIn("hf_secret123", lines[1])
        self.assertEqual(parsed[2][0]["type"], "warning")
        self.assertEqual(parsed[2][0]["code"], "invalid-event")

    def test_concurrent_writers_never_interleave_lines(self):
        p = self.path("events.jsonl")
        w = events.EventWriter(p)

        def burst(k):
            for i in range(200):
                w.emit("warning", message=("w%d-%d " % (k, i)) * 20)

        ts = [threading.Thread(target=burst, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        lines = open(p, encoding="utf-8").read().splitlines()
        self.assertEqual(len(lines), 800)
        self.assertTrue(all(events.parse_event_line(l)[1] is None for l in lines))


if __name__ == "__main__":
    unittest.main()
