"""The end-of-run notification (notify.py), sent by the runner itself to loopback HTTP receivers that stand
in for a webhook (Slack/Discord/generic) and an ntfy server, from a real `python -m remote_finetune run`."""

import http.server
import json
import os
import subprocess
import threading
import time
import unittest

from remote_finetune import notify
from remote_finetune.events import parse_event_line
from tests.helpers import PYTHON, TempDirTest, read, runner_env

TRAIN_PY = r'''
import os, sys
print("notify names seen by the script:", sorted(k for k in os.environ if k.startswith("RFT_NOTIFY")), flush=True)
print("{'loss': 2.25, 'grad_norm': 0.5, 'learning_rate': 0.0002, 'epoch': 0.5}", flush=True)
print("{'loss': 1.75, 'grad_norm': 0.4, 'learning_rate': 0.0001, 'epoch': 1.0}", flush=True)
if os.environ.get("FAKE_MODE") == "fail":
    print("ValueError: the dataset has no 'text' column", file=sys.stderr, flush=True)
    sys.exit(3)
os.makedirs("out/adapter", exist_ok=True)
'''


class Receiver:
    """A loopback HTTP server recording each POST (path, headers, body); answers with `status`. With
    refuse_python_ua it refuses Python's default User-Agent as Discord's front (Cloudflare) does: 403 with
    "error code: 1010", the request not recorded; it stands in for Slack's the same way."""

    def __init__(self, status=200, refuse_python_ua=False):
        self.posts = []
        self.status = status
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                ua = self.headers.get("User-Agent") or ""
                if refuse_python_ua and (not ua or ua.startswith("Python-urllib")):
                    msg = b"error code: 1010"
                    self.send_response(403)
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                outer.posts.append((self.path, dict(self.headers.items()), body))
                self.send_response(outer.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class UserAgent(TempDirTest):
    def test_every_post_carries_a_user_agent_that_discord_and_slack_fronts_accept(self):
        discord, slack, ntfy = Receiver(refuse_python_ua=True), Receiver(refuse_python_ua=True), Receiver(refuse_python_ua=True)
        self.addCleanup(discord.close)
        self.addCleanup(slack.close)
        self.addCleanup(ntfy.close)
        run_dir = self.path("run")
        os.makedirs(run_dir)
        warnings = []
        for hook in (discord.url + "/api/webhooks/1/tok", slack.url + "/services/T/B/x"):
            env = {"RFT_NOTIFY_WEBHOOK": hook, "RFT_NOTIFY_NTFY_URL": ntfy.url + "/topic"}
            self.assertEqual(notify.send_finished(run_dir, env, "llama-ft", {"status": "completed"}, warnings.append), ["webhook", "ntfy"], warnings)
            self.assertEqual(notify.send_note(run_dir, env, "llama-ft", "80% of budget", "spent 8 of 10", False, warnings.append), ["webhook", "ntfy"], warnings)
        self.assertEqual(warnings, [])
        for r in (discord, slack):
            self.assertEqual(len(r.posts), 2)
        self.assertEqual(len(ntfy.posts), 4)
        for r in (discord, slack, ntfy):
            for _, headers, _ in r.posts:
                self.assertRegex(headers["User-Agent"], r"^RemoteFineTune-Runner/\d")


class NotifyRun(TempDirTest):
    def setUp(self):
        super().setUp()
        self.run_dir = self.own_script_layout(TRAIN_PY, spec={"version": 1, "name": "llama-ft", "command": "python train.py", "outputs": {"dir": "out"}})
        self.receivers = []

    def tearDown(self):
        for r in self.receivers:
            r.close()
        super().tearDown()

    def receiver(self, status=200):
        r = Receiver(status)
        self.receivers.append(r)
        return r

    def run_with(self, env_lines, mode="ok"):
        self.write("home/runs/rft-1/env", "".join("%s=%s\n" % kv for kv in env_lines), mode=0o600)
        env = runner_env({"FAKE_MODE": mode, "RFT_HOME": self.path("home"), "RFT_STANDIN_MODE": "no-gpu"})
        argv = [PYTHON, "-m", "remote_finetune", "run", "--run-dir", self.run_dir, "--workdir", self.work, "--no-watchdog", "--no-gpu-sampler"]
        started = time.time()
        p = subprocess.run(argv, env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        self.elapsed = time.time() - started
        evs = []
        for line in read(os.path.join(self.run_dir, "events.jsonl")).splitlines():
            ev, err = parse_event_line(line)
            self.assertIsNone(err, line)
            evs.append(ev)
        return p, evs

    def test_completed_run_posts_to_webhook_and_ntfy_and_the_script_never_sees_the_targets(self):
        hook, ntfy = self.receiver(), self.receiver()
        hook_url = hook.url + "/services/T000/B000/s3cr3tWebhookPath"
        ntfy_url = ntfy.url + "/rft-7f3kq9zx2"
        p, evs = self.run_with([("RFT_NOTIFY_WEBHOOK", hook_url), ("RFT_NOTIFY_NTFY_URL", ntfy_url)])
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual(evs[-1]["type"], "finished")
        self.assertEqual(evs[-1]["status"], "completed")

        self.assertEqual(len(hook.posts), 1)
        path, headers, body = hook.posts[0]
        self.assertEqual(path, "/services/T000/B000/s3cr3tWebhookPath")
        self.assertEqual(headers["Content-Type"], "application/json")
        payload = json.loads(body)
        self.assertRegex(payload["text"], r"^llama-ft completed on .+: after 0m0\ds, step \d+, loss 1\.75")
        self.assertEqual(payload["content"], payload["text"])  # Discord reads "content"
        self.assertEqual((payload["run"]["run_id"], payload["run"]["status"], payload["run"]["loss"]), ("rft-1", "completed", 1.75))

        self.assertEqual(len(ntfy.posts), 1)
        path, headers, body = ntfy.posts[0]
        self.assertEqual(path, "/rft-7f3kq9zx2")
        self.assertRegex(headers["Title"], r"^llama-ft completed on ")
        self.assertEqual((headers["Tags"], headers["Priority"]), ("white_check_mark", "default"))
        self.assertIn("loss 1.75", body.decode())

        log = read(os.path.join(self.run_dir, "output.log"))
        self.assertIn("notify names seen by the script: []", log)
        for where in (log, read(os.path.join(self.run_dir, "events.jsonl")), p.stdout.decode()):
            self.assertNotIn("s3cr3tWebhookPath", where)
            self.assertNotIn("rft-7f3kq9zx2", where)

    def test_failed_run_is_urgent_and_names_the_first_error(self):
        ntfy = self.receiver()
        p, evs = self.run_with([("RFT_NOTIFY_NTFY_URL", ntfy.url + "/topic")], mode="fail")
        self.assertEqual(evs[-1]["status"], "failed")
        self.assertEqual(len(ntfy.posts), 1)
        _, headers, body = ntfy.posts[0]
        self.assertRegex(headers["Title"], r"^llama-ft failed on ")
        self.assertEqual((headers["Tags"], headers["Priority"]), ("x", "high"))
        self.assertIn("exit code 3", body.decode())
        self.assertIn("\nValueError: the dataset has no 'text' column\n", body.decode())

    def test_an_unreachable_or_refusing_target_is_a_warning_and_the_run_still_finishes(self):
        refusing = self.receiver(status=500)
        dead = self.receiver()
        dead_url = dead.url + "/gone"
        dead.close()
        self.receivers.remove(dead)
        p, evs = self.run_with([("RFT_NOTIFY_WEBHOOK", refusing.url + "/hook-secret"), ("RFT_NOTIFY_NTFY_URL", dead_url)])
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual(len(refusing.posts), 1)
        warnings = [e["message"] for e in evs if e["type"] == "warning" and e.get("code") == "notify"]
        self.assertEqual(len(warnings), 2, warnings)
        self.assertIn("webhook notification was not delivered (500)", warnings[0])
        self.assertRegex(warnings[1], r"ntfy notification was not delivered \(\w+\)")
        self.assertEqual(evs[-1]["type"], "finished")
        for w in warnings:
            self.assertNotIn("hook-secret", w)
            self.assertNotIn("/gone", w)

    def test_a_run_name_with_a_line_break_cannot_add_a_header(self):
        ntfy = self.receiver()
        self.write("home/runs/rft-1/spec.json", json.dumps({"version": 1, "name": "x\r\nPriority: min", "command": "python train.py"}))
        p, evs = self.run_with([("RFT_NOTIFY_NTFY_URL", ntfy.url + "/t")])
        self.assertEqual(len(ntfy.posts), 1, evs)
        _, headers, _ = ntfy.posts[0]
        self.assertEqual(headers["Priority"], "default")
        self.assertTrue(headers["Title"].startswith("x  Priority: min completed on "))

    def test_no_target_sends_nothing_and_a_non_http_value_is_ignored(self):
        self.assertEqual(notify.targets({"RFT_NOTIFY_WEBHOOK": "file:///etc/passwd", "RFT_NOTIFY_NTFY_URL": " "}), [])
        sent = notify.send_finished(self.run_dir, {}, "x", {"status": "completed"}, self.fail)
        self.assertEqual(sent, [])


if __name__ == "__main__":
    unittest.main()
