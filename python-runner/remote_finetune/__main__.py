"""`python -m remote_finetune <subcommand>` (PYTHONPATH pointing at python-runner).

  run        what the extension's detached wrapper starts in a run dir
  train      the built-in trainer (started by `run` under the spec's launcher)
  bootstrap  find a CUDA Python, build the venv, install pinned requirements, pre-download
  watchdog   the host's idle watchdog (started by `run` once per host)
  boot-resume  start again every run a host restart interrupted (what the boot-time unit calls)
  generate   the Try Adapter panel's generator: base + adapter, prompts on stdin, tokens on stdout
  evaluate   perplexity of a run's adapter on the spec's eval split (an `eval` event)
  plan       print the command line `run` would start, as JSON, without starting it
  merge      fold a run's LoRA adapter into its base model (progress as JSON lines on stdout)
  publish    push a run's adapter or merged model to the Hugging Face Hub (token on stdin, never argv)
"""

import argparse
import json
import os
import sys
from typing import List, Optional

from .run_folder import RUNS_DIR, SPEC


def _home() -> str:
    return os.environ.get("RFT_HOME") or os.path.join(os.path.expanduser("~"), ".remote-finetune")


def _root_of(run_dir: str) -> str:
    parent = os.path.dirname(os.path.abspath(run_dir))
    return os.path.dirname(parent) if os.path.basename(parent) == RUNS_DIR else _home()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m remote_finetune", description="Remote Fine-Tune runner (runs on the GPU host).")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run the spec in a run dir with log capture, events, GPU sampling and the watchdog")
    r.add_argument("--run-dir", default=".")
    r.add_argument("--workdir", default=None, help="the synced workspace (relative paths in the spec resolve here)")
    r.add_argument("--python", default=None, help="interpreter for the training process (default: this one)")
    r.add_argument("--gpu-interval-ms", type=int, default=2000)
    r.add_argument("--no-gpu-sampler", action="store_true")
    r.add_argument("--no-watchdog", action="store_true")
    r.add_argument("--grace-seconds", type=float, default=120.0, help="after SIGTERM, time to save a checkpoint before SIGKILL")

    t = sub.add_parser("train", help="the built-in trainer (QLoRA, BF16 LoRA, full)")
    t.add_argument("--run-dir", default=".")

    b = sub.add_parser("bootstrap", help="choose a CUDA Python, build the venv, install requirements, pre-download")
    b.add_argument("--run-dir", default=None, help="read the method, model and dataset from this run's spec.json")
    b.add_argument("--method", default=None, choices=["qlora", "lora-bf16", "full", "dpo", "orpo", "own-script"])
    b.add_argument("--workdir", default=None, help="the synced workspace (local dataset paths resolve here)")
    b.add_argument("--home", default=None)
    b.add_argument("--flash-attn", action="store_true", help="also try the optional flash-attn requirement")
    b.add_argument("--no-download", action="store_true")

    pd = sub.add_parser("predownload", help="download the spec's model and datasets (run by bootstrap in the run venv)")
    pd.add_argument("--run-dir", required=True)
    pd.add_argument("--workdir", default=None)

    w = sub.add_parser("watchdog", help="idle watchdog: stop our runs / power off when nobody is watching")
    w.add_argument("--root", default=None)
    w.add_argument("--idle-minutes", type=float, default=30.0)
    w.add_argument("--poll-seconds", type=float, default=30.0)
    w.add_argument("--grace-seconds", type=float, default=120.0)
    w.add_argument("--poweroff-cmd", default=os.environ.get("RFT_POWEROFF_CMD"), help="JSON argv (default: shutdown -h now)")

    br = sub.add_parser("boot-resume", help="resume the runs a restart interrupted, from their newest checkpoints (the boot-time unit runs it)")
    br.add_argument("--root", default=None)

    g = sub.add_parser("generate", help="serve prompts (JSON lines on stdin) with the base model + adapter, streaming tokens")
    g.add_argument("--adapter", required=True, help="the adapter folder (or a full model saved by method full)")
    g.add_argument("--base", default=None, help="base model id or folder (default: the adapter's base_model_name_or_path)")
    g.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    g.add_argument("--trust-remote-code", action="store_true")
    g.add_argument("--revision", default=None)
    g.add_argument("--env-file", default=None, help="a run's 0600 env file: its Hugging Face token is used for a gated base")

    ev = sub.add_parser("evaluate", help="perplexity of a run's adapter on the spec's data.eval, as an eval event")
    ev.add_argument("--run-dir", default=".")
    ev.add_argument("--workdir", default=None)
    ev.add_argument("--adapter", default=None, help="default: <outputs.dir>/adapter in the workdir")

    pl = sub.add_parser("plan", help="print the launch command as JSON")
    pl.add_argument("--run-dir", default=".")
    pl.add_argument("--workdir", default=None)
    pl.add_argument("--python", default=None)

    m = sub.add_parser("merge", help="merge the run's LoRA adapter into its base model (JSON lines on stdout; optional {\"token\"} on stdin)")
    m.add_argument("--run-dir", default=".")
    m.add_argument("--workdir", default=None)
    m.add_argument("--adapter", default=None, help="adapter folder (default: the one the run left)")
    m.add_argument("--out", default=None, help="where the merged model goes (default: <outputs.dir>/merged)")
    m.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    m.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])

    pu = sub.add_parser("publish", help="push the adapter or merged model to the Hub (JSON lines on stdout; {\"token\", \"facts\"} on stdin)")
    pu.add_argument("--run-dir", default=".")
    pu.add_argument("--workdir", default=None)
    pu.add_argument("--what", default="adapter", choices=["adapter", "merged"])
    pu.add_argument("--repo", required=True, help="name or namespace/name; private unless --public")
    pu.add_argument("--public", action="store_true")
    pu.add_argument("--path", default=None, help="folder to push (default: the adapter, or <outputs.dir>/merged)")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "run":
        from .run import run
        from .launch_record import read_launch_record
        from .spec import RunSpec
        from .watchdog import ensure_watchdog

        def start_watchdog(spec: dict) -> None:
            # Power-off is armed from the extension's launch record only, never from the spec's target.
            launch = read_launch_record(args.run_dir)
            ensure_watchdog(_root_of(args.run_dir), float(RunSpec(spec).teardown.idle_minutes), launch)
            if launch is not None:
                # An instance we launched may be stopped and started again (EC2 spot, a reboot): runs resume by themselves.
                from .boot_resume import install_boot_unit, log_line
                how, what = install_boot_unit(_root_of(args.run_dir))
                log_line(_root_of(args.run_dir), "boot unit (%s): %s" % (how, what))

        return run(args.run_dir, args.workdir, args.python, sample_gpu=not args.no_gpu_sampler,
                   gpu_interval_ms=args.gpu_interval_ms, grace_s=args.grace_seconds,
                   start_watchdog=None if args.no_watchdog else start_watchdog)
    if args.cmd == "train":
        from .trainer import main_train
        return main_train(args.run_dir)
    if args.cmd == "bootstrap":
        from .bootstrap import main_bootstrap
        return main_bootstrap(args.run_dir, args.method, args.home or _home(), args.flash_attn, not args.no_download, args.workdir)
    if args.cmd == "predownload":
        from .bootstrap import main_predownload
        return main_predownload(args.run_dir, os.path.abspath(args.workdir or os.getcwd()))
    if args.cmd == "watchdog":
        from .watchdog import main_watchdog
        return main_watchdog(args.root or _home(), args.idle_minutes, args.poll_seconds, args.grace_seconds, args.poweroff_cmd)
    if args.cmd == "boot-resume":
        from .boot_resume import log_line, main_boot_resume
        root = args.root or _home()
        return main_boot_resume(root, lambda m: log_line(root, m))
    if args.cmd == "merge":
        from .merge import main_merge
        return main_merge(args.run_dir, args.workdir, args.adapter, args.out, args.dtype, args.device)
    if args.cmd == "publish":
        from .publish import main_publish
        return main_publish(args.run_dir, args.workdir, args.what, args.repo, args.public, args.path)
    if args.cmd == "generate":
        from .generate import main_generate
        return main_generate(args.adapter, args.base, args.device, args.trust_remote_code, args.revision, args.env_file)
    if args.cmd == "evaluate":
        from .evaluate import main_evaluate
        return main_evaluate(os.path.abspath(args.run_dir), os.path.abspath(args.workdir or os.getcwd()), args.adapter)
    if args.cmd == "plan":
        from . import launchers
        from .spec import load_spec, mode_of
        spec, errs = load_spec(os.path.join(args.run_dir, SPEC))
        if spec is None:
            print(json.dumps({"errors": errs}))
            return 2
        python, workdir, run_dir = args.python or sys.executable, os.path.abspath(args.workdir or os.getcwd()), os.path.abspath(args.run_dir)
        try:
            argv = launchers.own_script_argv(spec, python, workdir) if mode_of(spec) == "own-script" else launchers.builtin_argv(spec, run_dir, python, workdir)
        except launchers.LaunchError as e:
            print(json.dumps({"errors": [str(e)]}))
            return 2
        print(json.dumps({"mode": mode_of(spec), "argv": argv}))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
