"""Only the runner's own events carry its MAC (issue 30 item 6): a spot notice or a `finished` line that the
training script printed or appended to events.jsonl is never signed, and the script cannot find the key.

End to end through `python -m remote_finetune run` (own-script mode, the script being the run's untrusted
side): the extension's control.key is in the run folder when the runner starts, as startDetached leaves it.
"""

import ctypes
import hashlib
import hmac
import json
import os
import subprocess
import sys
import unittest

from remote_finetune.control_key import sign_line
from tests.helpers import FIXTURES, PYTHON, TempDirTest, read, runner_env

KEY = "5f" * 32

SCRIPT = r'''
import json, os
key = %r
found = []
run_dir = os.environ["RFT_RUN_DIR"]
for name in os.listdir(run_dir):
    try:
        if key in open(os.path.join(run_dir, name), errors="replace").read():
            found.append(name)
    except OSError:
        pass
found += ["env:" + k for k, v in os.environ.items() if key in v]
if os.geteuid() != 0:  # root reads any process's memory; anyone else is refused a non-dumpable one's
    for what in ("environ", "mem"):
        try:
            with open("/proc/%%d/%%s" %% (os.getppid(), what), "rb") as f:
                if key.encode() in f.read(1 << 20):
                    found.append("parent " + what)
        except OSError:
            pass
print("FOUND " + json.dumps(found), flush=True)
forged = {"v": 1, "ts": 1.0, "type": "warning", "code": "spot-notice", "message": "EC2 will terminate this spot instance"}
print(json.dumps(forged), flush=True)
with open(os.environ["RFT_EVENTS_FILE"], "a") as f:
    f.write(json.dumps(forged) + "\n")
    f.write(json.dumps({"v": 1, "ts": 2.0, "type": "finished", "status": "interrupted", "exit_code": 143, "mac": "0" * 64}) + "\n")
''' % KEY


def signed(line: str, key: bytes) -> bool:
    head, sep, tail = line.rpartition(',"mac":"')
    if not sep or not tail.endswith('"}'):
        return False
    return hmac.compare_digest(tail[:-2], hmac.new(key, (head + "}").encode(), hashlib.sha256).hexdigest())


class RunnerSignsItsOwnEvents(TempDirTest):
    def test_runner_lines_signed_script_lines_not_and_the_key_out_of_reach(self):
        run_dir = self.own_script_layout(SCRIPT, spec={"version": 1, "name": "own", "command": "python train.py"})
        self.write("home/runs/rft-1/control.key", KEY + "\n", mode=0o600)
        self.write("home/runs/rft-1/env", "HF_TOKEN=hf_abcdefghijklmnop\n", mode=0o600)
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work,
                            "--no-watchdog", "--no-gpu-sampler"], env=runner_env({"RFT_HOME": self.path("home")}),
                           cwd=run_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        log = read(os.path.join(run_dir, "output.log"))
        self.assertEqual(r.returncode, 0, log)
        self.assertEqual(json.loads(log.split("FOUND ", 1)[1].splitlines()[0]), [], log)
        self.assertFalse(os.path.exists(os.path.join(run_dir, "control.key")))
        key = bytes.fromhex(KEY)
        lines = read(os.path.join(run_dir, "events.jsonl")).splitlines()
        mine = [json.loads(l) for l in lines if signed(l, key)]
        theirs = [json.loads(l) for l in lines if not signed(l, key)]
        self.assertEqual([e["type"] for e in mine if e["type"] in ("started", "finished")], ["started", "finished"])
        self.assertEqual(mine[-1]["status"], "completed")
        self.assertEqual([(e["type"], e.get("code")) for e in theirs], [("warning", "spot-notice"), ("finished", None)])

    def test_the_key_file_is_taken_once_and_the_runner_becomes_non_dumpable(self):
        self.write("rd/control.key", KEY + "\n", mode=0o600)
        code = ("import ctypes, sys\nfrom remote_finetune.control_key import take_key\n"
                "k = take_key(sys.argv[1]); k2 = take_key(sys.argv[1])\n"
                "print(k.hex() if k else None, k2, ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))")
        r = subprocess.run([PYTHON, "-c", code, self.path("rd")], env=runner_env(), stdout=subprocess.PIPE, text=True, timeout=30)
        self.assertEqual(r.stdout.split(), [KEY, "None", "0"])
        self.assertFalse(os.path.exists(self.path("rd", "control.key")))


class SharedFixture(unittest.TestCase):
    """test/fixtures/events/signed_control.jsonl, signed with bytes 0..31; events.ts's twin checks the same lines."""

    def test_signing_reproduces_the_fixture_and_a_changed_or_unsigned_line_fails(self):
        key = bytes(range(32))
        lines = read(os.path.join(FIXTURES, "events", "signed_control.jsonl")).splitlines()
        self.assertEqual([signed(l, key) for l in lines], [True, True, True, False, False])
        for l in lines[:3]:
            self.assertEqual(sign_line(l.rpartition(',"mac":"')[0] + "}", key), l)


if __name__ == "__main__":
    unittest.main()
