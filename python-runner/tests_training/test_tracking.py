"""report_to tensorboard and mlflow with the real packages (tensorboard, mlflow-skinny from the lock's tracking
constraints): the built-in trainer writes TensorBoard event files under <run dir>/tensorboard that TensorBoard's own
reader loads with the losses the runner's events report, and MLflow's file store holds the same metric history."""

import os
import unittest
import urllib.parse
from typing import Any, Dict, List

from tests_training.test_training import Case, base_spec, tiny_model


def event_losses(events: List[Dict[str, Any]]) -> Dict[int, float]:
    return {int(e["step"]): float(e["loss"]) for e in events if e["type"] == "metrics" and "loss" in e}


class Tracking(Case):
    def test_report_to_tensorboard_and_mlflow_record_the_losses(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        spec = base_spec(model, trainer={"report_to": ["tensorboard", "mlflow"], "max_steps": 8})
        rc, events = self.run_spec(spec)
        self.assert_trained(rc, events)
        ours = event_losses(events)
        self.assertEqual([e for e in events if str(e.get("code", "")).endswith("-missing")], [], "both packages are in the venv")

        # TensorBoard: TensorBoard's own event reader over the run's fixed folder.
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        tb_dir = os.path.join(self.run_dir, "tensorboard")
        files = [os.path.join(d, n) for d, _, names in os.walk(tb_dir) for n in names if n.startswith("events.out.tfevents")]
        self.assertTrue(files, "no event file under %s; output:\n%s" % (tb_dir, self.output()[-3000:]))
        acc = EventAccumulator(os.path.dirname(files[0]))
        acc.Reload()
        tags = acc.Tags()["scalars"]
        self.assertIn("train/loss", tags)
        tb = {s.step: s.value for s in acc.Scalars("train/loss")}
        self.assertEqual(sorted(tb), sorted(ours), "the same steps were logged")
        for step, loss in ours.items():
            self.assertAlmostEqual(tb[step], loss, places=4, msg="step %d" % step)

        # MLflow: the default file store beside the runs (~/.remote-finetune/mlruns), read back with MLflow's client.
        import mlflow
        from mlflow.tracking import MlflowClient
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # the reader needs the same opt-in the run was given
        store = os.path.join(os.path.dirname(os.path.dirname(self.run_dir)), "mlruns")
        self.assertTrue(os.path.isdir(store), "no MLflow store at %s" % store)
        client = MlflowClient(tracking_uri="file://" + urllib.parse.quote(store))
        exp = client.get_experiment_by_name(spec["name"])
        self.assertIsNotNone(exp, "experiment named after the spec")
        runs = client.search_runs([exp.experiment_id])
        self.assertEqual(len(runs), 1)
        history = {m.step: m.value for m in client.get_metric_history(runs[0].info.run_id, "loss")}
        self.assertEqual(sorted(history), sorted(ours))
        for step, loss in ours.items():
            self.assertAlmostEqual(history[step], loss, places=4, msg="step %d" % step)
        self.assertEqual(runs[0].info.status, "FINISHED")
        self.assertTrue(mlflow.__version__)

    def test_mlflow_tracking_uri_from_the_env_file_wins(self):
        model = tiny_model("llama")
        self.data("text-jsonl", "data/train.jsonl")
        elsewhere = os.path.join(self.tmp, "team-store")
        with open(os.path.join(self.run_dir, "env"), "w", encoding="utf-8") as f:
            f.write("MLFLOW_TRACKING_URI=file://%s\nMLFLOW_EXPERIMENT_NAME=seed-004\n" % elsewhere)
        os.chmod(os.path.join(self.run_dir, "env"), 0o600)
        rc, events = self.run_spec(base_spec(model, trainer={"report_to": ["mlflow"], "max_steps": 6, "save_steps": 3}))
        self.assert_trained(rc, events)
        from mlflow.tracking import MlflowClient
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
        exp = MlflowClient(tracking_uri="file://" + elsewhere).get_experiment_by_name("seed-004")
        self.assertIsNotNone(exp, "the .env's store and experiment were used")
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(os.path.dirname(self.run_dir)), "mlruns")))
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "tensorboard")), "tensorboard was not asked for")


if __name__ == "__main__":
    unittest.main()
