"""Start the production topology on this machine: N API processes and M Celery workers sharing
PostgreSQL, Redis, an S3 API server (``moto_server``) and a Milvus server (``milvus-lite server``).

Everything binds to free ports of 127.0.0.1 and lives in one temp dir; PostgreSQL gets a fresh
database and Redis a database number of its own, both removed when the topology stops. Tests
use :func:`topology` as a context manager; ``python -m deploy.topology up`` runs it until Ctrl-C
and prints the URLs and the environment a client (or ``migrate-store --to``) needs.

The first API process starts alone: it migrates the schema and creates the vector collections,
which two processes racing on a fresh database would both try to do.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_HOST = "redis://127.0.0.1:6379"
# Databases this script may claim; it takes the first empty one (others use 0, 1 and 13).
REDIS_DBS = tuple(range(4, 12))
BUCKET = "eagle-topology"
START_TIMEOUT_S = 90.0


class TopologyError(RuntimeError):
    """A process of the topology did not start (its log tail is in the message)."""


@dataclass(slots=True)
class Process:
    """One child process and the log file it writes to."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, size: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        if not self.alive():
            return
        self.popen.terminate()
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=timeout)

    def rss_bytes(self) -> int:
        """Resident memory now (Linux ``/proc``; 0 where unavailable)."""
        try:
            status = Path(f"/proc/{self.popen.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def kill(self) -> None:
        """SIGKILL: what a crashed machine looks like to the rest of the topology."""
        if self.alive():
            self.popen.kill()
            self.popen.wait(timeout=20)


@dataclass(slots=True)
class Topology:
    """A running topology: the shared environment, the API URLs and every process."""

    root: Path
    env: dict[str, str]
    api_urls: list[str] = field(default_factory=list)
    apis: list[Process] = field(default_factory=list)
    workers: list[Process] = field(default_factory=list)
    services: list[Process] = field(default_factory=list)
    worker_metrics_urls: list[str] = field(default_factory=list)  # each worker's own /metrics

    def start_worker(self, name: str | None = None) -> Process:
        """Start one more Celery worker with the shared environment (and a metrics port of its
        own, ``worker.metrics_port``); waits until it is ready."""
        index = len(self.workers) + 1
        port = free_port()
        env = {**self.env, "EAGLE_WORKER_METRICS_PORT": str(port)}
        worker = _start_worker(self.root, env, name or f"worker{index}")
        self.workers.append(worker)
        self.worker_metrics_urls.append(f"http://127.0.0.1:{port}/metrics")
        return worker

    def logs(self) -> str:
        """The tails of every log, for assertion messages."""
        return "\n".join(f"--- {p.name} ---\n{p.tail(1500)}" for p in (*self.apis, *self.workers))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status) < 500
    except Exception:
        return False


def _wait(process: Process, ready: Callable[[], bool], timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.alive():
            raise TopologyError(
                f"{process.name} exited with {process.popen.returncode}:\n{process.tail()}"
            )
        if ready():
            return
        time.sleep(0.25)
    raise TopologyError(f"{process.name} did not start within {timeout:.0f} s:\n{process.tail()}")


def _spawn(root: Path, name: str, command: list[str], env: Mapping[str, str]) -> Process:
    log = root / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        popen = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}
        )
    return Process(name, popen, log)


# --- shared services ----------------------------------------------------------------------------


@contextmanager
def postgres_database(admin_url: str = PG_ADMIN_URL) -> Iterator[str]:
    """A fresh, uniquely named PostgreSQL database; dropped (forcefully) afterwards."""
    import psycopg

    name = f"eagle_topology_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base = admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def redis_database(host_url: str = REDIS_HOST) -> Iterator[str]:
    """Claim an empty Redis database number (a marker key says it is taken); flush it after."""
    import redis

    for number in REDIS_DBS:
        client = redis.Redis.from_url(f"{host_url}/{number}")
        # SET NX on an empty db: two topologies never claim the same number.
        if client.dbsize() == 0 and client.set("eagle-topology:claimed", "1", nx=True):
            try:
                yield f"{host_url}/{number}"
            finally:
                client.flushdb()
                client.close()
            return
        client.close()
    raise TopologyError(f"no empty Redis database among {REDIS_DBS}")


