//! Serving: the server's state made from its options ([`App::new`]), its router
//! ([`router`]: the routes of `http` and `web` behind the layers every request
//! passes) and the listener's loop ([`serve`], [`serve_on`]).
//!
//! This is the one module that knows both the HTTP routes and the web view; they
//! share the state ([`App`]) and the responses of `http`, and neither knows the
//! other's routes.

use std::sync::Arc;

use axum::Router;
use parley_forum::Forum;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::http::{self, App, Limits, Options};
use crate::{web, Error};

/// Every route of the server (MCP, REST, event streams, the web view) behind its
/// admission check, span and request log, over the shared state `app`.
pub fn router(app: App) -> Router {
    Router::new()
        .merge(http::routes())
        .merge(web::routes())
        .fallback(http::not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            http::admit,
        ))
        // Inside the log, which takes the handlers' notes off the response.
        .layer(axum::middleware::from_fn(crate::telemetry::http_span))
        // Outermost, so that a request refused by `admit` is logged too.
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            http::log_request,
        ))
        .with_state(app)
}

/// Serves `listener` with the server's router over `app`, each connection held to
/// `limits`, until `stopping` turns true; then stops accepting and returns once the
/// connections have ended. [`serve`] runs it with the process's signals; a test can
/// run it in its own runtime.
pub async fn serve_on(
    listener: TcpListener,
    app: App,
    limits: Limits,
    stopping: watch::Receiver<bool>,
) {
    http::serve_connections(listener, router(app), limits, stopping).await;
}

/// Serves until SIGINT or SIGTERM. Requests in flight then get up to `grace` to
/// finish; a connection still open after that (a client that stalls mid-request) is
/// closed. Engine calls already running always complete before the forum is closed.
pub fn serve(forum: Forum, db: &std::path::Path, options: &Options) -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(64)
        .build()
        .map_err(|e| Error::new(format!("cannot start the async runtime: {e}")))?;
    let forum = Arc::new(forum);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let app = App::new(Arc::clone(&forum), options, stop_rx.clone())?;
    let backend = crate::control::Direct(Arc::clone(&forum));
    let mut channel = crate::control::Channel::start(db, Arc::new(backend))?;
    let addr = options.addr.as_str();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::new(format!("cannot listen on {addr}: {e}")))?;
        let local = listener.local_addr()?;
        // Before the server says it listens: a SIGTERM sent as soon as it has said
        // so must stop it cleanly, not kill it by the signal's default action.
        let signals = StopSignals::register()?;
        if !local.ip().is_loopback() {
            eprintln!("parley: warning: listening beyond loopback over plain HTTP: bearer tokens travel unencrypted");
        }
        eprintln!(
            "parley: listening on http://{local} (MCP: POST /mcp, REST: /v1/…, web view: /), realm {}",
            forum.config().realm
        );
        let ending = Arc::clone(&forum);
        tokio::spawn(async move {
            signals.recv().await;
            let _ = stop_tx.send(true);
            // Every waiting read answers with its current result, every stream ends.
            ending.end_waits();
        });
        let server = serve_on(listener, app.clone(), options.limits, stop_rx.clone());
        let mut stopping = stop_rx;
        let grace = options.grace;
        let deadline = async move {
            let _ = stopping.wait_for(|stop| *stop).await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            () = server => {}
            () = deadline => {
                eprintln!("parley: connections still open after {} ms; closing them", grace.as_millis());
            }
        }
        Ok::<(), Error>(())
    })?;
    // The admin channel's connections finish their requests and let go of the forum.
    if let Some(channel) = channel.as_mut() {
        channel.stop();
    }
    drop(channel);
    // Dropping the runtime waits for blocking calls still running, stopping the
    // reader threads for the reads they hold; only then is the last reference to
    // the forum released and the database closed.
    drop(runtime);
    app.stop();
    drop(app);
    match Arc::try_unwrap(forum) {
        Ok(forum) => drop(forum),
        Err(_) => return Err(Error::new("the forum was still in use at shutdown")),
    }
    eprintln!("parley: stopped");
    Ok(())
}

/// SIGINT and SIGTERM, listened for from the moment they are registered.
struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn register() -> Result<StopSignals, Error> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind: SignalKind| {
            signal(kind).map_err(|e| Error::new(format!("cannot listen for signals: {e}")))
        };
        Ok(StopSignals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    /// Returns at the first of the two.
    async fn recv(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
        eprintln!("parley: shutting down, finishing requests in flight");
    }
}
