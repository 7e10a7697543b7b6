"""RFT_MEMORY_REPORT: the trainer's peak-memory file for bench/gpu (stdlib suite: the CUDA fields are None here)."""

import json
import os
import unittest
from unittest import mock

from remote_finetune.memory_report import peak_memory, write_memory_report
from tests.helpers import TempDirTest


class MemoryReport(TempDirTest):
    def test_written_with_the_host_peak_and_no_cuda_figures_without_a_gpu(self):
        path = self.path("mem.json")
        with mock.patch.dict(os.environ, {"RANK": "0"}):
            write_memory_report(path)
        with open(path, encoding="utf-8") as f:
            got = json.load(f)
        self.assertGreater(got["host_peak_rss_mib"], 1)
        if got["device"] == "cpu":
            self.assertIsNone(got["cuda_max_memory_allocated_mib"])
            self.assertIsNone(got["cuda_max_memory_reserved_mib"])
        self.assertFalse(os.path.exists(path + ".tmp"))

    def test_nothing_without_a_path_or_on_other_ranks(self):
        path = self.path("mem.json")
        write_memory_report(None)
        write_memory_report("")
        with mock.patch.dict(os.environ, {"RANK": "1"}):
            write_memory_report(path)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_peak_memory_keys(self):
        self.assertLessEqual({"device", "host_peak_rss_mib", "cuda_max_memory_allocated_mib", "cuda_max_memory_reserved_mib"}, set(peak_memory()))


if __name__ == "__main__":
    unittest.main()
