"""The host resumes an interrupted run by itself after a restart (issue 36.2). A run is started the way the extension
starts it: its wrapper.sh (the text of WRAPPER_SCRIPT in src/core/ssh/detachedJob.ts, read from there), a command.sh
that runs `python -m remote_finetune run`, in a session of its own. Once it has saved a checkpoint, the "reboot":
every process of the run is killed with SIGKILL (the wrapper's group and the training process's own), nothing is
written on the way out; then the boot hook runs with no client anywhere. The run must finish under the same
id, its steps going on from the checkpoint, with `resumed` in its events. The boot unit's installation is
checked against stand-ins for crontab and systemctl (no root-managed service may be used on the test host)."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

from remote_finetune import boot_resume, run_folder, watchdog
from remote_finetune.events import parse_event_line
from tests.helpers import FIXTURES, PYTHON, REPO_DIR, RUNNER_DIR, TempDirTest, read, runner_env
from tests.test_watchdog import LAUNCH

SCRIPT = os.path.join(FIXTURES, "own-scripts", "checkpointing_train.py")


def wrapper_script() -> str:
    src = read(os.path.join(REPO_DIR, "src", "core", "ssh", "detachedJob.ts"))
    m = re.search(r"export const WRAPPER_SCRIPT = `(.*?)`;", src, re.S)
    assert m, "WRAPPER_SCRIPT not found in src/core/ssh/detachedJob.ts"
    return m.group(1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


class Interrupted(TempDirTest):
    def run_dir(self, files):
        d = self.path("root", "runs", "r1")
        os.makedirs(d, exist_ok=True)
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        return d

    def test_only_a_started_run_with_no_exit_code_and_nothing_alive_is_interrupted(self):
        base = {"wrapper.sh": "", "command.sh": "", "started_at": "2026-11-27T10:00:00Z\n"}
        self.assertTrue(boot_resume.was_interrupted(self.run_dir(dict(base, pid="999999999\n"))))
        self.assertFalse(boot_resume.was_interrupted(self.run_dir(dict(base, exit_code="0\n"))), "it ended")
        os.unlink(self.path("root", "runs", "r1", "exit_code"))
        stop = '{"v":1,"ts":1,"type":"warning","code":"watchdog-stop","message":"Idle watchdog: stopping"}\n'
        self.assertFalse(boot_resume.was_interrupted(self.run_dir({"events.jsonl": stop})), "the idle watchdog stopped it")
        resumed = '{"v":1,"ts":2,"type":"resumed","reason":"host-restart"}\n'
        self.assertTrue(boot_resume.was_interrupted(self.run_dir({"events.jsonl": stop + resumed})), "started again after that")
        self.assertFalse(boot_resume.was_interrupted(self.run_dir({"events.jsonl": '{"v":1,"ts":3,"type":"finished","status":"completed","exit_code":0}\n'})),
                         "the runner wrote its end")
        os.unlink(self.path("root", "runs", "r1", "events.jsonl"))
        self.assertFalse(boot_resume.was_interrupted(self.run_dir(dict(base, pid="%d\n" % os.getpid()))), "its wrapper lives")
        os.unlink(self.path("root", "runs", "r1", "pid"))
        self.assertFalse(boot_resume.was_interrupted(self.run_dir({"runner.pid": "%d\n" % os.getpid()})), "its runner lives")
        os.unlink(self.path("root", "runs", "r1", "runner.pid"))
        os.unlink(self.path("root", "runs", "r1", "started_at"))
        self.assertFalse(boot_resume.was_interrupted(self.path("root", "runs", "r1")), "never started")


class Reboot(TempDirTest):
    def test_killed_run_is_resumed_by_the_boot_hook_from_its_checkpoint_with_the_same_id(self):
        root = self.path("home", ".remote-finetune")
        run_dir = os.path.join(root, "runs", "rft-20261127-reboot")
        work = self.path("work")
        os.makedirs(run_dir)
        os.makedirs(work)
        with open(SCRIPT) as src, open(os.path.join(work, "train.py"), "w") as dst:
            dst.write(src.read())
        spec = {"version": 1, "name": "reboot-ft", "command": "python train.py --steps 30 --sleep 0.15 --save-every 5",
                "outputs": {"dir": "outputs"}}
        with open(os.path.join(run_dir, "spec.json"), "w") as f:
            json.dump(spec, f)
        with open(os.path.join(run_dir, "wrapper.sh"), "w") as f:
            f.write(wrapper_script())
        os.chmod(os.path.join(run_dir, "wrapper.sh"), 0o700)
        with open(os.path.join(run_dir, "command.sh"), "w") as f:
            f.write('cd "$RFT_RUN_DIR" && PYTHONSAFEPATH=1 PYTHONPATH=%s exec %s -m remote_finetune run --workdir %s --run-dir "$RFT_RUN_DIR" '
                    "--no-watchdog --no-gpu-sampler --grace-seconds 5\n" % (RUNNER_DIR, PYTHON, work))
        with open(os.path.join(run_dir, "env"), "w") as f:
            f.write("")
        os.chmod(os.path.join(run_dir, "env"), 0o600)
        env = dict(os.environ, HOME=self.path("home"))
        subprocess.Popen(["/bin/sh", os.path.join(run_dir, "wrapper.sh")], cwd=run_dir, env=env, start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        events_path = os.path.join(run_dir, "events.jsonl")

        def events():
            out = []
            for line in (read(events_path) if os.path.exists(events_path) else "").splitlines():
                ev, err = parse_event_line(line)
                self.assertIsNone(err, line)
                out.append(ev)
            return out

        deadline = time.time() + 60
        while time.time() < deadline and not any(e["type"] == "checkpoint" and e["step"] >= 10 for e in events()):
            time.sleep(0.1)
        # The "reboot": SIGKILL to every process of the run, the wrapper's group and the trainer's own session.
        groups = [int(read(os.path.join(run_dir, n)).split()[0]) for n in ("pid", "train.pgid")]
        for g in groups:
            os.killpg(g, signal.SIGKILL)
        pids = [int(read(os.path.join(run_dir, n)).split()[0]) for n in ("pid", "runner.pid")] + groups[1:]
        deadline = time.time() + 10
        while time.time() < deadline and any(alive(p) for p in pids):
            time.sleep(0.05)
        self.assertFalse(any(alive(p) for p in pids), "the run's processes outlived SIGKILL")
        before = events()
        self.assertFalse(any(e["type"] == "finished" for e in before), "a SIGKILL leaves no finished line")
        self.assertFalse(os.path.exists(os.path.join(run_dir, "exit_code")))
        saved = max(e["step"] for e in before if e["type"] == "checkpoint")
        killed_at = max(e["step"] for e in before if e["type"] == "metrics")

        # The boot hook, as the unit runs it: the runner's command, no client.
        t0 = time.time()
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "boot-resume", "--root", root], env=dict(env, PYTHONPATH=RUNNER_DIR),
                           cwd="/", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)
        deadline = time.time() + 90
        while time.time() < deadline and not os.path.exists(os.path.join(run_dir, "exit_code")):
            time.sleep(0.1)
        took = time.time() - t0
        self.assertEqual(read(os.path.join(run_dir, "exit_code")).strip(), "0", read(os.path.join(run_dir, "output.log"))[-2000:])
        after = events()[len(before):]
        self.assertEqual(after[0]["type"], "resumed")
        self.assertEqual((after[0]["reason"], after[0]["from_step"]), ("host-restart", saved))
        self.assertIn("interrupted_at", after[0])
        steps = [e["step"] for e in after if e["type"] == "metrics" and "loss" in e]
        self.assertEqual(steps, list(range(saved + 1, 31)), "the steps go on from the checkpoint, once each")
        self.assertEqual((after[-1]["type"], after[-1]["status"]), ("finished", "completed"))
        log = read(os.path.join(run_dir, "output.log"))
        self.assertIn("the host restarted; the run goes on from checkpoint-%d" % saved, log)
        self.assertRegex(log, r"resuming from \S*/outputs/checkpoints/rft-20261127-reboot/checkpoint-%d at step %d" % (saved, saved + 1))
        self.assertIn("boot-resume: 1 run(s) resumed", read(os.path.join(root, run_folder.BOOT_RESUME_LOG)))
        # A second boot finds nothing to do: the run ended.
        self.assertFalse(boot_resume.was_interrupted(run_dir))
        print("test_boot_resume: killed at step %d (checkpoint %d); the boot hook's run finished steps %d..30 in %.1f s" % (killed_at, saved, saved + 1, took))


class StandIns(TempDirTest):
    def stand_in(self, name, body):
        """STAND-IN for a system program (crontab, systemctl): a script on PATH that records what it was asked."""
        bindir = self.path("bin")
        os.makedirs(bindir, exist_ok=True)
        p = os.path.join(bindir, name)
        with open(p, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(p, 0o755)
        return bindir


class Install(StandIns):
    def test_cron_gets_one_reboot_line_and_a_stale_one_is_replaced(self):
        store = self.path("crontab.txt")
        with open(store, "w") as f:
            f.write("0 * * * * backup.sh\n@reboot old-runner boot-resume # remote-finetune boot-resume\n")
        bindir = self.stand_in("crontab", 'if [ "$1" = -l ]; then cat %s; else cat > %s; fi\n' % (store, store))
        old = os.environ["PATH"]
        os.environ["PATH"] = bindir + os.pathsep + old
        self.addCleanup(os.environ.__setitem__, "PATH", old)
        root = self.path("home", ".remote-finetune")
        for _ in range(2):
            how, what = boot_resume.install_boot_unit(root, PYTHON, RUNNER_DIR, systemd=False)
            self.assertEqual(how, "cron", what)
        lines = read(store).splitlines()
        self.assertEqual(lines[0], "0 * * * * backup.sh", "the user's own lines stay")
        self.assertEqual(len(lines), 2, lines)
        self.assertTrue(lines[1].startswith("@reboot cd / && /usr/bin/env PYTHONPATH=%s %s -m remote_finetune boot-resume --root %s >> "
                                            % (RUNNER_DIR, os.path.abspath(PYTHON), root)), lines[1])
        self.assertTrue(lines[1].endswith(boot_resume.CRON_MARK))

    def test_systemd_gets_a_oneshot_unit_enabled_once(self):
        calls = self.path("systemctl.log")
        bindir = self.stand_in("systemctl", 'echo "$@" >> %s\n' % calls)
        old = os.environ["PATH"]
        os.environ["PATH"] = bindir + os.pathsep + old
        self.addCleanup(os.environ.__setitem__, "PATH", old)
        units = self.path("units")
        os.makedirs(units)
        root = self.path("home", ".remote-finetune")
        for _ in range(2):
            how, _ = boot_resume.install_boot_unit(root, PYTHON, RUNNER_DIR, systemd_dir=units, systemd=True)
            self.assertEqual(how, "systemd")
        unit = read(os.path.join(units, boot_resume.UNIT_NAME))
        self.assertIn("Type=oneshot", unit)
        self.assertIn("After=network-online.target", unit)
        self.assertIn("WantedBy=multi-user.target", unit)
        self.assertRegex(unit, r"ExecStart=/usr/bin/env PYTHONPATH=\S+ \S+ -m remote_finetune boot-resume --root " + re.escape(root))
        self.assertEqual(read(calls).splitlines(), ["daemon-reload", "enable " + boot_resume.UNIT_NAME], "the second install changed nothing")


class InstalledByRun(StandIns):
    def run_once(self, launched: bool):
        """`python -m remote_finetune run` of a one-line script, with or without the extension's launch record."""
        home = self.path("host-%s" % launched)
        run_dir = os.path.join(home, "runs", "r1")
        os.makedirs(run_dir)
        with open(os.path.join(run_dir, "spec.json"), "w") as f:
            json.dump({"version": 1, "name": "unit", "command": "python -c pass"}, f)
        if launched:
            with open(os.path.join(run_dir, "launch.json"), "w") as f:
                json.dump(LAUNCH, f)
        env = runner_env({"PATH": self.bindir + os.pathsep + os.environ["PATH"], "RFT_POWEROFF_CMD": "true", "RFT_HOME": home})
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.tmp, "--no-gpu-sampler"],
                           env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout)
        # The run started the host's watchdog (idle 30 min): this test stops it.
        pid = watchdog.read_pid(os.path.join(home, run_folder.WATCHDOG_PID))
        deadline = time.time() + 10
        while pid is None and time.time() < deadline:
            time.sleep(0.05)
            pid = watchdog.read_pid(os.path.join(home, run_folder.WATCHDOG_PID))
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        return home

    def test_a_run_on_an_instance_we_launched_installs_the_boot_hook_and_one_on_another_host_does_not(self):
        if os.path.isdir("/run/systemd/system"):
            self.skipTest("systemd runs here: the run would install a real unit in /etc/systemd/system; the cron path is what this test checks")
        store = self.path("crontab.txt")
        self.bindir = self.stand_in("crontab", 'if [ "$1" = -l ]; then cat %s 2>/dev/null || exit 1; else cat > %s; fi\n' % (store, store))
        self.run_once(launched=False)
        self.assertFalse(os.path.exists(store), "a host we did not launch got a boot hook")
        home = self.run_once(launched=True)
        self.assertIn("boot-resume --root %s >> " % home, read(store))
        self.assertRegex(read(os.path.join(home, run_folder.BOOT_RESUME_LOG)), r"boot unit \(cron\): installed an @reboot line")


if __name__ == "__main__":
    unittest.main()
