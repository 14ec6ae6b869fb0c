"""deploy/: the image and the Kubernetes manifests, checked against the Kubernetes API's own schemas
and against the gateway they run (its config loader, CLI, probes and sandbox cache)."""

from __future__ import annotations

import copy
import json
import secrets
import shlex
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate import utils as kubernetes_schemas

from gateway.children.config import StdioServer
from gateway.cli._http import http_settings
from gateway.cli._main import _parser
from gateway.config import GatewayConfig, parse_config
from gateway.config._defaults import PYPI_SERVER_PINS
from gateway.config._variables import VARIABLE_REFERENCE
from gateway.config.server import HEALTH_PATHS
from gateway.errors import ConfigError
from gateway.sandbox.component import default_cache_dir

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
KUSTOMIZATION = K8S / "kustomization.yaml"
# The oldest release still common on managed clusters, and the newest the validator bundles.
KUBERNETES_VERSIONS = ("1.30", kubernetes_validate.latest_version())
MIB = 1024 * 1024
# The gateway with the shipped config, measured idle (deployment.yaml's comment): interpreter,
# wasmtime, the sandbox and its prewarmed instances, the search model, the time child.
BASELINE_BYTES = 315 * MIB
ManifestList = list[tuple[str, dict[str, Any]]]


# ---- reading the files ----------------------------------------------------------------------------


def manifests() -> ManifestList:
    """Every Kubernetes object under deploy/k8s, with the file it is in (the kustomization is not one)."""
    found: ManifestList = []
    for path in sorted(K8S.glob("*.yaml")):
        if path == KUSTOMIZATION:
            continue
        found += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return found


