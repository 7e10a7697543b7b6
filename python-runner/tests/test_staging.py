"""Datasets named by URI are staged on the host (staging.py). S3 is moto's server (PyPI moto[server], AWS's API
implemented by others) reached with AWS's own CLI (PyPI awscli), both from the venv scripts/ensure-moto.sh caches:
the size comes first, progress events while the bytes land, a second staging re-uses what is there."""

import json
import os
import subprocess
import time
import unittest
import uuid

from remote_finetune import staging
from remote_finetune.events import validate_event
from tests.helpers import TempDirTest
from tests.moto_s3 import MotoS3



class Parsing(unittest.TestCase):
    def test_s3_listing_gives_objects_size_and_whether_the_uri_is_one_object(self):
        text = ("2026-11-25 19:00:01       1200 data/train.jsonl\n2026-11-25 19:00:02        300 data/train.jsonl.bak\n\n"
                "Total Objects: 2\n   Total Size: 1500\n")
        self.assertEqual(staging.parse_s3_listing(text, "s3://b/data/train.jsonl"), (2, 1500, False), "a prefix of two keys is not one object")
        one = "2026-11-25 19:00:01       1200 data/train.jsonl\n\nTotal Objects: 1\n   Total Size: 1200\n"
        self.assertEqual(staging.parse_s3_listing(one, "s3://b/data/train.jsonl"), (1, 1200, True))
        self.assertEqual(staging.parse_du("1200  gs://b/data/a.jsonl\n300  gs://b/data/b.jsonl\n"), 1500)

    def test_local_paths_stay_under_the_data_root(self):
        root = "/home/u/.remote-finetune/data"
        self.assertEqual(staging.local_dir_for("s3://bucket/a/../../etc/x y.jsonl", root), root + "/s3/bucket/a/etc/x_y.jsonl")
        self.assertEqual(staging.data_root("/h/.remote-finetune/runs/r1", {}), "/h/.remote-finetune/data")
        self.assertEqual(staging.data_root("/h/.remote-finetune/runs/r1", {"RFT_DATA_DIR": "/mnt/vol/data"}), "/mnt/vol/data")

    def test_hf_uris(self):
        self.assertEqual(staging.hf_repo("hf://datasets/org/name@v2"), ("org/name", "v2"))
        self.assertEqual(staging.hf_repo("hf://org/name"), ("org/name", None))
        with self.assertRaises(staging.StagingError):
            staging.hf_repo("hf://datasets/only-one-part")

    def test_missing_tools_are_named(self):
        with self.assertRaisesRegex(staging.StagingError, "aws CLI is not installed"):
            staging.plan("s3://b/k", "/tmp/x", {}, lambda t: None)
        with self.assertRaisesRegex(staging.StagingError, "neither gcloud nor gsutil"):
            staging.plan("gs://b/k", "/tmp/x", {}, lambda t: None)


class S3Staging(TempDirTest):
    @classmethod
    def setUpClass(cls):
        cls.s3 = MotoS3()
        cls.env = cls.s3.env()

    @classmethod
    def tearDownClass(cls):
        cls.s3.stop()

    def aws(self, *args):
        r = subprocess.run(["aws"] + list(args), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_a_prefix_and_a_single_object_are_staged_with_size_first_and_progress(self):
        bucket = "data-%s" % uuid.uuid4().hex[:8]
        self.aws("s3", "mb", "s3://" + bucket)
        shards = []
        for i in range(3):
            p = self.write("src/shard-%d.jsonl" % i, "".join(json.dumps({"text": "row %d of shard %d" % (n, i)}) + "\n" for n in range(4000)))
            shards.append(p)
            self.aws("s3", "cp", p, "s3://%s/corpus/shard-%d.jsonl" % (bucket, i))
        evalfile = self.write("src/eval.jsonl", json.dumps({"text": "held out"}) + "\n")
        self.aws("s3", "cp", evalfile, "s3://%s/eval.jsonl" % bucket)
        total = sum(os.path.getsize(p) for p in shards)

        run_dir = self.path("home/.remote-finetune/runs/r1")
        os.makedirs(run_dir)
        events = []
        spec = {"data": {"train": "s3://%s/corpus" % bucket, "eval": "s3://%s/eval.jsonl" % bucket}}
        staged = staging.stage_spec_data(spec, run_dir, self.env, lambda t, **f: events.append(dict(f, type=t)), interval_s=0.01)

        root = self.path("home/.remote-finetune/data")
        self.assertEqual(staged, {"s3://%s/corpus" % bucket: os.path.join(root, "s3", bucket, "corpus"),
                                  "s3://%s/eval.jsonl" % bucket: os.path.join(root, "s3", bucket, "eval.jsonl")})
        with open(os.path.join(run_dir, "staged.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f), staged)
        self.assertEqual(sorted(os.listdir(staged["s3://%s/corpus" % bucket])), ["shard-0.jsonl", "shard-1.jsonl", "shard-2.jsonl"])
        self.assertTrue(os.path.isfile(staged["s3://%s/eval.jsonl" % bucket]))
        corpus = [e for e in events if e["uri"] == "s3://%s/corpus" % bucket]
        self.assertEqual((corpus[0]["bytes_total"], corpus[0]["files_total"], corpus[0]["bytes_done"]), (total, 3, 0), "the size comes before any copy")
        self.assertEqual(corpus[-1]["bytes_done"], total)
        self.assertTrue(corpus[-1]["done"])
        for e in events:
            fields = {k: v for k, v in e.items() if k != "type"}
            self.assertIsNone(validate_event(dict(fields, v=1, ts=time.time(), type="staging")))

        # A second run on the same host: aws s3 sync finds the bytes there and sends nothing again.
        marker = os.path.join(staged["s3://%s/corpus" % bucket], "shard-0.jsonl")
        mtime = os.stat(marker).st_mtime_ns
        run2 = self.path("home/.remote-finetune/runs/r2")
        os.makedirs(run2)
        staging.stage_spec_data({"data": {"train": "s3://%s/corpus" % bucket}}, run2, self.env, lambda t, **f: None)
        self.assertEqual(os.stat(marker).st_mtime_ns, mtime, "an unchanged object was copied again")

    def test_an_empty_prefix_fails_with_what_to_check(self):
        bucket = "empty-%s" % uuid.uuid4().hex[:8]
        self.aws("s3", "mb", "s3://" + bucket)
        run_dir = self.path("runs/r1")
        os.makedirs(run_dir)
        with self.assertRaisesRegex(staging.StagingError, "holds no objects"):
            staging.stage_spec_data({"data": {"train": "s3://%s/nothing" % bucket}}, run_dir, self.env, lambda t, **f: None)


if __name__ == "__main__":
    unittest.main()
