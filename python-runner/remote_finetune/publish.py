"""`python -m remote_finetune publish`: push a run's adapter (or its merged model) to the Hugging Face Hub.

huggingface_hub does the talking (HfApi honours HF_ENDPOINT): whoami to check the token and learn the
namespace, create_repo(private=True unless asked otherwise, exist_ok=True), then one commit holding the
folder's files and a model card written from the run's record. Files are pre-uploaded one at a time
(preupload_lfs_files) so each one can be reported as it goes; the commit then only references them.

What is refused: a "private" push into a repo that already exists and is public (that would publish the
weights), symlinks in the folder (a link to ~/.ssh would be uploaded as a file), and a token given anywhere
but stdin.
"""

import json
import os
import time
from typing import Any, Dict, List, Optional

from .merge import MERGE_RECORD
from .events import read_events
from .modelcard import base_license, model_card
from .oplines import OpLines, quiet_stdout, read_stdin_json
from .outputs import outputs_root
from .run_folder import SPEC
from .spec import RunSpec, load_spec
from .merge import merged_dir_of, resolve_adapter
from .trainer_plan import run_outputs_dir

# The card replaces these (peft's save_pretrained writes a template README.md); the merge record is ours.
_SKIP = {"README.md", MERGE_RECORD, "training_args.bin"}


def folder_files(folder: str) -> List[str]:
    """Top-level regular files only: no links, no hidden files, no nested checkpoints."""
    out = []
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        if name.startswith(".") or name in _SKIP or os.path.islink(p) or not os.path.isfile(p):
            continue
        out.append(name)
    return out


def _hub_error(e: Exception) -> str:
    resp = getattr(e, "response", None)
    status = getattr(resp, "status_code", None)
    if status == 401:
        return "the Hugging Face Hub refused the token (401): set a valid write token with \"Fine-Tune: Set Hugging Face Token\""
    if status == 403:
        return "the token may not write to this namespace (403): use a token with write access"
    return "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")


def publish(run_dir: str, workdir: str, what: str, repo: str, private: bool, path: Optional[str], token: str, facts: Dict[str, Any],
            lines: OpLines) -> int:
    spec, errs = load_spec(os.path.join(run_dir, SPEC))
    if spec is None:
        return lines.error("spec.json: " + "; ".join(errs))
    run_id = os.path.basename(run_dir)
    if what == "adapter":
        folder = resolve_adapter(spec, workdir, path, run_id)
        if folder is None:
            return lines.error("no LoRA adapter (adapter_config.json) found under %s" % outputs_root(spec, workdir)[0])
    else:
        # The merged model of this run: beside its own adapter (merge.py), not whichever run merged last.
        adapter = None if path else resolve_adapter(spec, workdir, None, run_id)
        mine = merged_dir_of(adapter) if adapter else os.path.join(run_outputs_dir(outputs_root(spec, workdir)[1], run_id), "merged")
        rel = path or os.path.relpath(mine, workdir)
        folder = rel if os.path.isabs(rel) else os.path.join(workdir, rel)
        if not os.path.isfile(os.path.join(folder, "config.json")):
            return lines.error("no merged model at %s: run \"Fine-Tune: Merge Adapter\" first" % rel)
    files = folder_files(folder)
    if not files:
        return lines.error("nothing to upload in %s" % folder)

    from huggingface_hub import CommitOperationAdd, HfApi

    api = HfApi(token=token)
    lines.emit("checking-token", message="checking the token with %s" % api.endpoint)
    try:
        me = api.whoami(token=token)
    except Exception as e:
        return lines.error(_hub_error(e))
    repo_id = repo if "/" in repo else "%s/%s" % (me.get("name"), repo)
    lines.emit("creating-repo", message="creating %s (%s)" % (repo_id, "private" if private else "public"), repo=repo_id, private=private)
    try:
        url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        info = api.model_info(repo_id)
    except Exception as e:
        return lines.error(_hub_error(e))
    if private and info.private is False:
        return lines.error("%s already exists and is public; pushing there would publish the weights. Choose another name, or choose Public." % repo_id)

    base = None
    try:
        with open(os.path.join(folder, MERGE_RECORD), encoding="utf-8") as f:
            base = json.load(f).get("base_model")
    except (OSError, ValueError):
        pass
    base = base or str(RunSpec(spec).model.id or "")
    card = model_card(spec, read_events(run_dir).events, facts, what, repo_id, base=base, license=facts.get("license") or base_license(base))
    ops = [CommitOperationAdd(path_in_repo=n, path_or_fileobj=os.path.join(folder, n)) for n in files]
    ops.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card.encode("utf-8")))
    total = sum(op.upload_info.size for op in ops)
    done = 0
    started = time.time()
    try:
        for i, op in enumerate(ops):
            lines.emit("uploading", message="uploading %s (%d of %d)" % (op.path_in_repo, i + 1, len(ops)), file=op.path_in_repo,
                       index=i + 1, count=len(ops), bytes=done, total_bytes=total)
            api.preupload_lfs_files(repo_id, additions=[op], repo_type="model")
            done += op.upload_info.size
        lines.emit("committing", message="committing %d file(s) to %s" % (len(ops), repo_id), bytes=done, total_bytes=total)
        commit = api.create_commit(repo_id, operations=ops, commit_message="Upload %s from Remote Fine-Tune run %s" % (what, os.path.basename(run_dir)),
                                   repo_type="model")
    except Exception as e:
        return lines.error(_hub_error(e))
    lines.emit("done", message="pushed to %s" % url, repo=repo_id, url=str(url), commit=commit.oid, private=bool(info.private),
               files=[op.path_in_repo for op in ops], bytes=total, seconds=round(time.time() - started, 2))
    return 0


def main_publish(run_dir: str, workdir: Optional[str], what: str, repo: str, public: bool, path: Optional[str]) -> int:
    lines = OpLines("publish", quiet_stdout())
    try:
        given = read_stdin_json()
    except ValueError as e:
        return lines.error(str(e))
    token = given.get("token")
    if not isinstance(token, str) or not token:
        return lines.error("no Hugging Face token on stdin: set one with \"Fine-Tune: Set Hugging Face Token\"")
    facts = given.get("facts") if isinstance(given.get("facts"), dict) else {}
    try:
        return publish(os.path.abspath(run_dir), os.path.abspath(workdir or os.getcwd()), what, repo, not public, path, token, facts, lines)
    except Exception as e:
        import traceback
        traceback.print_exc()
        return lines.error("%s: %s" % (type(e).__name__, e))
