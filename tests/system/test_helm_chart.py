"""The Helm chart in helm/automem, checked structurally (no `helm` binary or cluster here).

values.yaml is validated against values.schema.json (Draft 7, as Helm does), and the templates
are rendered by tests/helm_template.py, a strict renderer for the Go-template subset the chart
uses, into YAML documents whose kinds, names, selectors, probes and environment are asserted.
The official qdrant subchart is not rendered (it cannot be fetched offline).
"""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from automem.docsgen import helm_config_entries, registry
from automem.settings import Settings
from tests.helm_template import (
    Rendered,
    TemplateError,
    TemplateFail,
    chart_values,
    go_float,
    parse,
    render_chart,
    validate_values,
)

CHART = Path(__file__).resolve().parents[2] / "helm" / "automem"
FULL = "mem-automem"


def render(overrides: dict[str, Any] | None = None, release: str = "mem") -> Rendered:
    return render_chart(CHART, overrides, release=release)


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def container(doc: dict[str, Any]) -> dict[str, Any]:
    return pod_spec(doc)["containers"][0]  # type: ignore[no-any-return]


def kinds(rendered: Rendered) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in rendered.documents}


# --- values and schema ---------------------------------------------------------------------------


def test_the_schema_is_valid_and_the_default_values_satisfy_it() -> None:
    schema = yaml.safe_load((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    validate_values(CHART, chart_values(CHART))


@pytest.mark.parametrize(
    "overrides",
    [
        {"config": {"AUTOMEM_MAX_BODY_BYTES": 2000000}},  # a number: Helm would print 2e+06
        {"config": {"AUTOMEM_MAX_BODY_BYTES": "2 MB"}},
        {"config": {"AUTOMEM_NOT_A_SETTING": "1"}},
        {"config": {"EMBEDDING_PROVIDER": "word2vec"}},
        {"config": {"ENRICHMENT_ENABLED": "yes please"}},
        {"replicaCount": 3},  # the api and workers are scaled separately
        {"api": {"replicaCount": "2"}},
        {"worker": {"queues": "embed,email"}},
        {"image": {"pullPolicy": "Sometimes"}},
        {"externalQdrant": {"url": "qdrant:6333"}},
        {"secrets": {"AUTOMEM_API_TOKEN": 12345}},
        {"falkordb": {"persistence": {"size": "ten gigs"}}},
    ],
)
def test_the_schema_rejects_bad_values(overrides: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        validate_values(CHART, chart_values(CHART, overrides))


def test_config_holds_every_setting_the_chart_does_not_manage_with_its_registry_default() -> None:
    config = chart_values(CHART)["config"]
    entries = helm_config_entries()
    assert list(config) == [e.env for e in entries]
    for entry in entries:
        value = config[entry.env]
        assert isinstance(value, str), entry.env
        parsed = Settings(**{entry.name: value}) if value else Settings()
        assert getattr(parsed, entry.name) == entry.default, entry.env


def test_helm_would_print_large_numbers_in_exponent_form() -> None:
    # Why config values are strings: this is how Go prints a float64 read from YAML.
    assert go_float(1048576.0) == "1.048576e+06"
    assert go_float(604800.0) == "604800"
    assert go_float(0.8) == "0.8" and go_float(8001.0) == "8001" and go_float(0.00001) == "1e-05"


# --- default render ------------------------------------------------------------------------------


def test_default_values_render_the_expected_objects() -> None:
    assert kinds(render()) == {
        ("ServiceAccount", FULL),
        ("ConfigMap", FULL),
        ("Secret", FULL),
        ("Deployment", f"{FULL}-api"),
        ("Service", f"{FULL}-api"),
        ("PodDisruptionBudget", f"{FULL}-api"),
        ("Deployment", f"{FULL}-worker"),
        ("StatefulSet", f"{FULL}-falkordb"),
        ("Service", f"{FULL}-falkordb"),
        ("StatefulSet", f"{FULL}-redis"),
        ("Service", f"{FULL}-redis"),
    }


def _pods(rendered: Rendered) -> dict[str, dict[str, str]]:
    return {
        d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"]
        for d in rendered.documents
        if d["kind"] in ("Deployment", "StatefulSet")
    }


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_selectors_match_exactly_the_intended_pods() -> None:
    rendered = render(
        {
            "worker": {"autoscaling": {"enabled": True}, "podDisruptionBudget": {"enabled": True}},
            "metrics": {"serviceMonitor": {"enabled": True}},
        }
    )
    pods = _pods(rendered)
    for workload in rendered.find("Deployment") + rendered.find("StatefulSet"):
        assert _matches(workload["spec"]["selector"]["matchLabels"], pods[workload["metadata"]["name"]])
    expected = {
        f"{FULL}-api": f"{FULL}-api",
        f"{FULL}-falkordb": f"{FULL}-falkordb",
        f"{FULL}-redis": f"{FULL}-redis",
    }
    for service in rendered.find("Service"):
        selected = [name for name, labels in pods.items() if _matches(service["spec"]["selector"], labels)]
        assert selected == [expected[service["metadata"]["name"]]]
    for pdb in rendered.find("PodDisruptionBudget"):
        selected = [
            n for n, labels in pods.items() if _matches(pdb["spec"]["selector"]["matchLabels"], labels)
        ]
        assert selected == [pdb["metadata"]["name"]]
    api_service = rendered.one("Service", f"{FULL}-api")
    monitor = rendered.one("ServiceMonitor", f"{FULL}-api")
    assert _matches(monitor["spec"]["selector"]["matchLabels"], api_service["metadata"]["labels"])
    for hpa in rendered.find("HorizontalPodAutoscaler"):
        target = hpa["spec"]["scaleTargetRef"]
        assert rendered.one(target["kind"], target["name"])


def test_api_probes_call_health_on_the_named_container_port() -> None:
    api = container(render().one("Deployment", f"{FULL}-api"))
    ports = {p["name"]: p["containerPort"] for p in api["ports"]}
    assert ports == {"http": 8001}
    assert api["command"] == ["automem", "serve", "--host", "0.0.0.0", "--port", "8001"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert api[probe]["httpGet"] == {"path": "/health", "port": "http"}, probe
    service = render().one("Service", f"{FULL}-api")
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    off = container(render({"api": {"livenessProbe": {"enabled": False}}}).one("Deployment", f"{FULL}-api"))
    assert "livenessProbe" not in off and "readinessProbe" in off


def _environment(rendered: Rendered, workload: str) -> dict[str, str]:
    """The environment a container would see: ConfigMap, then Secret, then explicit env."""
    spec = container(rendered.one("Deployment", workload))
    env: dict[str, str] = {}
    for source in spec["envFrom"]:
        if "configMapRef" in source:
            env.update(rendered.one("ConfigMap", source["configMapRef"]["name"])["data"])
        else:
            secret = rendered.one("Secret", source["secretRef"]["name"])
            env.update({k: base64.b64decode(v).decode() for k, v in secret["data"].items()})
    for item in spec["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
    return env


def test_api_and_worker_read_settings_from_the_configmap_and_secret_and_resolve_to_server_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rendered = render({"secrets": {"ADMIN_API_TOKEN": "adm"}})
    for workload in (f"{FULL}-api", f"{FULL}-worker"):
        spec = container(rendered.one("Deployment", workload))
        assert spec["envFrom"] == [{"configMapRef": {"name": FULL}}, {"secretRef": {"name": FULL}}]
        env = _environment(rendered, workload)
        known = {name for e in registry() for name in (e.env, *e.aliases)}
        assert set(env) <= known, set(env) - known
        for name in list(env):
            monkeypatch.setenv(name, env[name])
        settings = Settings()
        assert not settings.embedded and settings.resolved_vector_backend() == "qdrant"
        assert settings.qdrant_url == "http://mem-qdrant:6333"
        # The Qdrant server indexes the vectors for every process: FalkorDB keeps no index of them.
        assert not settings.graph_vector_index_wanted()
        assert settings.graph_url() == f"redis://{FULL}-falkordb:6379"
        assert settings.queue_url() == f"redis://{FULL}-redis:6379/0"
        assert settings.max_body_bytes == 1048576 and settings.admin_token == "adm"
        assert settings.api_token and len(settings.api_token) == 40  # generated at install


def test_configmap_leaves_empty_settings_unset_and_carries_overrides() -> None:
    data = render({"config": {"EMBEDDING_MODEL": "", "RETENTION_DAYS": "7"}}).one("ConfigMap", FULL)["data"]
    assert "EMBEDDING_MODEL" not in data and data["RETENTION_DAYS"] == "7"
    assert all(isinstance(v, str) and v for v in data.values())


# --- scaling and toggles -------------------------------------------------------------------------


def test_workers_scale_independently_of_the_api() -> None:
    rendered = render({"api": {"replicaCount": 3}, "worker": {"replicaCount": 7}})
    assert rendered.one("Deployment", f"{FULL}-api")["spec"]["replicas"] == 3
    assert rendered.one("Deployment", f"{FULL}-worker")["spec"]["replicas"] == 7
    assert container(rendered.one("Deployment", f"{FULL}-worker"))["command"] == ["automem", "worker"]
    worker = container(rendered.one("Deployment", f"{FULL}-worker"))
    for probe in ("startupProbe", "livenessProbe"):
        assert worker[probe]["exec"]["command"] == ["automem", "worker", "--check"], probe
    assert "ports" not in worker and "readinessProbe" not in worker  # no HTTP server in a worker
    queues = render({"worker": {"queues": "embed,enrich"}}).one("Deployment", f"{FULL}-worker")
    assert container(queues)["command"] == ["automem", "worker", "--queues", "embed,enrich"]


def test_worker_autoscaling_replaces_its_replica_count_only() -> None:
    rendered = render({"worker": {"autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 9}}})
    assert "replicas" not in rendered.one("Deployment", f"{FULL}-worker")["spec"]
    assert rendered.one("Deployment", f"{FULL}-api")["spec"]["replicas"] == 2
    hpa = rendered.one("HorizontalPodAutoscaler", f"{FULL}-worker")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": f"{FULL}-worker",
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 9)
    assert not rendered.find("HorizontalPodAutoscaler", f"{FULL}-api")


def test_pdb_servicemonitor_and_ingress_toggles() -> None:
    off = render({"api": {"podDisruptionBudget": {"enabled": False}}})
    assert not off.find("PodDisruptionBudget") and not off.find("ServiceMonitor") and not off.find("Ingress")
    on = render(
        {
            "worker": {"podDisruptionBudget": {"enabled": True, "minAvailable": 1}},
            "metrics": {"serviceMonitor": {"enabled": True, "additionalLabels": {"release": "prom"}}},
            "ingress": {"enabled": True, "ingressClassName": "nginx"},
        }
    )
    assert on.one("PodDisruptionBudget", f"{FULL}-api")["spec"]["maxUnavailable"] == 1
    assert on.one("PodDisruptionBudget", f"{FULL}-worker")["spec"]["minAvailable"] == 1
    monitor = on.one("ServiceMonitor", f"{FULL}-api")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert (
        monitor["spec"]["endpoints"][0] | {"path": "/metrics", "port": "http"}
        == monitor["spec"]["endpoints"][0]
    )
    rule = on.one("Ingress", f"{FULL}-api")["spec"]["rules"][0]
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": f"{FULL}-api", "port": {"number": 8001}}


# --- stores: in-chart or external ----------------------------------------------------------------


def test_external_falkordb_qdrant_and_no_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered = render(
        {
            "falkordb": {"enabled": False},
            "externalFalkordb": {"host": "graph.internal", "port": 6380},
            "redis": {"enabled": False},
            "qdrant": {"enabled": False},
            "externalQdrant": {"url": "https://qdrant.internal:6333"},
            "secrets": {"FALKORDB_PASSWORD": "pw", "QDRANT_API_KEY": "qk"},
        }
    )
    assert not rendered.find("StatefulSet")
    env = _environment(rendered, f"{FULL}-worker")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.graph_url() == "redis://:pw@graph.internal:6380"
    assert settings.queue_url() == settings.graph_url()  # no Redis: the queues live on FalkorDB
    assert settings.qdrant_url == "https://qdrant.internal:6333" and settings.qdrant_api_key == "qk"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"qdrant": {"enabled": False}}, "externalQdrant.url"),
        ({"falkordb": {"enabled": False}}, "externalFalkordb.host or secrets.FALKORDB_URL"),
        ({"redis": {"auth": {"enabled": True}}}, "secrets.REDIS_PASSWORD"),
    ],
)
def test_missing_endpoints_fail_the_render_with_the_fix(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(TemplateFail, match=message):
        render(overrides)


def test_falkordb_url_secret_replaces_the_host() -> None:
    rendered = render({"falkordb": {"enabled": False}, "secrets": {"FALKORDB_URL": "redis://:x@g:6379"}})
    env = _environment(rendered, f"{FULL}-api")
    assert env["FALKORDB_URL"] == "redis://:x@g:6379" and "FALKORDB_HOST" not in env


def test_redis_auth_builds_the_url_from_the_secret() -> None:
    rendered = render({"redis": {"auth": {"enabled": True}}, "secrets": {"REDIS_PASSWORD": "r3d"}})
    env = container(rendered.one("Deployment", f"{FULL}-worker"))["env"]
    names = [e["name"] for e in env]
    assert names.index("REDIS_PASSWORD") < names.index("REDIS_URL")  # $(VAR) needs it defined first
    assert env[names.index("REDIS_URL")]["value"] == f"redis://:$(REDIS_PASSWORD)@{FULL}-redis:6379/0"
    redis = container(rendered.one("StatefulSet", f"{FULL}-redis"))
    assert "--requirepass" in redis["args"][0]
    assert {e["name"] for e in redis["env"]} == {"REDIS_PASSWORD", "REDISCLI_AUTH"}


def test_in_chart_stores_persist_on_volumes_and_are_probed() -> None:
    rendered = render({"falkordb": {"appendfsync": "always", "persistence": {"storageClassName": "fast"}}})
    for name in ("falkordb", "redis"):
        sts = rendered.one("StatefulSet", f"{FULL}-{name}")
        assert sts["spec"]["serviceName"] == f"{FULL}-{name}" and sts["spec"]["replicas"] == 1
        spec = container(sts)
        assert spec["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
        assert sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
        assert spec["readinessProbe"]["exec"]["command"] == ["redis-cli", "ping"]
        assert "--appendonly yes" in spec["args"][0]
    falkordb = rendered.one("StatefulSet", f"{FULL}-falkordb")
    assert "--appendfsync always" in container(falkordb)["args"][0]
    assert "falkordb.so" in container(falkordb)["args"][0]
    assert falkordb["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "fast"


def test_qdrant_is_the_official_chart_and_its_generated_key_is_used() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["dependencies"] == [
        {
            "name": "qdrant",
            "version": chart["dependencies"][0]["version"],
            "repository": "https://qdrant.github.io/qdrant-helm",
            "condition": "qdrant.enabled",
        }
    ]
    env = container(render({"qdrant": {"apiKey": True}}).one("Deployment", f"{FULL}-api"))["env"]
    key = next(e for e in env if e["name"] == "QDRANT_API_KEY")
    assert key["valueFrom"]["secretKeyRef"] == {"name": "mem-qdrant-apikey", "key": "api-key"}
    named = render({"qdrant": {"fullnameOverride": "vectors"}}, release="automem-prod")
    env = _environment(named, "automem-prod-api")
    assert env["QDRANT_URL"] == "http://vectors:6333"


# --- secrets -------------------------------------------------------------------------------------


def test_secret_holds_only_given_values_and_a_generated_token() -> None:
    data = render({"secrets": {"OPENAI_API_KEY": "sk-1"}}).one("Secret", FULL)["data"]
    assert set(data) == {"OPENAI_API_KEY", "AUTOMEM_API_TOKEN"}
    assert base64.b64decode(data["OPENAI_API_KEY"]) == b"sk-1"
    given = render({"secrets": {"AUTOMEM_API_TOKEN": "tok"}}).one("Secret", FULL)["data"]
    assert given == {"AUTOMEM_API_TOKEN": base64.b64encode(b"tok").decode()}


def test_existing_secret_replaces_the_charts_secret() -> None:
    rendered = render({"secrets": {"existingSecret": "automem-keys"}})
    assert not rendered.find("Secret")
    for workload in ("api", "worker"):
        spec = container(rendered.one("Deployment", f"{FULL}-{workload}"))
        assert {"secretRef": {"name": "automem-keys"}} in spec["envFrom"]
    falkordb = container(rendered.one("StatefulSet", f"{FULL}-falkordb"))
    assert falkordb["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "automem-keys"


def test_pods_roll_when_the_settings_change() -> None:
    def checksum(rendered: Rendered) -> str:
        pod = rendered.one("Deployment", f"{FULL}-api")["spec"]["template"]["metadata"]
        return str(pod["annotations"]["checksum/config"])

    assert checksum(render()) == checksum(render())
    assert checksum(render()) != checksum(render({"config": {"RETENTION_DAYS": "7"}}))


def test_names_follow_the_release() -> None:
    assert ("Deployment", "automem-api") in kinds(render(release="automem"))
    assert ("Deployment", "x-api") in kinds(render({"fullnameOverride": "x"}))


def test_every_template_file_renders_in_some_configuration() -> None:
    everything_on = render(
        {
            "api": {"autoscaling": {"enabled": True}},
            "worker": {"podDisruptionBudget": {"enabled": True}},
            "metrics": {"serviceMonitor": {"enabled": True}},
            "ingress": {"enabled": True},
        }
    )
    files = {p.name for p in (CHART / "templates").glob("*.yaml")}
    assert set(everything_on.manifests) == files
    assert "kubectl scale deployment/mem-automem-worker" in everything_on.notes


# --- the renderer itself refuses what it does not model --------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        '{{ tpl "x" . }}',
        '{{ template "x" . }}',
        "{{ if .a }}unclosed",
        "{{ .a | upper }}",
        "{{ (.a).b }}",
    ],
)
def test_the_renderer_rejects_syntax_outside_its_subset(source: str) -> None:
    with pytest.raises(TemplateError):
        parse(source, {})


def test_the_renderer_fails_like_helm_on_nil_fields_and_mixed_comparisons(tmp_path: Path) -> None:
    chart = tmp_path / "c"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("name: c\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("n: 1\n")
    (chart / "values.schema.json").write_text("{}")
    (chart / "templates" / "a.yaml").write_text("x: {{ .Values.missing.field }}\n")
    with pytest.raises(TemplateError, match="nil pointer"):
        render_chart(chart)
    (chart / "templates" / "a.yaml").write_text('x: {{ eq .Values.n "1" }}\n')
    with pytest.raises(TemplateError, match="incompatible types"):
        render_chart(chart)
    (chart / "templates" / "a.yaml").write_text(
        "x: {{- if eq .Values.n 1.0 }} one {{- end }}\ny: {{ .Values.n }}\n"
    )
    assert render_chart(chart).documents == [{"x": "one", "y": 1}]
    assert copy.deepcopy(chart_values(chart, {"n": None})) == {}
