"""The README.md model card `publish` puts in the repo, written from the run's own record on the host.

Sources: spec.json (base model, method, LoRA and trainer settings), events.jsonl (final loss, eval loss,
steps, runtime, trainable parameters), and a few facts only the extension knows (run name, GPU, duration),
which arrive on stdin with the token. YAML front matter follows the Hub's model card metadata
(https://huggingface.co/docs/hub/model-cards): base_model only when it is a Hub id (a local path would be
refused by the Hub's metadata check and would leak a folder name), license only when known.
Values from the spec are the user's text: they are written as YAML/JSON strings, never raw.
"""

import json
import os
import re
from typing import Any, Dict, List, Optional

from .spec import get, RunSpec

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def is_hub_id(s: Any) -> bool:
    return isinstance(s, str) and bool(_HUB_ID.match(s)) and ".." not in s and not os.path.exists(s)


def run_summary(events: List[Dict[str, Any]]) -> Dict[str, Any]:
    s: Dict[str, Any] = {}
    for ev in events:
        t = ev.get("type")
        if t == "started":
            for k in ("total_params", "trainable_params", "trainable_pct", "world_size"):
                if isinstance(ev.get(k), (int, float)):
                    s[k] = ev[k]
        elif t == "metrics":
            s["last_step"] = ev.get("step")
            if isinstance(ev.get("loss"), (int, float)):
                s["final_loss"] = ev["loss"]
            if isinstance(ev.get("epoch"), (int, float)):
                s["epochs_done"] = ev["epoch"]
        elif t == "eval" and isinstance(ev.get("eval_loss"), (int, float)):
            s["final_eval_loss"] = ev["eval_loss"]
        elif t == "finished":
            s["status"] = ev.get("status")
            if isinstance(ev.get("runtime_s"), (int, float)):
                s["runtime_s"] = ev["runtime_s"]
    return s


def _q(v: Any) -> str:
    """A YAML scalar that cannot break out of its line (JSON strings are YAML)."""
    return json.dumps(v if isinstance(v, (int, float, bool)) else str(v))


