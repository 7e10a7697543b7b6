"""A 4-bit base model made ready for LoRA adapters, keeping the dtypes it was loaded in.

peft's prepare_model_for_kbit_training casts every parameter that is not 4-bit (embeddings, the output head, the
norms) to fp32. Under bf16 autocast only the matmuls run in bf16, so the whole residual stream then flows in fp32:
on an H200 (Llama 3.1 8B, QLoRA r 32, batch 2 x 2048, bench/gpu/throughput-nvidia-h200-2026-11-28.json) the runner
took 2.92 s a step and 11.9 GB, plain TRL SFT 2.42 s and 8.1 GB on the same model, data and optimizer. TRL 1.x no
longer calls it (sft_trainer.py: the base stays in its dtype; transformers' RMSNorm computes in fp32 inside), nor does
Unsloth. Adapters stay as peft makes them (fp32 under autocast_adapter_dtype), so optimizer updates keep their
precision."""

from typing import Any


def freeze_quantized_base(model: Any) -> Any:
    """Every base parameter frozen (get_peft_model adds the trainable adapters after), none cast."""
    for param in model.parameters():
        param.requires_grad_(False)
    return model
