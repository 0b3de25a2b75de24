"""Servers on loopback for the URL tests: nginx serving a directory (Range requests), and
s3s-fs, an S3 server that checks SigV4 signatures (what the Rust tests start, tests/src/s3.rs).
Outside CI a missing server skips its tests; under ``CI=true`` it fails them."""

import os
import shutil
import socket
import subprocess
import time

import pytest

ACCESS_KEY = "npyserdetest"
SECRET_KEY = "npyserdetestsecret"
BUCKET = "npy"


def find(names):
    for n in names:
        path = shutil.which(n) or (n if os.path.isfile(n) else None)
        if path:
            return path
    if os.environ.get("CI") == "true":
        pytest.fail(f"{names[0]} is not installed (CI=true)")
    pytest.skip(f"{names[0]} is not installed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(proc, port, what):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited: {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    proc.kill()
    pytest.fail(f"{what} did not listen on {port}")


class Nginx:
    """nginx serving `root` at http://127.0.0.1:PORT/."""

    def __init__(self, root, work):
        binary = find(["nginx", "/usr/sbin/nginx"])
        self.port = free_port()
        work.mkdir(parents=True, exist_ok=True)
        conf = work / "nginx.conf"
        conf.write_text(
            "daemon off;\nmaster_process off;\nworker_processes 1;\n"
            f"pid {work}/nginx.pid;\nerror_log {work}/error.log;\n"
            "events { worker_connections 64; }\n"
            f"http {{ access_log off; client_body_temp_path {work}/body;\n"
            f"  proxy_temp_path {work}/proxy; fastcgi_temp_path {work}/fastcgi;\n"
            f"  uwsgi_temp_path {work}/uwsgi; scgi_temp_path {work}/scgi;\n"
            f"  server {{ listen 127.0.0.1:{self.port}; root {root}; }}\n}}\n")
        self.proc = subprocess.Popen([binary, "-p", str(work), "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.proc, self.port, "nginx")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}/{path}"

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class S3:
    """s3s-fs with bucket `npy` in `root`; `env` is what a client needs."""

    def __init__(self, root):
        binary = find(["s3s-fs", os.path.expanduser("~/.cargo/bin/s3s-fs")])
        (root / BUCKET).mkdir(parents=True, exist_ok=True)
        self.root = root
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", str(self.port), "--access-key",
             ACCESS_KEY, "--secret-key", SECRET_KEY, str(root)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.proc, self.port, "s3s-fs")
        self.env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}",
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    def put(self, key, data):
        path = self.root / BUCKET / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return f"s3://{BUCKET}/{key}"

    def stop(self):
        self.proc.kill()
        self.proc.wait()
