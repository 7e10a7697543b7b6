"""Variables a workspace `.env` may not set: the ones that decide which interpreter, which code or which
shared objects run (PYTHONHOME, PYTHONSTARTUP, LD_PRELOAD, BASH_ENV, …) and the runner's own RFT_*
settings (RFT_POWEROFF_CMD is the idle watchdog's power-off command). The extension refuses to start a
run whose `.env` sets one (src/core/config/controlVariables.ts, the same list); this is the runner's half:
the env file reaches the run wrapper's environment before this process starts, so whatever the file sets
here is taken out again before any child, the watchdog included, is started.
"""

from typing import Dict, List, MutableMapping, Tuple

# Kept in step with CONTROL_VARIABLES in src/core/config/controlVariables.ts (tests on both sides list them).
CONTROL_VARIABLES = (
    "PYTHONSAFEPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONEXECUTABLE", "PYTHONUSERBASE",
    "PYTHONPLATLIBDIR", "LD_PRELOAD", "LD_AUDIT", "BASH_ENV", "PATH",
)
CONTROL_PREFIXES = ("RFT_",)
# Written into the env file by the extension itself, from the user's settings or the run's volume, after the
# workspace's own variables were checked (src/core/runs/hosts/hostNotify.ts, runVolume.ts).
EXTENSION_WRITTEN = ("RFT_NOTIFY_WEBHOOK", "RFT_NOTIFY_NTFY_URL", "RFT_DATA_DIR")


def is_control_variable(name: str) -> bool:
    return name in CONTROL_VARIABLES or name.startswith(CONTROL_PREFIXES)


def _refused(name: str) -> bool:
    return is_control_variable(name) and name not in EXTENSION_WRITTEN


def split_env_file(file_env: Dict[str, str]) -> Tuple[Dict[str, str], List[str]]:
    """(the variables that may reach the run, the refused names in file order)."""
    kept = {k: v for k, v in file_env.items() if not _refused(k)}
    return kept, [k for k in file_env if _refused(k)]


def unset_refused(environ: MutableMapping[str, str], refused: List[str]) -> None:
    """The wrapper sourced the env file, so a refused name in this environment holds the file's value."""
    for k in refused:
        environ.pop(k, None)


def refusal_message(refused: List[str]) -> str:
    return ("the workspace env sets %s, which control the interpreter or the runner; %s ignored (set them on the "
            "host itself if you mean to)" % (", ".join(refused), "it is" if len(refused) == 1 else "they are"))


def set_safe_path(env: MutableMapping[str, str], own_script: bool, runner_dir: str) -> None:
    """The built-in trainer starts from remote_finetune_entry.py, whose folder comes first on sys.path whatever the
    flag says; PYTHONSAFEPATH=1 keeps the working folder off the path of any Python it starts in turn, and its
    PYTHONPATH is the runner alone: a workspace entry there (`PYTHONPATH=.` is the synced workspace) would have
    its sitecustomize.py run at interpreter start, before any of our code. An own script is the user's code: it
    gets Python's default sys.path, its own folder first, not the flag this runner was started with, and the
    env file's PYTHONPATH after ours."""
    if own_script:
        env.pop("PYTHONSAFEPATH", None)
    else:
        env["PYTHONSAFEPATH"] = "1"
        env["PYTHONPATH"] = runner_dir
