"""The reference of the trainer-overhead benchmark: a plain Hugging Face Trainer script, as a person would write it,
with the same model, data and TrainingArguments as the runner's spec (bench/trainer-overhead.ts)."""
import json, sys
import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainingArguments

model_dir, data, out, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tok = AutoTokenizer.from_pretrained(model_dir)
tok.pad_token = "<|finetune_right_pad_id|>"
dtype_kw = "dtype" if int(__import__("transformers").__version__.split(".")[0]) >= 5 else "torch_dtype"
model = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="sdpa", **{dtype_kw: torch.bfloat16})
model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM"))
ds = load_dataset("json", data_files=data, split="train")
ds = ds.map(lambda b: tok([t + tok.eos_token for t in b["text"]], truncation=True, max_length=64), batched=True, remove_columns=["text"])
args = TrainingArguments(output_dir=out, max_steps=steps, per_device_train_batch_size=4, gradient_accumulation_steps=1,
                         learning_rate=5e-3, lr_scheduler_type="constant", logging_steps=1, save_steps=100000, bf16=True,
                         use_cpu=not torch.cuda.is_available(), report_to=[], seed=7, optim="adamw_torch",
                         remove_unused_columns=False)
trainer = Trainer(model=model, args=args, train_dataset=ds, data_collator=DataCollatorForLanguageModeling(tok, mlm=False))
metrics = trainer.train().metrics
print("RFT_PLAIN " + json.dumps(metrics))
