"""hf:// data staged on the host with the real huggingface_hub (honouring HF_ENDPOINT) from a loopback EMULATOR of
the Hub's read endpoints (the Hub cannot be reached here; the endpoints are the ones huggingface_hub calls: the
dataset info, revision and tree APIs, then HEAD/GET on /datasets/<repo>/resolve/<sha>/<file>), then the built-in
trainer trains on the local copy with the real datasets loader. The emulator is a stand-in, named as such."""

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading

from remote_finetune import staging
from tests_training.test_training import Case, base_spec, read_events, tiny_model

SHA = "0123456789abcdef0123456789abcdef01234567"


class HubEmulator(http.server.ThreadingHTTPServer):
    """STAND-IN for huggingface.co's read API, for one dataset repo."""

    def __init__(self, repo: str, files: dict) -> None:
        self.repo, self.files, self.requests = repo, files, []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: HubEmulator

    def log_message(self, *args):
        pass

    def _send(self, code, body=b"", headers=None, head=False):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_HEAD(self):
        self._any(True)

    def do_GET(self):
        self._any(False)

    def _any(self, head):
        srv = self.server
        path = self.path.split("?")[0]
        srv.requests.append("%s %s" % (self.command, path))
        api = "/api/datasets/%s" % srv.repo
        if path.startswith(api + "/tree/"):
            listing = [{"type": "file", "oid": hashlib.sha1(v).hexdigest(), "size": len(v), "path": k} for k, v in srv.files.items()]
            return self._send(200, json.dumps(listing).encode(), {"Content-Type": "application/json"}, head)
        if path == api or path.startswith(api + "/revision/"):
            info = {"id": srv.repo, "sha": SHA, "private": False, "disabled": False, "gated": False, "author": srv.repo.split("/")[0],
                    "lastModified": "2026-01-01T00:00:00.000Z", "createdAt": "2026-01-01T00:00:00.000Z", "tags": [], "downloads": 0, "likes": 0,
                    "siblings": [{"rfilename": k, "size": len(v), "blobId": hashlib.sha1(v).hexdigest()} for k, v in srv.files.items()]}
            return self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, head)
        prefix = "/datasets/%s/resolve/" % srv.repo
        if path.startswith(prefix):
            name = path[len(prefix):].split("/", 1)[1]
            data = srv.files.get(name)
            if data is None:
                return self._send(404, b"", {"X-Error-Code": "EntryNotFound"}, head)
            return self._send(200, data, {"X-Repo-Commit": SHA, "ETag": '"%s"' % hashlib.sha1(data).hexdigest(),
                                          "Content-Type": "application/octet-stream"}, head)
        self._send(404, b"{}", {"Content-Type": "application/json"}, head)


class HubStaging(Case):
    def test_hf_dataset_is_staged_through_hf_endpoint_and_trained_on(self):
        model = tiny_model("llama")
        rows = self.data("text-jsonl", "src/train.jsonl")
        with open(rows, "rb") as f:
            files = {"data/train.jsonl": f.read(), "README.md": b"---\nconfigs:\n- config_name: default\n  data_files: data/train.jsonl\n---\n"}
        hub = HubEmulator("org/tiny-corpus", files)
        threading.Thread(target=hub.serve_forever, daemon=True).start()
        self.addCleanup(hub.server_close)
        self.addCleanup(hub.shutdown)
        os.remove(rows)  # the data exists only on the "Hub"
        spec = base_spec(model, data={"train": "hf://datasets/org/tiny-corpus", "max_seq_length": 64})
        with open(os.path.join(self.run_dir, "spec.json"), "w", encoding="utf-8") as f:
            json.dump(spec, f)
        # As a person would: the endpoint in the run's .env (it reaches the host in the 0600 env file).
        with open(os.path.join(self.run_dir, "env"), "w", encoding="utf-8") as f:
            f.write("HF_ENDPOINT=http://127.0.0.1:%d\n" % hub.server_address[1])
        os.chmod(os.path.join(self.run_dir, "env"), 0o600)
        # The bootstrap's own step, in its own process: `python -m remote_finetune predownload`.
        out = subprocess.run([sys.executable, "-m", "remote_finetune", "predownload", "--run-dir", self.run_dir, "--workdir", self.workdir],
                             env=dict(self.env(), HF_HUB_OFFLINE="0", HF_DATASETS_OFFLINE="0"), cwd=self.run_dir,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("staging hf://datasets/org/tiny-corpus: 2 objects", out.stderr)
        staged = staging.read_staged(self.run_dir)
        local = staged["hf://datasets/org/tiny-corpus"]
        events = [e for e in read_events(self.run_dir) if e["type"] == "staging"]
        self.assertEqual(events[0]["bytes_total"], sum(len(v) for v in files.values()), "the size is known before the copy")
        self.assertEqual(events[-1]["bytes_done"], events[0]["bytes_total"])
        self.assertTrue(events[-1]["done"])
        self.assertTrue(os.path.isfile(os.path.join(local, "data", "train.jsonl")))
        self.assertIn("GET /datasets/org/tiny-corpus/resolve/%s/data/train.jsonl" % SHA, hub.requests)
        rc, run_events = self.run_spec(spec)
        self.assert_trained(rc, run_events)
