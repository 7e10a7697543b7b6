"""spec.json: the run spec the extension uploads (finetune.yaml parsed, same snake_case keys).

The extension's zod schema (src/core/config) is the authority and has already checked the spec
before anything was billed; this side re-checks only what the runner depends on, applies the
documented defaults, and never raises: problems come back as a list of "path: message" strings.
"""

import copy
import json
from typing import Any, Dict, List, Optional, Tuple

from . import spec_defaults

METHODS = ("qlora", "lora-bf16", "full", "dpo", "orpo")
BASE_METHODS = ("qlora", "lora-bf16")  # preference.base_method: the adapter a dpo/orpo run trains
LAUNCHERS = ("python", "accelerate", "torchrun")
PRECISIONS = ("bf16", "fp16", "fp32")
ATTN = ("auto", "flash_attention_2", "sdpa", "eager")

# The defaults and the typed view are generated from the extension's schema (spec_defaults.py, written by
# scripts/gen-spec-defaults.ts), so the estimate before launch assumes what this runner will train;
# test/unit/config/specDefaults.test.ts keeps that file current and tests/test_spec_defaults.py holds the runner to it.
DEFAULTS: Dict[str, Any] = spec_defaults.DEFAULTS
RunSpec = spec_defaults.RunSpec


def _merge(defaults: Any, given: Any) -> Any:
    if isinstance(defaults, dict) and isinstance(given, dict):
        out = dict(defaults)
        for k, v in given.items():
            out[k] = _merge(defaults.get(k), v) if k in defaults else v
        return out
    return defaults if given is None else given


def get(spec: Dict[str, Any], dotted: str, default: Any = None) -> Any:
    cur: Any = spec
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return default if cur is None else cur


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_spec(raw: Any) -> List[str]:
    if not isinstance(raw, dict):
        return ["(spec): expected an object"]
    errs: List[str] = []
    if raw.get("version") != 1:
        errs.append("version: expected 1, got %r" % (raw.get("version"),))
    command = raw.get("command")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        errs.append("command: expected a non-empty string")
    if not command and not isinstance(get(raw, "model.id"), str):
        errs.append("model.id: required unless command is given")
    typed = RunSpec(raw)
    method = raw.get("method", DEFAULTS["method"])
    if method not in METHODS:
        errs.append("method: expected one of %s" % "|".join(METHODS))
    if typed.trainer.precision not in PRECISIONS:
        errs.append("trainer.precision: expected one of %s" % "|".join(PRECISIONS))
    if typed.model.attn_implementation not in ATTN:
        errs.append("model.attn_implementation: expected one of %s" % "|".join(ATTN))
    if typed.launcher.type not in LAUNCHERS:
        errs.append("launcher.type: expected one of %s" % "|".join(LAUNCHERS))
    for key in ("launcher.num_processes", "launcher.num_machines", "target.gpu_count", "target.disk_gb", "target.max_attempts", "target.ready_timeout_min", "lora.r",
                "trainer.per_device_batch_size", "trainer.gradient_accumulation"):
        v = get(raw, key)
        if v is not None and (not _is_int(v) or v < 1):
            errs.append("%s: expected an integer >= 1" % key)
    rank, machines = typed.launcher.machine_rank, typed.launcher.num_machines
    if _is_int(rank) and _is_int(machines) and not 0 <= rank < machines:
        errs.append("launcher.machine_rank: expected 0..%d" % (machines - 1))
    if _is_int(machines) and machines > 1 and not get(raw, "launcher.main_process_ip"):
        errs.append("launcher.main_process_ip: required when num_machines > 1")
    # budget.price_per_hour and budget.billed_since are written by the extension at start (budget.py reads them).
    for key in ("trainer.learning_rate", "teardown.idle_minutes", "lora.dropout", "budget.max_usd", "budget.max_hours",
                "budget.price_per_hour", "budget.billed_since", "watchdog.stall_minutes"):
        v = get(raw, key)
        if v is not None and (not _is_num(v) or v < 0):
            errs.append("%s: expected a number >= 0" % key)
    ratio = get(raw, "data.eval_ratio")
    if ratio is not None and (not _is_num(ratio) or not 0 < ratio < 1):
        errs.append("data.eval_ratio: expected a number between 0 and 1")
    if get(raw, "data.roles") is not None and not isinstance(get(raw, "data.roles"), dict):
        errs.append("data.roles: expected a mapping of role names")
    train = get(raw, "data.train")
    if isinstance(train, list) and not all(isinstance(t, str) or (isinstance(t, dict) and isinstance(t.get("path"), str)) for t in train):
        errs.append("data.train: expected paths, or {path, weight} objects")
    if method in ("dpo", "orpo") and typed.preference.base_method not in BASE_METHODS:
        errs.append("preference.base_method: expected %s" % "|".join(BASE_METHODS))
    beta = get(raw, "preference.beta")
    if beta is not None and (not _is_num(beta) or beta <= 0):
        errs.append("preference.beta: expected a number > 0")
    if method == "qlora" and typed.quantization.quant_type not in ("nf4", "fp4"):
        errs.append("quantization.quant_type: expected nf4|fp4")
    return errs


def normalise(raw: Dict[str, Any]) -> Dict[str, Any]:
    spec = _merge(copy.deepcopy(DEFAULTS), copy.deepcopy(raw))
    # Without an explicit setting, evaluate when there is an eval set, as the config checker suggests.
    if "eval_strategy" not in (raw.get("trainer") or {}) and (get(spec, "data.eval") or get(spec, "data.eval_ratio")):
        spec["trainer"]["eval_strategy"] = "steps"
    return spec


def load_spec(path: str) -> Tuple[Optional[Dict[str, Any]], List[str]]:
    """(spec with defaults, []) or (None, problems). Never raises."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            raw = json.load(f)
    except OSError as e:
        return None, ["%s: cannot read (%s)" % (path, e.strerror)]
    except ValueError as e:
        return None, ["%s: not JSON (%s)" % (path, e)]
    errs = check_spec(raw)
    if errs:
        return None, errs
    return normalise(raw), []


def mode_of(spec: Dict[str, Any]) -> str:
    """'own-script' when the user's command replaces the built-in trainer, else the method."""
    return "own-script" if spec.get("command") else spec["method"]


# The names people and tools use for a Hugging Face token, in the order huggingface_hub reads them
# (HF_TOKEN, then the older HUGGING_FACE_HUB_TOKEN); HUGGINGFACE_TOKEN is what the seeds' .env uses.
HUB_TOKEN_NAMES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_TOKEN")


def hub_token(env: Dict[str, str]) -> Optional[str]:
    for name in HUB_TOKEN_NAMES:
        if env.get(name):
            return env[name]
    return None
