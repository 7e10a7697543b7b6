"""The speed plan: which fast paths a run uses, decided from the spec and what the host has (stdlib only, so it is
tested without torch). `speed: auto` (the default) turns on what is known to give the same training at lower cost
for this family and GPU; `speed: off` keeps the spec exactly as written. Options the spec asks for by name
(trainer.liger, trainer.backend: unsloth) are refused with the reason where they cannot load, before the model is
loaded: a run that would crash on its first step after the GPU is billed is worse than one that never starts.

Known correct, and so chosen by auto:
- FlashAttention-2 for 16-bit weights on Ampere or newer where flash-attn imports (trainer_plan.choose_attention);
- Liger's Triton kernels (RMSNorm, RoPE, SwiGLU, fused linear cross-entropy) on a CUDA host for the families
  liger-kernel patches: the same loss, without materialising the logits;
- fused AdamW in place of adamw_torch on a CUDA GPU: the same update computed in one kernel.
Not chosen by auto, each for its reason (it stays the spec's to ask for):
- packing (data.packing) changes what one step holds, and so the steps per epoch and the schedule;
- torch.compile costs minutes of compilation at the first step and recompiles on every new sequence length;
- the Unsloth backend replaces the model's code with Unsloth's own.
"""

from typing import Any, Dict, List, Optional, Tuple

from .spec import RunSpec
from .trainer_plan import SpecRefused

# Model types liger-kernel patches (liger_kernel.transformers.monkey_patch.MODEL_TYPE_TO_APPLY_LIGER_FN, 0.6); the
# installed library's own table is used when it imports.
LIGER_FAMILIES = frozenset({
    "gemma", "gemma2", "gemma3", "gemma3_text", "glm4", "granite", "llama", "llava", "mistral", "mixtral", "mllama",
    "mllama_text_model", "olmo2", "paligemma", "phi3", "qwen2", "qwen2_5_vl", "qwen2_vl", "qwen3", "qwen3_moe",
})
# Model types Unsloth's FastLanguageModel loads with its own kernels (unsloth/models/loader.py).
UNSLOTH_FAMILIES = frozenset({"llama", "mistral", "gemma", "gemma2", "gemma3", "qwen2", "qwen3", "qwen3_moe", "phi3", "cohere", "granite"})
BACKENDS = ("builtin", "unsloth")
SPEED_MODES = ("auto", "off")


class Host:
    """What the plan needs to know about the machine: a CUDA GPU and its compute capability, the model family
    (config.model_type), which speed packages import, and (when liger-kernel imports) the families it patches."""

    def __init__(self, cuda: bool, capability: Optional[Tuple[int, int]], family: Optional[str], installed: Dict[str, bool],
                 liger_families: Optional[frozenset] = None, world_size: int = 1, torch_version: Tuple[int, int] = (2, 6),
                 import_errors: Optional[Dict[str, str]] = None) -> None:
        self.cuda, self.capability, self.family = cuda, capability, family
        # A package that is installed but failed to import (its message), e.g. Unsloth imported first by train().
        self.import_errors = import_errors or {}
        self.installed = installed
        self.liger_families = liger_families or LIGER_FAMILIES
        self.world_size = world_size
        self.torch_version = torch_version

    def has(self, package: str) -> bool:
        return bool(self.installed.get(package))


def mode(spec: Dict[str, Any]) -> str:
    return str(spec.get("speed") or "auto")


def _family(host: Host) -> str:
    return host.family or "unknown"


def liger_problem(spec: Dict[str, Any], host: Host) -> Optional[str]:
    """Why Liger's kernels cannot run here, or None."""
    if not host.cuda:
        return "Liger's kernels are Triton kernels and need a CUDA GPU; this host has none"
    if host.family is not None and host.family not in host.liger_families:
        return "liger-kernel has no kernels for model type %s (it patches %s)" % (host.family, ", ".join(sorted(host.liger_families)))
    if not host.has("liger_kernel"):
        return "liger-kernel is not installed in the run's venv (the bootstrap installs it on a CUDA host)"
    return None


def unsloth_problem(spec: Dict[str, Any], host: Host) -> Optional[str]:
    """Why the Unsloth backend cannot run this spec here, or None."""
    method = str(spec.get("method", "qlora"))
    if not host.cuda:
        return "Unsloth runs on CUDA GPUs only; this host has none"
    if method not in ("qlora", "lora-bf16"):
        return "the Unsloth backend trains LoRA adapters (method qlora or lora-bf16), not method %s" % method
    if host.world_size > 1 or RunSpec(spec).launcher.deepspeed:
        return "the Unsloth backend trains on one GPU; this run has %d processes%s" % (
            host.world_size, " and DeepSpeed" if RunSpec(spec).launcher.deepspeed else "")
    if host.family is None or host.family not in UNSLOTH_FAMILIES:
        return "Unsloth does not support model type %s (it supports %s)" % (_family(host), ", ".join(sorted(UNSLOTH_FAMILIES)))
    if host.import_errors.get("unsloth"):
        return "unsloth is installed but does not import (%s)" % host.import_errors["unsloth"][:300]
    if not host.has("unsloth"):
        return "unsloth is not installed in the run's venv (the bootstrap installs it on a CUDA host for trainer.backend: unsloth)"
    return None


