"""generate.py's stdlib parts: the incremental decoder (whole UTF-8 characters only, invalid bytes let through
after at most 3 held tokens), request checks and the generation settings (temperature 0 is greedy). The model side
runs in tests_training/test_try_adapter.py with the real libraries."""

import unittest

from remote_finetune.generate import IncrementalDecoder, check_request, generation_kwargs, resolve_local_base


class ByteTokenizer:
    """A byte-level tokenizer stand-in: one token per byte, decoded as transformers' byte-level BPE does."""

    def decode(self, ids, skip_special_tokens=True):
        return bytes(ids).decode("utf-8", errors="replace")


class DecoderTest(unittest.TestCase):
    def test_a_character_split_over_tokens_comes_out_whole(self):
        d = IncrementalDecoder(ByteTokenizer())
        out = [d.push([b]) for b in "é€".encode("utf-8")]  # 2 + 3 bytes
        self.assertEqual(out, ["", "é", "", "", "€"])
        self.assertEqual(d.flush(), "")

    def test_invalid_bytes_do_not_stall_the_stream(self):
        d = IncrementalDecoder(ByteTokenizer())
        out = [d.push([0xFF]) for _ in range(6)]
        self.assertEqual(out, ["", "", "", "\ufffd\ufffd\ufffd\ufffd", "", ""])
        self.assertEqual(d.flush(), "\ufffd\ufffd")
        self.assertEqual("".join(out), "\ufffd" * 4)

    def test_the_pieces_add_up_to_the_whole_decode(self):
        d = IncrementalDecoder(ByteTokenizer())
        data = "The capital of Perú is Lima 🦙.".encode("utf-8") + b"\xff\xfe" + "ok".encode("utf-8")
        pieces = [d.push([b]) for b in data] + [d.flush()]
        self.assertEqual("".join(pieces), data.decode("utf-8", errors="replace"))
        self.assertGreater(len([p for p in pieces if p]), 10)


class RequestTest(unittest.TestCase):
    def test_checks(self):
        self.assertIsNone(check_request({"prompt": "hi", "temperature": 0.7, "max_new_tokens": 10}))
        self.assertIsNone(check_request({"prompt": "hi"}))
        for bad, field in [({"temperature": 0}, "prompt"), ({"prompt": 1}, "prompt"),
                           ({"prompt": "x", "temperature": -0.1}, "temperature"), ({"prompt": "x", "temperature": True}, "temperature"),
                           ({"prompt": "x", "temperature": float("nan")}, "temperature"), ({"prompt": "x", "max_new_tokens": 0}, "max_new_tokens"),
                           ({"prompt": "x", "max_new_tokens": 2.5}, "max_new_tokens")]:
            self.assertIn(field, check_request(bad) or "", bad)
        self.assertEqual(check_request([1]), "expected a JSON object")

    def test_temperature_zero_is_greedy(self):
        self.assertEqual(generation_kwargs({"temperature": 0, "max_new_tokens": 5}), {"max_new_tokens": 5, "do_sample": False})
        self.assertEqual(generation_kwargs({"temperature": 0.8, "max_new_tokens": 99999, "top_p": 0.9}),
                         {"max_new_tokens": 4096, "do_sample": True, "temperature": 0.8, "top_p": 0.9})


if __name__ == "__main__":
    unittest.main()


class LocalBaseTest(unittest.TestCase):
    def test_a_relative_base_is_found_from_the_adapters_workspace(self):
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as ws:
            os.makedirs(os.path.join(ws, "tiny-model"))
            adapter = os.path.join(ws, "outputs", "adapter")
            os.makedirs(adapter)
            self.assertEqual(resolve_local_base("./tiny-model", adapter), os.path.join(ws, "tiny-model"))
            # A hub id and an absolute path are kept; a relative path found nowhere is left for the loader to report.
            self.assertEqual(resolve_local_base("org/model", adapter), "org/model")
            self.assertEqual(resolve_local_base("/abs/model", adapter), "/abs/model")
            self.assertEqual(resolve_local_base("./missing-model-xyz", adapter), "./missing-model-xyz")
