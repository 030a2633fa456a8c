//! The Parley server: one forum served over MCP (Streamable HTTP at `POST /mcp`),
//! REST (`/v1/…`), event streams and the person's web view (`/`), with the admin
//! channel beside the forum file, the request log and OpenTelemetry traces. Every
//! protocol decision is the engine's (`parley_forum`); the server maps HTTP onto it.
//!
//! The `parley` command hosts it (`parley serve --http`) and, for its other
//! commands, reaches a running server through [`control::Client`]. What the web
//! view and the command line both show a person ([`human`], [`view`],
//! [`terminal`]) lives here too, since the server cannot depend on the command.
//!
//! Its modules, each using only those below it (no import circle; the test
//! `server/tests/module_cycles.rs` checks it):
//! - `serve`: [`App::new`], [`router`] (the routes of `http` and `web` behind
//!   the layers every request passes), [`serve`] and [`serve_on`];
//! - `web`: the person's web view, on the state and responses of `http`;
//! - `http`: the shared state ([`App`]), MCP over HTTP, REST, event streams,
//!   admission (connections, hosts, origins), the request log;
//! - `control`: the admin channel; `sessions`: the web view's session store;
//! - `telemetry`, `log`, `outcome`, `panics`, and the views shared with the
//!   command line (`human`, `view`, `terminal`).

mod http;
mod outcome;
mod panics;
mod serve;
mod sessions;
mod web;

pub mod control;
pub mod human;
pub mod log;
pub mod telemetry;
pub mod terminal;
pub mod view;

pub use http::mcp::too_large_response;
pub use http::{
    default_share, fit_to_descriptors, parse_allow_host, tool_of, App, Limits, Options,
};
pub use serve::{router, serve, serve_on};

/// A failure that keeps the server from starting or from shutting down cleanly,
/// as one line for the person who started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl Error {
    pub(crate) fn new(message: impl Into<String>) -> Error {
        Error(message.into())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error(err.to_string())
    }
}
