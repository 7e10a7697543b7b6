"""The run spec's defaults and a typed view of spec.json. GENERATED: do not edit.

Written by scripts/gen-spec-defaults.ts (`node --import tsx scripts/gen-spec-defaults.ts`) from the extension's
run-spec schema (src/core/config/schemas/runSpec.ts) and its defaults (src/core/config/runSpecDefaults.ts), so the
host trains with the values the editor checked and estimated. test/unit/config/specDefaults.test.ts fails when this
file is stale; tests/test_spec_defaults.py when the runner reads other defaults.
"""

import copy
from typing import Any, Dict, List, Optional, Union

# What a run spec leaves unset (absent or null) means on the host; spec.normalise merges it under the spec.
DEFAULTS: Dict[str, Any] = {
    "model": {
        "trust_remote_code": False,
        "attn_implementation": "auto",
    },
    "method": "qlora",
    "preference": {
        "base_method": "lora-bf16",
    },
    "quantization": {
        "load_in_4bit": True,
        "quant_type": "nf4",
        "compute_dtype": "bfloat16",
        "double_quant": True,
    },
    "lora": {
        "r": 16,
        "alpha": 32,
        "dropout": 0.05,
        "target_modules": "all-linear",
        "bias": "none",
    },
    "data": {
        "split": "train",
        "text_field": "text",
        "chat_template": False,
        "max_seq_length": 2048,
        "packing": False,
        "train_on_prompt": False,
    },
    "trainer": {
        "epochs": 3,
        "max_steps": -1,
        "per_device_batch_size": 1,
        "gradient_accumulation": 16,
        "learning_rate": 0.0002,
        "lr_scheduler": "cosine",
        "warmup_ratio": 0.03,
        "weight_decay": 0,
        "precision": "bf16",
        "gradient_checkpointing": True,
        "optimizer": "paged_adamw_8bit",
        "logging_steps": 10,
        "eval_strategy": "no",
        "eval_steps": 50,
        "save_strategy": "steps",
        "save_steps": 50,
        "save_total_limit": 2,
        "seed": 42,
        "use_sft_trainer": False,
    },
    "launcher": {
        "type": "python",
        "num_processes": 1,
        "num_machines": 1,
        "machine_rank": 0,
        "main_process_port": 29500,
    },
    "target": {
        "provider": "ssh",
        "gpu_count": 1,
    },
    "wandb": {},
    "outputs": {
        "dir": "outputs",
        "download": ["adapter"],
    },
    "teardown": {
        "policy": "terminate",
        "idle_minutes": 30,
    },
}


class Section:
    """One mapping of spec.json read by attribute: a field left unset (absent or null) reads as its default.

    Values are the spec's own, unchecked beyond what spec.check_spec and the extension's schema did."""

    _section = ""

    def __init__(self, raw: Any) -> None:
        self._raw: Dict[str, Any] = raw if isinstance(raw, dict) else {}

    def _get(self, key: str) -> Any:
        value = self._raw.get(key)
        if value is not None:
            return value
        defaults = DEFAULTS.get(self._section) if self._section else DEFAULTS
        return copy.deepcopy(defaults.get(key)) if isinstance(defaults, dict) else None

    def raw(self) -> Dict[str, Any]:
        """The mapping as written (defaults not filled in)."""
        return self._raw


class Model(Section):
    _section = "model"

    @property
    def id(self) -> Optional[str]:
        return self._get("id")

    @property
    def revision(self) -> Optional[str]:
        return self._get("revision")

    @property
    def trust_remote_code(self) -> bool:
        return self._get("trust_remote_code")

    @property
    def attn_implementation(self) -> str:
        return self._get("attn_implementation")

    @property
    def config_path(self) -> Optional[str]:
        return self._get("config_path")

    @property
    def params_b(self) -> Optional[float]:
        return self._get("params_b")


class Preference(Section):
    _section = "preference"

    @property
    def base_method(self) -> str:
        return self._get("base_method")

    @property
    def beta(self) -> Optional[float]:
        return self._get("beta")


class Quantization(Section):
    _section = "quantization"

    @property
    def load_in_4bit(self) -> bool:
        return self._get("load_in_4bit")

    @property
    def load_in_8bit(self) -> Optional[bool]:
        return self._get("load_in_8bit")

    @property
    def quant_type(self) -> str:
        return self._get("quant_type")

    @property
    def compute_dtype(self) -> str:
        return self._get("compute_dtype")

    @property
    def double_quant(self) -> bool:
        return self._get("double_quant")


class Lora(Section):
    _section = "lora"

    @property
    def r(self) -> int:
        return self._get("r")

    @property
    def alpha(self) -> float:
        return self._get("alpha")

    @property
    def dropout(self) -> float:
        return self._get("dropout")

    @property
    def target_modules(self) -> Union[str, List[str]]:
        return self._get("target_modules")

    @property
    def bias(self) -> str:
        return self._get("bias")

    @property
    def modules_to_save(self) -> Optional[List[str]]:
        return self._get("modules_to_save")


