"""The W&B link in the `started` event: the run W&B itself created (wandb.run) names its page, which wins over
the page built from WANDB_ENTITY/WANDB_PROJECT; an offline run (no page) keeps the id only. The last test uses
the real wandb library in offline mode and is skipped, saying why, in a Python without wandb."""

import json
import os
import unittest
from unittest import mock

from remote_finetune.callback import EventsCallbackCore, wandb_run_link
from remote_finetune.events import EventWriter

from .helpers import TempDirTest


class WandbLinkTest(TempDirTest):
    def started(self, link):
        w = EventWriter(self.path("events.jsonl"))
        EventsCallbackCore(w, run_id="r1", model="tiny", method="lora-bf16").train_begin(True, 100, 10, 0, None, link)
        with open(self.path("events.jsonl"), encoding="utf-8") as f:
            return [json.loads(line) for line in f][-1]

    def test_the_created_run_page_wins_over_the_page_built_from_env(self):
        env = {"WANDB_RUN_ID": "abc12345", "RFT_REPORT_TO": "wandb", "WANDB_ENTITY": "acme", "WANDB_PROJECT": "p"}
        with mock.patch.dict(os.environ, env):
            ev = self.started({"wandb_run_id": "abc12345", "wandb_url": "https://wandb.example.com/team/p/runs/abc12345"})
            self.assertEqual(ev["wandb_url"], "https://wandb.example.com/team/p/runs/abc12345")
            ev = self.started({})
            self.assertEqual(ev["wandb_url"], "https://wandb.ai/acme/p/runs/abc12345")

    def test_no_link_without_wandb_reporting(self):
        with mock.patch.dict(os.environ, {"WANDB_RUN_ID": "abc12345", "RFT_REPORT_TO": ""}):
            ev = self.started({"wandb_run_id": "abc12345", "wandb_url": "https://wandb.ai/a/p/runs/abc12345"})
            self.assertNotIn("wandb_run_id", ev)
            self.assertNotIn("wandb_url", ev)

    def test_no_run_means_no_link(self):
        self.assertEqual(wandb_run_link(None), {})

    def test_a_real_offline_wandb_run_gives_its_id_and_no_page(self):
        try:
            import wandb  # noqa: F401
        except ImportError:
            self.skipTest("wandb is not installed in this Python (pip install wandb==0.31.0, the runner's requirements/wandb.txt)")
        with mock.patch.dict(os.environ, {"WANDB_MODE": "offline", "WANDB_DIR": self.tmp, "WANDB_SILENT": "true"}):
            run = wandb.init(project="p", entity="acme", id="abc12345", mode="offline")
            try:
                self.assertEqual(wandb_run_link(run), {"wandb_run_id": "abc12345"})
            finally:
                run.finish()


if __name__ == "__main__":
    unittest.main()
