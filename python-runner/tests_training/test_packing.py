"""data.packing (issue 31.6): the runner's own SFTConfig and SFTTrainer (trainer.training_arguments, build_trainer)
pack the tokenized rows best-fit into padding-free rows whose position ids restart at each example. On a tiny
random model the summed token loss over the whole training set, batch by batch as the trainer's dataloader gives
it, equals the unpacked one within float tolerance: no example attends to another. The same packed rows with
one running position id (attention across examples) give a clearly different loss, so the comparison can fail."""

import os
import shutil
import tempfile
import unittest
from typing import Any, Dict, Tuple

from remote_finetune import trainer
from tests_training import test_training as tt
from tests_training import tiny


def spec_for(model_dir: str, packing: bool) -> Dict[str, Any]:
    return tt.base_spec(model_dir, data={"train": "data/train.jsonl", "max_seq_length": 64, "packing": packing},
                        trainer={"per_device_batch_size": 8, "precision": "fp32", "use_sft_trainer": True})


class Packing(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="rft-packing-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.environ.pop("WANDB_API_KEY", None)

    def trainer_for(self, model_dir: str, tokenizer: Any, packing: bool) -> Any:
        from datasets import Dataset
        from remote_finetune.spec import normalise

        rows = []
        for text in tiny.texts(24):
            ids = tokenizer(text + tokenizer.eos_token)["input_ids"]
            rows.append({"input_ids": ids, "attention_mask": [1] * len(ids), "labels": list(ids)})
        run = trainer.Run(os.path.join(self.tmp, "run-%s" % packing), self.tmp)
        os.makedirs(run.run_dir, exist_ok=True)
        spec = normalise(spec_for(model_dir, packing))
        sft = trainer.plan.uses_sft(spec, True)
        self.assertTrue(sft)
        args = trainer.training_arguments(spec, os.path.join(self.tmp, "out"), has_eval=False, sft=sft, run=run)
        return trainer.build_trainer(spec, args, self.model, tokenizer, Dataset.from_list(rows), None, [], run, sft)

    def summed_loss(self, t: Any, running_positions: bool = False) -> Tuple[float, int, int]:
        """(sum of token losses, tokens in the loss, rows) over one pass of the trainer's own dataloader."""
        import torch
        import torch.nn.functional as F

        total, count, rows = 0.0, 0, 0
        for batch in t.get_train_dataloader():
            batch = {k: v for k, v in batch.items() if torch.is_tensor(v)}
            labels = batch.pop("labels")
            if running_positions:
                batch["position_ids"] = torch.arange(batch["input_ids"].shape[1]).unsqueeze(0).expand_as(batch["input_ids"])
            keep = {k: batch[k] for k in ("input_ids", "attention_mask", "position_ids") if k in batch}
            with torch.no_grad():
                logits = self.model(**keep).logits.float()
            target = labels[:, 1:]
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="sum", ignore_index=-100)
            total += float(loss)
            count += int((target != -100).sum())
            rows += int(batch["input_ids"].shape[0])
        return total, count, rows

    def test_packed_loss_equals_unpacked_and_examples_stay_apart(self):
        from remote_finetune.spec import normalise
        tok = tiny.build_tokenizer(os.path.join(self.tmp, "tok"))
        model_dir = tiny.build_model(os.path.join(self.tmp, "model"), "llama", tok)
        # The model as the runner loads it for a packed run (LoRA adapters start at zero: the base model's outputs).
        run = trainer.Run(os.path.join(self.tmp, "run-load"), self.tmp)
        os.makedirs(run.run_dir, exist_ok=True)
        self.model, attn = trainer.load_model(normalise(spec_for(model_dir, True)), tok, run, None)
        self.model.eval()
        self.assertEqual(attn, "sdpa")

        packed_t = self.trainer_for(model_dir, tok, True)
        self.assertTrue(packed_t.args.packing)
        first = next(iter(packed_t.get_train_dataloader()))
        self.assertIn("position_ids", first, "padding-free rows carry their position ids")
        starts = int((first["position_ids"] == 0).sum())
        self.assertGreater(starts, first["input_ids"].shape[0], "several examples share a row")

        unpacked = self.summed_loss(self.trainer_for(model_dir, tok, False))
        packed = self.summed_loss(packed_t)
        leaking = self.summed_loss(packed_t, running_positions=True)
        mean = lambda r: r[0] / r[1]  # noqa: E731
        diff = abs(mean(packed) - mean(unpacked))
        print("packing: unpacked %.6f over %d tokens in %d rows, packed %.6f over %d tokens in %d rows (|diff| %.2e), "
              "across examples %.6f" % (mean(unpacked), unpacked[1], unpacked[2], mean(packed), packed[1], packed[2], diff,
                                        mean(leaking)), flush=True)
        self.assertEqual(packed[1], unpacked[1], "the same tokens are in the loss")
        self.assertLess(packed[2], unpacked[2], "packing made fewer rows")
        self.assertLess(diff, 1e-4)
        self.assertGreater(abs(mean(leaking) - mean(unpacked)), 100 * max(diff, 1e-6), "attention across examples would show")


if __name__ == "__main__":
    unittest.main()
