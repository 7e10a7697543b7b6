"""An S3 for the tests that move checkpoints and data through s3:// (stdlib only): moto's server (the stand-in
for AWS) and the real `aws` CLI, both from the venv scripts/ensure-moto.sh caches outside the clone."""

import os
import socket
import subprocess
import time

from tests.helpers import REPO_DIR


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class MotoS3:
    """Started on a free loopback port; `stop()` ends it. `bin` holds `aws` and `moto_server`."""

    def __init__(self) -> None:
        venv = subprocess.run(["bash", os.path.join(REPO_DIR, "scripts", "ensure-moto.sh")], stdout=subprocess.PIPE,
                              universal_newlines=True, check=True, timeout=900).stdout.strip()
        self.venv = venv
        self.bin = os.path.join(venv, "bin")
        self.port = free_port()
        self.endpoint = "http://127.0.0.1:%d" % self.port
        self.proc = subprocess.Popen([os.path.join(self.bin, "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.time() + 30
        while time.time() < end:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("moto_server did not listen on %s within 30 s" % self.endpoint)

    def env(self, path_first: str = "") -> dict:
        """The environment for `aws` against this S3: test credentials, its endpoint, `path_first` (default: the
        venv's bin) ahead of PATH."""
        return dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
                    AWS_ENDPOINT_URL=self.endpoint, PATH=(path_first or self.bin) + os.pathsep + os.environ["PATH"])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
