"""The reference of the trainer-overhead benchmark: a plain Hugging Face Trainer script, as a person would write it,
with the same model, data and TrainingArguments as the runner's spec (bench/trainer-overhead.ts; and on a GPU,
bench/gpu/vram_measure.py --baseline, which sets the sequence length, batch, checkpointing and LoRA size to match)."""
import argparse, json, time
import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainerCallback, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("model_dir"); p.add_argument("data"); p.add_argument("out"); p.add_argument("steps", type=int)
p.add_argument("--max-length", type=int, default=64); p.add_argument("--batch", type=int, default=4)
p.add_argument("--gradient-checkpointing", action="store_true")
p.add_argument("--lora-r", type=int, default=8); p.add_argument("--lora-alpha", type=int, default=16)
p.add_argument("--lr", type=float, default=5e-3); p.add_argument("--save-strategy", default="steps")
a = p.parse_args()

tok = AutoTokenizer.from_pretrained(a.model_dir)
tok.pad_token = "<|finetune_right_pad_id|>"
dtype_kw = "dtype" if int(__import__("transformers").__version__.split(".")[0]) >= 5 else "torch_dtype"
device_map = {"": 0} if torch.cuda.is_available() else None
model = AutoModelForCausalLM.from_pretrained(a.model_dir, attn_implementation="sdpa", device_map=device_map, **{dtype_kw: torch.bfloat16})
if a.gradient_checkpointing:
    model.config.use_cache = False
model = get_peft_model(model, LoraConfig(r=a.lora_r, lora_alpha=a.lora_alpha, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"))
ds = load_dataset("json", data_files=a.data, split="train")
ds = ds.map(lambda b: tok([t + tok.eos_token for t in b["text"]], truncation=True, max_length=a.max_length), batched=True, remove_columns=["text"])
args = TrainingArguments(output_dir=a.out, max_steps=a.steps, per_device_train_batch_size=a.batch, gradient_accumulation_steps=1,
                         learning_rate=a.lr, lr_scheduler_type="constant", logging_steps=1, save_strategy=a.save_strategy, save_steps=100000,
                         bf16=True, use_cpu=not torch.cuda.is_available(), report_to=[], seed=7, optim="adamw_torch",
                         remove_unused_columns=False, gradient_checkpointing=a.gradient_checkpointing,
                         gradient_checkpointing_kwargs={"use_reentrant": False} if a.gradient_checkpointing else None)
marks = []


class Marks(TrainerCallback):  # the bench's clock, as the runner's events callback logs each step: on_log
    def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001
        if logs and "loss" in logs:
            marks.append((state.global_step, time.time()))


trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tok, mlm=False), callbacks=[Marks()])
metrics = trainer.train().metrics
metrics["step_times"] = [t1 - t0 for (s0, t0), (s1, t1) in zip(marks, marks[1:]) if s1 == s0 + 1]
if torch.cuda.is_available():
    metrics["cuda_max_memory_allocated_mib"] = torch.cuda.max_memory_allocated() / 2 ** 20
    metrics["cuda_max_memory_reserved_mib"] = torch.cuda.max_memory_reserved() / 2 ** 20
print("RFT_PLAIN " + json.dumps(metrics))
