"""gs:// with the credentials a GCP VM really has (issue 35.4): the runner's checkpoint upload, checkpoint
restore, outputs upload and data staging against a GCS emulator written by others (PyPI gcp-storage-emulator), through
Google's own client library (PyPI google-cloud-storage, both in a venv cached by scripts/ensure-gcs-venv.sh),
with no key file anywhere: the only credentials are the tokens a metadata-server stand-in (below, speaking the
GCE metadata protocol: Metadata-Flavor: Google, service-accounts/default/token) hands out, and a proxy in front of
the emulator refuses every request without that bearer token, as Cloud Storage refuses it. The gcloud CLI
(what the runner used) does not read ADC and is not on PATH here, as on a VM where it would not have worked."""

import http.client
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

RUNNER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(os.path.dirname(RUNNER), "scripts", "ensure-gcs-venv.sh")
TOKEN = "ya29.metadata-token-for-default-sa"


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _Quiet(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client closing a kept-alive connection is not a failure of the test.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Server:
    def __init__(self, handler):
        self.server = _Quiet(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Metadata:
    """The GCE metadata server as google-auth asks it: a ping, the project, the default service account and its token."""

    def __init__(self):
        self.tokens_given = 0
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?", 1)[0]
                if self.headers.get("Metadata-Flavor") != "Google":
                    return self._send(403, "text/plain", b"Missing Metadata-Flavor:Google header.")
                if path in ("/", "/computeMetadata/v1/", "/computeMetadata/v1"):
                    return self._send(200, "application/text", b"computeMetadata/")
                if path == "/computeMetadata/v1/project/project-id":
                    return self._send(200, "application/text", b"rft-test-project")
                sa = re.match(r"^/computeMetadata/v1/instance/service-accounts/([^/]+)(/token)?/?$", path)
                if sa and not sa.group(2):
                    body = {"aliases": ["default"], "email": "123-compute@developer.gserviceaccount.com",
                            "scopes": ["https://www.googleapis.com/auth/devstorage.read_write"]}
                    return self._send(200, "application/json", json.dumps(body).encode())
                if sa:
                    outer.tokens_given += 1
                    body = {"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"}
                    return self._send(200, "application/json", json.dumps(body).encode())
                return self._send(404, "text/plain", b"not found")

            def _send(self, status, ctype, body):
                self.send_response(status)
                self.send_header("Metadata-Flavor", "Google")
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self._srv = _Server(H)
        self.port = self._srv.port

    def close(self):
        self._srv.close()


class AuthProxy:
    """Forwards to the emulator only requests bearing the metadata token; others get Cloud Storage's 401."""

    def __init__(self, upstream_port):
        self.forwarded, self.refused = 0, 0
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                if self.headers.get("Authorization") != "Bearer " + TOKEN:
                    outer.refused += 1
                    msg = json.dumps({"error": {"code": 401, "message": "Anonymous caller does not have storage.objects access."}}).encode()
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                outer.forwarded += 1
                c = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                c.request(self.command, self.path, body=body, headers=headers)
                r = c.getresponse()
                data = r.read()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                c.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

            def log_message(self, *a):
                pass

        self._srv = _Server(H)
        self.port = self._srv.port

    def close(self):
        self._srv.close()


DRIVER = r'''
import json, os, sys
from remote_finetune.checkpoint_upload import CheckpointUploader
from remote_finetune.checkpoint_restore import restore_latest
from remote_finetune.upload import upload_outputs
work = sys.argv[1]
events = []
emit = lambda kind, **kw: events.append(dict(kw, kind=kind))
env = dict(os.environ)
up = CheckpointUploader("gs://rft-bucket/ckpts", "rft-1", env, emit, relpath=lambda p: os.path.relpath(p, work))
up.submit(20, os.path.join(work, "checkpoint-20"))
drained = up.drain(120)
restored = restore_latest("gs://rft-bucket/ckpts", "rft-1", os.path.join(work, "restored"), env, emit)
state = open(os.path.join(restored, "trainer_state.json")).read() if restored else None
shard = open(os.path.join(restored, "sub", "adapter.bin"), "rb").read().hex() if restored else None
uploaded = upload_outputs("gs://rft-bucket/out", os.path.join(work, "adapter"), "rft-1", env, emit)
missing = restore_latest("gs://rft-bucket/ckpts", "rft-none", os.path.join(work, "restored2"), env, emit)
# Data staging: a folder and a single object, each uploaded first with the same client, then staged (twice: the
# second time nothing changed and nothing is fetched again).
from remote_finetune import gcs
from remote_finetune.staging import stage_one
gcs.put("gs://rft-bucket/data/train/part-0.jsonl", b'{"text": "a"}\n' * 100)
gcs.put("gs://rft-bucket/data/train/part-1.jsonl", b'{"text": "b"}\n' * 50)
gcs.put("gs://rft-bucket/data/eval.jsonl", b'{"text": "e"}\n')
root = os.path.join(work, "data")
folder = stage_one("gs://rft-bucket/data/train", root, env, emit, interval_s=0.2, log=lambda line: None)
single = stage_one("gs://rft-bucket/data/eval.jsonl", root, env, emit, interval_s=0.2, log=lambda line: None)
mtime = os.path.getmtime(os.path.join(folder, "part-0.jsonl"))
again = stage_one("gs://rft-bucket/data/train", root, env, emit, interval_s=0.2, log=lambda line: None)
staged = {"folder": sorted(os.listdir(folder)), "bytes0": os.path.getsize(os.path.join(folder, "part-0.jsonl")),
          "single": open(single).read(), "unchanged": os.path.getmtime(os.path.join(again, "part-0.jsonl")) == mtime}
print(json.dumps({"drained": drained, "restored": restored, "state": state, "shard": shard, "uploaded": uploaded,
                  "missing": missing, "staged": staged, "events": events}))
'''


class GcsWithMetadataToken(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            cls.venv = subprocess.run(["bash", SCRIPT], check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=900).stdout.decode().strip()
        except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            detail = getattr(e, "stderr", b"") or b""
            print("test_gcs_storage: skipped, the GCS venv could not be built: %s %s" % (e, detail.decode("utf-8", "replace")[-500:]), file=sys.stderr)
            raise unittest.SkipTest("the GCS venv (google-cloud-storage, gcp-storage-emulator) could not be built")
        cls.emu_port = _free_port()
        cls.emu = subprocess.Popen([os.path.join(cls.venv, "bin", "gcp-storage-emulator"), "start", "--host", "127.0.0.1", "--port", str(cls.emu_port),
                                    "--in-memory", "--default-bucket", "rft-bucket", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", cls.emu_port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or cls.emu.poll() is not None:
                    cls.emu.kill()
                    raise RuntimeError("gcp-storage-emulator did not start: %s" % cls.emu.stderr.read().decode()[-500:])
                time.sleep(0.2)
        cls.metadata = Metadata()
        cls.proxy = AuthProxy(cls.emu_port)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        cls.metadata.close()
        cls.emu.terminate()
        cls.emu.wait(10)

    def test_checkpoints_up_and_back_and_outputs_with_only_the_vm_metadata_token(self):
        with tempfile.TemporaryDirectory() as work:
            ck = os.path.join(work, "checkpoint-20")
            os.makedirs(os.path.join(ck, "sub"))
            with open(os.path.join(ck, "trainer_state.json"), "w") as f:
                f.write('{"global_step": 20}')
            with open(os.path.join(ck, "sub", "adapter.bin"), "wb") as f:
                f.write(bytes(range(256)) * 64)
            os.makedirs(os.path.join(work, "adapter"))
            with open(os.path.join(work, "adapter", "adapter_config.json"), "w") as f:
                f.write("{}")
            home = os.path.join(work, "home")
            os.makedirs(home)
            env = {
                "PATH": "/usr/bin:/bin",  # no gcloud, no gsutil
                "HOME": home,  # no gcloud ADC file
                "PYTHONPATH": RUNNER,
                "STORAGE_EMULATOR_HOST": "http://127.0.0.1:%d" % self.proxy.port,
                "GCE_METADATA_HOST": "127.0.0.1:%d" % self.metadata.port,
                "GCE_METADATA_IP": "127.0.0.1:%d" % self.metadata.port,
                "NO_GCE_CHECK": "False",
            }
            p = subprocess.run([os.path.join(self.venv, "bin", "python"), "-c", DRIVER, work], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
            out = json.loads(p.stdout.decode().strip().splitlines()[-1])
            warnings = [e for e in out["events"] if e["kind"] == "warning" and e.get("code") not in ("checkpoint-restored", "uploaded")]
            self.assertEqual(warnings, [])
            self.assertTrue(out["drained"])
            ck_ev = [e for e in out["events"] if e["kind"] == "checkpoint"]
            self.assertEqual([(e["step"], e["uploaded_to"]) for e in ck_ev], [(20, "gs://rft-bucket/ckpts/rft-1/checkpoint-20")])
            self.assertEqual(out["state"], '{"global_step": 20}')
            self.assertEqual(out["shard"], (bytes(range(256)) * 64).hex())
            self.assertTrue(out["uploaded"])
            self.assertIn({"kind": "warning", "code": "uploaded", "message": "uploaded adapter to gs://rft-bucket/out"}, out["events"])
            self.assertIsNone(out["missing"], "no `latest` for a run never uploaded: nothing restored, no warning")
            self.assertEqual(out["staged"], {"folder": ["part-0.jsonl", "part-1.jsonl"], "bytes0": 1400, "single": '{"text": "e"}\n', "unchanged": True})
            totals = [(e["uri"], e["bytes_total"]) for e in out["events"] if e["kind"] == "staging" and "files_total" in e]
            self.assertEqual(totals[:2], [("gs://rft-bucket/data/train", 2100), ("gs://rft-bucket/data/eval.jsonl", 14)])
        self.assertGreaterEqual(self.metadata.tokens_given, 1, "the token came from the metadata server")
        self.assertGreater(self.proxy.forwarded, 0)
        self.assertEqual(self.proxy.refused, 0, "every storage request carried the VM's token")


if __name__ == "__main__":
    unittest.main()
