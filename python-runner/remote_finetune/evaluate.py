"""Perplexity on the spec's eval split (data.eval), as an `eval` event with eval_loss and perplexity.

The built-in trainer calls `perplexity` once training ends (trainer.py); `python -m remote_finetune evaluate
--run-dir D --workdir W` does the same later for a finished run's adapter. The loss is the mean negative
log-likelihood per predicted token over the whole split (token-weighted, so long and short examples count by
their tokens, unlike the Trainer's per-batch mean), and perplexity = exp(eval_loss).
"""

import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .run_folder import EVENTS, SPEC


def perplexity(model: Any, tokenizer: Any, texts: Sequence[str], max_len: int, add_special_tokens: bool = True,
               batch_size: int = 4) -> Tuple[float, float, int]:
    """(eval_loss, perplexity, predicted tokens). Padding is masked out of the loss; every real token after
    the first of each example is predicted, EOS included, as the trainer's collator labels them."""
    import torch
    import torch.nn.functional as F

    total_nll, total_tokens = 0.0, 0
    model.eval()
    device = next(model.parameters()).device
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    side = tokenizer.padding_side
    tokenizer.padding_side = "right"
    try:
        for i in range(0, len(texts), batch_size):
            batch = tokenizer(list(texts[i:i + batch_size]), truncation=True, max_length=max_len, padding=True,
                              add_special_tokens=add_special_tokens, return_tensors="pt")
            ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
            with torch.no_grad():
                logits = model(input_ids=ids, attention_mask=mask).logits.float()
            target = ids[:, 1:]
            keep = mask[:, 1:].bool()
            nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), target.reshape(-1), reduction="none")
            total_nll += float(nll[keep.reshape(-1)].sum())
            total_tokens += int(keep.sum())
    finally:
        tokenizer.padding_side = side
    if total_tokens == 0:
        raise RuntimeError("the eval split has no tokens to predict")
    loss = total_nll / total_tokens
    return loss, math.exp(loss) if loss < 700 else float("inf"), total_tokens


def eval_texts(spec: Dict[str, Any], tokenizer: Any, evalset: Any, warn: Any) -> Tuple[List[str], bool]:
    """The eval split's texts as the trainer renders them (template or text field, EOS appended), and whether
    they are templated (a rendered template already holds BOS)."""
    from .data_prep import to_texts, uses_template

    template = uses_template(spec, tokenizer, warn)
    return [str(t) for t in to_texts(evalset, spec, tokenizer, template)["text"]], template


def emit_perplexity(events: Any, step: int, epoch: Optional[float], loss: float, ppl: float, tokens: int) -> Dict[str, Any]:
    fields: Dict[str, Any] = {"step": step, "eval_loss": loss, "metrics": {"eval_tokens": float(tokens)}}
    if math.isfinite(ppl):
        fields["perplexity"] = ppl
    if epoch is not None:
        fields["epoch"] = epoch
    return events.emit("eval", **fields)


def main_evaluate(run_dir: str, workdir: str, adapter: Optional[str]) -> int:
    """Loads the run's base model + adapter (default <outputs.dir>/adapter), computes perplexity on data.eval
    and appends the eval event to the run's events.jsonl; prints the event."""
    import json
    import sys

    from .events import EventWriter
    from .generate import load
    from .outputs import find_adapter
    from .spec import RunSpec, load_spec
    from .data_loading import load_raw_datasets

    spec, errs = load_spec(os.path.join(run_dir, SPEC))
    if spec is None:
        for e in errs:
            print("spec.json: " + e, file=sys.stderr)
        return 2
    if not RunSpec(spec).data.eval:
        print("the spec has no data.eval: nothing to evaluate on", file=sys.stderr)
        return 2
    out = str(RunSpec(spec).outputs.dir)
    out_dir = out if os.path.isabs(out) else os.path.join(workdir, out)
    if not adapter:
        # The run's own adapter (<outputs.dir>/<run id>/), or the shared folder of a run from before that layout.
        found = find_adapter(spec, workdir, 0.0, os.path.basename(run_dir))
        adapter = os.path.join(workdir, found) if found else os.path.join(out_dir, "adapter" if spec["method"] != "full" else "model")
    model, tokenizer, _base, _device = load(adapter, None, "auto", bool(RunSpec(spec).model.trust_remote_code), None)
    _train, evalset = load_raw_datasets(spec, workdir)
    texts, templated = eval_texts(spec, tokenizer, evalset, lambda m, c: print("warning: " + m, file=sys.stderr))
    loss, ppl, tokens = perplexity(model, tokenizer, texts, int(RunSpec(spec).data.max_seq_length), not templated)
    ev = emit_perplexity(EventWriter(os.path.join(run_dir, EVENTS)), _last_step(run_dir), None, loss, ppl, tokens)
    print(json.dumps(ev))
    return 0


def _last_step(run_dir: str) -> int:
    from .events import read_events
    steps = [e["step"] for e in read_events(run_dir).events if isinstance(e.get("step"), int) and not isinstance(e["step"], bool)]
    return max([0] + steps)