"""Resume as a product feature, on the real stack (tiny llama on CPU): a run stopped with SIGTERM at step k and
started again in its own run dir goes on at step k+1 and ends with the adapter an uninterrupted run of the same
spec ends with, tensor for tensor; `trainer.resume_from_checkpoint` (a checkpoint folder, or `latest`) starts a
new run from a checkpoint another run left; and each run's adapter lies in its own folder, so a later run,
stopped or not, leaves an earlier run's adapter as it was."""

import hashlib
import os
import signal
import time
from typing import Any, Dict, List

from tests_training.test_training import Case, base_spec, read_events, tiny_model

MAX_STEPS = 30


def _spec(model: str, **trainer: Any) -> Dict[str, Any]:
    # A decaying schedule with warmup: a resume that restarted the schedule would end with other weights.
    return base_spec(model, trainer=dict({"max_steps": MAX_STEPS, "save_steps": 1000, "lr_scheduler": "linear",
                                          "warmup_steps": 3, "learning_rate": 3e-3}, **trainer))


def _steps(events: List[Dict[str, Any]]) -> List[int]:
    return [e["step"] for e in events if e["type"] == "metrics" and "loss" in e]


def _tensors(adapter_dir: str) -> Dict[str, Any]:
    from safetensors.torch import load_file
    return load_file(os.path.join(adapter_dir, "adapter_model.safetensors"))


def _digest(folder: str) -> str:
    h = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


class Resume(Case):
    def use_run(self, run_id: str) -> None:
        self.run_dir = os.path.join(self.tmp, "home", ".remote-finetune", "runs", run_id)
        os.makedirs(self.run_dir, exist_ok=True)

    def adapter(self, run_id: str) -> str:
        return os.path.join(self.workdir, "outputs", run_id, "adapter")

    def stop_at_step(self, spec: Dict[str, Any], at_least: int) -> int:
        p = self.start(spec)
        deadline = time.time() + 300
        while time.time() < deadline and p.poll() is None:
            if max(_steps(read_events(self.run_dir)) or [0]) >= at_least:
                break
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=120)
        events = read_events(self.run_dir)
        self.assertEqual(events[-1]["status"], "interrupted", self.output()[-3000:])
        ckpts = [e["step"] for e in events if e["type"] == "checkpoint"]
        self.assertEqual(len(ckpts), 1, events)
        self.assertLess(ckpts[0], MAX_STEPS)
        return ckpts[0]

    def assert_same_adapter(self, got: str, want: str) -> None:
        import torch
        a, b = _tensors(got), _tensors(want)
        self.assertEqual(sorted(a), sorted(b))
        worst = max((a[k].float() - b[k].float()).abs().max().item() for k in a)
        print("max |resumed - uninterrupted| over %d adapter tensors: %g" % (len(a), worst))
        self.assertTrue(all(torch.equal(a[k], b[k]) for k in a), "adapters differ by up to %g" % worst)

    def test_stopped_then_resumed_in_its_run_dir_ends_as_an_uninterrupted_run(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        spec = _spec(model)

        self.use_run("rft-uninterrupted")
        rc, events = self.run_spec(spec)
        self.assertEqual(rc, 0, self.output()[-3000:])
        self.assertEqual(_steps(events), list(range(1, MAX_STEPS + 1)))
        self.assertEqual(events[-1]["adapter_path"], os.path.join("outputs", "rft-uninterrupted", "adapter"))
        first = _digest(self.adapter("rft-uninterrupted"))

        self.use_run("rft-stopped")
        k = self.stop_at_step(spec, 4)
        # The stopped run's adapter is its own: the finished run's is untouched.
        self.assertEqual(_digest(self.adapter("rft-uninterrupted")), first)
        self.assertTrue(os.path.isdir(self.adapter("rft-stopped")))
        ckpt = os.path.join("outputs", "checkpoints", "rft-stopped", "checkpoint-%d" % k)

        # `latest` in a new run: the newest complete checkpoint any run left, now the stopped run's.
        self.use_run("rft-from-latest")
        rc, events = self.run_spec(_spec(model, resume_from_checkpoint="latest"))
        self.assertEqual(rc, 0, self.output()[-3000:])
        self.assertEqual(_steps(events)[0], k + 1, self.output()[-3000:])
        self.assertIn(ckpt, " ".join(e.get("message", "") for e in events if e.get("code") == "resumed"))
        self.assert_same_adapter(self.adapter("rft-from-latest"), self.adapter("rft-uninterrupted"))

        # Resume: the stopped run started again in its own run dir.
        self.use_run("rft-stopped")
        before = len(read_events(self.run_dir))
        rc, events = self.run_spec(spec)
        again = events[before:]
        self.assertEqual(rc, 0, self.output()[-3000:])
        print("stopped at step %d; the resumed start logged steps %d..%d" % (k, _steps(again)[0], _steps(again)[-1]))
        self.assertEqual(_steps(again), list(range(k + 1, MAX_STEPS + 1)))
        self.assertIn("resumed", [e.get("code") for e in again if e["type"] == "warning"])
        self.assertEqual(again[-1]["status"], "completed")
        self.assertEqual(again[-1]["adapter_path"], os.path.join("outputs", "rft-stopped", "adapter"))
        self.assert_same_adapter(self.adapter("rft-stopped"), self.adapter("rft-uninterrupted"))
        self.assertEqual(_digest(self.adapter("rft-uninterrupted")), first)

        # A new run told the stopped run's checkpoint folder starts there: step k+1, the same end.
        self.use_run("rft-from-path")
        rc, events = self.run_spec(_spec(model, resume_from_checkpoint=ckpt))
        self.assertEqual(rc, 0, self.output()[-3000:])
        self.assertEqual(_steps(events)[0], k + 1, self.output()[-3000:])
        self.assert_same_adapter(self.adapter("rft-from-path"), self.adapter("rft-uninterrupted"))


    def test_a_path_that_is_not_a_checkpoint_fails_the_run_before_training(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        self.use_run("rft-bad-path")
        rc, events = self.run_spec(_spec(model, resume_from_checkpoint="outputs/checkpoints/nothing/checkpoint-5"))
        self.assertNotEqual(rc, 0)
        self.assertEqual(_steps(events), [])
        self.assertEqual(events[-1]["status"], "failed")
        self.assertIn("is not a complete checkpoint", " ".join(e.get("message", "") for e in events if e["type"] == "error"))
