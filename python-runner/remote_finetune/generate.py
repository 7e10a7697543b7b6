"""`python -m remote_finetune generate --adapter DIR`: the "Try Adapter" panel's generator.

Loads the base model and the LoRA adapter once, then serves requests read as JSON lines on stdin until
stdin closes, so several prompts share one model load:

  {"type": "generate", "id": "1", "prompt": "...", "temperature": 0.7, "max_new_tokens": 128, "chat": true}
  {"type": "cancel", "id": "1"}                      stops that generation after the current token

and answers as JSON lines on stdout (nothing else is ever written there: library prints go to stderr):

  {"type": "ready", "base": ..., "adapter": ..., "device": "cpu", "chat_template": true}
  {"type": "token", "id": "1", "text": " Paris"}     text is the new decoded text, never a split UTF-8 character
  {"type": "done", "id": "1", "tokens": 12, "stopped": false, "seconds": 0.4}
  {"type": "error", "message": "...", "fatal": true}  fatal: the model or adapter did not load (exit 3)

temperature 0 is greedy decoding (model.generate's own greedy path, so the output equals generate()'s).
The chat template is applied when the tokenizer has one and the request does not say chat: false.
"""

import importlib.util
import json
import math
import os
import queue
import sys
import threading
import time
from typing import Any, Dict, IO, List, Optional, Tuple

from .spec import hub_token

MAX_NEW_TOKENS = 4096


class Protocol:
    """stdout is the protocol: the original fd 1 is kept for it and fd 1 is pointed at stderr, so a warning
    that transformers, peft or a model's remote code prints cannot break a line the extension parses."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self._out: IO[str] = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self._lock = threading.Lock()

    def send(self, obj: Dict[str, Any]) -> None:
        line = json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"
        with self._lock:
            self._out.write(line)
            self._out.flush()


def read_adapter_base(adapter: str) -> Optional[str]:
    try:
        with open(os.path.join(adapter, "adapter_config.json"), encoding="utf-8") as f:
            base = json.load(f).get("base_model_name_or_path")
        return str(base) if base else None
    except (OSError, ValueError):
        return None


def resolve_local_base(base: str, adapter: str) -> str:
    """A base named as a relative path ("./tiny-model", as the spec's model.id) is relative to the run's workspace,
    where the trainer ran, not to this process's folder: look for it in the adapter's parent folders
    (<workspace>/<outputs.dir>/adapter). A hub id, an absolute path, or one found from here is kept as given."""
    if os.path.isabs(base) or not base.startswith(("./", "../")) or os.path.isdir(base):
        return base
    d = os.path.dirname(os.path.abspath(adapter))
    while True:
        cand = os.path.normpath(os.path.join(d, base))
        if os.path.isdir(cand):
            return cand
        parent = os.path.dirname(d)
        if parent == d:
            return base
        d = parent


def load(adapter: str, base: Optional[str], device: str, trust_remote_code: bool, revision: Optional[str]) -> Tuple[Any, Any, str, str]:
    """(model, tokenizer, base, device). A full model saved by method `full` (no adapter_config.json) loads as is."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    is_adapter = os.path.isfile(os.path.join(adapter, "adapter_config.json"))
    base = base or (read_adapter_base(adapter) if is_adapter else adapter)
    if not base:
        raise RuntimeError("%s/adapter_config.json names no base model; pass --base" % adapter)
    base = resolve_local_base(base, adapter)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float32
    if device.startswith("cuda"):
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    kw: Dict[str, Any] = {"trust_remote_code": trust_remote_code, "token": hub_token(dict(os.environ))}
    if revision:
        kw["revision"] = revision
    # The trainer saves the tokenizer beside the adapter (its pad token and chat template as trained).
    tok_src = adapter if os.path.isfile(os.path.join(adapter, "tokenizer_config.json")) else base
    tokenizer = AutoTokenizer.from_pretrained(tok_src, **(kw if tok_src == base else {"trust_remote_code": trust_remote_code}))
    import transformers
    dkey = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    # A QLoRA adapter applies to the unquantized base as well: bf16 weights need no bitsandbytes.
    load_kw = dict(kw, **{dkey: dtype})
    if device.startswith("cuda") and importlib.util.find_spec("accelerate") is not None:
        load_kw["device_map"] = {"": device}  # straight onto the GPU: a 70B model never sits whole in host RAM
    model = AutoModelForCausalLM.from_pretrained(base, **load_kw)
    if is_adapter:
        from peft import PeftModel
        model = PeftModel.from_pretrained(model, adapter)
    model.to(device)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, base, device


def prompt_ids(tokenizer: Any, prompt: str, chat: bool) -> Tuple[Any, bool]:
    """(input ids tensor [1, n], templated). A rendered template already starts with BOS: no second one."""
    templated = chat and bool(getattr(tokenizer, "chat_template", None))
    if templated:
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
        return tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"], True
    return tokenizer(prompt, return_tensors="pt")["input_ids"], False


class IncrementalDecoder:
    """Decodes the generated ids as a whole each time and hands out what is new, holding back text that ends
    in U+FFFD (a byte-level token that is part of a UTF-8 character, completed by the next ones). A character
    has at most 4 bytes: after 3 held tokens the bytes are invalid for good (an untrained model emits such
    runs) and go out as U+FFFD, so the stream keeps flowing."""

    MAX_HELD = 3

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.ids: List[int] = []
        self.sent = 0
        self.held = 0

    def push(self, ids: List[int]) -> str:
        self.ids.extend(ids)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd") and self.held < self.MAX_HELD:
            self.held += 1
            return ""
        self.held = 0
        new, self.sent = text[self.sent:], len(text)
        return new

    def flush(self) -> str:
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        new, self.sent = text[self.sent:], len(text)
        return new


def generation_kwargs(req: Dict[str, Any]) -> Dict[str, Any]:
    t = float(req.get("temperature", 0.0) or 0.0)
    n = int(req.get("max_new_tokens", 128))
    kw: Dict[str, Any] = {"max_new_tokens": max(1, min(n, MAX_NEW_TOKENS))}
    if t <= 0:
        kw.update(do_sample=False)
    else:
        kw.update(do_sample=True, temperature=t)
        top_p = req.get("top_p")
        if isinstance(top_p, (int, float)) and 0 < top_p <= 1:
            kw["top_p"] = float(top_p)
    return kw


def check_request(req: Any) -> Optional[str]:
    if not isinstance(req, dict):
        return "expected a JSON object"
    if not isinstance(req.get("prompt"), str):
        return "prompt: expected a string"
    t = req.get("temperature", 0)
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t) or t < 0 or t > 10:
        return "temperature: expected a number 0..10"
    n = req.get("max_new_tokens", 128)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return "max_new_tokens: expected an integer >= 1"
    return None


