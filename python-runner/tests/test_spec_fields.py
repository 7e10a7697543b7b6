"""Every run-spec field is honoured or refused: a walk over the JSON Schema generated from the TypeScript schema
(schemas/runspec.schema.json, `npm run gen:schemas`) sets each leaf field in turn and asserts that what the runner
builds from the spec changes (training arguments, SFT options, model loading, LoRA and quantisation settings, the
data it reads, the tracking environment, the launch command). A field added to the schema that the runner does
not act on fails here unless it is named in ACTS_ELSEWHERE with the code that consumes it."""

import copy
import json
import os
import tempfile
import unittest
from typing import Any, Dict, List, Optional, Tuple

from remote_finetune import budget, data_formats, launchers, outputs, run, stall, tracking
from remote_finetune import trainer
from remote_finetune import speed
from remote_finetune import trainer_plan as plan
from remote_finetune.spec import get, mode_of, normalise

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(ROOT, "schemas", "runspec.schema.json")

# TrainingArguments fields the plan may set (both transformers lines' names), and SFTConfig's own.
ARG_FIELDS = ["output_dir", "num_train_epochs", "max_steps", "per_device_train_batch_size", "per_device_eval_batch_size",
              "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_ratio",
              "warmup_steps", "weight_decay", "max_grad_norm", "bf16", "fp16", "optim", "gradient_checkpointing",
              "gradient_checkpointing_kwargs", "logging_steps", "eval_strategy", "eval_steps", "save_strategy", "save_steps",
              "save_total_limit", "seed", "report_to", "run_name", "logging_first_step", "save_safetensors",
              "remove_unused_columns", "include_num_input_tokens_seen", "load_best_model_at_end", "metric_for_best_model",
              "deepspeed", "use_liger_kernel", "torch_compile"]
SFT_FIELDS = ARG_FIELDS + ["dataset_text_field", "max_length", "packing", "packing_strategy", "padding_free"]

# Fields the runner's trainer does not build anything from, each with what consumes it.
ACTS_ELSEWHERE = {
    "version": "the format version: spec.py's check_spec and the extension's schema refuse any other",
    "model.config_path": "the extension's VRAM estimate (src/core/config/runSpecEstimate.ts)",
    "model.params_b": "the extension's VRAM estimate (src/core/config/runSpecEstimate.ts)",
    "target": "the extension: provider, host(s), GPU and instance choice (src/core/providers, src/core/runs)",
    "env_file": "the extension writes its variables to the host's 0600 env file (src/core/runs)",
    "outputs.download": "the extension fetches these when the run ends (src/core/runs)",
    "trainer.resume_from_checkpoint": "trainer_plan.resume_checkpoint picks where training starts (tests/test_run_outputs.py, tests_training/test_resume.py)",
    "outputs.upload": "run.py hands it to upload.py after training (tests/test_upload.py)",
    "outputs.checkpoints": "run.py's checkpoint_upload.py copies each checkpoint (tests/test_spot_checkpoints.py)",
    "teardown": "the extension's teardown policy and the watchdog it starts (src/core/runs, watchdog.py)",
    "data.train_on_prompt": "data_formats.encode's loss mask, which needs a tokenizer (tests_training/test_data_formats.py)",
}

# Values the generic sampler cannot guess, and settings a field needs around it to have an effect at all.
SAMPLES: Dict[str, Any] = {
    "model.id": "org/other-model", "data.train": "data/other.jsonl", "data.eval": "data/eval.jsonl",
    "data.text_field": "body", "lora.target_modules": ["q_proj", "v_proj"], "lora.modules_to_save": ["lm_head"],
    "trainer.lr_scheduler_kwargs": {"min_lr_rate": 0.1}, "trainer.report_to": ["tensorboard"],
    "launcher.config_file": "acc.yaml", "launcher.deepspeed": "ds.json", "launcher.main_process_ip": "10.0.0.2",
    "command": "python train.py", "name": "other-name", "wandb.run_name": "wb-name",
    "watchdog.on_stall": "stop",  # notify is the default
    "trainer.backend": "unsloth", "speed": "off",  # the first enum value of each is what an absent field means
    "model.attn_implementation": "eager", "preference.base_method": "qlora", "wandb.enabled": False, "data.roles": {"bot": "assistant"},  # W&B is on when a key is present unless turned off
}
CONTEXT: Dict[str, Dict[str, Any]] = {
    "trainer.eval_strategy": {"data.eval": "data/eval.jsonl"},
    "data.split": {"data.train": "org/hub-dataset"},
    "data.config": {"data.train": "org/hub-dataset"},
    "launcher.num_processes": {"launcher.type": "torchrun"},  # launcher python starts one process (RFT805 says so)
    "launcher.config_file": {"launcher.type": "accelerate"},
    "launcher.num_machines": {"launcher.type": "torchrun", "launcher.num_processes": 6},
    "launcher.machine_rank": {"launcher.type": "torchrun", "launcher.num_machines": 2, "launcher.num_processes": 2},
    "launcher.main_process_ip": {"launcher.type": "torchrun", "launcher.num_machines": 2, "launcher.num_processes": 2},
    "launcher.main_process_port": {"launcher.type": "torchrun", "launcher.num_machines": 2, "launcher.num_processes": 2},
    "wandb.run_name": {"name": "spec-name"},
    # Preference settings act under a preference method only.
    "preference.base_method": {"method": "dpo"},
    "preference.beta": {"method": "dpo"},
    # The host counts dollars only at a known price, and a start time only against a limit.
    "budget.max_usd": {"budget.price_per_hour": 2.5},
    "budget.price_per_hour": {"budget.max_usd": 10},
    "budget.billed_since": {"budget.max_hours": 1},
}
BASE = {"version": 1, "model": {"id": "org/base-model"}, "method": "qlora", "data": {"train": "data/train.jsonl"},
        "target": {"provider": "ssh", "host": "gpu-box", "gpu": "A100-80GB"}}