@contextmanager
def s3_server(root: Path) -> Iterator[tuple[str, Process]]:
    """``moto_server`` with the topology's bucket created; yields its endpoint URL."""
    import boto3

    port = free_port()
    process = _spawn(
        root, "moto", [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], {}
    )
    try:
        _wait(process, lambda: _port_open(port))
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="topology",
            aws_secret_access_key="topology-secret",
        ).create_bucket(Bucket=BUCKET)
        yield endpoint, process
    finally:
        process.stop()


@contextmanager
def milvus_server(root: Path, data_dir: Path | None = None) -> Iterator[tuple[str, Process]]:
    """``milvus-lite server``: a gRPC Milvus reached by URI like a remote deployment. Its data
    is ``data_dir`` (default ``root/milvus``): an embedded store's ``milvus.db`` serves as is."""
    port = free_port()
    command = [
        str(BIN / "milvus-lite"),
        "server",
        "--data-dir",
        str(data_dir or root / "milvus"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    process = _spawn(root, "milvus", command, {})
    try:
        _wait(process, lambda: _port_open(port))
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.stop()


def production_env(
    *, database_url: str, redis_url: str, s3_endpoint: str, milvus_uri: str, root: Path
) -> dict[str, str]:
    """The environment every process of the topology shares (the ``production`` profile)."""
    return {
        "EAGLE_RAG_PROFILE": "production",
        "EAGLE_DATA_DIR": str(root / "data"),
        "EAGLE_DATABASE_URL": database_url,
        "MILVUS_URI": milvus_uri,
        "S3_ENDPOINT_URL": s3_endpoint,
        "S3_BUCKET": BUCKET,
        "S3_REGION": "us-east-1",
        "S3_ACCESS_KEY_ID": "topology",
        "S3_SECRET_ACCESS_KEY": "topology-secret",
        "EAGLE_BROKER_URL": redis_url,
        "EAGLE_REDIS_URL": redis_url,
        "EAGLE_ENCODER_MODE": "deterministic",
        "PLUGIN_NAMESPACE": "core",
    }


# --- Eagle-RAG processes ------------------------------------------------------------------------


def _start_api(root: Path, env: Mapping[str, str], name: str) -> tuple[Process, str]:
    port = free_port()
    command = [
        sys.executable,
        "-c",
        "from eagle_rag.launcher import main; main()",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    # Each process keeps its own data dir (audit JSONL); the stores themselves are shared.
    process = _spawn(root, name, command, {**env, "EAGLE_DATA_DIR": str(root / name)})
    url = f"http://127.0.0.1:{port}"
    _wait(process, lambda: _http_ok(url + "/health"))
    return process, url


def _start_worker(root: Path, env: Mapping[str, str], name: str) -> Process:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "eagle_rag.ingest.worker",
        "worker",
        "--pool=solo",
        "--queues=eagle_rag_ingest",
        "--loglevel=INFO",
        f"--hostname={name}@%h",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
    ]
    process = _spawn(root, name, command, {**env, "EAGLE_DATA_DIR": str(root / name)})
    _wait(process, lambda: " ready." in process.tail(20000))
    return process


@contextmanager
def topology(
    *,
    apis: int = 2,
    workers: int = 2,
    extra_env: Mapping[str, str] | None = None,
    root: Path | None = None,
) -> Iterator[Topology]:
    """Start the whole topology; stop every process and remove its data on exit."""
    owned = root is None
    base = root or Path(tempfile.mkdtemp(prefix="eagle-topology-"))
    try:
        with (
            postgres_database() as database_url,
            redis_database() as redis_url,
            s3_server(base) as (s3_endpoint, moto),
            milvus_server(base) as (milvus_uri, milvus),
        ):
            env = production_env(
                database_url=database_url,
                redis_url=redis_url,
                s3_endpoint=s3_endpoint,
                milvus_uri=milvus_uri,
                root=base,
            )
            env.update(extra_env or {})
            running = Topology(base, env, services=[moto, milvus])
            try:
                for index in range(apis):
                    process, url = _start_api(base, env, f"api{index + 1}")
                    running.apis.append(process)
                    running.api_urls.append(url)
                for _ in range(workers):
                    running.start_worker()
                yield running
            finally:
                for process in (*running.workers, *running.apis):
                    process.stop()
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("command", choices=["up"])
    parser.add_argument("--apis", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    with topology(apis=args.apis, workers=args.workers) as running:
        urls = {"api_urls": running.api_urls, "worker_metrics_urls": running.worker_metrics_urls}
        print(json.dumps({**urls, "env": running.env}, indent=2))
        print("running; Ctrl-C stops every process", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while all(p.alive() for p in (*running.apis, *running.workers)):
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
