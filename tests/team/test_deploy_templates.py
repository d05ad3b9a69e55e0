"""The deployment templates in ``deploy/``, checked against Prefect itself.

The work-pool base job templates are sent to a real ``prefect server start`` on PostgreSQL (the
``team_server`` fixture): the server validates a template when a pool is created (every placeholder
in ``job_configuration`` must be a declared variable; defaults must satisfy the variables' JSON
schema) and validates a deployment's job variables against the pool's schema. The Kubernetes job is
then rendered with Prefect's own ``BaseJobConfiguration.from_template_and_values`` (what a worker
does before it submits a flow run), so the manifest a cluster would receive is checked without a
cluster. ``compose.yaml`` and ``Dockerfile.worker`` are checked structurally: no Docker daemon runs
here (``docker compose config`` or ``docker-compose config`` runs where a compose CLI exists).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.team_server import TeamServer

pytestmark = [pytest.mark.prefect, pytest.mark.postgres]

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
PROCESS_TEMPLATE = DEPLOY / "process-job-template.json"
K8S_TEMPLATE = DEPLOY / "k8s-gpu-job-template.json"


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _prefect_cli(server: TeamServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prefect", *args], capture_output=True, text=True,
                          env=server.client_env(), timeout=180, cwd=REPO)


def _rejected(exc: BaseException) -> int | None:
    """The HTTP status of a refused client call (Prefect wraps httpx's error)."""
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def test_process_template_creates_the_cpu_and_gpu_pools(team_server: TeamServer) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessJobConfiguration

    template = _load(PROCESS_TEMPLATE)
    # as a user does it: Prefect's CLI with the file
    created = _prefect_cli(team_server, "work-pool", "create", "cpu", "--type", "process",
                           "--base-job-template", str(PROCESS_TEMPLATE))
    assert created.returncode == 0, created.stdout + created.stderr
    with team_server.settings(), get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name="gpu", type="process", base_job_template=template,
                                               concurrency_limit=1))
        pools = {pool.name: pool for pool in client.read_work_pools()}
    assert {"cpu", "gpu"} <= set(pools)
    for name in ("cpu", "gpu"):
        assert pools[name].type == "process"
        assert pools[name].base_job_template == template  # stored as sent: nothing dropped or rewritten
    assert pools["gpu"].concurrency_limit == 1

    # Prefect's own CLI client lists them (FastAPI 0.151-0.154 broke exactly this, ENVIRONMENT.md)
    listed = _prefect_cli(team_server, "work-pool", "ls")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "cpu" in listed.stdout and "gpu" in listed.stdout

    # what the process worker runs a flow with: heartbeats on by default, a deployment's env added
    with team_server.settings():  # the client resolves block references in the template (there are none)
        config: ProcessJobConfiguration = asyncio.run(ProcessJobConfiguration.from_template_and_values(
            pools["gpu"].base_job_template, {"env": {"ASSAY_EXAMPLE": "1"}}))
    assert config.env == {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30", "ASSAY_EXAMPLE": "1"}
    assert config.stream_output is True


def test_process_template_is_prefects_default_plus_heartbeats() -> None:
    """Derived from ``prefect work-pool get-default-base-job-template --type process`` (Prefect's own
    ProcessWorker), with only the env default added: a new Prefect release that changes the default
    shows up here."""
    from prefect.workers.process import ProcessWorker

    default = ProcessWorker.get_default_base_job_template()
    ours = _load(PROCESS_TEMPLATE)
    env_default = ours["variables"]["properties"]["env"].pop("default")
    assert env_default == {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30"}
    assert ours == json.loads(json.dumps(default))


async def _render_gpu_job(template: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The Kubernetes job manifest a worker would submit, rendered by Prefect's templating (call it
    with a Prefect API configured: the client resolves block and variable references)."""
    from prefect.workers.base import BaseJobConfiguration

    class KubernetesLikeConfiguration(BaseJobConfiguration):
        # the fields prefect-kubernetes' KubernetesWorkerJobConfiguration adds to the base class
        namespace: str
        job_manifest: dict[str, Any]

    config: KubernetesLikeConfiguration = await KubernetesLikeConfiguration.from_template_and_values(template, values)
    return config.job_manifest


def _pod_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = manifest["spec"]["template"]["spec"]
    return spec


def test_kubernetes_gpu_template_on_a_real_server(team_server: TeamServer) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    template = _load(K8S_TEMPLATE)
    variables = template["variables"]["properties"]
    assert {"gpu_count", "node_selector", "tolerations", "image"} <= set(variables)

    selector = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    tolerations = [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    job_variables = {"image": "registry.example.org/assay-worker:cuda", "gpu_count": 2,
                     "node_selector": selector, "tolerations": tolerations}
    with team_server.settings(), get_client(sync_client=True) as client:
        # a kubernetes-type pool needs no kubernetes worker on the server
        client.create_work_pool(WorkPoolCreate(name="gpu-k8s", type="kubernetes", base_job_template=template))
        stored = client.read_work_pool("gpu-k8s").base_job_template
        assert stored == template
        flow_id = client.create_flow_from_name("assay-template-check")
        # the server checks a deployment's job variables against the pool's variables schema
        accepted = client.create_deployment(flow_id, "gpu-two", work_pool_name="gpu-k8s", job_variables=job_variables)
        assert client.read_deployment(accepted).job_variables == job_variables
        for bad in ({"gpu_count": 0}, {"gpu_count": "two"}, {"node_selector": {"zone": 1}},
                    {"tolerations": [{"key": "gpu", "operator": "Sometimes"}]}):
            with pytest.raises(Exception) as refused:
                client.create_deployment(flow_id, f"bad-{len(str(bad))}", work_pool_name="gpu-k8s", job_variables=bad)
            assert _rejected(refused.value) == 409 or _rejected(refused.value) == 422, (bad, refused.value)

        # and refuses a template whose job uses a variable it does not declare
        undeclared = copy.deepcopy(template)
        del undeclared["variables"]["properties"]["gpu_count"]
        with pytest.raises(Exception) as refused_template:
            client.create_work_pool(WorkPoolCreate(name="gpu-k8s-broken", type="kubernetes",
                                                   base_job_template=undeclared))
        assert _rejected(refused_template.value) == 422, refused_template.value

    with team_server.settings():
        manifest = asyncio.run(_render_gpu_job(stored, job_variables))
        defaults = _pod_spec(asyncio.run(_render_gpu_job(stored, {"image": "assay-worker:cuda"})))
    pod = _pod_spec(manifest)
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert container["image"] == job_variables["image"]
    assert pod["nodeSelector"] == selector
    assert pod["tolerations"] == tolerations
    assert container["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == "30"
    assert manifest["metadata"]["namespace"] == "assay"
    # unset optional limits are dropped, not sent as null
    assert "cpu" not in container["resources"]["limits"]

    # with only the required image: one GPU, the nvidia.com/gpu taint tolerated, no selector
    assert defaults["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert defaults["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert defaults["nodeSelector"] == {}


def test_templates_carry_no_credentials() -> None:
    """A base job template is stored in the Prefect database and readable by every API client: no
    secret may be written into one (workers take them from their own environment)."""
    for path in (PROCESS_TEMPLATE, K8S_TEMPLATE):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(?i)password|auth_string|api_key|://[^/\s\"]+:[^@\s\"]+@", text), path


def test_compose_file_binds_localhost_and_takes_credentials_from_the_environment() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert {"postgres", "prefect"} <= set(services)
    for name, service in services.items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)

    prefect = services["prefect"]
    assert prefect["image"] == f"prefecthq/prefect:{version('prefect')}-python3.11"  # the pinned Prefect
    env = prefect["environment"]
    assert env["PREFECT_SERVER_API_AUTH_STRING"].startswith("${PREFECT_SERVER_API_AUTH_STRING:?")
    db_url = env["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert db_url.startswith("postgresql+asyncpg://assay:${ASSAY_PG_PASSWORD:?")
    assert db_url.endswith("@postgres:5432/prefect")  # its own database, not the catalog's
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith("${ASSAY_PG_PASSWORD:?")
    assert prefect["depends_on"]["postgres"]["condition"] == "service_healthy"
    # the server's own database is created by the init script the postgres service mounts
    mounts = [str(volume) for volume in services["postgres"]["volumes"]]
    assert any(volume.startswith("./initdb:/docker-entrypoint-initdb.d") for volume in mounts)
    init_sql = " ".join(p.read_text(encoding="utf-8") for p in sorted((DEPLOY / "initdb").glob("*.sql")))
    assert re.search(r"CREATE DATABASE prefect\b", init_sql)

    # no literal secret anywhere: every credential is an interpolation
    for key, value in {**env, **services["postgres"]["environment"]}.items():
        if re.search(r"PASSWORD|AUTH_STRING", key):
            assert str(value).startswith("${"), key


def _compose_cli() -> list[str] | None:
    """``docker compose`` (the v2 plugin) or ``docker-compose``, whichever is installed; neither
    needs a daemon for ``config``."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True,
                                                 timeout=30).returncode == 0:
        return ["docker", "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


def test_compose_file_passes_compose_config(tmp_path: Path) -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("no compose CLI (docker compose plugin or docker-compose) here")
    path = os.environ.get("PATH", "/usr/bin:/bin")
    env = {"PATH": path, "HOME": str(tmp_path), "ASSAY_PG_PASSWORD": "example",
           "PREFECT_SERVER_API_AUTH_STRING": "assay-admin:example"}
    done = subprocess.run([*cli, "-f", str(DEPLOY / "compose.yaml"), "config"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)["services"]["prefect"]["environment"]
    assert resolved["PREFECT_API_DATABASE_CONNECTION_URL"].endswith("assay:example@postgres:5432/prefect")
    # without the credentials in the environment compose refuses, naming the missing variable
    missing = subprocess.run([*cli, "-f", str(DEPLOY / "compose.yaml"), "config"], capture_output=True, text=True,
                             timeout=60, env={"PATH": path, "HOME": str(tmp_path)})
    assert missing.returncode != 0 and "ASSAY_PG_PASSWORD" in missing.stderr


def test_worker_image_builds_what_pyproject_packages() -> None:
    dockerfile = (DEPLOY / "Dockerfile.worker").read_text(encoding="utf-8")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    copied = set(re.findall(r"^COPY (\S+) \./\S*$", dockerfile, flags=re.MULTILINE))
    roots = set(pyproject["tool"]["setuptools"]["package-dir"].values())
    assert roots <= copied, f"package roots not copied into the image: {roots - copied}"
    assert all((REPO / root).is_dir() for root in roots)
    torch_pin = next(dep for dep in pyproject["project"]["dependencies"] if dep.startswith("torch"))
    assert f'"{torch_pin}"' in dockerfile  # the optional CPU-index install uses the same pin
    assert re.search(r"^FROM python:3\.11", dockerfile, flags=re.MULTILINE)  # requires-python
    assert re.search(r"^USER (?!root)\w+", dockerfile, flags=re.MULTILINE)
    assert "COPY . ." not in dockerfile  # would copy .venv and local state into the image
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, flags=re.MULTILINE)
    assert cmd and json.loads(cmd.group(1))[:3] == ["assay", "workers", "start"]  # a bounded stop (TEAM.md)
    assert not re.search(r"^ENTRYPOINT", dockerfile, flags=re.MULTILINE)  # Kubernetes passes the run's command as args


def test_assay_deploy_creates_the_pools_from_the_template_in_deploy() -> None:
    """`assay deploy` builds the process pools' template in code (an installed Assay has no deploy/
    folder); the file in deploy/ is the same template, for teams that create pools by hand."""
    from assay.cli.team_deployments import process_job_template

    on_disk = json.loads((DEPLOY / "process-job-template.json").read_text(encoding="utf-8"))
    assert process_job_template() == on_disk


def test_the_leaderboard_service_signs_in_and_reads_the_store_read_only() -> None:
    """docs/TEAM.md §7: `assay serve` in compose and on Kubernetes, its secrets from the environment
    or a Secret, the shared store mounted read-only, probed on /health."""
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))["services"]
    board = services["leaderboard"]
    assert board["command"][:2] == ["assay", "serve"] and board["ports"] == ["127.0.0.1:8765:8765"]
    assert board["environment"]["ASSAY_SERVE_AUTH"].startswith("${ASSAY_SERVE_AUTH:?")
    assert board["environment"]["ASSAY_CATALOG_URL"].startswith("postgresql+psycopg://assay:${ASSAY_PG_PASSWORD:?")
    assert all(str(v).endswith(":/var/lib/assay:ro") for v in board["volumes"])
    assert "/health" in " ".join(board["healthcheck"]["test"])

    deployment, service = yaml.safe_load_all((DEPLOY / "k8s-leaderboard.yaml").read_text(encoding="utf-8"))
    assert deployment["kind"] == "Deployment" and service["kind"] == "Service"
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"][:2] == ["assay", "serve"]
    secrets = {e["name"]: e["valueFrom"]["secretKeyRef"]["name"] for e in container["env"]}
    assert secrets == {"ASSAY_SERVE_AUTH": "assay-leaderboard", "ASSAY_CATALOG_URL": "assay-leaderboard"}
    assert container["volumeMounts"][0]["readOnly"] is True
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
