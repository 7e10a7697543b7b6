"""Issue 33.1's references: plain TRL SFT (the Hugging Face baseline, as a person writes it from TRL's docs) and,
with --unsloth, Unsloth's FastLanguageModel under the same SFTTrainer, on the same model, data and recipe as the
runner's case. One process per case (started by bench/gpu/issue33.py); the last line is
`RFT_SFT {json}`: load time, seconds to the first step, per-step times, tokens/s after warm-up, CUDA peaks.

Times: `t0` is taken before the heavy imports, so `time_to_first_step_s` counts what a user waits for (imports,
model load and quantisation, data, the first step); `model_load_s` is from_pretrained (+ the LoRA wrap) alone.
"""
import time

T0 = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("model_dir")
    p.add_argument("data")
    p.add_argument("out")
    p.add_argument("--method", choices=("qlora", "lora-bf16"), required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--lora-r", type=int, required=True)
    p.add_argument("--lora-alpha", type=float, required=True)
    p.add_argument("--lora-dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--optim", default="adamw_torch")
    p.add_argument("--gradient-checkpointing", action="store_true")
    p.add_argument("--unsloth", action="store_true", help="load and wrap with unsloth.FastLanguageModel")
    a = p.parse_args()

    if a.unsloth:
        import unsloth  # noqa: F401  (first: it patches transformers and trl)
        from unsloth import FastLanguageModel
    import torch
    import transformers
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    cuda = torch.cuda.is_available()
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "trl": __import__("trl").__version__}
    tok = AutoTokenizer.from_pretrained(a.model_dir)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    t_load = time.time()
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    if a.unsloth:
        versions["unsloth"] = __import__("unsloth").__version__
        model, tok = FastLanguageModel.from_pretrained(a.model_dir, max_seq_length=a.seq, dtype=torch.bfloat16,
                                                       load_in_4bit=a.method == "qlora")
        model = FastLanguageModel.get_peft_model(model, r=a.lora_r, lora_alpha=a.lora_alpha, lora_dropout=a.lora_dropout,
                                                 target_modules=targets, bias="none",
                                                 use_gradient_checkpointing="unsloth" if a.gradient_checkpointing else False)
        peft_config = None
    else:
        from peft import LoraConfig
        kw = {"dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype": torch.bfloat16}
        if a.method == "qlora":
            from transformers import BitsAndBytesConfig
            versions["bitsandbytes"] = __import__("bitsandbytes").__version__
            kw["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                                           bnb_4bit_compute_dtype=torch.bfloat16)
        model = AutoModelForCausalLM.from_pretrained(a.model_dir, attn_implementation="sdpa", device_map={"": 0} if cuda else None, **kw)
        peft_config = LoraConfig(r=a.lora_r, lora_alpha=a.lora_alpha, lora_dropout=a.lora_dropout, target_modules="all-linear",
                                 task_type="CAUSAL_LM")
    load_s = time.time() - t_load
    ds = load_dataset("json", data_files=a.data, split="train")

    marks = []

    class Steps(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
            if cuda:
                torch.cuda.synchronize()
            marks.append(time.time())

    cfg = dict(output_dir=a.out, max_steps=a.steps, per_device_train_batch_size=a.batch, gradient_accumulation_steps=a.grad_accum,
               learning_rate=a.lr, lr_scheduler_type="constant", logging_steps=1, save_strategy="no", bf16=cuda, report_to=[],
               seed=7, optim=a.optim, gradient_checkpointing=a.gradient_checkpointing and not a.unsloth,
               dataset_text_field="text", packing=False)
    fields = {f for f in SFTConfig.__dataclass_fields__}
    cfg["max_length" if "max_length" in fields else "max_seq_length"] = a.seq
    if a.gradient_checkpointing and not a.unsloth:
        cfg["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    if not cuda and "use_cpu" in fields:
        cfg["use_cpu"] = True
    trainer = SFTTrainer(model=model, args=SFTConfig(**cfg), train_dataset=ds, processing_class=tok, peft_config=peft_config,
                         callbacks=[Steps()])
    t_train = time.time()
    metrics = trainer.train().metrics
    intervals = [round(b - c, 4) for c, b in zip(marks, marks[1:])]  # step 2 on: step 1 is warm-up
    tokens_per_step = a.batch * a.grad_accum * a.seq
    step = statistics.median(intervals) if intervals else None
    out = {"versions": versions, "model_load_s": round(load_s, 2), "train_begin_s": round(t_train - T0, 2),
           "time_to_first_step_s": round(marks[0] - T0, 2) if marks else None, "step_times_s": intervals,
           "step_time_s": round(step, 4) if step else None, "tokens_per_step": tokens_per_step,
           "tokens_per_second": round(tokens_per_step / step, 1) if step else None, "train_runtime_s": metrics.get("train_runtime"),
           "steps": len(marks), "loss_last": next((h["loss"] for h in reversed(trainer.state.log_history) if "loss" in h), None)}
    if cuda:
        out["cuda_max_memory_allocated_mib"] = round(torch.cuda.max_memory_allocated() / 2 ** 20, 1)
        out["cuda_max_memory_reserved_mib"] = round(torch.cuda.max_memory_reserved() / 2 ** 20, 1)
    print("RFT_SFT " + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
