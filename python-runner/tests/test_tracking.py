"""Where TensorBoard and MLflow write (tracking.py): fixed by the run, the person's own settings winning."""

import os
import unittest

from remote_finetune import tracking


class TrackingSettings(unittest.TestCase):
    run_dir = "/home/u/.remote-finetune/runs/r1"

    def test_report_to_names_the_trackers(self):
        self.assertEqual(tracking.asked_trackers({"trainer": {"report_to": ["mlflow", "wandb", "tensorboard"]}}), ["tensorboard", "mlflow"])
        self.assertEqual(tracking.asked_trackers({"trainer": {"report_to": "tensorboard"}}), ["tensorboard"])
        self.assertEqual(tracking.asked_trackers({"trainer": {"report_to": ["tensorboard", "none"]}}), [])
        self.assertEqual(tracking.asked_trackers({}), [])

    def test_defaults_put_tensorboard_in_the_run_and_mlflow_in_a_shared_file_store(self):
        got = tracking.tracking_settings({"name": "seed-003", "trainer": {"report_to": ["tensorboard", "mlflow"]}}, {}, self.run_dir)
        self.assertEqual(got["TENSORBOARD_LOGGING_DIR"], os.path.join(self.run_dir, "tensorboard"))
        self.assertEqual(got["MLFLOW_TRACKING_URI"], "file:///home/u/.remote-finetune/mlruns")
        self.assertEqual(got["MLFLOW_EXPERIMENT_NAME"], "seed-003")
        self.assertEqual(got["MLFLOW_ALLOW_FILE_STORE"], "true")

    def test_the_persons_settings_win(self):
        env = {"MLFLOW_TRACKING_URI": "http://10.0.0.5:5000", "MLFLOW_EXPERIMENT_NAME": "team", "TENSORBOARD_LOGGING_DIR": "/data/tb"}
        got = tracking.tracking_settings({"trainer": {"report_to": ["tensorboard", "mlflow"]}}, env, self.run_dir)
        self.assertEqual(got, {}, "a tracking server needs no file-store opt-in and nothing is overridden")

    def test_nothing_when_not_asked(self):
        self.assertEqual(tracking.tracking_settings({"trainer": {}}, {}, self.run_dir), {})


if __name__ == "__main__":
    unittest.main()
