"""gs:// through Google's own client library (google-cloud-storage), run as a small command by the storage code
(checkpoint_upload.py, checkpoint_restore.py, upload.py, staging.py) exactly where it used to run gcloud/gsutil.

Why not the gcloud CLI: it does not read Application Default Credentials ("The gcloud CLI itself doesn't use
ADC", Google's ADC page), so a GOOGLE_APPLICATION_CREDENTIALS key shipped in the env file was never used. The
library reads ADC: that key file when it is set, else the metadata server's token for the VM's service account
(our VMs are inserted with one, devstorage.read_write); it honours STORAGE_EMULATOR_HOST. Credentials come from
the environment only, never from the command line.

    python gcs.py put-dir LOCAL gs://bucket/prefix   every file under LOCAL, to prefix/<relative path>
    python gcs.py put gs://bucket/key                stdin to one object
    python gcs.py cat gs://bucket/key                one object to stdout; exit 3 and "not found" when missing
    python gcs.py get-dir gs://bucket/prefix LOCAL   every object under prefix/ into LOCAL (unchanged ones skipped)
    python gcs.py get gs://bucket/key FILE           one object to FILE
    python gcs.py stat gs://bucket/key               {"bytes", "objects", "single"} as JSON

Run as a file (not -m), so it works with whichever interpreter has the library, whatever PYTHONPATH is."""

import base64
import hashlib
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

NOT_FOUND_EXIT = 3


def available() -> bool:
    """Whether this interpreter has the library (the host's venv gets it from requirements/gcs.txt)."""
    try:
        import importlib.util

        return importlib.util.find_spec("google.cloud.storage") is not None
    except (ImportError, ValueError):
        return False


def command(*args: str) -> List[str]:
    """The argv that runs one of this file's commands with the current interpreter."""
    return [sys.executable, os.path.abspath(__file__), *args]


def split(url: str) -> Tuple[str, str]:
    if not url.startswith("gs://"):
        raise ValueError("not a gs:// URL: %s" % url)
    bucket, _, key = url[len("gs://"):].partition("/")
    if not bucket:
        raise ValueError("no bucket in %s" % url)
    return bucket, key.strip("/")


SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"


def _client():  # type: ignore[no-untyped-def]
    import google.auth  # heavy: only in this process
    from google.cloud import storage

    # ADC asked for explicitly: the library would go anonymous whenever STORAGE_EMULATOR_HOST is set, and the
    # credentials are what this module is for (a key file, else the metadata server's token).
    credentials, project = google.auth.default(scopes=[SCOPE])
    return storage.Client(project=os.environ.get("GOOGLE_CLOUD_PROJECT") or project, credentials=credentials)


def _join(prefix: str, rel: str) -> str:
    return "%s/%s" % (prefix, rel) if prefix else rel


def put_dir(local: str, url: str) -> int:
    bucket_name, prefix = split(url)
    bucket = _client().bucket(bucket_name)
    n = 0
    for root, _dirs, files in os.walk(local):
        for f in sorted(files):
            path = os.path.join(root, f)
            rel = os.path.relpath(path, local).replace(os.sep, "/")
            bucket.blob(_join(prefix, rel)).upload_from_filename(path)
            n += 1
    return n


def put(url: str, data: bytes) -> None:
    bucket_name, key = split(url)
    _client().bucket(bucket_name).blob(key).upload_from_string(data)


def cat(url: str) -> Optional[bytes]:
    from google.api_core import exceptions

    bucket_name, key = split(url)
    try:
        return _client().bucket(bucket_name).blob(key).download_as_bytes()
    except exceptions.NotFound:
        return None


def stat(url: str) -> Dict[str, Any]:
    """{"bytes", "objects", "single"}: one object at the key itself, or every object under key/."""
    from google.api_core import exceptions

    bucket_name, key = split(url)
    client = _client()
    under = list(client.list_blobs(bucket_name, prefix=key + "/" if key else None))
    if under:
        return {"bytes": sum(int(b.size or 0) for b in under), "objects": len(under), "single": False}
    blob = client.bucket(bucket_name).blob(key)
    try:
        blob.reload()
    except exceptions.NotFound:
        return {"bytes": 0, "objects": 0, "single": False}
    return {"bytes": int(blob.size or 0), "objects": 1, "single": True}


def get(url: str, local_file: str) -> None:
    bucket_name, key = split(url)
    os.makedirs(os.path.dirname(os.path.abspath(local_file)), exist_ok=True)
    _client().bucket(bucket_name).blob(key).download_to_filename(local_file)


def _same(path: str, blob: Any) -> bool:
    """The local file already holds this object (size and MD5): a second staging sends only what changed."""
    if not os.path.isfile(path) or os.path.getsize(path) != int(blob.size or -1) or not blob.md5_hash:
        return False
    h = hashlib.md5()  # noqa: S324 (Cloud Storage's own object checksum, not a security use)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return base64.b64encode(h.digest()).decode() == blob.md5_hash


def get_dir(url: str, local: str) -> int:
    bucket_name, prefix = split(url)
    client = _client()
    n = 0
    base = os.path.realpath(local)
    for blob in client.list_blobs(bucket_name, prefix=prefix + "/" if prefix else None):
        rel = blob.name[len(prefix) + 1:] if prefix else blob.name
        # Object names are the store's data: one that climbs out of the folder is refused, not followed.
        target = os.path.realpath(os.path.join(base, rel))
        if not rel or rel.endswith("/") or not target.startswith(base + os.sep):
            continue
        if _same(target, blob):
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        blob.download_to_filename(target)
        n += 1
    return n


def main(argv: List[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write(__doc__ or "")
        return 2
    cmd, args = argv[0], argv[1:]
    try:
        if cmd == "put-dir" and len(args) == 2:
            put_dir(args[0], args[1])
        elif cmd == "put" and len(args) == 1:
            put(args[0], sys.stdin.buffer.read())
        elif cmd == "cat" and len(args) == 1:
            data = cat(args[0])
            if data is None:
                sys.stderr.write("not found: %s\n" % args[0])
                return NOT_FOUND_EXIT
            sys.stdout.buffer.write(data)
        elif cmd == "get-dir" and len(args) == 2:
            get_dir(args[0], args[1])
        elif cmd == "get" and len(args) == 2:
            get(args[0], args[1])
        elif cmd == "stat" and len(args) == 1:
            sys.stdout.write(json.dumps(stat(args[0])))
        else:
            sys.stderr.write("usage: gcs.py put-dir|put|cat|get-dir …\n")
            return 2
    except Exception as e:  # noqa: BLE001 (one line for the warning event; the library's errors are many)
        sys.stderr.write("%s: %s\n" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ""))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
