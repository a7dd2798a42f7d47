"""A Spark standalone cluster on this machine (a master, two workers, each executor its own JVM
and Python workers) whose only shared storage is the S3 server: a primary-key write, a
streaming run, a distributed compaction and a read back, checked through Spark and tarn.

The job runs in its own driver process (tests/spark/cluster_job.py): the shared local session
of tests/spark/conftest.py cannot coexist with a second SparkContext in this process. The
workers' environment carries no AWS settings: the storage options reach the executors as data
source options, so this also checks that they travel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import tarn
from tests.s3server import free_port

pytestmark = [pytest.mark.spark, pytest.mark.s3]
JOB = Path(__file__).with_name("cluster_job.py")


def spark_class() -> str:
    import pyspark
    return os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")


def clean_env(**extra) -> dict:
    """This environment without AWS settings (only storage options may carry them)."""
    import pyspark
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(SPARK_HOME=os.path.dirname(pyspark.__file__), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, **extra)
    return env


class Cluster:
    """Master + workers started with pyspark's bin/spark-class."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.port, self.ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []

    def launch(self, name: str, *args: str) -> None:
        log = open(self.workdir / f"{name}.log", "wb")
        self.processes.append(subprocess.Popen([spark_class(), *args], env=clean_env(SPARK_DAEMON_MEMORY="512m"),
                                               stdout=log, stderr=subprocess.STDOUT))

    def start(self, workers: int = 2) -> "Cluster":
        self.launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui))
        for i in range(workers):
            work = self.workdir / f"worker-{i}"
            work.mkdir()
            self.launch(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--cores", "1", "--memory", "1536m", "--webui-port", str(free_port()),
                        "--work-dir", str(work), self.url)
        self.wait_for_workers(workers)
        return self

    def wait_for_workers(self, wanted: int, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=2) as response:
                    state = json.load(response)
                if sum(w.get("state") == "ALIVE" for w in state.get("workers", [])) >= wanted:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{wanted} Spark workers did not register: {self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted(self.workdir.glob("*.log")))

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def cluster(tmp_path):
    running = Cluster(tmp_path).start()
    yield running
    running.stop()


def test_cluster_sharing_only_s3(cluster, s3_server, tmp_path):
    warehouse = s3_server.new_prefix()
    storage = s3_server.storage_options
    job = subprocess.run([sys.executable, str(JOB), cluster.url, warehouse, json.dumps(storage),
                          str(tmp_path / "checkpoint")],
                         env=clean_env(), cwd=str(Path(__file__).parents[2]), capture_output=True,
                         text=True, timeout=600)
    lines = [line for line in job.stdout.splitlines() if line.startswith("RESULT ")]
    assert job.returncode == 0 and lines, f"job failed:\n{job.stderr[-4000:]}\n{cluster.logs()}"
    seen = json.loads(lines[-1][len("RESULT "):])
    print("cluster job seconds:", seen["seconds"])

    assert seen["executors"] == 2
    assert seen["pk_count"] == 1000 - 10 + 1 and seen["pk_updated"] == 100 - 3
    assert seen["pk_sample"] == [[1, "u2"], [5, "updated"], [500, "v500"], [980, "merged"], [2000, "new"]]
    assert seen["dst_ids"] == list(range(80))
    assert seen["dst_amount"] == sum(i * 10 for i in range(80))

    # the same, read by tarn from S3 with no Spark involved
    pk = tarn.load_table(f"{warehouse}/db.db/pk", storage)
    latest = pk.latest_snapshot()
    assert latest.commit_kind == "COMPACT" and latest.id == seen["compaction_snapshot"]
    levels = {f.level for split in pk.scan().plan() for f in split.files}
    assert len(levels) == 1 and 0 not in levels  # one top-level run per bucket after the full compaction
    rows = {r["id"]: r["v"] for r in pk.scan().to_arrow().to_pylist()}
    assert len(rows) == 991 and rows[5] == "updated" and rows[989] == "v989" and 999 not in rows
    dst = tarn.load_table(f"{warehouse}/db.db/dst", storage)
    assert sorted(dst.scan().to_arrow().column("id").to_pylist()) == list(range(80))
    assert [s.commit_kind for s in dst.snapshots()] == ["APPEND", "APPEND"]
    assert not any(k.startswith("s3.") for k in pk.schema().options)  # storage options are no table options
