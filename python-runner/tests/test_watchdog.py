"""The idle watchdog with time compressed: idle windows of a fraction of a second, and the
power-off command injected (a small program that records that it ran) instead of shutdown."""

import json
import os
import subprocess
import sys
import threading
import time
import unittest

from remote_finetune import watchdog
from remote_finetune.events import parse_event_line
from tests.helpers import PYTHON, TempDirTest, read, runner_env

SAVER = r'''
import signal, sys, time
def term(signum, frame):
    open(sys.argv[1], "w").write("checkpoint saved")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
open(sys.argv[1] + ".ready", "w").write("1")
time.sleep(120)
'''


LAUNCH = {"v": 1, "launched_by": "remote-finetune", "provider": "lambda", "instance_id": "0920582c7ff041399e34823a0be62549"}


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f)


class FakeClock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


class Decisions(TempDirTest):
    def setUp(self):
        super().setUp()
        self.root = self.path("home")
        self.marker = self.path("powered-off")
        self.poweroff = [PYTHON, "-c", "open(%r, 'w').write('off')" % self.marker]
        self.now = time.time()
        self.clock = FakeClock(self.now)
        os.makedirs(os.path.join(self.root, "runs"))

    def dog(self, idle_s=60.0, grace_s=5.0):
        return watchdog.Watchdog(self.root, idle_s=idle_s, poweroff_argv=self.poweroff, grace_s=grace_s, poll_s=0.01,
                                 clock=self.clock, sleep=lambda s: time.sleep(min(s, 0.05)))

    def touch(self, rel, age_s):
        p = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "a"):
            pass
        os.utime(p, (self.now - age_s, self.now - age_s))
        return p

    def child(self, run):
        saved = self.path(run + "-saved")
        script = self.write("saver.py", SAVER)
        p = subprocess.Popen([PYTHON, script, saved], start_new_session=True)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait()))
        end = time.time() + 10
        while not os.path.exists(saved + ".ready") and time.time() < end:
            time.sleep(0.02)
        os.makedirs(os.path.join(self.root, "runs", run), exist_ok=True)
        with open(os.path.join(self.root, "runs", run, "pid"), "w") as f:
            f.write("%d\n" % p.pid)
        return p, saved

    def test_an_active_run_keeps_the_host_even_without_a_heartbeat(self):
        self.touch("runs/r1/output.log", 5)
        self.child("r1")
        self.touch("runs/r1/output.log", 5)
        self.touch("heartbeat", 3600)
        wd = self.dog()
        self.assertEqual(wd.run_state(os.path.join(self.root, "runs", "r1")), "active")
        self.assertEqual(wd.decide(), "wait")

    def test_a_fresh_heartbeat_keeps_an_idle_host(self):
        self.touch("runs/r1/output.log", 3600)
        self.touch("runs/r1/heartbeat", 10)
        wd = self.dog()
        wd.started_at = self.now - 3600
        self.assertEqual(wd.decide(), "wait")
        self.clock.t += 55
        self.assertEqual(wd.decide(), "stop")

    def test_idle_and_unwatched_provisioned_host_powers_off(self):
        self.touch("runs/r1/output.log", 3600)
        self.touch("heartbeat", 120)
        write_json(os.path.join(self.root, "runs", "r1", "launch.json"), LAUNCH)
        wd = self.dog()
        wd.started_at = self.now - 3600
        self.assertEqual(wd.loop(max_polls=3), "poweroff")
        self.assertEqual(read(self.marker), "off")

    def test_a_host_we_did_not_provision_is_never_powered_off(self):
        self.touch("heartbeat", 120)
        wd = self.dog()
        wd.started_at = self.now - 3600
        self.assertFalse(wd.provisioned())
        self.assertEqual(wd.loop(max_polls=3), "stopped")
        self.assertFalse(os.path.exists(self.marker))

    def test_a_cloud_spec_on_the_users_own_host_never_arms_power_off(self):
        # The incident: a lambda spec run on the user's own SSH host. The spec names a cloud; no launch record exists.
        write_json(os.path.join(self.root, "runs", "r1", "spec.json"), {"target": {"provider": "lambda", "gpu": "A100-80GB"}})
        self.touch("runs/r1/output.log", 3600)
        self.touch("heartbeat", 3600)
        wd = self.dog()
        wd.started_at = self.now - 3600
        self.assertFalse(wd.provisioned())
        self.assertEqual(wd.loop(max_polls=3), "stopped")
        self.assertFalse(os.path.exists(self.marker))

    def test_flags_that_are_not_our_launch_record_do_not_power_off(self):
        self.touch("heartbeat", 3600)
        self.touch("provisioned", 0)  # the flag older runners wrote from the spec
        self.touch("runs/r1/provisioned", 0)
        for bad in ({}, dict(LAUNCH, launched_by="someone"), dict(LAUNCH, provider="ssh"), dict(LAUNCH, instance_id="$(reboot)"), dict(LAUNCH, v=2)):
            write_json(os.path.join(self.root, "runs", "r1", "launch.json"), bad)
            self.assertFalse(self.dog().provisioned(), bad)
        with open(os.path.join(self.root, "runs", "r1", "launch.json"), "w") as f:
            f.write("not json")
        wd = self.dog()
        wd.started_at = self.now - 3600
        self.assertEqual(wd.loop(max_polls=3), "stopped")
        self.assertFalse(os.path.exists(self.marker))

    def test_exits_when_its_root_is_removed(self):
        wd = self.dog()
        import shutil
        shutil.rmtree(self.root)
        self.assertEqual(wd.loop(max_polls=3), "root-gone")
        self.assertFalse(os.path.exists(self.marker))

    def test_poweroff_command_from_env_is_a_json_argv_or_one_program(self):
        self.assertEqual(watchdog.poweroff_argv_from('["/bin/echo", "x"]'), ["/bin/echo", "x"])
        self.assertEqual(watchdog.poweroff_argv_from("/opt/stand-in poweroff"), ["/opt/stand-in poweroff"])
        self.assertIsNone(watchdog.poweroff_argv_from(""))
        with self.assertRaises(ValueError):
            watchdog.poweroff_argv_from('[1, 2]')

    def test_a_stalled_run_is_asked_to_save_then_the_host_powers_off(self):
        p, saved = self.child("r1")
        self.touch("runs/r1/output.log", 3600)
        self.touch("runs/r1/events.jsonl", 3600)
        write_json(os.path.join(self.root, "runs", "r1", "launch.json"), LAUNCH)
        wd = self.dog()
        wd.started_at = self.now - 3600
        self.assertEqual(wd.run_state(os.path.join(self.root, "runs", "r1")), "stalled")
        self.assertEqual(wd.decide(), "stop")
        self.assertEqual(wd.act(), "poweroff")
        self.assertEqual(p.wait(10), 0)
        self.assertEqual(read(saved), "checkpoint saved")
        evs = [parse_event_line(l) for l in read(os.path.join(self.root, "runs", "r1", "events.jsonl")).splitlines()]
        self.assertEqual([(e["type"], e["code"]) for e, err in evs], [("warning", "watchdog-stop")])
        self.assertEqual(read(self.marker), "off")

    def test_the_runner_pid_counts_when_the_wrapper_wrote_none(self):
        p, _ = self.child("r1")
        os.rename(os.path.join(self.root, "runs", "r1", "pid"), os.path.join(self.root, "runs", "r1", "runner.pid"))
        self.touch("runs/r1/output.log", 1)
        self.assertEqual(self.dog().run_state(os.path.join(self.root, "runs", "r1")), "active")
        p.kill()
        p.wait()
        self.assertEqual(self.dog().run_state(os.path.join(self.root, "runs", "r1")), "done")

    def test_a_pid_file_naming_every_process_or_its_own_group_is_ignored(self):
        # The run writes its own pid file: kill(-1) would reach every process the watchdog may signal (all of
        # them, as root), kill(0) the watchdog's own group and pid 1 init. None of these is a run's process.
        run = os.path.join(self.root, "runs", "r1")
        os.makedirs(run)
        self.touch("runs/r1/output.log", 10_000)
        for text in ("-1\n", "0\n", "1\n", "-%d\n" % os.getpgid(0)):
            with open(os.path.join(run, "pid"), "w") as f:
                f.write(text)
            self.assertIsNone(watchdog.read_pid(os.path.join(run, "pid")), text)
            self.assertEqual(self.dog().run_state(run), "done", text)
        with open(os.path.join(run, "pid"), "w") as f:
            f.write("%d\n" % os.getpid())
        self.assertEqual(watchdog.read_pid(os.path.join(run, "pid")), os.getpid())

    def test_a_finished_run_does_not_count(self):
        self.child("r1")
        self.touch("runs/r1/output.log", 1)
        self.touch("runs/r1/exit_code", 1)
        self.assertEqual(self.dog().run_state(os.path.join(self.root, "runs", "r1")), "done")