def the(kind: str, name: str | None = None) -> dict[str, Any]:
    """The one object of `kind` (named `name`, if several)."""
    matches = [
        doc
        for _, doc in manifests()
        if doc["kind"] == kind and (name is None or doc["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"expected one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def pod() -> dict[str, Any]:
    return the("Deployment")["spec"]["template"]["spec"]


def container() -> dict[str, Any]:
    (only,) = pod()["containers"]
    return only


def config_text() -> str:
    return the("ConfigMap")["data"]["config.json"]


def secret_values() -> dict[str, str]:
    return the("Secret")["stringData"]


def usable_secrets() -> dict[str, str]:
    """What an operator puts in the Secret: each of its keys, with a value long enough to be a key."""
    return {name: secrets.token_hex(32) for name in secret_values()}


def loaded_config(environ: dict[str, str] | None = None) -> GatewayConfig:
    """The ConfigMap's config through the gateway's own loader, as a pod would load it."""
    data = json.loads(config_text())
    return parse_config(data, "configmap.yaml", usable_secrets() if environ is None else environ)


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's build stages, each a list of (INSTRUCTION, arguments), continuations joined."""
    logical: list[str] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical.append(pending + stripped)
        pending = ""
    stages: list[list[tuple[str, str]]] = []
    for instruction in logical:
        keyword, _, arguments = instruction.partition(" ")
        if keyword.upper() == "FROM":
            stages.append([])
        elif not stages:
            continue  # ARGs before the first FROM
        stages[-1].append((keyword.upper(), arguments.strip()))
    return stages


def runtime_stage() -> list[tuple[str, str]]:
    """The image's own stage: the last one."""
    return dockerfile_stages()[-1]


def instructions(keyword: str) -> list[str]:
    return [arguments for name, arguments in runtime_stage() if name == keyword]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for arguments in instructions("ENV"):
        for word in shlex.split(arguments):
            name, _, value = word.partition("=")
            env[name] = value
    return env


def image_command() -> list[str]:
    """ENTRYPOINT then CMD, as the container runs them (both in exec form)."""
    (entrypoint,) = instructions("ENTRYPOINT")
    (cmd,) = instructions("CMD")
    return [*json.loads(entrypoint), *json.loads(cmd)]


def gateway_arguments() -> list[str]:
    """The image's command from `codemode-gateway` on (past an init such as tini)."""
    command = image_command()
    return command[command.index("codemode-gateway") + 1 :]


def quantity(value: str | int) -> float:
    """A Kubernetes quantity (512Mi, 1Gi, 500m, 4) as a number of bytes or cores."""
    text = str(value)
    units = {"Ki": 1024, "Mi": MIB, "Gi": 1024 * MIB, "K": 1e3, "M": 1e6, "G": 1e9, "m": 1e-3}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


# ---- the manifests against the Kubernetes schemas ---------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize(
    "manifest", manifests(), ids=lambda m: f"{m[0]}:{m[1]['kind']}/{m[1]['metadata']['name']}"
)
def test_every_manifest_is_a_valid_kubernetes_object(
    manifest: tuple[str, dict[str, Any]], version: str
) -> None:
    # Strict: an unknown field (a misspelled key Kubernetes would silently drop) is an error too.
    try:
        kubernetes_schemas.validate(manifest[1], version, strict=True)
    except kubernetes_schemas.ValidationError as exc:
        where = ".".join(map(str, exc.path))
        pytest.fail(f"{manifest[0]}: {manifest[1]['kind']} {where}: {exc.message}", pytrace=False)


def _replicas_as_text(deployment: dict[str, Any]) -> None:
    deployment["spec"]["replicas"] = "three"


def _misspelled_read_only_root(deployment: dict[str, Any]) -> None:
    security = deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    security["readOnlyRootFileSystem"] = security.pop("readOnlyRootFilesystem")


def _probe_port_as_list(deployment: dict[str, Any]) -> None:
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"] = [8080]


@pytest.mark.parametrize("breakage", [_replicas_as_text, _misspelled_read_only_root, _probe_port_as_list])
def test_the_validator_refuses_a_broken_deployment(breakage: Callable[[dict[str, Any]], None]) -> None:
    deployment = copy.deepcopy(the("Deployment"))
    kubernetes_schemas.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)
    breakage(deployment)
    with pytest.raises(kubernetes_schemas.ValidationError):
        kubernetes_schemas.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


def test_the_kustomization_applies_every_manifest_and_the_images_tag() -> None:
    kustomization = yaml.safe_load(KUSTOMIZATION.read_text())
    files = {path.name for path in K8S.glob("*.yaml")} - {KUSTOMIZATION.name}
    assert sorted(kustomization["resources"]) == sorted(files)
    (image,) = kustomization["images"]
    repository, _, tag = container()["image"].rpartition(":")
    assert (image["name"], image["newTag"]) == (repository, tag)
    assert kustomization["namespace"] == the("Namespace")["metadata"]["name"]


def test_every_selector_selects_the_deployments_pods() -> None:
    deployment = the("Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selectors = [
        deployment["spec"]["selector"]["matchLabels"],
        the("PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
        *(doc["spec"]["selector"] for _, doc in manifests() if doc["kind"] == "Service"),
    ]
    for selector in selectors:
        assert selector.items() <= labels.items()


def test_three_replicas_start_and_the_autoscaler_scales_the_deployment_on_cpu() -> None:
    deployment, hpa = the("Deployment"), the("HorizontalPodAutoscaler")
    assert deployment["spec"]["replicas"] == 3
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": deployment["apiVersion"],
        "kind": "Deployment",
        "name": deployment["metadata"]["name"],
    }
    assert hpa["spec"]["minReplicas"] == 3 < hpa["spec"]["maxReplicas"]
    ((metric),) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert "cpu" in container()["resources"]["requests"]  # utilization is measured against it


# ---- the config the ConfigMap holds, with the Secret's variables ------------------------------


def test_the_configmaps_config_loads_with_the_variables_the_secret_sets() -> None:
    config = loaded_config()
    assert config.unavailable_servers == {}
    assert config.notes == ()
    assert set(config.mcp_servers) == {"time", "github"}
    assert config.http is not None
    assert config.auth is not None
    assert config.approvals.key is not None  # replicas resume each other's paused runs
    assert config.state is not None  # and share spent approvals, rates, caps and shapes


def test_the_shared_store_is_reached_over_tls_with_the_password_the_secret_sets() -> None:
    password = "a-password-from-the-secret"
    config = loaded_config(usable_secrets() | {"REDIS_PASSWORD": password})
    assert config.state is not None
    assert config.state.url.startswith("rediss://")
    assert f":{password}@" in config.state.url
    assert password in config.secret_values  # redacted wherever it could leave
    assert "REDIS_PASSWORD" in secret_values()


def test_every_variable_the_config_names_is_set_by_the_secret_and_the_secret_sets_no_other() -> None:
    named = {match.group(1) for match in VARIABLE_REFERENCE.finditer(config_text())}
    assert named == set(secret_values())
    (source,) = container()["envFrom"]
    assert source["secretRef"]["name"] == the("Secret")["metadata"]["name"]


def test_a_secret_left_unset_keeps_its_child_out_of_the_config() -> None:
    environ = usable_secrets()
    del environ["GITHUB_TOKEN"]
    assert set(loaded_config(environ).unavailable_servers) == {"github"}


def test_the_secrets_placeholders_are_refused_rather_than_served_with() -> None:
    with pytest.raises(ConfigError) as refused:
        loaded_config(dict(secret_values()))
    for key in ("auth.tokens.alice", "approvals.key"):
        assert key in str(refused.value)


# ---- the pod against the gateway it runs ------------------------------------------------------


def test_the_probes_ask_the_gateways_health_paths_on_its_port() -> None:
    http = loaded_config().http
    assert http is not None
    ports = {port["name"]: port["containerPort"] for port in container()["ports"]}
    probes = {"readinessProbe": "/readyz", "livenessProbe": "/healthz"}
    for probe, path in probes.items():
        get = container()[probe]["httpGet"]
        assert get["path"] == path
        assert get["path"] in HEALTH_PATHS
        assert ports[get["port"]] == http.port


def test_the_container_and_services_serve_the_configs_http_port() -> None:
    config = loaded_config()
    assert config.http is not None
    (port,) = container()["ports"]
    assert port["containerPort"] == config.http.port
    assert instructions("EXPOSE") == [str(config.http.port)]
    for _, doc in manifests():
        if doc["kind"] == "Service":
            (service_port,) = doc["spec"]["ports"]
            assert service_port["targetPort"] == port["name"]


def test_the_images_command_serves_the_mounted_config_over_http_on_every_interface() -> None:
    args = _parser().parse_args(gateway_arguments())
    assert args.command == "serve"
    config_path = PurePosixPath(args.config)
    (mount,) = [m for m in container()["volumeMounts"] if m["mountPath"] == str(config_path.parent)]
    assert mount["readOnly"] is True
    (volume,) = [v for v in pod()["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == the("ConfigMap")["metadata"]["name"]
    assert config_path.name in the("ConfigMap")["data"]
    # The flags and the config together, as `serve` checks them at start-up (0.0.0.0 needs auth and
    # allowed_hosts, or the gateway refuses to start).
    http = http_settings(loaded_config(), args)
    assert http is not None
    assert (http.host, http.port) == ("0.0.0.0", 8080)


def test_the_allowed_hosts_name_the_service_in_its_namespace() -> None:
    config = loaded_config()
    assert config.http is not None
    namespace = the("Namespace")["metadata"]["name"]
    service = the("Service", "codemode-gateway")["metadata"]["name"]
    for name in (service, f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"):
        assert name in config.http.hosts()
        assert f"{name}:*" in config.http.hosts()


def test_the_pod_runs_unprivileged_on_a_read_only_root_filesystem() -> None:
    pod_security, security = pod()["securityContext"], container()["securityContext"]
    assert pod_security["runAsNonRoot"] is True
    assert pod_security["runAsUser"] != 0
    assert pod_security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert pod()["automountServiceAccountToken"] is False


def test_the_audit_log_is_written_to_a_volume_large_enough_for_its_rotation() -> None:
    audit = loaded_config().audit
    assert audit is not None
    directory = str(PurePosixPath(audit.path).parent)
    (mount,) = [m for m in container()["volumeMounts"] if m["mountPath"] == directory]
    assert not mount.get("readOnly", False)
    (volume,) = [v for v in pod()["volumes"] if v["name"] == mount["name"]]
    assert quantity(volume["emptyDir"]["sizeLimit"]) >= audit.max_bytes * (audit.backups + 1)


def test_the_memory_limit_covers_every_execution_slot_at_its_memory_cap() -> None:
    sandbox = loaded_config().sandbox
    limits = container()["resources"]["limits"]
    worst = BASELINE_BYTES + sandbox.max_concurrent_executions * sandbox.memory_bytes
    assert quantity(limits["memory"]) >= worst
    assert quantity(limits["cpu"]) >= sandbox.max_concurrent_executions
    requests = container()["resources"]["requests"]
    assert quantity(requests["memory"]) >= BASELINE_BYTES + sandbox.max_concurrent_executions * 12 * MIB


def test_the_pod_is_given_longer_to_stop_than_the_gateways_shutdown_grace() -> None:
    config = loaded_config()
    assert config.http is not None
    assert pod()["terminationGracePeriodSeconds"] > config.http.shutdown_grace_seconds + 5


# ---- the image --------------------------------------------------------------------------------


def test_the_image_is_built_in_two_stages_and_installs_only_the_wheel() -> None:
    build, runtime = dockerfile_stages()
    assert any(name == "RUN" and "python -m build --wheel" in arguments for name, arguments in build)
    assert not any(name == "COPY" and not arguments.startswith("--from") for name, arguments in runtime)
    (install,) = [arguments for name, arguments in runtime if name == "RUN" and ".whl" in arguments]
    assert "--mount=type=bind,from=build" in install


def test_the_image_runs_as_the_pods_non_root_user() -> None:
    *_, user = instructions("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit()  # numeric, so that runAsNonRoot can check it
    assert int(uid) != 0
    pod_security = pod()["securityContext"]
    assert (int(uid), int(gid)) == (pod_security["runAsUser"], pod_security["runAsGroup"])


def test_the_image_precompiles_the_sandbox_into_a_cache_outside_every_writable_mount(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = runtime_stage()
    names = [name for name, _ in runtime]
    runs = [(i, arguments) for i, (name, arguments) in enumerate(runtime) if name == "RUN"]
    precompile = next(i for i, arguments in runs if "codemode-gateway precompile" in arguments)
    installed = next(i for i, arguments in runs if ".whl" in arguments)
    assert installed < precompile < names.index("USER")  # as root, so the gateway cannot change it
    cache = image_env()["CODEMODE_CACHE_DIR"]
    monkeypatch.setenv("CODEMODE_CACHE_DIR", cache)
    assert default_cache_dir() == Path(cache)  # the variable the gateway reads
    for mount in container()["volumeMounts"]:
        assert not PurePosixPath(cache).is_relative_to(mount["mountPath"])


def test_the_image_installs_the_stdio_children_the_config_starts_at_the_pinned_versions() -> None:
    (argument,) = [a for a in instructions("ARG") if a.startswith("CHILD_PACKAGES=")]
    packages = dict(word.split("==") for word in shlex.split(argument.partition("=")[2]))
    for package, version in packages.items():
        assert PYPI_SERVER_PINS.get(package) == version
    servers = loaded_config().mcp_servers.values()
    commands = {server.command for server in servers if isinstance(server, StdioServer)}
    assert commands <= set(packages)  # each console script is named as its package


def test_the_build_context_leaves_local_builds_and_environments_out() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".venv", ".git", "build", "dist", "runtime-wasm/build"} <= ignored
