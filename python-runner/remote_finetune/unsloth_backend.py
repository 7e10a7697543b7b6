"""`trainer.backend: unsloth`: the model loaded and its LoRA adapters made by Unsloth's FastLanguageModel; the rest of
the run (data, label masks, Trainer or SFTTrainer, events, checkpoints, resume, outputs) is the built-in trainer's.

speed.unsloth_problem has refused the spec before this is reached wherever Unsloth cannot run (no CUDA GPU, a family
it does not load, full fine-tune, several processes, the package missing). Unsloth patches transformers and peft
when imported, so train() imports it before the model code loads (import_first). Its checkpointing
("unsloth": offloaded to CPU memory) replaces the Trainer's, which is then switched off (trainer_plan)."""

import os
from typing import Any, Dict, List, Optional

from . import trainer_plan as plan
from .spec import RunSpec

# What "all-linear" means for the decoder families Unsloth loads (speed.UNSLOTH_FAMILIES): its get_peft_model takes
# module names, not peft's all-linear shorthand.
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def wanted(spec: Dict[str, Any]) -> bool:
    return str((spec.get("trainer") or {}).get("backend", "builtin")) == "unsloth"


def import_first(spec: Dict[str, Any]) -> Optional[str]:
    """Unsloth imported before transformers, trl and peft when the raw spec asks for it (its patches apply to what is
    imported after it). None, or why it did not import (speed's refusal then says what the user must change)."""
    if not wanted(spec):
        return None
    try:
        import unsloth  # noqa: F401
    except Exception as e:  # noqa: BLE001 - a missing or broken package: the speed plan refuses with its reason
        return "%s: %s" % (type(e).__name__, e)
    return None


def targets(lora: Dict[str, Any]) -> List[str]:
    t = lora["target_modules"]
    return list(ALL_LINEAR) if t == "all-linear" else ([t] if isinstance(t, str) else list(t))


def load(spec: Dict[str, Any], tokenizer: Any, hub_kwargs: Dict[str, Any]) -> Any:
    """The PEFT model Unsloth builds for this spec. The runner's tokenizer stays the one the data was prepared with."""
    import torch
    from unsloth import FastLanguageModel

    lora = plan.lora_kwargs(spec)
    if lora is None:
        raise plan.SpecRefused("the Unsloth backend trains LoRA adapters (method qlora or lora-bf16), not method %s" % spec["method"])
    max_seq = int(RunSpec(spec).data.max_seq_length)
    kw: Dict[str, Any] = {"model_name": str(RunSpec(spec).model.id), "max_seq_length": max_seq,
                          "dtype": getattr(torch, plan.model_dtype(spec)), "load_in_4bit": plan.quantization_kwargs(spec) is not None,
                          "token": hub_kwargs.get("token"), "trust_remote_code": bool(hub_kwargs.get("trust_remote_code"))}
    if hub_kwargs.get("revision"):
        kw["revision"] = hub_kwargs["revision"]
    print("[remote-finetune] loading %s with Unsloth (%s, max_seq_length=%d)" % (kw["model_name"], spec["method"], max_seq), flush=True)
    model, _unsloth_tokenizer = FastLanguageModel.from_pretrained(**kw)
    if tokenizer is not None and tokenizer.pad_token_id is not None:
        model.config.pad_token_id = tokenizer.pad_token_id
    gc = bool(RunSpec(spec).trainer.gradient_checkpointing)
    peft_kw: Dict[str, Any] = {"r": lora["r"], "lora_alpha": lora["lora_alpha"], "lora_dropout": lora["lora_dropout"],
                               "target_modules": targets(lora), "bias": lora["bias"],
                               "use_gradient_checkpointing": "unsloth" if gc else False,
                               "random_state": int(RunSpec(spec).trainer.seed), "max_seq_length": max_seq}
    if lora.get("modules_to_save"):
        peft_kw["modules_to_save"] = lora["modules_to_save"]
    model = FastLanguageModel.get_peft_model(model, **peft_kw)
    os.environ.setdefault("UNSLOTH_RETURN_LOGITS", "0")
    return model