class CompressedTimeProcess(TempDirTest):
    """The real `python -m remote_finetune watchdog` process with a 0.6 s idle window."""

    def test_powers_off_only_after_the_heartbeat_stops(self):
        root = self.path("home")
        os.makedirs(os.path.join(root, "runs"))
        write_json(os.path.join(root, "launched-instance.json"), LAUNCH)
        hb = os.path.join(root, "heartbeat")
        marker = self.path("off")
        cmd = json.dumps([PYTHON, "-c", "import time; open(%r, 'w').write(str(time.time()))" % marker])
        stop_beating = threading.Event()

        def beat():
            while not stop_beating.is_set():
                with open(hb, "a"):
                    os.utime(hb, None)
                time.sleep(0.1)

        t = threading.Thread(target=beat)
        t.start()
        p = subprocess.Popen([PYTHON, "-m", "remote_finetune", "watchdog", "--root", root, "--idle-minutes", "0.01",
                              "--poll-seconds", "0.05", "--poweroff-cmd", cmd], env=runner_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            time.sleep(2.0)  # three idle windows with the extension "attached"
            self.assertIsNone(p.poll(), "powered off while the heartbeat was fresh")
            self.assertFalse(os.path.exists(marker))
            self.assertTrue(os.path.exists(os.path.join(root, "watchdog.pid")))
            # a second watchdog for the same host refuses to run
            second = subprocess.run([PYTHON, "-m", "remote_finetune", "watchdog", "--root", root], env=runner_env(),
                                    stdout=subprocess.PIPE, timeout=30)
            self.assertIn(b"already running", second.stdout)
            stopped_at = time.time()
            stop_beating.set()
            t.join()
            out, _ = p.communicate(timeout=30)
        finally:
            stop_beating.set()
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, out)
        waited = float(read(marker)) - stopped_at
        self.assertGreater(waited, 0.5)
        self.assertLess(waited, 5.0)
        self.assertIn(b"powering off", out)
        self.assertFalse(os.path.exists(os.path.join(root, "watchdog.pid")))

    def test_ensure_watchdog_starts_one_and_writes_the_host_launch_record(self):
        root = self.path("home")
        os.makedirs(root)
        open(os.path.join(root, "provisioned"), "w").close()  # an older runner's flag: removed, not trusted
        env_backup = dict(os.environ)
        try:
            pid = watchdog.ensure_watchdog(root, 0.005, launch=None, extra_args=["--poll-seconds", "0.05", "--poweroff-cmd", json.dumps(["true"])])
            self.assertIsNotNone(pid)
            self.assertFalse(os.path.exists(os.path.join(root, "provisioned")))
            self.assertFalse(os.path.exists(os.path.join(root, "launched-instance.json")))
            end = time.time() + 20
            while time.time() < end and "watchdog finished" not in (read(os.path.join(root, "watchdog.log")) if os.path.exists(os.path.join(root, "watchdog.log")) else ""):
                time.sleep(0.05)
            log = read(os.path.join(root, "watchdog.log"))
            self.assertIn("not provisioned by us, leaving it on", log)
            launch = {"provider": "ec2", "instance_id": "i-0123456789abcdef0"}
            watchdog.ensure_watchdog(root, 30, launch=launch, extra_args=["--poll-seconds", "0.05", "--poweroff-cmd", json.dumps(["true"])])
            rec = json.loads(read(os.path.join(root, "launched-instance.json")))
            self.assertEqual(rec, dict(launch, v=1, launched_by="remote-finetune"))
            self.assertEqual(os.stat(os.path.join(root, "launched-instance.json")).st_mode & 0o777, 0o600)
            pidfile = os.path.join(root, "watchdog.pid")
            end = time.time() + 20
            while time.time() < end and not os.path.exists(pidfile):
                time.sleep(0.05)
            pid2 = int(read(pidfile))
            try:
                self.assertIsNone(watchdog.ensure_watchdog(root, 30, launch=launch), "a second watchdog was started")
                # two started at the same moment: the pidfile lets only one live
                r = subprocess.run([PYTHON, "-m", "remote_finetune", "watchdog", "--root", root], env=runner_env(), stdout=subprocess.PIPE, timeout=30)
                self.assertIn(b"already running", r.stdout)
            finally:
                os.kill(pid2, 15)
        finally:
            os.environ.clear()
            os.environ.update(env_backup)

    def test_the_watchdog_never_imports_a_remote_finetune_package_from_the_working_folder(self):
        # The runner's working folder is a run folder the user's script may write into; with PYTHONSAFEPATH unset
        # (Python 3.10's rule for -m) that folder would come first on sys.path.
        cwd = self.path("run-folder")
        os.makedirs(os.path.join(cwd, "remote_finetune"))
        marker = self.path("shadow-ran")
        for name in ("__init__.py", "__main__.py"):
            with open(os.path.join(cwd, "remote_finetune", name), "w") as f:
                f.write("open(%r, 'a').write('ran')\n" % marker)
        root = self.path("home")
        os.makedirs(root)
        env_backup, cwd_backup = dict(os.environ), os.getcwd()
        try:
            os.environ.pop("PYTHONSAFEPATH", None)
            os.chdir(cwd)
            watchdog.ensure_watchdog(root, 0.005, launch=None, extra_args=["--poll-seconds", "0.05", "--poweroff-cmd", json.dumps(["true"])])
            end = time.time() + 20
            while time.time() < end and "watchdog finished" not in (read(os.path.join(root, "watchdog.log")) if os.path.exists(os.path.join(root, "watchdog.log")) else ""):
                time.sleep(0.05)
            self.assertIn("watchdog finished", read(os.path.join(root, "watchdog.log")))
            self.assertFalse(os.path.exists(marker), "the working folder's remote_finetune ran as the watchdog")
        finally:
            os.chdir(cwd_backup)
            os.environ.clear()
            os.environ.update(env_backup)


if __name__ == "__main__":
    unittest.main()
