//! A server in this process, for tests that act on the forum while it serves
//! (revoking a token, which the command line cannot do while the file is held).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parley_forum::Forum;
use tokio::sync::watch;

use super::readers::Readers;
use super::{connections, origin::Origins, router, waits::Waits, App, Hosts};

pub(crate) struct TestServer {
    pub(crate) addr: SocketAddr,
    pub(crate) forum: Arc<Forum>,
    stop: watch::Sender<bool>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl TestServer {
    pub(crate) fn start(forum: Forum, heartbeat: Duration) -> TestServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let forum = Arc::new(forum);
        let (stop, stopping) = watch::channel(false);
        let limits = connections::Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(10),
            max_connections: 64,
        };
        let app = App {
            forum: Arc::clone(&forum),
            origins: Arc::new(Origins::new(&[]).unwrap()),
            hosts: Arc::new(Hosts::new(&[]).unwrap()),
            readers: Arc::new(Readers::start().unwrap()),
            waits: Arc::new(Waits::new(&forum, 16, 16)),
            heartbeat,
            idle_timeout: limits.idle_timeout,
            stopping: stopping.clone(),
            web: Arc::new(crate::web::session::Sessions::new(
                Duration::from_secs(1800),
                Duration::from_secs(43200),
                false,
            )),
        };
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(connections::serve(listener, router(app), limits, stopping));
        TestServer {
            addr,
            forum,
            stop,
            runtime: Some(runtime),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.forum.end_waits();
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(10));
        }
    }
}