def _cell(v: Any) -> str:
    """Markdown table cell: the user's text as text (no pipes, no line breaks, no HTML)."""
    return str(v).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("\n", " ").replace("\r", " ")[:200]


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return "%dh %02dm %02ds" % (s // 3600, s % 3600 // 60, s % 60) if s >= 3600 else "%dm %02ds" % (s // 60, s % 60)


def base_license(base: str) -> Optional[str]:
    """The base model's license from its own card, when a copy of that card is on this host."""
    paths = [os.path.join(base, "README.md")] if os.path.isdir(base) else []
    if is_hub_id(base):
        try:
            from huggingface_hub import try_to_load_from_cache
            cached = try_to_load_from_cache(base, "README.md")
            if isinstance(cached, str):
                paths.append(cached)
        except Exception:
            pass
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                head = f.read(8192)
        except OSError:
            continue
        m = re.match(r"^---\s*\n(.*?)\n---", head, re.S)
        lic = re.search(r"^license:\s*['\"]?([A-Za-z0-9._-]+)['\"]?\s*$", m.group(1), re.M) if m else None
        if lic:
            return lic.group(1)
    return None


def model_card(spec: Dict[str, Any], events: List[Dict[str, Any]], facts: Dict[str, Any], what: str, repo_id: str,
               base: Optional[str] = None, license: Optional[str] = None) -> str:
    base = base or str(RunSpec(spec).model.id or "")
    method = str(spec.get("method") or "own-script")
    summary = run_summary(events)
    hub_base = base if is_hub_id(base) else None
    # dpo/orpo train a LoRA adapter too (on preference.base_method's base).
    lora = method in ("qlora", "lora-bf16", "dpo", "orpo")
    tags = ["remote-finetune", method] + (["lora", "peft"] if lora else []) + (["merged"] if what == "merged" else [])
    meta = []
    if hub_base:
        meta.append("base_model: " + _q(hub_base))
    meta.append("library_name: " + ("peft" if what == "adapter" else "transformers"))
    if license:
        meta.append("license: " + _q(license))
    meta.append("pipeline_tag: text-generation")
    meta.append("tags:\n" + "\n".join("- " + _q(t) for t in tags))
    name = facts.get("run_name") or spec.get("name") or repo_id.split("/")[-1]
    lines = ["---", *meta, "---", "", "# " + _cell(repo_id.split("/")[-1]), ""]
    kind = "A LoRA adapter" if what == "adapter" else "A model merged from its LoRA adapter"
    lines.append("%s for %s, fine-tuned with %s (run \"%s\")." % (
        kind, "[%s](https://huggingface.co/%s)" % (hub_base, hub_base) if hub_base else "a local base model", method, _cell(name)))
    lines.append("")
    if what == "adapter":
        lines += ["## Use", "", "```python", "from peft import AutoPeftModelForCausalLM",
                  "model = AutoPeftModelForCausalLM.from_pretrained(%s)" % json.dumps(repo_id), "```", ""]
    else:
        lines += ["## Use", "", "```python", "from transformers import AutoModelForCausalLM",
                  "model = AutoModelForCausalLM.from_pretrained(%s)" % json.dumps(repo_id), "```", ""]
    rows: List[List[Any]] = [["Base model", hub_base or "(local model)"], ["Method", method]]
    if lora:
        rows += [["LoRA r / alpha / dropout", "%s / %s / %s" % (RunSpec(spec).lora.r, RunSpec(spec).lora.alpha, RunSpec(spec).lora.dropout)],
                 ["LoRA target modules", RunSpec(spec).lora.target_modules]]
    for label, key in (("Learning rate", "trainer.learning_rate"), ("LR scheduler", "trainer.lr_scheduler"), ("Epochs", "trainer.epochs"),
                       ("Max steps", "trainer.max_steps"), ("Batch size per device", "trainer.per_device_batch_size"),
                       ("Gradient accumulation", "trainer.gradient_accumulation"), ("Precision", "trainer.precision"),
                       ("Optimizer", "trainer.optimizer"), ("Max sequence length", "data.max_seq_length"), ("Seed", "trainer.seed")):
        v = get(spec, key)
        if v is not None and not (key == "trainer.max_steps" and v == -1):
            rows.append([label, v])
    train = RunSpec(spec).data.train
    if is_hub_id(train):
        rows.append(["Dataset", train])
    lines += ["## Training", "", "| Setting | Value |", "| --- | --- |"] + ["| %s | %s |" % (_cell(a), _cell(b)) for a, b in rows] + [""]
    res: List[List[Any]] = []
    if "final_loss" in summary:
        res.append(["Final training loss", "%.4f" % summary["final_loss"]])
    if "final_eval_loss" in summary:
        res.append(["Final eval loss", "%.4f" % summary["final_eval_loss"]])
    if summary.get("last_step") is not None:
        res.append(["Steps", summary["last_step"]])
    if "trainable_params" in summary:
        pct = " (%.2f%%)" % summary["trainable_pct"] if "trainable_pct" in summary else ""
        res.append(["Trainable parameters", "{:,}{}".format(int(summary["trainable_params"]), pct)])
    if facts.get("gpu"):
        res.append(["GPU", facts["gpu"]])
    # The runner's own training time first; the extension's wall time (with setup) only when the run left none.
    duration = summary.get("runtime_s") if isinstance(summary.get("runtime_s"), (int, float)) else facts.get("duration_s")
    if isinstance(duration, (int, float)):
        res.append(["Training time", _duration(float(duration))])
    if summary.get("status"):
        res.append(["Run status", summary["status"]])
    if res:
        lines += ["## Results", "", "| | |", "| --- | --- |"] + ["| %s | %s |" % (_cell(a), _cell(b)) for a, b in res] + [""]
    lines += ["Trained and published with Remote Fine-Tune.", ""]
    return "\n".join(lines)