class Generator:
    def __init__(self, model: Any, tokenizer: Any, device: str) -> None:
        self.model, self.tokenizer, self.device = model, tokenizer, device

    def generate(self, req: Dict[str, Any], on_text: Any, cancelled: threading.Event) -> Tuple[int, bool]:
        """Streams decoded text to on_text; returns (new tokens, stopped by cancel)."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList
        from transformers.generation.streamers import BaseStreamer

        ids, _ = prompt_ids(self.tokenizer, str(req["prompt"]), req.get("chat") is not False)
        ids = ids.to(self.device)
        dec = IncrementalDecoder(self.tokenizer)
        counted = {"n": 0, "prompt": True}

        class Stream(BaseStreamer):
            def put(self, value: Any) -> None:
                if counted["prompt"]:  # generate() first puts the prompt itself
                    counted["prompt"] = False
                    return
                new = value.reshape(-1).tolist()
                counted["n"] += len(new)
                text = dec.push(new)
                if text:
                    on_text(text)

            def end(self) -> None:
                text = dec.flush()
                if text:
                    on_text(text)

        class Cancel(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                done = cancelled.is_set()
                return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)

        seed = req.get("seed")
        if isinstance(seed, int) and not isinstance(seed, bool):
            torch.manual_seed(seed)
        with torch.no_grad():
            self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), streamer=Stream(),
                                stopping_criteria=StoppingCriteriaList([Cancel()]),
                                pad_token_id=self.tokenizer.pad_token_id, **generation_kwargs(req))
        return counted["n"], cancelled.is_set()


def serve(gen: Generator, inp: IO[str], proto: Protocol) -> int:
    """One reader thread takes stdin lines (so a cancel arrives while a generation runs); this thread generates."""
    work: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue()
    cancels: Dict[str, threading.Event] = {}
    lock = threading.Lock()

    def event_for(rid: str) -> threading.Event:
        with lock:
            return cancels.setdefault(rid, threading.Event())

    def reader() -> None:
        for line in inp:
            line = line.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
            except ValueError:
                proto.send({"type": "error", "message": "not JSON: %s" % line[:80]})
                continue
            if isinstance(req, dict) and req.get("type") == "cancel":
                event_for(str(req.get("id", ""))).set()
                continue
            work.put(req)
        work.put(None)

    threading.Thread(target=reader, daemon=True).start()
    while True:
        req = work.get()
        if req is None:
            return 0
        rid = str(req.get("id", "")) if isinstance(req, dict) else ""
        err = check_request(req)
        if err:
            proto.send({"type": "error", "id": rid, "message": err})
            continue
        t0 = time.monotonic()
        cancelled = event_for(rid)
        try:
            n, stopped = gen.generate(req, lambda text: proto.send({"type": "token", "id": rid, "text": text}), cancelled)
        except Exception as e:  # one bad request (too long for the model, CUDA OOM) must not end the session
            proto.send({"type": "error", "id": rid, "message": "%s: %s" % (type(e).__name__, str(e)[:500])})
            continue
        finally:
            with lock:
                cancels.pop(rid, None)
        proto.send({"type": "done", "id": rid, "tokens": n, "stopped": stopped, "seconds": round(time.monotonic() - t0, 3)})


def load_hub_token(env_file: Optional[str]) -> None:
    """The run's 0600 env file may hold HF_TOKEN for a gated base model: read here, never passed on a command line."""
    if not env_file:
        return
    from .envfile import read_env_file
    from .spec import HUB_TOKEN_NAMES
    env, _ = read_env_file(env_file)
    for name in HUB_TOKEN_NAMES:
        if env.get(name) and not os.environ.get(name):
            os.environ[name] = env[name]


def main_generate(adapter: str, base: Optional[str], device: str, trust_remote_code: bool, revision: Optional[str],
                  env_file: Optional[str]) -> int:
    proto = Protocol()
    load_hub_token(env_file)
    try:
        model, tokenizer, base, device = load(adapter, base, device, trust_remote_code, revision)
    except Exception as e:
        what = "the adapter %s" % adapter if os.path.isdir(adapter) else "the adapter %s (no such folder)" % adapter
        proto.send({"type": "error", "fatal": True, "message": "cannot load %s or its base model %s: %s: %s" % (
            what, base or read_adapter_base(adapter) or "(unknown)", type(e).__name__, str(e)[:800])})
        return 3
    proto.send({"type": "ready", "base": base, "adapter": adapter, "device": device,
                "chat_template": bool(getattr(tokenizer, "chat_template", None))})
    return serve(Generator(model, tokenizer, device), sys.stdin, proto)
