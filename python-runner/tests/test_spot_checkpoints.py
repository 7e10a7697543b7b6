"""Checkpoints that outlive a spot instance: uploaded to S3 as they are written (outputs.checkpoints), and
the cloud's reclaim notice turned into a stop that saves and uploads one more, by the runner alone.

S3 is moto's server (PyPI moto[server], AWS's API implemented by others) and the uploads go through AWS's
own CLI (PyPI awscli), both from the venv scripts/ensure-moto.sh caches. The instance metadata services
are emulators written here from AWS's and Google's documentation, with their awkward parts: IMDSv2 only
(a PUT for a session token, 401 for a missing or expired one, 404 on spot/instance-action until a notice),
and GCE's required Metadata-Flavor header (403 without)."""

import http.server
import json
import os
import re
import signal
import subprocess
import threading
import time
import unittest
import uuid

from remote_finetune import spot_notice
from remote_finetune.checkpoint_restore import restore_commands, restore_latest
from remote_finetune.checkpoint_upload import upload_commands
from remote_finetune.events import parse_event_line
from tests.helpers import PYTHON, TempDirTest, read, runner_env
from tests.moto_s3 import MotoS3


class Imds:
    """EC2's instance metadata service, IMDSv2 only."""

    def __init__(self):
        self.tokens = set()
        self.action = None
        self.gets = 0
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, code, body=b""):
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_PUT(self):
                if self.path != "/latest/api/token" or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "").isdigit():
                    return self.reply(400)
                t = uuid.uuid4().hex
                outer.tokens.add(t)
                self.reply(200, t.encode())

            def do_GET(self):
                if self.headers.get("X-aws-ec2-metadata-token") not in outer.tokens:
                    return self.reply(401)
                if self.path != "/latest/meta-data/spot/instance-action":
                    return self.reply(404)
                outer.gets += 1
                if outer.action is None:
                    return self.reply(404)
                self.reply(200, json.dumps(outer.action).encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Gce:
    def __init__(self):
        self.preempted = False
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if self.headers.get("Metadata-Flavor") != "Google":
                    code, body = 403, b"Missing required header: Metadata-Flavor"
                elif self.path == "/computeMetadata/v1/instance/preempted":
                    code, body = 200, (b"TRUE" if outer.preempted else b"FALSE")
                else:
                    code, body = 404, b""
                self.send_response(code)
                self.send_header("Metadata-Flavor", "Google")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.host = "127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class NoticeSources(unittest.TestCase):
    def test_ec2_imdsv2_no_notice_then_notice_and_an_expired_token_is_renewed(self):
        imds = Imds()
        self.addCleanup(imds.close)
        src = spot_notice.Ec2Notice({"AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.url})
        self.assertIsNone(src.check())
        imds.tokens.clear()  # the session token expires
        self.assertIsNone(src.check())
        imds.action = {"action": "terminate", "time": "2026-11-25T17:40:00Z"}
        self.assertEqual(src.check(), "EC2 will terminate this spot instance at 2026-11-25T17:40:00Z")
        self.assertEqual(imds.gets, 3)

    def test_an_endpoint_override_off_this_machine_and_the_link_local_range_is_ignored(self):
        self.assertEqual(spot_notice.Ec2Notice({"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://attacker.example:80"}).base, spot_notice.EC2_DEFAULT)
        self.assertEqual(spot_notice.Ec2Notice({"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://169.254.169.254"}).base, "http://169.254.169.254")
        self.assertEqual(spot_notice.GceNotice({"GCE_METADATA_HOST": "10.0.0.5:80"}).base, "http://" + spot_notice.GCE_DEFAULT)
        self.assertEqual(spot_notice.GceNotice({"GCE_METADATA_HOST": "127.0.0.1:8080"}).base, "http://127.0.0.1:8080")

    def test_gce_preempted_needs_the_flavor_header(self):
        gce = Gce()
        self.addCleanup(gce.close)
        src = spot_notice.GceNotice({"GCE_METADATA_HOST": gce.host})
        self.assertIsNone(src.check())
        gce.preempted = True
        self.assertIn("preempting", src.check())

    def test_a_watcher_fires_once_and_lambda_has_no_source(self):
        calls = []
        events = []

        class Flaky:
            n = 0

            def check(self):
                self.n += 1
                if self.n == 1:
                    raise OSError("metadata did not answer")
                return None if self.n < 3 else "EC2 will terminate this spot instance at t"

        w = spot_notice.NoticeWatcher(Flaky(), lambda *a, **k: events.append((a, k)), lambda: calls.append(1), interval_s=0.02).start()
        end = time.time() + 5
        while not calls and time.time() < end:
            time.sleep(0.02)
        time.sleep(0.1)
        w.stop()
        self.assertEqual(calls, [1])
        self.assertEqual(events[0][1]["code"], "spot-notice")
        self.assertIsNone(spot_notice.notice_source("lambda", {}))
        self.assertIsNone(spot_notice.notice_source(None, {}))

    def test_upload_commands_never_carry_a_secret_and_name_the_missing_tool(self):
        cmds, _ = upload_commands("s3://b/p/", "/w/out/checkpoint-5", "rft-1", "checkpoint-5", which=lambda n: "/usr/bin/" + n)
        self.assertEqual(cmds[0], ["aws", "s3", "sync", "--only-show-errors", "/w/out/checkpoint-5", "s3://b/p/rft-1/checkpoint-5"])
        self.assertEqual(cmds[1], ["aws", "s3", "cp", "--only-show-errors", "-", "s3://b/p/rft-1/latest"])
        cmds, _ = upload_commands("gs://b/p", "/c", "r", "checkpoint-1", which=lambda n: "/x" if n == "gsutil" else None)
        self.assertEqual(cmds[0][:4], ["gsutil", "-m", "rsync", "-r"])
        none, why = upload_commands("s3://b", "/c", "r", "c", which=lambda n: None)
        self.assertIsNone(none)
        self.assertIn("aws CLI is not installed", why)


TRAIN_PY = r'''
import json, os, signal, sys, time
out = "out/checkpoints"
step = 0
def save(s):
    d = os.path.join(out, "checkpoint-%d" % s)
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "adapter_model.safetensors"), "wb").write(os.urandom(2048))
    open(os.path.join(d, "trainer_state.json"), "w").write(json.dumps({"global_step": s}))  # HF writes it last
def on_term(signum, frame):
    print("SIGTERM: saving checkpoint-%d" % step, flush=True)
    save(step)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
open("ready", "w").write("1")
for step in range(1, 400):
    time.sleep(0.1)
    print("{'loss': %.4f, 'epoch': %.2f}" % (2.0 / step, step / 400), flush=True)
    if step % 10 == 0:
        save(step)
'''




class SpotRunUploads(TempDirTest):
    """`python -m remote_finetune run` on a "spot EC2 instance": checkpoints go to S3 while it trains; the
    notice stops it with one more checkpoint, uploaded before the runner ends."""

    @classmethod
    def setUpClass(cls):
        cls.s3 = MotoS3()
        cls.aws_bin = cls.s3.bin
        cls.endpoint = cls.s3.endpoint

    @classmethod
    def tearDownClass(cls):
        cls.s3.stop()

    def aws(self, *args, stdin=None):
        env = self.s3.env()
        return subprocess.run(["aws"] + list(args), env=env, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=120)

    def test_checkpoints_reach_s3_while_training_and_the_notice_saves_and_uploads_one_more(self):
        bucket = "ckpt-%s" % uuid.uuid4().hex[:8]
        self.assertEqual(self.aws("s3", "mb", "s3://" + bucket).returncode, 0)
        imds = Imds()
        self.addCleanup(imds.close)
        run_dir = self.own_script_layout(TRAIN_PY, spec={
            "version": 1, "name": "spot", "command": "python train.py",
            "target": {"provider": "ec2", "gpu": "A10G", "spot": True},
            "outputs": {"dir": "out", "checkpoints": "s3://%s/runs" % bucket}})
        self.write("home/runs/rft-1/env", "AWS_ACCESS_KEY_ID=testing\nAWS_SECRET_ACCESS_KEY=testing\nAWS_DEFAULT_REGION=us-east-1\n"
                   "AWS_ENDPOINT_URL=%s\nAWS_EC2_METADATA_SERVICE_ENDPOINT=%s\n" % (self.endpoint, imds.url), mode=0o600)
        env = runner_env({"PATH": self.aws_bin + os.pathsep + os.environ["PATH"], "RFT_HOME": self.path("home"),
                          "RFT_SPOT_POLL_S": "0.2", "RFT_STANDIN_MODE": "no-gpu"})
        p = subprocess.Popen([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work, "--no-watchdog",
                              "--no-gpu-sampler", "--grace-seconds", "30"], env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        events_path = os.path.join(run_dir, "events.jsonl")

        def events():
            out = []
            for line in (read(events_path).splitlines() if os.path.exists(events_path) else []):
                ev, err = parse_event_line(line)
                self.assertIsNone(err, line)
                out.append(ev)
            return out

        end = time.time() + 60
        while time.time() < end and not any(e["type"] == "checkpoint" and e.get("uploaded_to") for e in events()):
            time.sleep(0.1)
        self.assertTrue(any(e.get("uploaded_to") for e in events()), "no checkpoint was uploaded while training")
        imds.action = {"action": "terminate", "time": "2026-11-25T18:00:00Z"}
        out, _ = p.communicate(timeout=90)
        evs = events()
        notice = [e for e in evs if e["type"] == "warning" and e.get("code") == "spot-notice"]
        self.assertEqual(len(notice), 1, out)
        self.assertIn("EC2 will terminate this spot instance at 2026-11-25T18:00:00Z", notice[0]["message"])
        self.assertEqual(evs[-1]["type"], "finished")
        self.assertEqual(evs[-1]["status"], "preempted")
        saved = int(read(os.path.join(run_dir, "output.log")).split("SIGTERM: saving checkpoint-")[1].split()[0])
        uploaded = [e for e in evs if e["type"] == "checkpoint" and e.get("uploaded_to")]
        self.assertEqual(uploaded[-1]["step"], saved, "the checkpoint saved on the notice was not the last one uploaded")
        self.assertEqual(uploaded[-1]["uploaded_to"], "s3://%s/runs/rft-1/checkpoint-%d" % (bucket, saved))
        latest = self.aws("s3", "cp", "s3://%s/runs/rft-1/latest" % bucket, "-")
        self.assertEqual(json.loads(latest.stdout), {"step": saved, "name": "checkpoint-%d" % saved})
        listing = self.aws("s3", "ls", "--recursive", "s3://%s/runs/rft-1/checkpoint-%d/" % (bucket, saved)).stdout
        self.assertIn("trainer_state.json", listing)
        self.assertIn("adapter_model.safetensors", listing)
        for where in (read(os.path.join(run_dir, "output.log")), read(events_path)):
            self.assertNotIn("testing\n", where)

    def test_a_relaunched_run_restores_the_latest_checkpoint_and_its_steps_go_on(self):
        """The same run id on a new host (another workdir and run dir): the checkpoint `latest` names comes
        from S3 into the run's checkpoint folder and the script resumes from RFT_RESUME_CHECKPOINT."""
        bucket = "ckpt-%s" % uuid.uuid4().hex[:8]
        self.assertEqual(self.aws("s3", "mb", "s3://" + bucket).returncode, 0)
        # What the first attempt's uploader left: checkpoint-7 complete, `latest` naming it (checkpoint-3 older).
        for n in (3, 7):
            d = self.path("first", "checkpoint-%d" % n)
            os.makedirs(d)
            with open(os.path.join(d, "trainer_state.json"), "w") as f:
                json.dump({"global_step": n}, f)
            self.assertEqual(self.aws("s3", "sync", d, "s3://%s/runs/rft-9/checkpoint-%d" % (bucket, n)).returncode, 0)
        self.assertEqual(self.aws("s3", "cp", "-", "s3://%s/runs/rft-9/latest" % bucket, stdin='{"step": 7, "name": "checkpoint-7"}').returncode, 0)
        resume_py = r"""
import json, os
ck = os.environ.get("RFT_RESUME_CHECKPOINT")
start = json.load(open(os.path.join(ck, "trainer_state.json")))["global_step"] if ck else 0
print("resume from %s" % (os.path.relpath(ck) if ck else "nothing"), flush=True)
for step in range(start + 1, 11):
    print("step %d" % step, flush=True)
"""
        run_dir = self.own_script_layout(resume_py, run_id="rft-9", spec={
            "version": 1, "name": "spot", "command": "python train.py",
            "target": {"provider": "ec2", "gpu": "A10G", "spot": True},
            "outputs": {"dir": "out", "checkpoints": "s3://%s/runs" % bucket}})
        self.write("home/runs/rft-9/env", "AWS_ACCESS_KEY_ID=testing\nAWS_SECRET_ACCESS_KEY=testing\nAWS_DEFAULT_REGION=us-east-1\n"
                   "AWS_ENDPOINT_URL=%s\nAWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:9\n" % self.endpoint, mode=0o600)
        env = runner_env({"PATH": self.aws_bin + os.pathsep + os.environ["PATH"], "RFT_HOME": self.path("home"), "RFT_STANDIN_MODE": "no-gpu"})
        r = subprocess.run([PYTHON, "-m", "remote_finetune", "run", "--run-dir", run_dir, "--workdir", self.work, "--no-watchdog",
                            "--no-gpu-sampler"], env=env, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout)
        log = read(os.path.join(run_dir, "output.log"))
        self.assertIn("resume from out/checkpoints/rft-9/checkpoint-7\n", log)
        self.assertEqual([int(x) for x in re.findall(r"^step (\d+)$", log, re.M)], [8, 9, 10], "steps go on after the restored one")
        self.assertFalse(os.path.exists(os.path.join(self.work, "out/checkpoints/rft-9/checkpoint-3")), "only the latest comes down")
        evs = [parse_event_line(l)[0] for l in read(os.path.join(run_dir, "events.jsonl")).splitlines()]
        restored = [e for e in evs if e["type"] == "warning" and e.get("code") == "checkpoint-restored"]
        self.assertEqual(len(restored), 1)
        self.assertIn("restored checkpoint-7 (step 7) from s3://%s/runs/rft-9/checkpoint-7" % bucket, restored[0]["message"])
        self.assertFalse(any(e.get("code") == "checkpoint-restore" for e in evs), "no warning")

    def test_no_latest_is_a_first_attempt_and_a_bad_latest_name_is_refused(self):
        bucket = "ckpt-%s" % uuid.uuid4().hex[:8]
        self.assertEqual(self.aws("s3", "mb", "s3://" + bucket).returncode, 0)
        env = self.s3.env()
        got = []
        emit = lambda t, **k: got.append(k)  # noqa: E731
        self.assertIsNone(restore_latest("s3://%s/runs" % bucket, "rft-2", self.path("c"), env, emit))
        self.assertEqual(got, [], "a missing latest is the first attempt, not a problem")
        self.aws("s3", "cp", "-", "s3://%s/runs/rft-2/latest" % bucket, stdin='{"step": 1, "name": "../../etc"}')
        self.assertIsNone(restore_latest("s3://%s/runs" % bucket, "rft-2", self.path("c"), env, emit))
        self.assertIn("not a checkpoint-N", got[0]["message"])
        self.assertFalse(os.path.exists(self.path("etc")))
        self.assertEqual(restore_commands("s3://b/p/", "r", "checkpoint-4", "/l", which=lambda n: "/x"),
                         ["aws", "s3", "sync", "--only-show-errors", "s3://b/p/r/checkpoint-4", "/l"])
        self.assertIsNone(restore_commands("s3://b", "r", None, "", which=lambda n: None))


if __name__ == "__main__":
    unittest.main()
