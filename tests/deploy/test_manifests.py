"""deploy/docker-compose.yml and deploy/k8s/ cannot run here (no container engine, no cluster):
they are checked for consistency, and their environment is loaded as real settings."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from eagle_rag.ingest.celery_app import make_celery
from eagle_rag.settings import load_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "k8s"
SERVICES = {"etcd", "minio", "milvus", "postgres", "redis", "bucket", "migrate", "api", "worker"}
ONE_SHOT = {"bucket", "migrate"}
_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?::?(?P<op>[-?])(?P<arg>[^}]*))?\}")


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    return data


def _resolve(value: str) -> str:
    """Compose interpolation with stand-in values (what a filled-in .env gives)."""

    def one(match: re.Match[str]) -> str:
        if match["op"] == "-":
            return match["arg"]  # the default an unset variable takes
        return f"test-{match['name'].lower()}"  # a required one: what .env would hold

    return _VARIABLE.sub(one, value).replace("$$", "$")


def _production(env: dict[str, str]) -> None:
    settings = load_settings({k: _resolve(str(v)) for k, v in env.items()})
    assert settings.database.url.startswith("postgresql+psycopg://")
    assert settings.milvus.uri.startswith("http://")
    assert settings.storage.backend == "s3" and settings.storage.s3.endpoint_url
    assert settings.queue.backend == "celery"
    assert settings.telemetry.log_format == "json"
    assert settings.telemetry.plugin_audit_redis_enabled


def test_compose_has_every_service_with_healthchecks_and_restarts() -> None:
    services = _compose()["services"]
    assert set(services) == SERVICES
    for name, service in services.items():
        assert "image" in service, name
        if name not in ONE_SHOT:
            assert service["healthcheck"]["test"], name
            assert service["restart"] == "unless-stopped", name
    assert services["milvus"]["image"].startswith("milvusdb/milvus:v2.6")
    assert services["api"]["deploy"]["replicas"] == services["worker"]["deploy"]["replicas"] == 2
    for name in ("api", "worker"):
        assert services[name]["deploy"]["resources"]["limits"]["memory"], name


def test_compose_dependencies_and_volumes_are_consistent() -> None:
    compose = _compose()
    services = compose["services"]
    declared = set(compose["volumes"])
    used = set()
    for name, service in services.items():
        for target, rule in service.get("depends_on", {}).items():
            assert target in services, (name, target)
            if rule["condition"] == "service_healthy":
                assert "healthcheck" in services[target], (name, target)
            if rule["condition"] == "service_completed_successfully":
                assert target in ONE_SHOT, (name, target)
        for mount in service.get("volumes", []):
            source = mount.split(":", 1)[0]
            assert source in declared, (name, source)
            used.add(source)
    assert used == declared
    # The replicas wait for the one-shot migration, so two processes never migrate at once.
    for name in ("api", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )


def test_compose_environment_is_valid_production_settings() -> None:
    services = _compose()["services"]
    for name in ("migrate", "api", "worker"):
        _production(services[name]["environment"])
    env = services["api"]["environment"]
    assert env["MILVUS_URI"] == "http://milvus:19530"
    assert env["S3_ENDPOINT_URL"] == "http://minio:9000"
    assert "@postgres:5432/" in env["EAGLE_DATABASE_URL"]
    assert env["EAGLE_BROKER_URL"].startswith("redis://redis:6379/")


def test_worker_commands_name_the_queue_the_app_routes_to() -> None:
    queue = make_celery("memory://").conf.task_default_queue
    compose_cmd = _compose()["services"]["worker"]["command"]
    k8s_cmd = _k8s("Deployment", "eagle-rag-worker")["spec"]["template"]["spec"]["containers"][0][
        "command"
    ]
    for command in (compose_cmd, k8s_cmd):
        assert command[:4] == ["celery", "-A", "eagle_rag.ingest.worker", "worker"]
        assert f"--queues={queue}" in command


def test_workers_serve_their_metrics_where_the_scrape_config_looks() -> None:
    compose = _compose()["services"]["worker"]["environment"]
    settings = load_settings({k: _resolve(str(v)) for k, v in compose.items()})
    assert settings.worker.metrics_port == 9464 and settings.worker.metrics_host == "0.0.0.0"
    pod = _k8s("Deployment", "eagle-rag-worker")["spec"]["template"]
    container = pod["spec"]["containers"][0]
    env = {item["name"]: item["value"] for item in container["env"]}
    port = load_settings(env).worker.metrics_port
    assert {"name": "metrics", "containerPort": port} in container["ports"]
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(port)


def _documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def _k8s(kind: str, name: str) -> dict[str, Any]:
    return next(d for d in _documents() if d["kind"] == kind and d["metadata"]["name"] == name)


def test_every_manifest_has_api_version_kind_metadata_and_namespace() -> None:
    for doc in _documents():
        assert doc["apiVersion"] and doc["kind"], doc
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", doc["metadata"]["name"])
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "eagle-rag", doc["metadata"]


def test_workloads_have_resources_probes_and_matching_selectors() -> None:
    names = {(d["kind"], d["metadata"]["name"]) for d in _documents()}
    for doc in _documents():
        if doc["kind"] not in ("Deployment", "Job"):
            continue
        pod = doc["spec"]["template"]
        if doc["kind"] == "Deployment":
            selector = doc["spec"]["selector"]["matchLabels"]
            assert selector.items() <= pod["metadata"]["labels"].items()
        for container in pod["spec"]["containers"]:
            resources = container["resources"]
            assert resources["requests"]["cpu"] and resources["limits"]["memory"]
            if doc["kind"] == "Deployment":
                assert container["readinessProbe"] and container["livenessProbe"]
            for source in container["envFrom"]:
                kind, ref = next(iter(source.items()))
                wanted = "ConfigMap" if kind == "configMapRef" else "Secret"
                assert (wanted, ref["name"]) in names
    service = _k8s("Service", "eagle-rag-api")
    api = _k8s("Deployment", "eagle-rag-api")
    assert service["spec"]["selector"].items() <= (
        api["spec"]["template"]["metadata"]["labels"].items()
    )


def test_k8s_environment_is_valid_production_settings() -> None:
    env = {**_k8s("ConfigMap", "eagle-rag-config")["data"]}
    env.update(_k8s("Secret", "eagle-rag-secrets")["stringData"])
    _production(env)


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_kustomize_renders_the_manifests() -> None:
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(K8S)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    kinds = [d["kind"] for d in yaml.safe_load_all(rendered) if d]
    assert sorted(kinds) == sorted(d["kind"] for d in _documents())


def test_the_one_shot_migration_applies_pending_migrations_before_checking() -> None:
    # `doctor` only looks; the migration step must run `db upgrade` first, in both deployments.
    job = yaml.safe_load((K8S / "migrate-job.yaml").read_text())
    k8s_command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    compose_command = _compose()["services"]["migrate"]["command"]
    for command in (k8s_command, compose_command):
        script = command[-1]
        assert command[:2] == ["sh", "-c"]
        assert script.index("eagle-rag db upgrade") < script.index("eagle-rag doctor")
        assert "&&" in script  # a failed upgrade stops the job before the replicas roll
