from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eagle_rag.errors import SettingsError
from eagle_rag.settings import (
    MASK,
    deep_merge,
    escape_literal,
    interpolate,
    load_settings,
    mask_url_password,
)

VAR_NAMES = st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True)
PLAIN = st.text(alphabet=st.characters(blacklist_characters="}"), max_size=30)


@given(st.text(max_size=80))
def test_escaped_text_interpolates_back_to_itself(text: str) -> None:
    assert interpolate(escape_literal(text), {}) == text


@given(VAR_NAMES, PLAIN, PLAIN)
def test_default_applies_only_when_variable_is_unset_or_empty(
    name: str, default: str, value: str
) -> None:
    template = f"<${{{name}:-{default}}}>"
    assert interpolate(template, {}) == f"<{default}>"
    expected = value if value else default
    assert interpolate(template, {name: value}) == f"<{expected}>"


@given(st.recursive(st.text(max_size=10), lambda kids: st.lists(kids, max_size=3), max_leaves=8))
def test_interpolation_keeps_structure(value: object) -> None:
    assert interpolate(value, {}) == interpolate(value, {"UNUSED": "x"})


def test_unset_variable_without_default_is_empty() -> None:
    assert interpolate({"a": ["${NOPE}", 3, True]}, {}) == {"a": ["", 3, True]}


def test_packaged_defaults_are_the_embedded_default(tmp_path: Path) -> None:
    settings = load_settings({"EAGLE_DATA_DIR": str(tmp_path)})
    assert settings.active_profile == "core"
    assert settings.plugins.default_namespace == "core"
    assert settings.database.url == f"sqlite:///{tmp_path / 'eagle.db'}"
    assert settings.telemetry.plugin_audit_jsonl_path == str(tmp_path / "audit.jsonl")
    assert settings.telemetry.plugin_audit_redis_enabled is False


def test_env_overrides_are_nested_and_typed() -> None:
    settings = load_settings(
        {
            "EAGLE_RAG_SERVER__PORT": "9001",
            "EAGLE_RAG_PLUGINS__QUERY_ASSEMBLE_ENABLED": "false",
            "EAGLE_RAG_PLUGINS__ENABLED": "[eagle_rag.plugins.core_defaults, plugins._template]",
            "EAGLE_RAG_PLUGINS__OPTIONS__TEMPLATE__KEYWORDS": "[alpha, beta]",
        }
    )
    assert settings.server.port == 9001
    assert settings.plugins.query_assemble_enabled is False
    assert settings.plugins.enabled[1] == "plugins._template"
    assert settings.plugins.options["template"] == {"keywords": ["alpha", "beta"]}
    assert settings.plugins.options["biomed"]["encoder_mode"] == "auto"  # merged, not replaced


def test_interpolated_variables_reach_typed_fields() -> None:
    settings = load_settings({"EAGLE_PORT": "8123", "PLUGIN_NAMESPACE": "x"})
    assert settings.server.port == 8123
    # The default profile (core) must not pin the namespace over the variable.
    assert settings.active_profile == "core"
    assert settings.plugins.default_namespace == "x"
    assert load_settings({}).plugins.default_namespace == "core"


def test_profile_deep_merges_over_the_top_level() -> None:
    settings = load_settings({"EAGLE_RAG_PROFILE": "biomed"})
    assert settings.active_profile == "biomed"
    assert settings.plugins.default_namespace == "biomed"
    assert settings.plugins.enabled == ["eagle_rag.plugins.core_defaults", "plugins.biomed"]
    # keys the profile does not name survive the merge
    assert settings.plugins.query_assemble_enabled is True
    assert settings.plugins.options["biomed"]["default_dual_text_search"] is False


def test_profiles_combine_left_to_right_and_env_wins_over_them() -> None:
    settings = load_settings(
        {
            "EAGLE_RAG_PROFILE": "lakehouse-bi, production",
            "EAGLE_DATABASE_URL": "postgresql+psycopg://u:pw@db:5432/eagle",
            "EAGLE_RAG_TELEMETRY__PLUGIN_AUDIT_RING_CAP": "7",
        }
    )
    assert settings.active_profile == "lakehouse-bi,production"
    assert settings.plugins.default_namespace == "lakehouse-bi"
    assert settings.database.url == "postgresql+psycopg://u:pw@db:5432/eagle"
    assert settings.telemetry.plugin_audit_redis_enabled is True
    assert settings.telemetry.plugin_audit_ring_cap == 7


