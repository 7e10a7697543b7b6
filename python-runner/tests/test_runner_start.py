"""What the runner does before the training command's first line: every run's start waits for it (the warm
start benchmark measures it). Modules only a notification or a spot notice needs are not imported then, and
the failure signatures are compiled when the first line is scanned, on the scanner's thread."""

import os
import subprocess
import sys
import unittest

RUNNER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RunnerStartTest(unittest.TestCase):
    def test_the_runner_module_does_not_import_http_clients_at_start(self):
        code = "import sys, remote_finetune.run; print(sorted(m for m in ('urllib.request', 'http.client') if m in sys.modules))"
        r = subprocess.run([sys.executable, "-c", code], cwd=RUNNER, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": RUNNER})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "[]", "imported at the runner's start: %s" % r.stdout.strip())

    def test_notifications_still_send_and_spot_notices_still_ask_once_imported_when_used(self):
        from remote_finetune import notify, spot_notice
        # A refused connection is a warning naming the kind of target, as before the import moved.
        warnings = []
        sent = notify.send_note("/tmp/r1", {notify.WEBHOOK: "http://127.0.0.1:9/hook"}, "run", "budget 80%", "body", False, warnings.append)
        self.assertEqual(sent, [])
        self.assertEqual(len(warnings), 1)
        self.assertIn("webhook", warnings[0])
        self.assertNotIn("127.0.0.1", warnings[0])
        notice = spot_notice.GceNotice({"GCE_METADATA_HOST": "127.0.0.1:9"}, timeout=0.5)
        with self.assertRaises(OSError):
            notice.check()

    def test_signatures_are_compiled_when_the_first_line_is_scanned(self):
        from remote_finetune.signatures import SignatureScanner
        scanner = SignatureScanner()
        self.assertIsNone(scanner._signatures, "compiled while the run was being started")
        hit = scanner.feed("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
        self.assertIsNotNone(hit)
        self.assertGreater(len(scanner.signatures), 10)


if __name__ == "__main__":
    unittest.main()
