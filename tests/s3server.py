"""A real S3 server for the tests: moto's server (moto[server]) in a subprocess on a free port.

moto answers `If-None-Match: *` PUTs with 412 when the key exists, but checks and stores in
two steps on its request threads, so two racing conditional PUTs could both succeed, which S3
itself never allows. Run as a script, this module serves moto's app with conditional PUTs
serialized (everything else stays concurrent), so the server keeps S3's guarantee and the
race tests test tarn, not moto.

    server = S3Server.start()      # endpoint, bucket, credentials
    server.storage_options         # for tarn.Catalog / tarn.load_table
    server.env                     # the same as AWS_* environment variables
    server.stop()
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass

BUCKET = "tarn-test"
ACCESS_KEY = "tarn-test-key"
SECRET_KEY = "tarn-test-secret"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class S3Server:
    process: subprocess.Popen
    endpoint: str
    bucket: str = BUCKET

    @classmethod
    def start(cls, timeout: float = 30.0) -> "S3Server":
        port = free_port()
        log = tempfile.TemporaryFile()  # the request log: a pipe nobody reads would fill and block the server
        process = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(port)],
                                   stdout=subprocess.DEVNULL, stderr=log)
        server = cls(process, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"moto server exited: {log.read().decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    server.stop()
                    raise RuntimeError("moto server did not start")
                time.sleep(0.05)
        server.client().create_bucket(Bucket=server.bucket)
        return server

    @property
    def storage_options(self) -> dict[str, str]:
        return {"s3.endpoint": self.endpoint, "s3.access-key": ACCESS_KEY,
                "s3.secret-key": SECRET_KEY, "s3.region": REGION}

    @property
    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}

    def new_prefix(self) -> str:
        """A fresh `s3://bucket/<random>` location."""
        return f"s3://{self.bucket}/{uuid.uuid4().hex[:12]}"

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def keys(self, prefix: str) -> list[str]:
        """Every key under `s3://bucket/<prefix>`."""
        prefix = prefix.removeprefix("s3://").removeprefix(f"{self.bucket}/")
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def serialize_conditional_puts(app):
    """WSGI middleware: one `If-None-Match` request at a time (check and store as one step)."""
    lock = threading.Lock()

    def wrapped(environ, start_response):
        if environ.get("HTTP_IF_NONE_MATCH") is None:
            return app(environ, start_response)
        with lock:
            return list(app(environ, start_response))

    return wrapped


def serve(port: int) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    app = serialize_conditional_puts(DomainDispatcherApplication(create_backend_app))
    run_simple("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
