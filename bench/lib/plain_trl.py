"""The TRL reference of the trainer-overhead benchmark: a plain TRL SFT script, as TRL's own examples write it (a text
dataset, SFTConfig, SFTTrainer with a peft LoraConfig), with the same model, data and arguments as the runner's spec
with trainer.use_sft_trainer (bench/trainer-overhead.ts)."""
import argparse, json, time
import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import SFTConfig, SFTTrainer

p = argparse.ArgumentParser()
p.add_argument("model_dir"); p.add_argument("data"); p.add_argument("out"); p.add_argument("steps", type=int)
p.add_argument("--max-length", type=int, default=64); p.add_argument("--batch", type=int, default=4)
a = p.parse_args()

tok = AutoTokenizer.from_pretrained(a.model_dir)
tok.pad_token = "<|finetune_right_pad_id|>"
dtype_kw = "dtype" if int(__import__("transformers").__version__.split(".")[0]) >= 5 else "torch_dtype"
model = AutoModelForCausalLM.from_pretrained(a.model_dir, attn_implementation="sdpa", **{dtype_kw: torch.bfloat16})
ds = load_dataset("json", data_files=a.data, split="train")
fields = SFTConfig.__dataclass_fields__
length = {"max_length": a.max_length} if "max_length" in fields else {"max_seq_length": a.max_length}  # trl 0.x named it max_seq_length
args = SFTConfig(output_dir=a.out, max_steps=a.steps, per_device_train_batch_size=a.batch, gradient_accumulation_steps=1, learning_rate=5e-3,
                 lr_scheduler_type="constant", logging_steps=1, save_strategy="steps", save_steps=100000, bf16=True,
                 use_cpu=not torch.cuda.is_available(), report_to=[], seed=7, optim="adamw_torch", dataset_text_field="text",
                 gradient_checkpointing=False, **length)  # TRL turns checkpointing on by default; the spec has it off
peft = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
marks = []


class Marks(TrainerCallback):  # the bench's clock, as the runner's events callback logs each step: on_log
    def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001
        if logs and "loss" in logs:
            marks.append((state.global_step, time.time()))


trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=peft, callbacks=[Marks()])
metrics = trainer.train().metrics
metrics["step_times"] = [t1 - t0 for (s0, t0), (s1, t1) in zip(marks, marks[1:]) if s1 == s0 + 1]
print("RFT_PLAIN " + json.dumps(metrics))
