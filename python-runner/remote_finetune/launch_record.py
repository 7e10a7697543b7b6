"""launch.json: the extension's record that it launched the instance this run is on.

Power-off is decided from this record only, never from the spec: a spec says where a run *should*
go (`target.provider: lambda`), not where it went. Run on the user's own SSH host, a cloud spec
must never arm `shutdown -h now` there. The extension writes launch.json (0600) into the run dir
right after it provisioned the instance; the workspace cannot place it there (the run dir is made
by the extension, outside the synced workspace).
"""

import json
import os
import re
from typing import Any, Dict, Optional

from .run_folder import LAUNCH_RECORD

LAUNCHED_BY = "remote-finetune"
CLOUD_PROVIDERS = ("lambda", "ec2", "gcp")
_INSTANCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def parse_launch_record(raw: Any) -> Optional[Dict[str, str]]:
    """The record's provider and instance id, or None when it is not a complete record of ours."""
    if not isinstance(raw, dict) or raw.get("v") != 1 or raw.get("launched_by") != LAUNCHED_BY:
        return None
    provider, instance_id = raw.get("provider"), raw.get("instance_id")
    if provider not in CLOUD_PROVIDERS or not isinstance(instance_id, str) or not _INSTANCE_ID.match(instance_id):
        return None
    return {"provider": provider, "instance_id": instance_id}


def read_launch_record(run_dir: str) -> Optional[Dict[str, str]]:
    try:
        with open(os.path.join(run_dir, LAUNCH_RECORD), "r", encoding="utf-8") as f:
            return parse_launch_record(json.load(f))
    except (OSError, ValueError):
        return None