def fused_adamw_problem(host: Host) -> Optional[str]:
    # torch's fused AdamW runs on CUDA; on the CPU from torch 2.4.
    if host.cuda or host.torch_version >= (2, 4):
        return None
    return "fused AdamW needs a CUDA GPU or torch 2.4 or newer on the CPU (this torch is %d.%d)" % host.torch_version


def plan(spec: Dict[str, Any], host: Host) -> Dict[str, Any]:
    """{"speed", "backend", "liger", "compile", "optimizer", "packing", "why": {option: reason}}. Raises SpecRefused
    for an option the spec asks for by name that cannot run here."""
    t = spec.get("trainer") or {}
    speed = mode(spec)
    auto = speed == "auto"
    why: Dict[str, str] = {}

    backend = str(t.get("backend") or "builtin")
    if backend == "unsloth":
        problem = unsloth_problem(spec, host)
        if problem:
            raise SpecRefused("trainer.backend unsloth: %s. Remove trainer.backend to train with the built-in trainer." % problem)
        why["backend"] = "trainer.backend asks for Unsloth"
    else:
        why["backend"] = "the built-in trainer (Unsloth only when trainer.backend asks for it)"

    asked_liger = t.get("liger")
    problem = liger_problem(spec, host)
    if asked_liger is True:
        if problem:
            raise SpecRefused("trainer.liger: %s. Remove trainer.liger (or set it to false) to train without it." % problem)
        if backend == "unsloth":
            raise SpecRefused("trainer.liger and trainer.backend unsloth both replace the model's kernels; keep one")
        liger, why["liger"] = True, "trainer.liger asks for it"
    elif asked_liger is False:
        liger, why["liger"] = False, "trainer.liger is false"
    elif not auto:
        liger, why["liger"] = False, "speed is off"
    elif backend == "unsloth":
        liger, why["liger"] = False, "Unsloth brings its own kernels"
    elif problem:
        liger, why["liger"] = False, problem
    else:
        liger, why["liger"] = True, "speed auto: liger-kernel imports, a CUDA GPU, and it patches %s" % _family(host)

    compile_ = bool(t.get("compile", False))
    why["compile"] = ("trainer.compile asks for it" if compile_ else
                      "off unless trainer.compile asks: compiling costs minutes at the first step and again at each new sequence length")

    asked_optim = str(t.get("optimizer", "adamw_torch"))
    optimizer = asked_optim
    if asked_optim == "adamw_torch_fused":
        problem = fused_adamw_problem(host)
        if problem:
            optimizer, why["optimizer"] = "adamw_torch", problem + "; using adamw_torch"
        else:
            why["optimizer"] = "trainer.optimizer asks for fused AdamW"
    elif asked_optim == "adamw_torch" and auto and host.cuda:
        optimizer, why["optimizer"] = "adamw_torch_fused", "speed auto: fused AdamW computes adamw_torch's update in one kernel on the GPU"
    elif asked_optim == "adamw_torch":
        why["optimizer"] = "adamw_torch (fused AdamW is chosen by speed auto on a CUDA GPU only)" if auto else "speed is off"
    else:
        why["optimizer"] = "trainer.optimizer %s as the spec has it" % asked_optim

    packing = bool(RunSpec(spec).data.packing)
    why["packing"] = ("data.packing: padding-free best-fit rows, position ids restarting per example" if packing else
                      "off unless data.packing asks: packing changes what a step holds, so the steps per epoch")
    return {"speed": speed, "backend": backend, "liger": liger, "compile": compile_, "optimizer": optimizer, "packing": packing, "why": why}


def apply(spec: Dict[str, Any], chosen: Dict[str, Any]) -> Dict[str, Any]:
    """The spec with the plan's choices written into trainer.* (training_args_kwargs reads them from there)."""
    trainer = dict(spec.get("trainer") or {}, liger=chosen["liger"], compile=chosen["compile"], optimizer=chosen["optimizer"],
                   backend=chosen["backend"])
    return dict(spec, trainer=trainer)


def describe(chosen: Dict[str, Any], attention: Optional[str] = None, attention_why: Optional[str] = None) -> str:
    """One line for the log and the run's first events: what was chosen, and why."""
    parts: List[str] = []
    if attention:
        parts.append("attention %s (%s)" % (attention, attention_why or "model.attn_implementation"))
    for key, label in (("backend", "backend"), ("liger", "liger"), ("optimizer", "optimizer"), ("compile", "torch.compile"),
                       ("packing", "packing")):
        value = chosen[key]
        shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
        parts.append("%s %s (%s)" % (label, shown, chosen["why"][key]))
    return "speed %s: %s" % (chosen["speed"], "; ".join(parts))


def attention_reason(attention: str, fa2_usable: bool, capability: Optional[Tuple[int, int]], quantized: bool, sixteen_bit: bool,
                     supports_fa2: bool) -> str:
    """Why trainer_plan.choose_attention's `auto` gave what it gave (for the speed event)."""
    if attention == "flash_attention_2":
        return "flash-attn imports, an Ampere or newer GPU, 16-bit weights"
    if capability is None:
        return "no CUDA GPU"
    if quantized:
        return "FlashAttention-2 is never used with bitsandbytes weights"
    if not fa2_usable:
        return "flash-attn is not installed or does not load"
    if capability[0] < 8:
        return "FlashAttention-2 needs Ampere or newer; this GPU is %d.%d" % capability
    if not sixteen_bit:
        return "the weights are not 16-bit"
    if not supports_fa2:
        return "this model class does not support FlashAttention-2"
    return "model.attn_implementation"