def test_production_profile_has_a_postgres_default() -> None:
    settings = load_settings({"EAGLE_RAG_PROFILE": "production"})
    assert settings.database.url.startswith("postgresql+psycopg://")


def test_unknown_profile_is_named() -> None:
    with pytest.raises(SettingsError, match="unknown profile 'nope'"):
        load_settings({"EAGLE_RAG_PROFILE": "nope"})


def test_unknown_setting_from_env_is_rejected() -> None:
    with pytest.raises(SettingsError, match=r"plugins\.typo"):
        load_settings({"EAGLE_RAG_PLUGINS__TYPO": "1"})


def test_wrong_type_is_rejected() -> None:
    with pytest.raises(SettingsError, match=r"server\.port"):
        load_settings({"EAGLE_RAG_SERVER__PORT": "not-a-port"})


def test_hybrid_fusion_is_one_of_the_known_rules() -> None:
    assert load_settings({}).retrieval.hybrid_fusion == "normalized"
    assert (
        load_settings({"EAGLE_RAG_RETRIEVAL__HYBRID_FUSION": "rrf"}).retrieval.hybrid_fusion
        == "rrf"
    )
    with pytest.raises(SettingsError, match=r"retrieval\.hybrid_fusion"):
        load_settings({"EAGLE_RAG_RETRIEVAL__HYBRID_FUSION": "combmnz"})


def test_settings_file_can_be_replaced(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("server:\n  port: ${P:-7000}\nprofiles: {}\nactive_profile: ''\n")
    settings = load_settings({"EAGLE_RAG_SETTINGS_FILE": str(path)})
    assert settings.server.port == 7000


@pytest.mark.parametrize("content", ["server: [unclosed", "- just\n- a list\n"])
def test_bad_settings_files_are_clear_errors(tmp_path: Path, content: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(content)
    with pytest.raises(SettingsError, match="settings file"):
        load_settings({"EAGLE_RAG_SETTINGS_FILE": str(path)})


def test_missing_settings_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read settings file"):
        load_settings({"EAGLE_RAG_SETTINGS_FILE": str(tmp_path / "missing.yaml")})


def test_masked_settings_hide_passwords_and_secret_keys() -> None:
    settings = load_settings(
        {
            "EAGLE_DATABASE_URL": "postgresql+psycopg://eagle:hunter2@db:5432/eagle",
            "EAGLE_REDIS_URL": "redis://:s3cret@cache:6379/0",
            "EAGLE_RAG_PLUGINS__OPTIONS__BIOMED__API_KEY": "sk-live-123",
        }
    )
    dumped = json.dumps(settings.masked())
    for secret in ("hunter2", "s3cret", "sk-live-123"):
        assert secret not in dumped
    masked = settings.masked()
    assert masked["database"]["url"] == f"postgresql+psycopg://eagle:{MASK}@db:5432/eagle"
    assert masked["plugins"]["options"]["biomed"]["api_key"] == MASK


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///x.db", "sqlite:///x.db"),
        ("http://host:9/path", "http://host:9/path"),
        ("s3://user@bucket/key", "s3://user@bucket/key"),
        ("postgresql://u:p@h/db", f"postgresql://u:{MASK}@h/db"),
        ("not a url @ all", "not a url @ all"),
        # A password holding "/" or "#" (urlsplit reads a path or a fragment) was shown whole.
        ("ftp://root:pa/ss@host:19530", f"ftp://root:{MASK}@host:19530"),
        ("http://root:pa#ss@host:19530", f"http://root:{MASK}@host:19530"),
        ("http://host/path@mail", "http://host/path@mail"),
    ],
)
def test_mask_url_password(url: str, expected: str) -> None:
    assert mask_url_password(url) == expected


def test_deep_merge_does_not_mutate_inputs() -> None:
    base = {"a": {"b": 1, "c": [1]}}
    overlay = {"a": {"b": 2}}
    merged = deep_merge(base, overlay)
    assert merged == {"a": {"b": 2, "c": [1]}}
    assert base == {"a": {"b": 1, "c": [1]}}