class Data(Section):
    _section = "data"

    @property
    def train(self) -> Optional[Union[str, List[Union[str, Dict[str, Any]]]]]:
        return self._get("train")

    @property
    def config(self) -> Optional[str]:
        return self._get("config")

    @property
    def roles(self) -> Optional[Dict[str, Any]]:
        return self._get("roles")

    @property
    def train_on_prompt(self) -> bool:
        return self._get("train_on_prompt")

    @property
    def eval_ratio(self) -> Optional[float]:
        return self._get("eval_ratio")

    @property
    def eval(self) -> Optional[str]:
        return self._get("eval")

    @property
    def split(self) -> str:
        return self._get("split")

    @property
    def text_field(self) -> str:
        return self._get("text_field")

    @property
    def chat_template(self) -> bool:
        return self._get("chat_template")

    @property
    def max_seq_length(self) -> int:
        return self._get("max_seq_length")

    @property
    def packing(self) -> bool:
        return self._get("packing")


class Trainer(Section):
    _section = "trainer"

    @property
    def epochs(self) -> float:
        return self._get("epochs")

    @property
    def max_steps(self) -> int:
        return self._get("max_steps")

    @property
    def per_device_batch_size(self) -> int:
        return self._get("per_device_batch_size")

    @property
    def gradient_accumulation(self) -> int:
        return self._get("gradient_accumulation")

    @property
    def learning_rate(self) -> float:
        return self._get("learning_rate")

    @property
    def lr_scheduler(self) -> str:
        return self._get("lr_scheduler")

    @property
    def lr_scheduler_kwargs(self) -> Optional[Dict[str, Any]]:
        return self._get("lr_scheduler_kwargs")

    @property
    def warmup_ratio(self) -> float:
        return self._get("warmup_ratio")

    @property
    def warmup_steps(self) -> Optional[int]:
        return self._get("warmup_steps")

    @property
    def weight_decay(self) -> float:
        return self._get("weight_decay")

    @property
    def max_grad_norm(self) -> Optional[float]:
        return self._get("max_grad_norm")

    @property
    def precision(self) -> str:
        return self._get("precision")

    @property
    def gradient_checkpointing(self) -> bool:
        return self._get("gradient_checkpointing")

    @property
    def optimizer(self) -> str:
        return self._get("optimizer")

    @property
    def logging_steps(self) -> int:
        return self._get("logging_steps")

    @property
    def eval_strategy(self) -> str:
        return self._get("eval_strategy")

    @property
    def eval_steps(self) -> int:
        return self._get("eval_steps")

    @property
    def save_strategy(self) -> str:
        return self._get("save_strategy")

    @property
    def save_steps(self) -> int:
        return self._get("save_steps")

    @property
    def save_total_limit(self) -> int:
        return self._get("save_total_limit")

    @property
    def resume_from_checkpoint(self) -> Optional[str]:
        return self._get("resume_from_checkpoint")

    @property
    def load_best_model_at_end(self) -> Optional[bool]:
        return self._get("load_best_model_at_end")

    @property
    def metric_for_best_model(self) -> Optional[str]:
        return self._get("metric_for_best_model")

    @property
    def seed(self) -> int:
        return self._get("seed")

    @property
    def use_sft_trainer(self) -> bool:
        return self._get("use_sft_trainer")

    @property
    def report_to(self) -> Optional[List[str]]:
        return self._get("report_to")

    @property
    def liger(self) -> Optional[bool]:
        return self._get("liger")

    @property
    def compile(self) -> Optional[bool]:
        return self._get("compile")

    @property
    def backend(self) -> Optional[str]:
        return self._get("backend")


class Launcher(Section):
    _section = "launcher"

    @property
    def type(self) -> str:
        return self._get("type")

    @property
    def config_file(self) -> Optional[str]:
        return self._get("config_file")

    @property
    def deepspeed(self) -> Optional[str]:
        return self._get("deepspeed")

    @property
    def num_processes(self) -> int:
        return self._get("num_processes")

    @property
    def num_machines(self) -> int:
        return self._get("num_machines")

    @property
    def machine_rank(self) -> int:
        return self._get("machine_rank")

    @property
    def main_process_ip(self) -> Optional[str]:
        return self._get("main_process_ip")

    @property
    def main_process_port(self) -> int:
        return self._get("main_process_port")


