"""The run's budget (`budget.max_usd` / `budget.max_hours`), enforced by the host itself (issue 32.6).

The extension writes the price per hour (`budget.price_per_hour`) and the moment billing began
(`budget.billed_since`, the instance's launch: boot and the wait for SSH are billed too) into the run's
spec.json at start, so the runner needs nothing from VS Code: closed, asleep or offline, the run still
stops. At 80% the runner warns (a `warning` event and the host notification); at 100% it warns again and
stops training the way the extension's Stop does (SIGTERM to the runner, which forwards it to the trainer:
its StopFlag saves a checkpoint and ends training within the grace period). What happens to the instance
then is the teardown policy's business (the on-host watchdog, or the extension when attached).
"""

import os
import threading
import time
from typing import Any, Callable, Dict, Optional

from .spec import RunSpec

WARN_AT = 0.8
CODE_WARN = "budget-warning"
CODE_STOP = "budget-stop"


def _positive(x: Any) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 else None


class Budget:
    def __init__(self, max_usd: Optional[float], max_hours: Optional[float], price_per_hour: Optional[float], since: float) -> None:
        self.max_usd = max_usd
        self.max_hours = max_hours
        self.price_per_hour = price_per_hour
        self.since = since

    def hours(self, now: float) -> float:
        return max(0.0, now - self.since) / 3600.0

    def usd(self, now: float) -> Optional[float]:
        return None if self.price_per_hour is None else self.hours(now) * self.price_per_hour

    def total_s(self) -> float:
        """Seconds of billing the budget allows in all (the tighter of the two limits)."""
        limits = [self.max_hours * 3600.0] if self.max_hours is not None else []
        if self.max_usd is not None and self.price_per_hour:
            limits.append(self.max_usd / self.price_per_hour * 3600.0)
        return min(limits) if limits else float("inf")

    def fraction(self, now: float) -> float:
        """The larger share used of the two limits (a dollar limit without a price cannot be counted)."""
        used = 0.0
        usd = self.usd(now)
        if self.max_usd is not None and usd is not None:
            used = max(used, usd / self.max_usd)
        if self.max_hours is not None:
            used = max(used, self.hours(now) / self.max_hours)
        return used

    def describe(self, now: float) -> str:
        parts = []
        usd = self.usd(now)
        if self.max_usd is not None and usd is not None:
            parts.append("$%.2f of $%.2f (at $%.2f/h)" % (usd, self.max_usd, self.price_per_hour or 0.0))
        if self.max_hours is not None:
            parts.append("%s of %s" % (_span(self.hours(now)), _span(self.max_hours)))
        return ", ".join(parts)


def _span(hours: float) -> str:
    if hours >= 1:
        return "%.2f h" % hours
    return "%.0f min" % (hours * 60) if hours >= 2 / 60 else "%.0f s" % (hours * 3600)


def budget_of(spec: Dict[str, Any], started_at: float) -> Optional[Budget]:
    """The spec's budget, or None when there is nothing the host can count (no limit, or only a dollar limit
    and no price: an SSH host whose spec names no `budget.price_per_hour`)."""
    max_usd, max_hours = _positive(RunSpec(spec).budget.max_usd), _positive(RunSpec(spec).budget.max_hours)
    price = _positive(RunSpec(spec).budget.price_per_hour)
    since = RunSpec(spec).budget.billed_since
    # A clock in the future (a skewed laptop) must not hand out free time: never later than the runner's start.
    since = min(float(since), started_at) if isinstance(since, (int, float)) and not isinstance(since, bool) and since > 0 else started_at
    if max_hours is None and (max_usd is None or price is None):
        return None
    return Budget(max_usd, max_hours, price, since)


class BudgetWatcher:
    """Checks the budget every interval: one warning at 80%, then at 100% one more and `on_stop` once."""

    def __init__(self, budget: Budget, emit: Callable[..., Any], notify: Callable[[str, str, bool], None], on_stop: Callable[[], None],
                 clock: Callable[[], float] = time.time, interval_s: float = 10.0) -> None:
        self.budget, self.emit, self.notify, self.on_stop = budget, emit, notify, on_stop
        self.clock, self.interval_s = clock, interval_s
        self.warned = False
        self.stopped = False
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rft-budget", daemon=True)

    def check(self) -> None:
        now = self.clock()
        used = self.budget.fraction(now)
        if used >= WARN_AT and not self.warned:
            self.warned = True
            if used < 1.0:
                msg = "budget %d%% used: %s; training stops at 100%%" % (int(used * 100), self.budget.describe(now))
                self.emit("warning", code=CODE_WARN, message=msg)
                self.notify("budget %d%% used" % int(used * 100), msg, False)
        if used >= 1.0 and not self.stopped:
            self.stopped = True
            msg = "budget reached: %s; saving a checkpoint and stopping training" % self.budget.describe(now)
            self.emit("warning", code=CODE_STOP, message=msg)
            self.notify("budget reached, stopping", msg, True)
            self.on_stop()

    def _loop(self) -> None:
        while not self.stopped:
            self.check()
            if self.stopped or self._halt.wait(self.interval_s):
                return

    def start(self) -> "BudgetWatcher":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._halt.set()


def interval_s(budget: Budget) -> float:
    """Every 10 s, or every 1% of a small budget (a $2 limit on a $36/h host is 200 s in all), 0.5 s at least."""
    if os.environ.get("RFT_BUDGET_POLL_S"):
        return float(os.environ["RFT_BUDGET_POLL_S"])
    return max(0.5, min(10.0, budget.total_s() / 100.0))


def start_watch(run_dir: str, spec: Dict[str, Any], file_env: Dict[str, str], emit: Callable[..., Any],
                started_at: float, stop: Optional[Callable[[], None]] = None) -> Optional[BudgetWatcher]:
    """The runner's budget watch: notifications through notify.py's targets (the runner's own env file, which
    the training script never sees), the stop as SIGTERM to this runner (as the spot notice does)."""
    import signal

    budget = budget_of(spec, started_at)
    if budget is None:
        return None
    note = rank0_note(run_dir, spec, file_env, emit)
    return BudgetWatcher(budget, emit, note, stop or (lambda: os.kill(os.getpid(), signal.SIGTERM)), interval_s=interval_s(budget)).start()


def rank0_note(run_dir: str, spec: Dict[str, Any], file_env: Dict[str, str], emit: Callable[..., Any]) -> Callable[[str, str, bool], None]:
    """A during-the-run notification (notify.send_note) for the run's watches. Every machine of a multi-node run
    stops its own ranks, but the person hears it once: from machine rank 0."""
    from . import notify

    name = spec.get("name") if isinstance(spec.get("name"), str) else None
    rank = RunSpec(spec).launcher.machine_rank

    def note(what: str, body: str, urgent: bool) -> None:
        if rank in (0, None):
            notify.send_note(run_dir, file_env, name, what, body, urgent, lambda m: emit("warning", code="notify", message=m))

    return note
