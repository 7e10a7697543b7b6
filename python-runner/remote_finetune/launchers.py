"""Command lines for the three launchers. Distribution itself is accelerate's, DeepSpeed's and
torch.distributed's; this module only builds argv lists (never a shell string) so they can be
tested exactly and no value is ever re-parsed by a shell.

`launcher.num_processes` is the total number of processes across all machines, as in accelerate;
torchrun gets num_processes / num_machines per node.
"""

import os
import re
import shlex
from typing import Any, Dict, List, Optional

from .spec import RunSpec

PROFILES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "accelerate_configs")
PROFILES = ("single_gpu", "multi_gpu", "deepspeed_zero2", "deepspeed_zero3")
_PYTHON = re.compile(r"^(?:.*/)?python(?:3(?:\.\d+)?)?$")
# Anything a shell would interpret: then the command goes to bash -c as written.
_SHELL_SYNTAX = re.compile(r"[|&;<>()$`\\\n*?~{}\[\]!]|^\s*[A-Za-z_][A-Za-z0-9_]*=")


class LaunchError(ValueError):
    pass


# By path, never `-m remote_finetune`: the trainer works in the synced workspace, and `-m` would put that folder
# first on sys.path on Python 3.10 (and 3.11+ without PYTHONSAFEPATH), where a repository's own package of the
# same name would run instead (remote_finetune_entry.py). accelerate and torchrun start each rank the same way.
ENTRY_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "remote_finetune_entry.py")


def builtin_entry(run_dir: str) -> List[str]:
    return [ENTRY_SCRIPT, "train", "--run-dir", run_dir]


def resolve_accelerate_config(config_file: Optional[str], num_processes: int, workdir: str) -> str:
    """A profile name (single_gpu, multi_gpu, deepspeed_zero2/3), a path, or a default by process count."""
    if not config_file:
        config_file = "multi_gpu" if num_processes > 1 else "single_gpu"
    name = os.path.splitext(os.path.basename(config_file))[0]
    if config_file in PROFILES or (config_file == name and name in PROFILES):
        return os.path.join(PROFILES_DIR, name + ".yaml")
    path = config_file if os.path.isabs(config_file) else os.path.join(workdir, config_file)
    return os.path.normpath(path)


def _mixed_precision(spec: Dict[str, Any]) -> str:
    p = RunSpec(spec).trainer.precision
    return p if p in ("bf16", "fp16") else "no"


def _tool(python: str, name: str) -> str:
    # The accelerate/torchrun next to the chosen interpreter (the venv's), else whatever PATH has.
    candidate = os.path.join(os.path.dirname(python), name)
    return candidate if os.path.isabs(python) and os.path.exists(candidate) else name


def accelerate_prefix(spec: Dict[str, Any], python: str, workdir: str) -> List[str]:
    n = int(RunSpec(spec).launcher.num_processes)
    machines = int(RunSpec(spec).launcher.num_machines)
    argv = [_tool(python, "accelerate"), "launch",
            "--config_file", resolve_accelerate_config(RunSpec(spec).launcher.config_file, n, workdir),
            "--num_processes", str(n), "--num_machines", str(machines),
            "--mixed_precision", _mixed_precision(spec)]
    if machines > 1:
        argv += ["--machine_rank", str(RunSpec(spec).launcher.machine_rank),
                 "--main_process_ip", str(RunSpec(spec).launcher.main_process_ip),
                 "--main_process_port", str(RunSpec(spec).launcher.main_process_port)]
    return argv


def torchrun_prefix(spec: Dict[str, Any], python: str) -> List[str]:
    n = int(RunSpec(spec).launcher.num_processes)
    machines = int(RunSpec(spec).launcher.num_machines)
    if n % machines:
        raise LaunchError("launcher.num_processes (%d) must be a multiple of num_machines (%d) for torchrun" % (n, machines))
    argv = [_tool(python, "torchrun")]
    if machines == 1:
        return argv + ["--standalone", "--nnodes", "1", "--nproc_per_node", str(n)]
    return argv + ["--nnodes", str(machines), "--node_rank", str(RunSpec(spec).launcher.machine_rank),
                   "--nproc_per_node", str(n // machines),
                   "--master_addr", str(RunSpec(spec).launcher.main_process_ip),
                   "--master_port", str(RunSpec(spec).launcher.main_process_port)]


def launcher_prefix(spec: Dict[str, Any], python: str, workdir: str) -> List[str]:
    kind = RunSpec(spec).launcher.type
    if kind == "accelerate":
        return accelerate_prefix(spec, python, workdir)
    if kind == "torchrun":
        return torchrun_prefix(spec, python)
    return [python]


def builtin_argv(spec: Dict[str, Any], run_dir: str, python: str, workdir: str) -> List[str]:
    """The built-in trainer under the spec's launcher, started by its file path under each of them."""
    return launcher_prefix(spec, python, workdir) + builtin_entry(run_dir)


def own_script_argv(spec: Dict[str, Any], python: str, workdir: str) -> List[str]:
    """The user's command. `python script.py …` is put under the spec's launcher; a command that
    already names its launcher (accelerate launch, torchrun, deepspeed, a shell script) runs as
    written; shell syntax goes to bash -c unchanged."""
    command = str(spec.get("command") or "").strip()
    if not command:
        raise LaunchError("command: empty")
    if _SHELL_SYNTAX.search(command):
        return ["/bin/bash", "-c", command]
    try:
        words = shlex.split(command)
    except ValueError as e:
        raise LaunchError("command: %s" % e)
    kind = RunSpec(spec).launcher.type
    if not words or not _PYTHON.match(words[0]) or len(words) < 2:
        return words
    rest = words[1:]
    if rest[0] == "-c":
        return [python] + rest
    if kind == "python":
        return [python] + rest
    return launcher_prefix(spec, python, workdir) + rest