# A text row (which field is read) and an Alpaca row (conversational only with data.chat_template).
EXAMPLES = [{"text": "plain text", "body": "body text"}, {"instruction": "Say hi", "output": "hi"}]


def leaves(node: Dict[str, Any], path: Tuple[str, ...] = ()) -> List[Tuple[Tuple[str, ...], Dict[str, Any]]]:
    """Leaf fields: anything that is not an object with named properties (a record such as lr_scheduler_kwargs is one)."""
    props = node.get("properties")
    if not props:
        return [(path, node)]
    out: List[Tuple[Tuple[str, ...], Dict[str, Any]]] = []
    for name, sub in props.items():
        out.extend(leaves(sub, path + (name,)))
    return out


def set_path(raw: Dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for p in parents:
        raw = raw.setdefault(p, {})
    raw[last] = value


def current(spec: Dict[str, Any], dotted: str) -> Any:
    node: Any = spec
    for p in dotted.split("."):
        node = node.get(p) if isinstance(node, dict) else None
    return node


def sample(dotted: str, node: Dict[str, Any], now: Any) -> Any:
    """A value of the field's type that differs from what the spec has without it (its default)."""
    if dotted in SAMPLES:
        return SAMPLES[dotted]
    if "anyOf" in node:
        return sample(dotted, node["anyOf"][0], now)
    if "enum" in node:
        return next(v for v in node["enum"] if v != now)
    kind = node.get("type")
    if kind == "boolean":
        return not now
    if kind in ("integer", "number"):
        def inside(x: float) -> bool:
            return (node.get("minimum", -1e18) <= x <= node.get("maximum", 1e18)
                    and node.get("exclusiveMinimum", -1e18) < x < node.get("exclusiveMaximum", 1e18))
        for candidate in (2, 3, 0.5, node.get("minimum"), node.get("maximum")):
            if (candidate is not None and candidate != now and inside(candidate)
                    and (kind == "number" or float(candidate).is_integer())):
                return int(candidate) if kind == "integer" else candidate
    if kind == "object":
        return {"sample_key": sample(dotted + "{}", node.get("additionalProperties") or {"type": "string"}, None)}
    if kind == "array":
        return [sample(dotted + "[]", node["items"], None)]
    if kind == "string":
        return "sample-value"
    raise AssertionError("no sample value for %s (%s): add one to SAMPLES" % (dotted, node))


class Built:
    """What the runner builds from a spec, with the runner's own functions, in a scratch workspace."""

    def __init__(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="rft-fields-")
        self.workdir = os.path.join(self.tmp, "ws")
        self.run_dir = os.path.join(self.tmp, "runs", "r1")
        os.makedirs(os.path.join(self.workdir, "data"))
        os.makedirs(self.run_dir)
        for name in ("data/train.jsonl", "data/other.jsonl", "data/eval.jsonl", "acc.yaml", "ds.json"):
            with open(os.path.join(self.workdir, name), "w", encoding="utf-8") as f:
                f.write("{}\n")

    def __call__(self, raw: Dict[str, Any]) -> Dict[str, Any]:
        spec = normalise(copy.deepcopy(raw))
        warnings: List[Tuple[str, str]] = []
        warn = lambda message, code: warnings.append((code, message))  # noqa: E731
        resolved = plan.resolved_spec(spec, (8, 0), warn)
        # The speed plan on a CUDA host with every speed package: what it turns on is written into trainer.*.
        chosen = speed.plan(resolved, speed.Host(True, (8, 0), "llama", {"liger_kernel": True, "unsloth": True, "bitsandbytes": True}))
        resolved = speed.apply(resolved, chosen)
        # As data_loading.load_raw_datasets reads the data: each training source, the eval set or a held-out share.
        split, config = str(get(resolved, "data.split", "train")), get(resolved, "data.config")
        sources = [dict(plan.source_of(r["path"], self.workdir, {}, str(r.get("split") or split), r.get("config") or config),
                        weight=r["weight"]) for r in data_formats.train_sources(get(resolved, "data.train"))]
        evalref = get(resolved, "data.eval")
        has_eval = bool(evalref) or float(get(resolved, "data.eval_ratio", 0) or 0) > 0
        sft = plan.uses_sft(resolved, True)
        report_to = ["wandb"] + tracking.asked_trackers(resolved)
        args = plan.training_args_kwargs(resolved, "/out", SFT_FIELDS if sft else ARG_FIELDS, has_eval=has_eval,
                                         report_to=report_to, bnb_installed=True, warn=warn,
                                         deepspeed=trainer.deepspeed_config(resolved, self.workdir), pretokenized=not sft)
        text_field, roles = str(get(resolved, "data.text_field", "text")), data_formats.role_map(get(resolved, "data.roles"))
        rows = [data_formats.to_trl(r, data_formats.detect(r, text_field), chat=bool(get(resolved, "data.chat_template", False)),
                                    roles=roles, text_field=text_field, source="example", index=1) for r in EXAMPLES]
        return {
            "mode": mode_of(resolved),
            "argv": (launchers.own_script_argv(resolved, "python3", self.workdir) if resolved.get("command")
                     else launchers.builtin_argv(resolved, self.run_dir, "python3", self.workdir)),
            "model": {"id": resolved["model"]["id"], "hub": {k: v for k, v in trainer._hub_kwargs(resolved).items() if k != "token"},
                      "attention": plan.choose_attention(resolved, False, (8, 0), warn), "dtype": plan.model_dtype(resolved),
                      "quantization": plan.quantization_kwargs(plan.base_spec(resolved))},
            "lora": plan.lora_kwargs(plan.base_spec(resolved)),
            "preference": plan.preference_kwargs(resolved, ["beta", "max_length"]) if resolved.get("method") in plan.PREFERENCE_METHODS else None,
            "args": args, "sft": sft, "speed": chosen, "sft_args": plan.sft_kwargs(resolved, SFT_FIELDS),
            "data": {"sources": sources, "eval": plan.source_of(str(evalref), self.workdir, {}, "train") if evalref else None,
                     "has_eval": has_eval, "roles": roles, "rows": rows},
            "outputs": outputs.outputs_root(resolved, self.workdir),
            "budget": vars(b) if (b := budget.budget_of(resolved, 1e10)) else None,
            "stall": stall.settings(resolved),
            "env": dict(run.wandb_settings(resolved, {"WANDB_API_KEY": "k"}, self.run_dir),
                        **tracking.tracking_settings(resolved, {}, self.run_dir)),
        }


def schema() -> Dict[str, Any]:
    with open(SCHEMA, encoding="utf-8") as f:
        return json.load(f)


def elsewhere(dotted: str) -> Optional[str]:
    for key, why in ACTS_ELSEWHERE.items():
        if dotted == key or dotted.startswith(key + "."):
            return why
    return None


class EveryFieldActs(unittest.TestCase):
    def test_each_schema_field_changes_what_the_runner_builds(self):
        build = Built()
        fields = leaves(schema())
        self.assertGreater(len(fields), 60, "the walk reached the schema's leaves")
        silent = []
        for path, node in fields:
            dotted = ".".join(path)
            if elsewhere(dotted):
                continue
            base = copy.deepcopy(BASE)
            for k, v in CONTEXT.get(dotted, {}).items():
                set_path(base, k, v)
            value = sample(dotted, node, current(normalise(copy.deepcopy(base)), dotted))
            changed = copy.deepcopy(base)
            set_path(changed, dotted, value)
            with self.subTest(field=dotted, value=value):
                before, after = build(base), build(changed)
                if before == after:
                    silent.append("%s=%r" % (dotted, value))
        self.assertEqual(silent, [], "setting these changes nothing the runner builds")

    def test_the_allow_list_names_only_fields_the_schema_has(self):
        names = {".".join(p) for p, _ in leaves(schema())}
        for key in ACTS_ELSEWHERE:
            self.assertTrue(any(n == key or n.startswith(key + ".") for n in names), key)

    def test_the_runner_knows_exactly_the_schemas_trainer_keys(self):
        # Keys outside this set are passed through with a diagnostic saying so; the two lists must not drift.
        self.assertEqual(plan.SPEC_TRAINER_KEYS, set(schema()["properties"]["trainer"]["properties"]))


if __name__ == "__main__":
    unittest.main()