class Target(Section):
    _section = "target"

    @property
    def provider(self) -> str:
        return self._get("provider")

    @property
    def host(self) -> Optional[str]:
        return self._get("host")

    @property
    def hosts(self) -> Optional[List[str]]:
        return self._get("hosts")

    @property
    def gpu(self) -> Optional[str]:
        return self._get("gpu")

    @property
    def gpu_count(self) -> int:
        return self._get("gpu_count")

    @property
    def spot(self) -> Optional[bool]:
        return self._get("spot")

    @property
    def region(self) -> Optional[str]:
        return self._get("region")

    @property
    def zone(self) -> Optional[str]:
        return self._get("zone")

    @property
    def regions(self) -> Optional[List[str]]:
        return self._get("regions")

    @property
    def iam_instance_profile(self) -> Optional[str]:
        return self._get("iam_instance_profile")

    @property
    def service_account(self) -> Optional[str]:
        return self._get("service_account")

    @property
    def instance_type(self) -> Optional[str]:
        return self._get("instance_type")

    @property
    def volume(self) -> Optional[Dict[str, Any]]:
        return self._get("volume")

    @property
    def disk_gb(self) -> Optional[int]:
        return self._get("disk_gb")

    @property
    def max_attempts(self) -> Optional[int]:
        return self._get("max_attempts")

    @property
    def on_demand_after(self) -> Optional[int]:
        return self._get("on_demand_after")

    @property
    def spot_recovery(self) -> Optional[str]:
        return self._get("spot_recovery")

    @property
    def spot_hibernate(self) -> Optional[bool]:
        return self._get("spot_hibernate")

    @property
    def ready_timeout_min(self) -> Optional[int]:
        return self._get("ready_timeout_min")


class Wandb(Section):
    _section = "wandb"

    @property
    def enabled(self) -> Optional[bool]:
        return self._get("enabled")

    @property
    def project(self) -> Optional[str]:
        return self._get("project")

    @property
    def entity(self) -> Optional[str]:
        return self._get("entity")

    @property
    def run_name(self) -> Optional[str]:
        return self._get("run_name")

    @property
    def tags(self) -> Optional[List[str]]:
        return self._get("tags")


class Outputs(Section):
    _section = "outputs"

    @property
    def dir(self) -> str:
        return self._get("dir")

    @property
    def download(self) -> List[str]:
        return self._get("download")

    @property
    def upload(self) -> Optional[str]:
        return self._get("upload")

    @property
    def checkpoints(self) -> Optional[str]:
        return self._get("checkpoints")


class Teardown(Section):
    _section = "teardown"

    @property
    def policy(self) -> str:
        return self._get("policy")

    @property
    def idle_minutes(self) -> int:
        return self._get("idle_minutes")


class Budget(Section):
    _section = "budget"

    @property
    def max_usd(self) -> Optional[float]:
        return self._get("max_usd")

    @property
    def max_hours(self) -> Optional[float]:
        return self._get("max_hours")

    @property
    def price_per_hour(self) -> Optional[float]:
        return self._get("price_per_hour")

    @property
    def billed_since(self) -> Optional[float]:
        return self._get("billed_since")


class Watchdog(Section):
    _section = "watchdog"

    @property
    def stall_minutes(self) -> Optional[float]:
        return self._get("stall_minutes")

    @property
    def on_stall(self) -> Optional[str]:
        return self._get("on_stall")


class RunSpec(Section):
    """spec.json, section by section (see Section)."""

    @property
    def version(self) -> Optional[int]:
        return self._get("version")

    @property
    def name(self) -> Optional[str]:
        return self._get("name")

    @property
    def model(self) -> Model:
        return Model(self._raw.get("model"))

    @property
    def method(self) -> str:
        return self._get("method")

    @property
    def preference(self) -> Preference:
        return Preference(self._raw.get("preference"))

    @property
    def quantization(self) -> Quantization:
        return Quantization(self._raw.get("quantization"))

    @property
    def lora(self) -> Lora:
        return Lora(self._raw.get("lora"))

    @property
    def data(self) -> Data:
        return Data(self._raw.get("data"))

    @property
    def trainer(self) -> Trainer:
        return Trainer(self._raw.get("trainer"))

    @property
    def launcher(self) -> Launcher:
        return Launcher(self._raw.get("launcher"))

    @property
    def command(self) -> Optional[str]:
        return self._get("command")

    @property
    def target(self) -> Target:
        return Target(self._raw.get("target"))

    @property
    def env_file(self) -> Optional[str]:
        return self._get("env_file")

    @property
    def wandb(self) -> Wandb:
        return Wandb(self._raw.get("wandb"))

    @property
    def outputs(self) -> Outputs:
        return Outputs(self._raw.get("outputs"))

    @property
    def teardown(self) -> Teardown:
        return Teardown(self._raw.get("teardown"))

    @property
    def budget(self) -> Budget:
        return Budget(self._raw.get("budget"))

    @property
    def watchdog(self) -> Watchdog:
        return Watchdog(self._raw.get("watchdog"))

    @property
    def speed(self) -> Optional[str]:
        return self._get("speed")
