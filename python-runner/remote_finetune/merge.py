"""`python -m remote_finetune merge`: fold a run's LoRA adapter into its base model on the host.

The base is loaded unquantised in the dtype the extension chose from its GPU fit (bf16 where the GPU has it,
fp16 on older GPUs, fp32 on the CPU): merging into 4-bit weights would round the adapter away, so a QLoRA
run's adapter is merged into the 16-bit base too. peft's merge_and_unload adds B@A*scaling into each target
weight and drops the LoRA modules; the result is a plain transformers model, saved as safetensors with the
tokenizer, that loads with AutoModelForCausalLM alone.
"""

import json
import os
import time
from typing import Any, Dict, Optional

from .oplines import OpLines, quiet_stdout, read_stdin_json
from .outputs import find_adapter, outputs_root
from .run_folder import SPEC
from .spec import load_spec, RunSpec

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# Written next to the merged weights: what was merged, so `publish` can name the base model in the card.
MERGE_RECORD = "remote_finetune_merge.json"


def _dtype_kwarg() -> str:
    import transformers
    return "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"


def _folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))


def resolve_adapter(spec: Dict[str, Any], workdir: str, given: Optional[str], run_id: str) -> Optional[str]:
    """The adapter folder: the one asked for (relative to the workspace), else the one run `run_id` left."""
    rel = given or find_adapter(spec, workdir, 0.0, run_id)
    if rel is None:
        return None
    path = rel if os.path.isabs(rel) else os.path.join(workdir, rel)
    return path if os.path.isfile(os.path.join(path, "adapter_config.json")) else None


def merged_dir_of(adapter_dir: str) -> str:
    """The merged model goes beside the adapter it came from: in the run's own folder (<outputs.dir>/<run id>/merged),
    or <outputs.dir>/merged for a run from before the per-run folders, as it always did."""
    return os.path.join(os.path.dirname(os.path.normpath(adapter_dir)), "merged")


def merge(run_dir: str, workdir: str, adapter: Optional[str], out: Optional[str], dtype: str, device: str, lines: OpLines,
          token: Optional[str] = None) -> int:
    spec, errs = load_spec(os.path.join(run_dir, SPEC))
    if spec is None:
        return lines.error("spec.json: " + "; ".join(errs))
    if dtype not in DTYPES:
        return lines.error("dtype must be one of " + ", ".join(DTYPES))
    adapter_dir = resolve_adapter(spec, workdir, adapter, os.path.basename(run_dir))
    if adapter_dir is None:
        return lines.error("no LoRA adapter (adapter_config.json) found under %s" % outputs_root(spec, workdir)[0])
    out_dir = out if out and os.path.isabs(out) else os.path.join(workdir, out) if out else merged_dir_of(adapter_dir)
    if os.path.realpath(out_dir) == os.path.realpath(adapter_dir):
        return lines.error("the merged model cannot be written over its adapter")

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        return lines.error("asked to merge on the GPU, but torch sees no CUDA device on this host")
    with open(os.path.join(adapter_dir, "adapter_config.json"), encoding="utf-8") as f:
        adapter_cfg = json.load(f)
    base = str(RunSpec(spec).model.id or adapter_cfg.get("base_model_name_or_path") or "")
    if not base:
        return lines.error("neither the spec nor adapter_config.json names the base model")
    if base.startswith(("./", "../")):
        # model.id as a relative path names a folder of the workspace the run trained in, not of this process's folder.
        base = os.path.normpath(os.path.join(workdir, base))
    hub: Dict[str, Any] = {"trust_remote_code": bool(RunSpec(spec).model.trust_remote_code)}
    if token:
        hub["token"] = token
    if RunSpec(spec).model.revision:
        hub["revision"] = RunSpec(spec).model.revision
    started = time.time()
    lines.emit("loading-base", message="loading %s in %s on %s" % (base, dtype, device), model=base, dtype=dtype, device=device)
    kwargs: Dict[str, Any] = dict(hub, low_cpu_mem_usage=True)
    kwargs[_dtype_kwarg()] = getattr(torch, DTYPES[dtype])
    if device == "cuda":
        kwargs["device_map"] = {"": 0}
    model = AutoModelForCausalLM.from_pretrained(base, **kwargs)
    lines.emit("loading-adapter", message="loading the adapter from %s" % adapter_dir)
    # The adapter's own tokenizer first: the trainer saves it there, with the pad token it chose.
    tok_src = adapter_dir if os.path.isfile(os.path.join(adapter_dir, "tokenizer_config.json")) else base
    tokenizer = AutoTokenizer.from_pretrained(tok_src, **({} if tok_src == adapter_dir else hub))
    peft_model = PeftModel.from_pretrained(model, adapter_dir, is_trainable=False)
    lines.emit("merging", message="merging the adapter into the base weights")
    merged = peft_model.merge_and_unload()
    if tokenizer.pad_token_id is not None:
        merged.config.pad_token_id = tokenizer.pad_token_id
    merged.config.use_cache = True  # training turned the cache off; inference wants it back
    lines.emit("saving", message="saving safetensors to %s" % out_dir)
    os.makedirs(out_dir, exist_ok=True)
    merged.save_pretrained(out_dir, max_shard_size="5GB")
    tokenizer.save_pretrained(out_dir)
    with open(os.path.join(out_dir, MERGE_RECORD), "w", encoding="utf-8") as f:
        json.dump({"base_model": base, "adapter": adapter_dir, "dtype": dtype, "device": device, "method": spec.get("method")}, f, indent=2)
    rel = os.path.relpath(out_dir, workdir)
    lines.emit("done", message="merged model saved", path=out_dir if rel.startswith("..") else rel, dtype=dtype, device=device,
               bytes=_folder_bytes(out_dir), seconds=round(time.time() - started, 2))
    return 0


def main_merge(run_dir: str, workdir: Optional[str], adapter: Optional[str], out: Optional[str], dtype: str, device: str) -> int:
    lines = OpLines("merge", quiet_stdout())
    try:
        secrets = read_stdin_json()
        token = secrets.get("token") if isinstance(secrets.get("token"), str) else None
        return merge(os.path.abspath(run_dir), os.path.abspath(workdir or os.getcwd()), adapter, out, dtype, device, lines, token)
    except Exception as e:  # the extension shows the message; the traceback went to stderr
        import traceback
        traceback.print_exc()
        return lines.error("%s: %s" % (type(e).__name__, e))
