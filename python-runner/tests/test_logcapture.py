import os
import signal
import sys
import time
import unittest

from remote_finetune import logcapture
from remote_finetune.envfile import Redactor
from remote_finetune.logcapture import _Splitter, run_captured
from tests.helpers import PYTHON, TempDirTest, read

SECRET = "hf_AbCdEfGhIjKlMnOpQrStUv"


class Capture(TempDirTest):
    def script(self, body):
        return self.write("child.py", "import sys, time, os\n" + body)

    def test_combined_output_appended_lines_scanned_and_secrets_redacted(self):
        self.write("output.log", "earlier run output\n")
        child = self.script(
            "print('hello', flush=True)\n"
            "sys.stderr.write('err line\\n'); sys.stderr.flush()\n"
            "print('token is ' + os.environ['HF_TOKEN'], flush=True)\n"
            # the secret split across two writes with a pause between them
            "sys.stdout.write('split ' + os.environ['HF_TOKEN'][:7]); sys.stdout.flush(); time.sleep(0.4)\n"
            "sys.stdout.write(os.environ['HF_TOKEN'][7:] + ' end\\n'); sys.stdout.flush()\n"
            "sys.stdout.write('\\r 10%|#  | 1/10\\r 20%|## | 2/10\\n'); sys.stdout.flush()\n"
            "sys.stdout.write('no newline at exit')\n")
        lines = []
        env = dict(os.environ, HF_TOKEN=SECRET)
        res = run_captured([PYTHON, child], self.path("output.log"), env=env, on_line=lines.append,
                           redactor=Redactor([("HF_TOKEN", SECRET)]), idle_flush_s=0.1)
        self.assertEqual(res.returncode, 0)
        log = open(self.path("output.log"), "rb").read().decode()
        self.assertTrue(log.startswith("earlier run output\nhello\n"))
        self.assertIn("err line\n", log)
        self.assertNotIn(SECRET, log)
        self.assertNotIn(SECRET[7:], log)
        self.assertIn("token is [REDACTED:HF_TOKEN]\n", log)
        self.assertIn("split [REDACTED:HF_TOKEN] end\n", log)
        self.assertIn("\r 10%|#  | 1/10\r 20%|## | 2/10\n", log)  # carriage returns kept for the log panel
        self.assertTrue(log.endswith("no newline at exit"))
        self.assertEqual(lines, ["hello", "err line", "token is [REDACTED:HF_TOKEN]", "split [REDACTED:HF_TOKEN] end",
                                 " 10%|#  | 1/10", " 20%|## | 2/10", "no newline at exit"])

    def test_partial_line_reaches_the_log_while_the_child_is_quiet(self):
        # The child prints a partial line, then waits until the test has seen it in output.log.
        go = self.path("go")
        child = self.script("sys.stdout.write('Loading shards 1/4'); sys.stdout.flush()\n"
                            "end = time.time() + 20\n"
                            "while not os.path.exists(%r) and time.time() < end: time.sleep(0.02)\n"
                            "print(' done')\n" % go)
        import threading
        seen = {}

        def peek():
            import time as t
            end = t.time() + 15
            while t.time() < end:
                if os.path.exists(self.path("output.log")):
                    text = read(self.path("output.log"))
                    if text:
                        seen["mid"] = text
                        break
                t.sleep(0.02)
            open(go, "w").close()

        th = threading.Thread(target=peek)
        th.start()
        run_captured([PYTHON, child], self.path("output.log"), idle_flush_s=0.1)
        th.join()
        self.assertEqual(seen.get("mid"), "Loading shards 1/4")
        self.assertEqual(read(self.path("output.log")), "Loading shards 1/4 done\n")

    def test_a_flood_is_logged_whole_while_scanning_falls_behind(self):
        child = self.script("for i in range(60000): sys.stdout.write('line %d\\n' % i)\n")
        slow = lambda line: time.sleep(0.0005)  # noqa: E731 - a scanner slower than the child
        res = run_captured([PYTHON, child], self.path("output.log"), on_line=slow)
        lines = read(self.path("output.log")).splitlines()
        self.assertEqual(len(lines), 60000)
        self.assertEqual(lines[-1], "line 59999")
        self.assertGreater(res.lines_not_scanned, 0)

    def test_a_trickle_of_lines_is_read_in_batches_not_a_wake_up_per_line(self):
        # A loss line every 5 ms for a second: each read woke the capture (and the scanner) for every line, a switch
        # away from the training process on its core each time; now reads gather a trickle for BATCH_S.
        child = self.script("for i in range(200):\n    print('step %d loss 1.0' % i, flush=True); time.sleep(0.005)\n")
        reads = []
        real_read = os.read

        def counting_read(fd, n):
            data = real_read(fd, n)
            reads.append(len(data))
            return data

        scanned = []
        logcapture.os.read = counting_read
        try:
            res = run_captured([PYTHON, child], self.path("output.log"), on_line=scanned.append)
        finally:
            logcapture.os.read = real_read
        self.assertEqual(res.returncode, 0)
        self.assertEqual(len(read(self.path("output.log")).splitlines()), 200)
        self.assertEqual(len(scanned), 200)
        self.assertEqual(res.lines_not_scanned, 0)
        # 200 lines over >= 1 s at one read per 50 ms is about 25 reads; one read per line would be about 200.
        self.assertLess(len(reads), 60, "%d reads for 200 lines" % len(reads))

    def test_splitter_holds_back_only_a_possible_secret_prefix(self):
        s = _Splitter(Redactor([("K_TOKEN", "secretvalue")]))
        self.assertEqual(s.push(b"abc secr"), b"")
        self.assertEqual(s.flush_partial(), b"abc ")
        self.assertEqual(s.pending, b"secr")
        self.assertEqual(s.push(b"etvalue\n"), b"secretvalue\n")


if __name__ == "__main__":
    unittest.main()


# A STAND-IN for torchrun's signal behaviour (torch.distributed.elastic: on SIGTERM the agent tears its workers
# down, SIGKILL after a short timeout), reduced to 0.5 s. The worker needs 1.5 s to save its checkpoint.
LAUNCHER = r'''#!/usr/bin/env python3
import os, signal, subprocess, sys, time
worker = subprocess.Popen([sys.executable, sys.argv[1], sys.argv[2]])
def term(signum, frame):
    time.sleep(0.5)
    worker.kill()
    sys.exit(143)
signal.signal(signal.SIGTERM, term)
sys.exit(worker.wait())
'''
WORKER = r'''
import signal, sys, time
def term(signum, frame):
    time.sleep(1.5)
    open(sys.argv[1], "w").write("saved")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
open(sys.argv[1] + ".ready", "w").write("1")
while True:
    time.sleep(0.1)
'''


class LauncherGrace(TempDirTest):
    def test_a_stop_under_torchrun_reaches_the_workers_and_spares_the_launcher(self):
        import threading
        launcher = self.write("bin/torchrun", LAUNCHER, mode=0o755)
        worker = self.write("worker.py", WORKER)
        saved = self.path("saved")

        def stop_when_ready():
            end = time.time() + 20
            while not os.path.exists(saved + ".ready") and time.time() < end:
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=stop_when_ready, daemon=True).start()
        res = logcapture.run_captured([launcher, worker, saved], self.path("output.log"), grace_s=30)
        self.assertEqual(res.signalled, signal.SIGTERM)
        self.assertEqual(read(saved), "saved", "the launcher cut the worker's grace period")
        self.assertEqual(res.returncode, 0)
        self.assertFalse(res.killed_by_us)
