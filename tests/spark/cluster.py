"""A real Spark standalone cluster on 127.0.0.1: one master and workers started from the pyspark package's own
launcher (``bin/spark-class``), each worker with one core and its own work directory, so executors run in
processes and directories other than the driver's. Used by the cluster tests and ``benchmarks/spark.py``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

#: how long a daemon may take to come up (a JVM on a loaded 2-core machine)
START_TIMEOUT = 90.0
_MASTER_URL = re.compile(r"Starting Spark master at (spark://[0-9.]+:[0-9]+)")
_REGISTERED = "Successfully registered with master"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path
    work_dir: Path


@dataclass
class StandaloneCluster:
    """A master and its workers (processes in their own process groups, stopped by :meth:`stop`)."""

    root: Path
    env: dict[str, str]
    worker_memory: str = "1g"
    master_url: str = ""
    master: subprocess.Popen[bytes] | None = None
    workers: list[Worker] = field(default_factory=list)

    def _launch(self, log: Path, *args: str) -> subprocess.Popen[bytes]:
        with log.open("wb") as out:
            return subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.root,
                start_new_session=True,  # its own process group: stopping it stops its executors too
            )

    def start(self, workers: int = 2) -> StandaloneCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        log = self.root / "master.log"
        self.master = self._launch(
            log, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"
        )
        self.master_url = _wait_for(log, self.master, lambda text: _group(_MASTER_URL.search(text)))
        for worker in [self.start_worker(wait=False) for _ in range(workers)]:  # the JVMs start side by side
            _wait_for(worker.log, worker.process, lambda text: _REGISTERED if _REGISTERED in text else None)
        return self

    def start_worker(self, wait: bool = True) -> Worker:
        n = len(self.workers)
        work_dir = self.root / f"worker{n}"
        work_dir.mkdir(exist_ok=True)
        log = self.root / f"worker{n}-{time.monotonic_ns()}.log"
        args = ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--cores", "1"]
        args += ["--memory", self.worker_memory, "--work-dir", str(work_dir)]
        process = self._launch(log, "org.apache.spark.deploy.worker.Worker", *args, self.master_url)
        worker = Worker(process, log, work_dir)
        self.workers.append(worker)
        if wait:
            _wait_for(log, process, lambda text: _REGISTERED if _REGISTERED in text else None)
        return worker

    def kill_worker(self, worker: Worker) -> None:
        """SIGKILL the worker and its executors (its process group): a machine lost mid-job."""
        _signal_group(worker.process, signal.SIGKILL)
        worker.process.wait(timeout=30)

    def stop(self) -> None:
        processes = [w.process for w in self.workers] + ([self.master] if self.master else [])
        for process in processes:
            _signal_group(process, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait(timeout=20)


def cluster_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The daemons' (and so the executors') environment: this interpreter and this checkout for the Python
    workers, small daemon heaps, 127.0.0.1 only, plus ``extra`` (a bucket's endpoint and credentials)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
        }
    )
    env.update(extra or {})
    return env


def _group(match: re.Match[str] | None) -> str | None:
    return match.group(1) if match else None


def _wait_for(log: Path, process: subprocess.Popen[bytes], found: object, timeout: float = START_TIMEOUT) -> str:
    """What ``found`` reads in the daemon's log once it is there; RuntimeError if it dies or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        value = found(text)  # type: ignore[operator]
        if value:
            return str(value)
        if process.poll() is not None:
            raise RuntimeError(f"a Spark daemon exited ({process.returncode}) before it was ready:\n{text[-2000:]}")
        time.sleep(0.2)
    raise RuntimeError(
        f"a Spark daemon was not ready within {timeout:.0f} s:\n{log.read_text(errors='replace')[-2000:]}"
    )


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)


@dataclass
class ConnectServer:
    """A Spark Connect server (the class ``start-connect-server.sh`` runs) on 127.0.0.1, its own master."""

    process: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        _signal_group(self.process, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            _signal_group(self.process, signal.SIGKILL)
            self.process.wait(timeout=20)


def start_connect_server(root: Path, env: dict[str, str], master: str = "local[2]") -> ConnectServer:
    """``spark-submit --class …SparkConnectServer`` (the jar ships in pyspark's ``jars/``), on a free port."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root.mkdir(parents=True, exist_ok=True)
    log = root / "connect.log"
    args = ["org.apache.spark.deploy.SparkSubmit", "--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    args += ["--master", master, "--conf", f"spark.connect.grpc.binding.port={port}"]
    args += ["--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.ui.enabled=false"]
    args += ["--driver-memory", "1g", "spark-internal"]
    env = {k: v for k, v in env.items() if k != "SPARK_DAEMON_MEMORY"}  # a driver, not a daemon
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
            start_new_session=True,
        )
    server = ConnectServer(process, f"sc://127.0.0.1:{port}")
    try:
        _wait_for(log, process, lambda text: "started at" if "Spark Connect server started" in text else None)
    except BaseException:
        server.stop()
        raise
    return server
