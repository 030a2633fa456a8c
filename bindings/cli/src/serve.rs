//! `parley serve`: its flags, and the plumbing from them to the server
//! (`parley_server`) or to MCP over stdio (`stdio`).

use std::path::Path;
use std::time::Duration;

use clap::builder::TypedValueParser;
use clap::Args;
use parley_forum::mcp::OutputSchemas;
use parley_forum::Config;
use parley_server::{control, log, telemetry};

use crate::{open, stdio, CmdResult, Failure};

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// MCP over stdio: one JSON-RPC message per line; the token comes from PARLEY_TOKEN.
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve MCP (POST /mcp), REST (/v1/...) and the web view (/) over HTTP at this address [default: 127.0.0.1:7878].
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:7878")]
    http: Option<String>,
    /// On SIGINT/SIGTERM, how long requests in flight may take to finish, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    shutdown_grace_ms: u64,
    /// What the MCP tool list says of each tool's result: `compact` (its top-level
    /// keys and their types), `exact` (every key, nested shapes included) or `none`
    /// (no outputSchema) [default: the settings' mcp_output_schemas, else compact].
    #[arg(long, value_name = "SCHEMAS", value_parser = output_schemas())]
    mcp_output_schemas: Option<OutputSchemas>,
    /// Also accept requests with this Origin (repeatable); loopback origins are always accepted.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Also answer requests addressed to this host, as NAME (any port) or NAME:PORT
    /// (repeatable); loopback names (localhost, 127.0.0.1, [::1]) are always answered.
    #[arg(long = "allow-host", value_name = "HOST", value_parser = parley_server::parse_allow_host)]
    allow_host: Vec<String>,
    /// Close a connection that has not sent a request's complete headers this long
    /// after its first byte (or after connecting), in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    header_timeout_ms: u64,
    /// Close a kept-alive connection that sends no new request this long after a
    /// response, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout_ms: u64,
    /// Serve at most this many connections at once; past them, a connection is
    /// answered 503 (too_many_connections) and closed.
    #[arg(long, value_name = "N", default_value_t = 2048, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,
    /// Hold at most this many waiting reads (`wait_ms`) and event streams at once;
    /// past them, one more is answered 503 (too_many_waits). Below --max-connections
    /// [default: 1000, or half of --max-connections when that is less].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_waits: Option<u32>,
    /// Of --max-waits, hold at most this many for one token; past them, that token
    /// alone is answered 503 (too_many_waits) [default: a quarter of --max-waits, at least 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_waits_per_token: Option<u32>,
    /// Close a connection whose request body has not all arrived this long after
    /// the server began to read it, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    body_timeout_ms: u64,
    /// Send a comment on an event stream that has been silent this long, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 15_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    heartbeat_ms: u64,
    /// End a web view session after this many seconds without a request.
    #[arg(long, value_name = "S", default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    web_session_idle_s: u64,
    /// End a web view session this many seconds after sign-in, however busy.
    #[arg(long, value_name = "S", default_value_t = 43_200, value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    web_session_max_s: u64,
    /// Mark the web view's cookies Secure: the server is reached through TLS (a
    /// proxy on this machine may instead say so per request with X-Forwarded-Proto: https).
    #[arg(long)]
    web_secure_cookie: bool,
    /// The request log's format on stderr: `text` or `json` (one object per line).
    /// Its level comes from RUST_LOG [default: info; `RUST_LOG=warn` keeps only 5xx].
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Export a span per request (OpenTelemetry, OTLP over HTTP/protobuf) to the
    /// collector at this http:// URL (`/v1/traces` is added when it has no path)
    /// [default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT; unset: off].
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
}

/// Serves the forum at `db` as the flags say: over stdio or HTTP, with the request
/// log and, when asked for, the export of traces. `config` gives the settings.
pub(crate) fn run(
    db: &Path,
    args: ServeArgs,
    config: impl Fn() -> Result<Config, Failure>,
) -> CmdResult {
    // Before any runtime starts: the exporter's HTTP client is a blocking one.
    let (telemetry, layer) = match telemetry::endpoint(args.otlp_endpoint.as_deref())? {
        Some(url) => {
            let (telemetry, layer) = telemetry::start(&url)?;
            (Some(telemetry), Some(layer))
        }
        None => (None, None),
    };
    log::start(&args.log_format, layer)?;
    control::Channel::preflight(db)?;
    let schemas = args.mcp_output_schemas;
    let config = || {
        let mut config = config()?;
        config.mcp_output_schemas = schemas.unwrap_or(config.mcp_output_schemas);
        Ok::<_, Failure>(config)
    };
    let served = if args.stdio {
        let forum = open(db, config()?, true)?;
        let token = std::env::var("PARLEY_TOKEN").ok();
        stdio::serve(forum, db, token.as_deref())
    } else {
        // The flags are checked before the forum file is opened (or made).
        let options = http_options(args)?;
        parley_server::serve(open(db, config()?, true)?, db, &options).map_err(Failure::from)
    };
    if let Some(telemetry) = telemetry {
        telemetry.stop();
    }
    served
}

/// How `serve --http` serves, from its flags.
fn http_options(args: ServeArgs) -> Result<parley_server::Options, Failure> {
    let (max_connections, warning) =
        parley_server::fit_to_descriptors(args.max_connections as usize);
    if let Some(warning) = warning {
        eprintln!("{warning}");
    }
    let max_waits = match args.max_waits {
        Some(n) if n >= args.max_connections => {
            return Err(Failure::Other(format!(
                "--max-waits {n} must be below --max-connections {} (each wait holds a connection; the rest serve other requests)",
                args.max_connections
            )))
        }
        Some(n) => (n as usize).min(max_connections.saturating_sub(1).max(1)),
        None => 1000.min(max_connections / 2).max(1),
    };
    Ok(parley_server::Options {
        addr: args.http.unwrap_or_else(|| "127.0.0.1:7878".to_string()),
        allow_origins: args.allow_origin,
        allow_hosts: args.allow_host,
        grace: Duration::from_millis(args.shutdown_grace_ms),
        limits: parley_server::Limits {
            header_timeout: Duration::from_millis(args.header_timeout_ms),
            idle_timeout: Duration::from_millis(args.idle_timeout_ms),
            body_timeout: Duration::from_millis(args.body_timeout_ms),
            max_connections,
        },
        max_waits,
        max_waits_per_token: args
            .max_waits_per_token
            .map_or_else(|| parley_server::default_share(max_waits), |n| n as usize)
            .min(max_waits),
        heartbeat: Duration::from_millis(args.heartbeat_ms),
        web_session_idle: Duration::from_secs(args.web_session_idle_s),
        web_session_max: Duration::from_secs(args.web_session_max_s),
        web_secure_cookie: args.web_secure_cookie,
    })
}

/// The values of `--mcp-output-schemas`; clap refuses any other as a usage error.
fn output_schemas() -> impl TypedValueParser<Value = OutputSchemas> {
    clap::builder::PossibleValuesParser::new(OutputSchemas::NAMES)
        .map(|name| name.parse().unwrap_or_default())
}
