import json
import os
import re
import unittest

from remote_finetune import signatures
from tests.helpers import FIXTURES

SIG_DIR = os.path.join(FIXTURES, "signatures")
REQUIRED = ["cuda-oom", "meta-tensor", "weight-not-module", "gated-repo", "bf16-unsupported",
            "nccl-timeout", "fa2-dtype", "disk-full", "oom-killer"]


def lines(name):
    with open(os.path.join(SIG_DIR, name), encoding="utf-8") as f:
        return [l for l in f.read().split("\n") if l.strip()]


class SharedSamples(unittest.TestCase):
    """The same sample files test/unit/telemetry/signatures.test.ts runs through JavaScript's RegExp."""

    def test_data_file_shape(self):
        sigs = signatures.load_signatures()
        ids = [s.id for s in sigs]
        self.assertEqual(len(ids), len(set(ids)))
        for r in REQUIRED:
            self.assertIn(r, ids)
        for s in sigs:
            self.assertTrue(s.title and s.hint, s.id)
            # Only syntax both engines share: no lookbehind, named groups, inline flags, \Z or \A.
            self.assertIsNone(re.search(r"\(\?<|\(\?P|\(\?[aiLmsux]|\\[AZ]", s.regex.pattern), s.id)

    def test_each_sample_is_recognised_as_its_file_id(self):
        files = [f for f in os.listdir(SIG_DIR) if f.endswith(".txt") and f != "none.txt"]
        self.assertEqual(len(files), len(signatures.load_signatures()))
        n = 0
        for f in files:
            for line in lines(f):
                sig = signatures.match_line(line)
                self.assertIsNotNone(sig, "%s: %s" % (f, line))
                self.assertEqual(sig.id, f[:-4], line)
                n += 1
        self.assertGreaterEqual(n, 30)

    def test_ordinary_output_matches_nothing(self):
        for line in lines("none.txt"):
            self.assertIsNone(signatures.match_line(line), line)

    def test_scanner_reports_each_signature_once(self):
        sc = signatures.SignatureScanner()
        got = [sc.feed(l) for l in ["x", "CUDA out of memory. a", "CUDA out of memory. b", "No space left on device"]]
        self.assertEqual([g.id if g else None for g in got], [None, "cuda-oom", None, "disk-full"])

    def test_wandb_401_is_a_warning_not_a_gated_repo_and_our_own_lines_never_match(self):
        sig = signatures.match_line("requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.wandb.ai/graphql")
        self.assertEqual((sig.id, sig.severity), ("wandb-auth", "warning"))
        hf = signatures.match_line("requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/api/models/x")
        self.assertEqual((hf.id, hf.severity), ("gated-repo", "error"))
        self.assertIsNone(signatures.match_line("[remote-finetune] warning: bf16 is not supported on this GPU; training in fp16 instead"))


if __name__ == "__main__":
    unittest.main()
