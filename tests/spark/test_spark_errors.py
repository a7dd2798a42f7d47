"""What a user reads when Spark fails in a way tarn can name (tarn/spark/errors.py)."""

from __future__ import annotations

import subprocess
import sys

import tarn
from tarn.spark.errors import PythonWorkerTimeout, readable

CONNECT_BACK = ("An error occurred while calling o87.awaitTermination.\n"
                ": org.apache.spark.SparkException: Python worker failed to connect back.\n"
                "\tat org.apache.spark.api.python.PythonWorkerFactory.createSimpleWorker(PythonWorkerFactory.scala:252)\n"
                "Caused by: java.net.SocketTimeoutException: Timed out while waiting for the Python worker to connect "
                "back after 10000 ms\n" + "\tat some.jvm.Frame(Frame.java:1)\n" * 400)


class StreamingQueryFailed(Exception):
    """Stands for the Spark exception class pyspark raises."""


def test_a_worker_that_did_not_connect_back_is_named_with_its_fix():
    error = readable(StreamingQueryFailed(CONNECT_BACK))
    assert isinstance(error, PythonWorkerTimeout) and isinstance(error, tarn.TarnError)
    assert isinstance(error, StreamingQueryFailed)  # `except` clauses for Spark's class still catch it
    text = str(error)
    assert text.splitlines()[0].startswith("Spark's Python worker did not connect back in time")
    assert "fewer Spark jobs or streaming queries" in text and "spark.python.worker.reuse" in text
    assert len(text.splitlines()) == 2 and "SocketTimeoutException" not in text  # no JVM stack
    assert error.spark_error.args[0] == CONNECT_BACK


def test_other_spark_errors_are_left_alone():
    error = StreamingQueryFailed("org.apache.spark.SparkException: Job aborted")
    assert readable(error) is error


def test_a_spark_worker_imports_only_what_the_data_source_needs():
    """The module every Spark Python worker imports loads no catalog, SQL parser or helper."""
    code = ("import sys, pyspark_tarn; "
            "print(sorted(m for m in sys.modules if m.startswith(('tarn.catalog', 'sqlglot', 'tarn.spark.'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for heavy in ("sqlglot", "tarn.catalog.creation", "tarn.spark.attach", "tarn.spark.statements",
                  "tarn.spark.dml", "tarn.spark.maintenance", "tarn.spark.batch_write", "tarn.spark.stream_read"):
        assert f"'{heavy}'" not in loaded, heavy
