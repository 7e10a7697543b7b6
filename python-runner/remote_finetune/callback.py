"""The TrainerCallback that writes events.jsonl, and the SIGTERM → checkpoint → clean stop path.

The event logic lives in EventsCallbackCore (plain Python, tested without transformers);
`events_callback()` wraps it in a transformers.TrainerCallback. A user's own script may add it
too (`trainer.add_callback(events_callback())` with PYTHONPATH including python-runner); the
run then stops parsing printed dicts, because this callback reports the same numbers exactly.
"""

import math
import os
import signal
import sys
import time
from typing import Any, Callable, Dict, Optional

from .events import EventWriter
from .measured import RankRecorder
from .run_folder import CALLBACK_MARKER, EVENTS

_TRAIN_KEYS = ("loss", "learning_rate", "grad_norm", "epoch")


class StopFlag:
    """Set by SIGTERM/SIGINT (spot interruption, the extension's Stop, the watchdog)."""

    def __init__(self) -> None:
        self.signum: Optional[int] = None

    def install(self) -> "StopFlag":
        def handler(signum: int, _frame: Any) -> None:
            self.signum = signum
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, handler)
        return self

    @property
    def set(self) -> bool:
        return self.signum is not None


class EventsCallbackCore:
    def __init__(self, writer: EventWriter, *, run_id: str, model: str, method: str, world_size: int = 1,
                 samples_per_step: int = 1, peak_memory_mb: Optional[Callable[[], Optional[float]]] = None,
                 clock: Callable[[], float] = time.time, stop: Optional[StopFlag] = None,
                 agree: Optional[Callable[[bool], bool]] = None, marker_dir: Optional[str] = None,
                 recorder: Optional[RankRecorder] = None) -> None:
        self.w = writer
        self.run_id = run_id
        self.model = model
        self.method = method
        self.world_size = world_size
        self.samples_per_step = samples_per_step
        self.peak_memory_mb = peak_memory_mb or (lambda: None)
        self.clock = clock
        self.stop = stop
        # All ranks must stop at the same step, or the others hang in a collective: `agree`
        # all-reduces the local flag (identity on one process).
        self.agree = agree or (lambda flag: flag)
        self.marker_dir = marker_dir
        self._progress_at = float("-inf")
        # Every rank's own GPU peaks and first step (measured.py): what the next estimate of this case uses.
        self.recorder = recorder
        self._last = None  # (time, step, tokens_seen)

    def train_begin(self, is_main: bool, total_params: Optional[int], trainable_params: Optional[int], step: int, tokens: Optional[float],
                    wandb_link: Optional[Dict[str, str]] = None) -> None:
        self._last = (self.clock(), step, tokens)
        if not is_main:
            return
        if self.marker_dir:
            with open(os.path.join(self.marker_dir, CALLBACK_MARKER), "w", encoding="utf-8") as f:
                f.write("%d\n" % os.getpid())
        if self.method == "own-script":
            return  # `run` already reported `started` for the user's script: one per run
        fields: Dict[str, Any] = {"run_id": self.run_id, "model": self.model, "method": self.method, "world_size": self.world_size}
        if total_params:
            fields["total_params"] = int(total_params)
        if trainable_params is not None:
            fields["trainable_params"] = int(trainable_params)
            if total_params:
                fields["trainable_pct"] = round(100.0 * trainable_params / total_params, 4)
        if os.environ.get("WANDB_RUN_ID") and "wandb" in os.environ.get("RFT_REPORT_TO", ""):
            fields["wandb_run_id"] = os.environ["WANDB_RUN_ID"]
            if os.environ.get("WANDB_ENTITY") and os.environ.get("WANDB_PROJECT"):
                fields["wandb_url"] = "https://wandb.ai/%s/%s/runs/%s" % (os.environ["WANDB_ENTITY"], os.environ["WANDB_PROJECT"], os.environ["WANDB_RUN_ID"])
            # The run W&B itself created knows its page (its server, the key's default entity): that wins.
            fields.update(wandb_link or {})
        self.w.emit("started", **fields)

    def log(self, is_main: bool, logs: Dict[str, Any], step: int, tokens: Optional[float], max_steps: Optional[int] = None) -> None:
        now = self.clock()
        last_t, last_step, last_tokens = self._last or (now, step, tokens)
        if self.recorder:
            self.recorder.write()
        if not is_main:
            return
        numeric = {k: float(v) for k, v in logs.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if any(k.startswith("eval_") for k in numeric):
            loss = numeric.get("eval_loss")
            ppl = math.exp(loss) if loss is not None and loss < 700 else None
            self.w.emit("eval", step=step, epoch=numeric.get("epoch"), eval_loss=loss, perplexity=ppl,
                        metrics={k: v for k, v in numeric.items() if k not in ("epoch", "eval_loss")})
            return
        fields: Dict[str, Any] = {"step": step}
        # The Trainer's planned steps: the extension shows "step N of M" and the time left from it.
        if isinstance(max_steps, int) and not isinstance(max_steps, bool) and max_steps > 0:
            fields["max_steps"] = max_steps
        for k in _TRAIN_KEYS:
            if k in numeric:
                fields[k] = numeric[k]
        dt = now - last_t
        if dt > 0 and step > last_step:
            fields["samples_per_second"] = round((step - last_step) * self.samples_per_step / dt, 3)
            if tokens is not None and last_tokens is not None and tokens > last_tokens:
                fields["tokens_per_second"] = round((tokens - last_tokens) / dt, 1)
        peak = self.peak_memory_mb()
        if peak is not None:
            fields["peak_gpu_memory_mb"] = round(peak, 1)
        extra = {k: v for k, v in numeric.items() if k not in _TRAIN_KEYS}
        if extra:
            fields["extra"] = extra
        self.w.emit("metrics", **fields)
        self._last = (now, step, tokens)

    def save(self, is_main: bool, step: int, path: str) -> None:
        if is_main:
            self.w.emit("checkpoint", step=step, path=path)

    def step_end(self, step: Optional[int] = None) -> bool:
        """True when training must save now and stop (a stop signal reached any rank)."""
        if self.recorder:
            self.recorder.step()
        if step is not None:
            self.progress(step)
        return self.agree(bool(self.stop and self.stop.set))

    def progress(self, step: int) -> None:
        """The runner's stall watch (stall.py) sees every optimizer step here, not only the logged ones, and each
        evaluation batch too (the same step again): a long evaluation has no optimizer step and is no stall."""
        if self.marker_dir and self.clock() - self._progress_at >= 1.0 and os.environ.get("RANK", "0") in ("", "0"):
            from .stall import write_progress
            self._progress_at = self.clock()
            write_progress(self.marker_dir, step)

    def warn(self, is_main: bool, message: str, code: str) -> None:
        if is_main:
            self.w.emit("warning", message=message, code=code)


def wandb_run_link(run: Any) -> Dict[str, str]:
    """The id and page of a live wandb Run (wandb.run): `url` is None offline, and only an https page is kept."""
    out: Dict[str, str] = {}
    if run is None:
        return out
    try:
        run_id, url = getattr(run, "id", None), getattr(run, "url", None)
    except Exception:
        return out
    if isinstance(run_id, str) and run_id:
        out["wandb_run_id"] = run_id
    if isinstance(url, str) and url.startswith("https://"):
        out["wandb_url"] = url
    return out


def _current_wandb_link() -> Dict[str, str]:
    wandb = sys.modules.get("wandb")  # imported by transformers' WandbCallback when it reports; never imported here
    return wandb_run_link(getattr(wandb, "run", None)) if wandb is not None else {}


def _peak_memory_mb() -> Optional[float]:
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.max_memory_allocated() / 2 ** 20
    except Exception:
        pass
    return None


def _agree_across_ranks(flag: bool) -> bool:
    try:
        import torch
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            dev = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
            t = torch.tensor([1 if flag else 0], device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            return bool(t.item())
    except Exception:
        pass
    return flag


def events_callback(run_dir: Optional[str] = None, *, model: str = "", method: str = "own-script",
                    stop: Optional[StopFlag] = None, relpath: Callable[[str], str] = lambda p: p) -> Any:
    """A transformers.TrainerCallback writing <run_dir>/events.jsonl (RFT_RUN_DIR by default)."""
    from transformers import TrainerCallback  # heavy import, only when a Trainer exists

    run_dir = run_dir or os.environ.get("RFT_RUN_DIR") or "."
    writer = EventWriter(os.path.join(run_dir, EVENTS))

    class RemoteFinetuneCallback(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.core: Optional[EventsCallbackCore] = None

        def on_train_begin(self, args, state, control, model=None, **kw):  # noqa: ANN001
            world = max(1, int(getattr(args, "world_size", 1) or 1))
            per_step = int(args.per_device_train_batch_size) * int(args.gradient_accumulation_steps) * world
            self.core = EventsCallbackCore(writer, run_id=os.path.basename(os.path.abspath(run_dir)), model=model_name or "",
                                           method=method, world_size=world, samples_per_step=per_step,
                                           peak_memory_mb=_peak_memory_mb, stop=stop, agree=_agree_across_ranks, marker_dir=run_dir,
                                           recorder=RankRecorder(run_dir, int(os.environ.get("RANK", "0") or 0)))
            total = trainable = None
            if model is not None:
                if hasattr(model, "get_nb_trainable_parameters"):
                    trainable, total = model.get_nb_trainable_parameters()  # peft counts 4-bit weights right
                else:
                    total = sum(p.numel() for p in model.parameters())
                    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
            # transformers' WandbCallback runs before ours (report_to callbacks come first) and has started wandb.run.
            self.core.train_begin(state.is_world_process_zero, total, trainable, state.global_step, getattr(state, "num_input_tokens_seen", None),
                                  _current_wandb_link())

        def on_log(self, args, state, control, logs=None, **kw):  # noqa: ANN001
            if self.core and logs:
                self.core.log(state.is_world_process_zero, logs, state.global_step, getattr(state, "num_input_tokens_seen", None),
                              getattr(state, "max_steps", None))

        def on_save(self, args, state, control, **kw):  # noqa: ANN001
            if self.core:
                path = os.path.join(args.output_dir, "checkpoint-%d" % state.global_step)
                self.core.save(state.is_world_process_zero, state.global_step, relpath(path))

        def on_prediction_step(self, args, state, control, **kw):  # noqa: ANN001
            if self.core:
                self.core.progress(state.global_step)

        def on_step_end(self, args, state, control, **kw):  # noqa: ANN001
            if self.core and self.core.step_end(state.global_step):
                control.should_save = True
                control.should_training_stop = True
            return control

    model_name = model
    return RemoteFinetuneCallback()
