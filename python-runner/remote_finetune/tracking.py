"""TensorBoard and MLflow next to W&B (spec `trainer.report_to`).

Where each one writes is fixed by the run, not by the person's machine, so "Open TensorBoard" can find
the event files without asking: TensorBoard under <run dir>/tensorboard (transformers 5 reads
TENSORBOARD_LOGGING_DIR, 4.x the logging_dir argument; both are set), MLflow in a file store shared by
every run on the host (~/.remote-finetune/mlruns, so runs sit side by side in one experiment) unless the
.env names a tracking server with MLFLOW_TRACKING_URI (a sqlite: URI needs the full mlflow package).
"""

import os
from typing import Any, Dict, List

from .run_folder import MLRUNS_DIR, TENSORBOARD_DIR

# report_to names beyond wandb (run.py's wandb_settings owns W&B) that need a package in the venv.
TRACKERS = {"tensorboard": "tensorboard", "mlflow": "mlflow"}


def asked_trackers(spec: Dict[str, Any]) -> List[str]:
    """The non-W&B trackers `trainer.report_to` names, in a stable order; "none" or no list: none."""
    raw = (spec.get("trainer") or {}).get("report_to")
    names = [raw] if isinstance(raw, str) else list(raw or [])
    if "none" in names:
        return []
    return [n for n in TRACKERS if n in names]


def tensorboard_dir(run_dir: str) -> str:
    return os.path.join(run_dir, TENSORBOARD_DIR)


def tracking_settings(spec: Dict[str, Any], env: Dict[str, str], run_dir: str) -> Dict[str, str]:
    """Environment for the training child. Values the person set (the .env, the host) win."""
    asked = asked_trackers(spec)
    out: Dict[str, str] = {}
    tags = (spec.get("wandb") or {}).get("tags")
    if tags and not env.get("WANDB_TAGS"):
        # wandb.init reads WANDB_TAGS (comma-separated) when transformers' WandbCallback starts the run.
        out["WANDB_TAGS"] = ",".join(str(t).replace(",", " ") for t in tags)
    if "tensorboard" in asked and not env.get("TENSORBOARD_LOGGING_DIR"):
        out["TENSORBOARD_LOGGING_DIR"] = tensorboard_dir(run_dir)
    if "mlflow" in asked:
        if not env.get("MLFLOW_TRACKING_URI"):
            store = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(run_dir))), MLRUNS_DIR)
            out["MLFLOW_TRACKING_URI"] = "file://" + store
        uri = out.get("MLFLOW_TRACKING_URI") or env.get("MLFLOW_TRACKING_URI", "")
        if (uri.startswith("file:") or "://" not in uri) and not env.get("MLFLOW_ALLOW_FILE_STORE"):
            # MLflow 3.x refuses its file store unless told (it is in maintenance, not removed); the database
            # store needs SQLAlchemy, which mlflow-skinny leaves out, so the file store stays the default.
            out["MLFLOW_ALLOW_FILE_STORE"] = "true"
        if not env.get("MLFLOW_EXPERIMENT_NAME"):
            out["MLFLOW_EXPERIMENT_NAME"] = str(spec.get("name") or "remote-finetune")
    return out
