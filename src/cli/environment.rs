//! The environment variables toolgate reads besides the ones its flags fall back to
//! (those are in the flags' definitions): each named by the constant the code reads it
//! with, and what it does, for the reference page.

/// The API key `serve` requires of every caller, and `stats --limits` sends.
pub const API_KEY: &str = "TOOLGATE_API_KEY";
/// The log filter (`tracing` directives); wins over `-v`.
pub const RUST_LOG: &str = "RUST_LOG";

use toolgate::model::env as model;

/// Variables read by the code, with what each does.
pub const READ: &[(&str, &str)] = &[
    (
        API_KEY,
        "The API key `serve` requires of every caller (unless `--api-key-file` names one), \
             and the key `stats --limits` sends.",
    ),
    (
        RUST_LOG,
        "The log filter (`tracing` directives, e.g. `toolgate=debug`); wins over `-v`.",
    ),
    (
        model::OPENAI_API_KEY,
        "The key of OpenAI-compatible servers (`openai:` models).",
    ),
    (
        model::OPENAI_BASE_URL,
        "The OpenAI-compatible server (default OpenAI's); an agent's `model.base_url` wins.",
    ),
    (
        model::ANTHROPIC_API_KEY,
        "The key of Anthropic's Messages API (`anthropic:` models).",
    ),
    (
        model::ANTHROPIC_BASE_URL,
        "The Anthropic server (default Anthropic's); an agent's `model.base_url` wins.",
    ),
    (
        model::MODEL_ATTEMPTS,
        "How many times a model request is tried before the run fails.",
    ),
    (
        toolgate::model::prices::PRICES_ENV,
        "A price file (`models:` name -> dollars per million tokens) over the built-in table: what model requests cost, for budgets and `stats --spend-by`.",
    ),
    (
        model::MODEL_BACKOFF_MS,
        "The wait before the first retry of a model request, in milliseconds (doubled for each next one).",
    ),
    (
        toolgate::tool::secrets::KEY_ENV,
        "The key secrets are sealed with (64 hex digits, or 32 bytes in base64); without it, a key file.",
    ),
    (
        toolgate::tool::secrets::KEY_FILE_ENV,
        "The key file (created at first use when missing).",
    ),
    (
        toolgate::tool::secrets::KEY_DIR_ENV,
        "The folder of per-user key files (default `$XDG_DATA_HOME/toolgate/keys`, else `~/.local/share/toolgate/keys`).",
    ),
    (
        toolgate::tool::net::ALLOW_ENV,
        "Allow-list entries (hosts, addresses, networks) every HTTP tool may reach although the network rule refuses them.",
    ),
    (
        toolgate::tool::sources::web::fetch::MAX_BYTES_ENV,
        "The most bytes `web_fetch` reads of one response (default 10 MiB).",
    ),
    (
        toolgate::tool::sources::web::search::PROVIDER_ENV,
        "The provider `web_search` asks: `searxng`, `brave` or `tavily` (its key: the stored secret `web_search.api_key`).",
    ),
    (
        toolgate::tool::sources::web::search::URL_ENV,
        "The search provider's endpoint: a SearXNG instance's URL (required for SearXNG), or another URL for Brave or Tavily.",
    ),
    (
        toolgate::tool::policy::hooks::SECRET_ENV,
        "The key URL hooks are signed with (else the notifications' key).",
    ),
    (
        toolgate::protocol::webhook::SECRET_ENV,
        "The key webhook notifications are signed with.",
    ),
    (
        super::run::OAUTH_CALLBACK_ENV,
        "Where a consent begun by a command-line run sends the browser back (default `http://localhost:8080/v1/oauth/callback`): the loopback address `toolgate oauth connect` listens on.",
    ),
    (
        toolgate::store::POOL_ENV,
        "The most connections one PostgreSQL store opens (default 16).",
    ),
    (
        toolgate::tool::mcp::CACHE_DIR_ENV,
        "The folder of toolgate's caches (MCP tool lists under `mcp-tools/`).",
    ),
    (
        toolgate::tool::dify::PYTHON_ENV,
        "The Python that runs Dify plugins (default `python3`).",
    ),
    (
        toolgate::sandbox::ABI_ENV,
        "Lowers the Landlock ABI the sandbox uses, to try its fail-closed path; never raises it.",
    ),
    (
        toolgate::telemetry::otel::TRACES_ENDPOINT_ENV,
        "The full URL spans go to, instead of `--otlp-endpoint` + `/v1/traces`.",
    ),
    (
        toolgate::telemetry::otel::SERVICE_NAME_ENV,
        "The exported service name (default `toolgate`).",
    ),
];
