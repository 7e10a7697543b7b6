"""A workspace's own `remote_finetune/` never runs in place of the built-in trainer (issue 30 item 2).

The trainer works in the synced workspace. Python 3.10 puts the working folder first on sys.path for
`python -m` (before PYTHONPATH); 3.11+ does the same unless PYTHONSAFEPATH is set and not empty. Only 3.11
is on this machine, so the 3.10 rule is reproduced by running with PYTHONSAFEPATH unset, and the `.env`
trick by an env file that empties it. `python -m remote_finetune run` starts the real trainer child (under
python, and under stand-ins for accelerate and torchrun that start ranks as they do, in the same working
folder); with no torch here our trainer fails at its first heavy import, which is how we know it ran.
"""

import json
import os
import stat
import subprocess
import unittest

from tests.helpers import PYTHON, RUNNER_DIR, TempDirTest, read, runner_env

SHADOW = '''
import os
open(%r, "a").write("imported from the workspace\\n")
'''

# accelerate launch [--opt value]... (-m module | script) args: each rank is `python` with the rest, same cwd.
LAUNCHER = r'''#!%s
import subprocess, sys
args = sys.argv[1:]
if args and args[0] == "launch":
    args = args[1:]
while args and args[0].startswith("--"):
    args = args[2:] if args[0] not in ("--standalone",) else args[1:]
sys.exit(subprocess.call([sys.executable] + args))
'''


class ShadowPackage(TempDirTest):
    def setUp(self):
        super().setUp()
        self.marker = self.path("shadow-ran")
        for name in ("__init__.py", "__main__.py"):
            self.write("work/remote_finetune/" + name, SHADOW % self.marker)
        # Run at interpreter start from any folder on PYTHONPATH, before the entry script: `PYTHONPATH=.` in the .env.
        for name in ("sitecustomize.py", "usercustomize.py"):
            self.write("work/" + name, SHADOW % self.marker)
        self.run_dir = self.path("home", "runs", "rft-shadow")
        os.makedirs(self.run_dir)
        self.bin = self.path("bin")
        os.makedirs(self.bin)
        for tool in ("accelerate", "torchrun"):
            p = self.write("bin/" + tool, LAUNCHER % PYTHON)
            os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)

    def start(self, launcher, env_file, safe_path):
        spec = {"version": 1, "name": "shadow", "model": {"id": "m"}, "method": "lora-bf16",
                "data": {"train": "data/train.jsonl"}, "launcher": {"type": launcher, "num_processes": 1}}
        for p in (os.path.join(self.run_dir, "output.log"), os.path.join(self.run_dir, "events.jsonl"), self.marker):
            if os.path.exists(p):
                os.unlink(p)
        self.write("home/runs/rft-shadow/spec.json", json.dumps(spec))
        self.write("home/runs/rft-shadow/env", env_file, mode=0o600)
        env = runner_env({"RFT_HOME": self.path("home"), "PATH": self.bin + os.pathsep + os.environ.get("PATH", "")})
        env.pop("PYTHONSAFEPATH", None)
        if safe_path is not None:
            env["PYTHONSAFEPATH"] = safe_path  # as the wrapper leaves it after sourcing the env file
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "run", "--run-dir", self.run_dir, "--workdir", self.path("work"),
                            "--no-watchdog", "--no-gpu-sampler"], env=env, cwd=self.run_dir,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        return r, read(os.path.join(self.run_dir, "output.log"))

    def assert_ours_ran(self, r, log):
        self.assertFalse(os.path.exists(self.marker), "the workspace's remote_finetune ran:\n" + log)
        self.assertIn(os.path.join(RUNNER_DIR, "remote_finetune", "trainer.py"), log)
        self.assertIn("No module named 'torch'", log)
        self.assertNotEqual(r.returncode, 0)

    def test_python_3_10_rule_no_safe_path(self):
        for launcher in ("python", "accelerate", "torchrun"):
            with self.subTest(launcher=launcher):
                self.assert_ours_ran(*self.start(launcher, "HF_TOKEN=hf_abcdefghijklmnop\n", None))

    def test_env_file_puts_the_workspace_on_pythonpath(self):
        for launcher in ("python", "accelerate"):
            with self.subTest(launcher=launcher):
                self.assert_ours_ran(*self.start(launcher, "PYTHONPATH=.\nHF_TOKEN=hf_abcdefghijklmnop\n", "1"))

    def test_env_file_empties_safe_path(self):
        for launcher in ("python", "accelerate", "torchrun"):
            with self.subTest(launcher=launcher):
                r, log = self.start(launcher, "PYTHONSAFEPATH=\nHF_TOKEN=hf_abcdefghijklmnop\n", "")
                self.assert_ours_ran(r, log)
                refused = [json.loads(l) for l in read(os.path.join(self.run_dir, "events.jsonl")).splitlines()
                           if '"env-refused"' in l]
                self.assertTrue(refused and "PYTHONSAFEPATH" in refused[-1]["message"], refused)