def test_visual_dim_follows_the_visual_encoder_unless_set() -> None:
    assert load_settings({}).milvus.visual_dim == 384  # the summary encoder: text_dim
    small = load_settings({"EAGLE_RAG_MILVUS__TEXT_DIM": "16"})
    assert small.milvus.visual_dim == 16
    multimodal = load_settings(
        {"EAGLE_VISUAL_EMBEDDING_PROVIDER": "multimodal", "EAGLE_VISUAL_EMBEDDING_DIM": "512"}
    )
    assert multimodal.milvus.visual_dim == 512
    assert load_settings({"EAGLE_VISUAL_DIM": "32"}).milvus.visual_dim == 32
    assert load_settings({"EAGLE_RAG_MILVUS__VISUAL_DIM": "64"}).milvus.visual_dim == 64
    with pytest.raises(SettingsError, match="visual_dim"):
        load_settings({"EAGLE_VISUAL_DIM": "1"})


def test_bridge_settings_default_open_to_the_lan_and_read_from_env() -> None:
    defaults = load_settings({}).engines
    assert defaults.bridge_hosts == [] and defaults.bridge_private is True
    engines = load_settings(
        {
            "EAGLE_RAG_ENGINES__BRIDGE_HOSTS": '[dify.lan, "10.0.0.7:8080", "[fd00::5]:80"]',
            "EAGLE_RAG_ENGINES__BRIDGE_PRIVATE": "false",
        }
    ).engines
    assert engines.bridge_hosts == ["dify.lan", "10.0.0.7:8080", "[fd00::5]:80"]
    assert engines.bridge_private is False


@pytest.mark.parametrize("entry", ["http://dify.lan", "dify.lan:http", "dify.lan:0", "[::1]x", ""])
def test_a_malformed_bridge_host_is_a_settings_error(entry: str) -> None:
    with pytest.raises(SettingsError, match=r"engines\.bridge_hosts"):
        load_settings({}, overrides={"engines": {"bridge_hosts": [entry]}})


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("https//root:pw99@h:19530", "https//root:********@h:19530"),
        ("root:pw99@h:19530", "root:********@h:19530"),
        ("/data/a@b/milvus.db", "/data/a@b/milvus.db"),
    ],
)
def test_a_mistyped_uri_does_not_show_its_password(uri: str, shown: str) -> None:
    assert mask_url_password(uri) == shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://h/r?api_key=abc&q=1", "http://h/r?api_key=********&q=1"),
        ("http://h/r?q=1&API_KEY=abc", "http://h/r?q=1&API_KEY=********"),
        (
            "https://s3/o?X-Amz-Signature=ff&sig=1",
            "https://s3/o?X-Amz-Signature=********&sig=********",
        ),
        (
            "http://h/?access_token=t&client_secret=s",
            "http://h/?access_token=********&client_secret=********",
        ),
        ("http://h/?password=p&design=d", "http://h/?password=********&design=d"),
        ("http://u:pw@h:99999/?token=t", "http://u:********@h:99999/?token=********"),
    ],
)
def test_secret_query_parameters_are_masked(url: str, shown: str) -> None:
    assert mask_url_password(url) == shown


@pytest.mark.parametrize("namespace", ["default", "a_b", "Legal"])
def test_a_namespace_that_would_share_a_milvus_database_is_refused(namespace: str) -> None:
    # "default" is Core's Milvus database; "a_b" would be "a-b"'s.
    with pytest.raises(SettingsError, match="default_namespace"):
        load_settings({"EAGLE_RAG_PLUGINS__DEFAULT_NAMESPACE": namespace})


def test_another_namespace_may_not_name_cores_milvus_database() -> None:
    env = {"EAGLE_RAG_PLUGINS__DEFAULT_NAMESPACE": "legal", "EAGLE_RAG_MILVUS__DB_NAME": "default"}
    with pytest.raises(SettingsError, match="needs its own"):
        load_settings(env)
    core = load_settings({"EAGLE_RAG_MILVUS__DB_NAME": "default"})
    assert core.milvus.db_name == "default"
