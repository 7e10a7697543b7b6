"""The cloud's warning that it is taking a spot instance back, read on the instance itself, so the run
saves a checkpoint (and uploads it, checkpoint_upload.py) in the time left, with nothing needed from the
laptop.

EC2 gives two minutes: instance metadata `spot/instance-action` answers 404 until then, and then
{"action": "terminate" | "stop" | "hibernate", "time": …}. IMDSv2 only (the instances we launch require
it): a session token from PUT /latest/api/token, sent as X-aws-ec2-metadata-token; a 401 means the token
expired, so a new one is taken. GCP gives about 30 seconds: `instance/preempted` turns "TRUE" (the
Metadata-Flavor: Google header is required). Lambda Cloud gives no notice.

The endpoints come from the variables the clouds' own SDKs read: AWS_EC2_METADATA_SERVICE_ENDPOINT
(botocore) and GCE_METADATA_HOST (google-auth), so the tests can point them at an emulator."""

import json
import os
import threading
import urllib.parse
from typing import Any, Callable, Dict, Optional

EC2_DEFAULT = "http://169.254.169.254"
GCE_DEFAULT = "metadata.google.internal"
TOKEN_TTL_S = "21600"


def _metadata_override(value: Optional[str], default: str) -> str:
    """An endpoint override is honoured only on this machine or the link-local range where the clouds serve
    metadata: the env file comes from the workspace, and a repository must not point the runner elsewhere."""
    if not value:
        return default
    host = urllib.parse.urlsplit(value if "://" in value else "http://" + value).hostname or ""
    ok = host in ("localhost", "::1", "metadata.google.internal") or host.startswith("127.") or host.startswith("169.254.") or host.startswith("fd00:ec2:")
    return value if ok else default


def _request(url: str, **kwargs: Any) -> Any:
    # urllib.request (with http.client) is imported when a spot run first asks, not in every run's start.
    import urllib.request

    return urllib.request.Request(url, **kwargs)


def _open(req: Any, timeout: float) -> Any:
    import urllib.request

    # Metadata is link-local: never through an HTTP proxy from the environment.
    return urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=timeout)


class Ec2Notice:
    def __init__(self, env: Dict[str, str], timeout: float = 2.0) -> None:
        self.base = _metadata_override(env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT"), EC2_DEFAULT).rstrip("/")
        self.timeout = timeout
        self.token: Optional[str] = None

    def _token(self) -> str:
        req = _request(self.base + "/latest/api/token", method="PUT",
                       headers={"X-aws-ec2-metadata-token-ttl-seconds": TOKEN_TTL_S})
        with _open(req, self.timeout) as r:
            return r.read().decode("ascii").strip()

    def check(self) -> Optional[str]:
        """A sentence when the instance is being taken back, else None."""
        for _attempt in range(2):
            if self.token is None:
                self.token = self._token()
            req = _request(self.base + "/latest/meta-data/spot/instance-action",
                           headers={"X-aws-ec2-metadata-token": self.token})
            try:
                with _open(req, self.timeout) as r:
                    body = json.loads(r.read().decode("utf-8") or "{}")
            except OSError as e:
                import urllib.error  # loaded by _open already

                if not isinstance(e, urllib.error.HTTPError):
                    raise
                if e.code == 404:
                    return None
                if e.code == 401:
                    self.token = None
                    continue
                raise
            action = body.get("action", "terminate") if isinstance(body, dict) else "terminate"
            when = body.get("time", "in about two minutes") if isinstance(body, dict) else "in about two minutes"
            return "EC2 will %s this spot instance at %s" % (action, when)
        return None


class GceNotice:
    def __init__(self, env: Dict[str, str], timeout: float = 2.0) -> None:
        self.base = "http://" + _metadata_override(env.get("GCE_METADATA_HOST"), GCE_DEFAULT).rstrip("/")
        self.timeout = timeout

    def check(self) -> Optional[str]:
        req = _request(self.base + "/computeMetadata/v1/instance/preempted", headers={"Metadata-Flavor": "Google"})
        with _open(req, self.timeout) as r:
            return "GCP is preempting this instance (about 30 seconds left)" if r.read().decode().strip().upper() == "TRUE" else None


def notice_source(provider: Optional[str], env: Dict[str, str]) -> Any:
    return Ec2Notice(env) if provider == "ec2" else GceNotice(env) if provider == "gcp" else None


class NoticeWatcher:
    """Polls the source every interval; on the first notice emits a warning and calls on_notice once.
    Metadata that does not answer is retried quietly (a blip must not stop a run)."""

    def __init__(self, source: Any, emit: Callable[..., Any], on_notice: Callable[[], None], interval_s: float = 5.0) -> None:
        self.source, self.emit, self.on_notice, self.interval_s = source, emit, on_notice, interval_s
        self.noticed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rft-spot-notice", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                said = self.source.check()
            except (OSError, ValueError):
                continue
            if said:
                self.noticed = True
                self.emit("warning", code="spot-notice", message=said + ": saving a checkpoint now")
                self.on_notice()
                return

    def start(self) -> "NoticeWatcher":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()


def interval_s() -> float:
    return float(os.environ.get("RFT_SPOT_POLL_S", "5"))