OWN_SCRIPT = r'''
import json, os, sys
import helper  # beside this script: an own script keeps Python's default sys.path
print("SEEN " + json.dumps({k: os.environ.get(k) for k in ("RFT_POWEROFF_CMD", "PYTHONSTARTUP", "PYTHONSAFEPATH", "BATCH")}), flush=True)
'''


class RefusedVariables(TempDirTest):
    """Interpreter and runner settings from the workspace env file never reach the children (issue 30 item 6:
    RFT_POWEROFF_CMD would replace the idle watchdog's power-off), whatever the wrapper's sourcing left behind."""

    def test_own_script_never_sees_them_and_a_warning_names_them(self):
        run_dir = self.own_script_layout(OWN_SCRIPT, spec={"version": 1, "name": "own", "command": "python train.py"})
        self.write("work/helper.py", "")
        file_env = {"RFT_POWEROFF_CMD": '["/bin/sh", "-c", "touch %s"]' % self.path("pwned"),
                    "PYTHONSTARTUP": self.path("work", "helper.py"), "PYTHONSAFEPATH": "", "BATCH": "4"}
        self.write("home/runs/rft-1/env", "".join("%s='%s'\n" % kv for kv in file_env.items()), mode=0o600)
        env = runner_env(dict(file_env, RFT_HOME=self.path("home"), PYTHONSAFEPATH="1"))  # as command.sh leaves it
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work,
                            "--no-watchdog", "--no-gpu-sampler"], env=env, cwd=run_dir,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        log = read(os.path.join(run_dir, "output.log"))
        self.assertEqual(r.returncode, 0, log)
        seen = json.loads(log.split("SEEN ", 1)[1].splitlines()[0])
        self.assertEqual(seen, {"RFT_POWEROFF_CMD": None, "PYTHONSTARTUP": None, "PYTHONSAFEPATH": None, "BATCH": "4"})
        events = [json.loads(l) for l in read(os.path.join(run_dir, "events.jsonl")).splitlines()]
        refused = [e for e in events if e.get("code") == "env-refused"]
        self.assertEqual(len(refused), 1, events)
        self.assertIn("RFT_POWEROFF_CMD, PYTHONSTARTUP, PYTHONSAFEPATH", refused[0]["message"])

    def test_split_keeps_what_the_extension_writes_and_unsets_the_rest(self):
        from remote_finetune import control_env
        environ = {"RFT_POWEROFF_CMD": "x", "RFT_NOTIFY_WEBHOOK": "https://h/k", "LD_PRELOAD": "/w/x.so", "HF_TOKEN": "t"}
        kept, refused = control_env.split_env_file(dict(environ))
        control_env.unset_refused(environ, refused)
        self.assertEqual(refused, ["RFT_POWEROFF_CMD", "LD_PRELOAD"])
        self.assertEqual(kept, {"RFT_NOTIFY_WEBHOOK": "https://h/k", "HF_TOKEN": "t"})
        self.assertEqual(environ, kept)


if __name__ == "__main__":
    unittest.main()
