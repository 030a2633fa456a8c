//! OpenTelemetry spans from a real `parley serve` (HTTP and stdio), received by an
//! OTLP/HTTP endpoint that this test runs on 127.0.0.1 and decoded with
//! `opentelemetry-proto`: names, attributes, the client's trace continued (from
//! `params._meta` and from the HTTP headers), refusals as `error.type`, and a
//! collector that is down costing the requests nothing.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use common::{http, rpc, Server, TempForum, BIN};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::{json, Value};

/// A span as received: name, ids in hex, kind, status code, attributes as text.
#[derive(Clone, Debug)]
struct Got {
    name: String,
    trace_id: String,
    parent_span_id: String,
    kind: i32,
    status: i32,
    attributes: HashMap<String, String>,
    service: String,
}

impl Got {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// The OTLP/HTTP receiver: `POST /v1/traces` with a protobuf `ExportTraceServiceRequest`.
struct Collector {
    addr: SocketAddr,
    spans: Arc<Mutex<Vec<Got>>>,
    _runtime: tokio::runtime::Runtime,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(value: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

async fn receive(State(spans): State<Arc<Mutex<Vec<Got>>>>, body: Bytes) -> StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return StatusCode::BAD_REQUEST;
    };
    let mut got = spans.lock().unwrap();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .map(|kv| text(&kv.value))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                got.push(Got {
                    name: span.name.clone(),
                    trace_id: hex(&span.trace_id),
                    parent_span_id: hex(&span.parent_span_id),
                    kind: span.kind,
                    status: span.status.as_ref().map_or(0, |s| s.code),
                    attributes: span
                        .attributes
                        .iter()
                        .map(|kv| (kv.key.clone(), text(&kv.value)))
                        .collect(),
                    service: service.clone(),
                });
            }
        }
    }
    StatusCode::OK
}

impl Collector {
    fn start() -> Collector {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/traces", post(receive))
            .with_state(Arc::clone(&spans));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, app).await });
        Collector {
            addr,
            spans,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits (bounded) until a span named `name` with `attr` = `value` has arrived.
    fn span(&self, name: &str, attr: &str, value: &str) -> Got {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(span) = self
                .spans
                .lock()
                .unwrap()
                .iter()
                .find(|s| s.name == name && s.attr(attr) == Some(value))
            {
                return span.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no span {name} with {attr}={value}; got {:#?}",
                self.spans.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The protocol revision the HTTP requests name in their header.
const REVISION: &str = "2025-06-18";
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const HEADER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const HEADER_SPAN: &str = "b7ad6b7169203331";

fn traceparent(trace: &str, span: &str) -> String {
    format!("00-{trace}-{span}-01")
}

/// A server exporting to `collector`, its batches sent every 100 ms.
fn traced_server(forum: &TempForum, endpoint: &str) -> Server {
    let mut cmd = forum.command(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--otlp-endpoint",
        endpoint,
    ]);
    cmd.env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env_remove("RUST_LOG")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_SDK_DISABLED");
    Server::spawn(cmd)
}

fn mcp(server: &Server, token: &str, body: &str, extra: &[(&str, &str)]) -> Value {
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", REVISION),
    ];
    headers.extend_from_slice(extra);
    let resp = http(server.addr, "POST", "/mcp", &headers, Some(body.as_bytes()));
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    resp.json()
}

fn meta(trace: Option<(&str, &str)>) -> Value {
    let mut meta = json!({});
    if let Some((t, s)) = trace {
        meta["traceparent"] = json!(traceparent(t, s));
        meta["tracestate"] = json!("vendor=1");
    }
    meta
}

#[test]
fn http_requests_are_server_spans_that_continue_the_clients_trace() {
    let collector = Collector::start();
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let bob = forum.token("bob", &[]);
    let server = traced_server(&forum, &collector.url());

    // MCP `tools/call post` with the client's context in params._meta, and another
    // context in the HTTP header: the message's own wins.
    let header = traceparent(HEADER_TRACE, HEADER_SPAN);
    let asked = mcp(
        &server,
        &alice,
        &rpc(
            7,
            "tools/call",
            json!({"name": "post", "arguments": {"kind": "ask", "body": "Traced?"},
                   "_meta": meta(Some((CLIENT_TRACE, CLIENT_SPAN)))}),
        ),
        &[("traceparent", header.as_str())],
    );
    let thread = asked["result"]["structuredContent"]["thread"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let span = collector.span("tools/call post", "jsonrpc.request.id", "7");
    assert_eq!(span.kind, SpanKind::Server as i32);
    assert_eq!(
        span.trace_id, CLIENT_TRACE,
        "the client's trace is continued"
    );
    assert_eq!(span.parent_span_id, CLIENT_SPAN, "under the client's span");
    assert_eq!(span.service, "parley");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "post"),
        ("gen_ai.operation.name", "execute_tool"),
        ("mcp.protocol.version", REVISION),
        ("network.transport", "tcp"),
        ("gen_ai.conversation.id", thread.as_str()),
        ("parley.act", "ask"),
        ("http.request.method", "POST"),
        ("http.route", "/mcp"),
        ("http.response.status_code", "200"),
    ] {
        assert_eq!(span.attr(key), Some(value), "{key} in {span:#?}");
    }
    assert_eq!(span.attr("error.type"), None);
    assert_eq!(span.status, 0, "unset: not an error");

    // A refusal (alice answering her own question): a tool error, and an error span.
    let refused = mcp(
        &server,
        &alice,
        &rpc(
            8,
            "tools/call",
            json!({"name": "post", "arguments": {"kind": "answer", "thread": thread, "body": "Myself."},
                   "_meta": meta(None)}),
        ),
        &[("traceparent", header.as_str())],
    );
    assert_eq!(refused["result"]["isError"], true);
    let span = collector.span("tools/call post", "jsonrpc.request.id", "8");
    assert_eq!(span.attr("error.type"), Some("self_reply"));
    assert_eq!(span.attr("parley.reason"), Some("self_reply"));
    assert_eq!(span.attr("gen_ai.conversation.id"), Some(thread.as_str()));
    assert_eq!(span.attr("parley.act"), Some("answer"));
    assert_eq!(span.status, 2, "an error status");
    // Without a context in _meta, the HTTP header's is continued.
    assert_eq!(span.trace_id, HEADER_TRACE);
    assert_eq!(span.parent_span_id, HEADER_SPAN);

    // A JSON-RPC error: its code is the error type. No context at all: a new trace.
    let unknown = mcp(&server, &alice, &rpc(9, "no/such/method", json!({})), &[]);
    assert!(unknown["error"]["code"].is_i64());
    let code = unknown["error"]["code"].to_string();
    let span = collector.span("no/such/method", "jsonrpc.request.id", "9");
    assert_eq!(span.attr("error.type"), Some(code.as_str()));
    assert_eq!(span.attr("gen_ai.tool.name"), None);
    assert_eq!(span.parent_span_id, "");
    assert_ne!(span.trace_id, CLIENT_TRACE);

    // REST, with the context in the header; bob's answer moves the thread.
    let rest_parent = traceparent(CLIENT_TRACE, "1111111111111111");
    let body = json!({"kind": "answer", "thread": thread, "body": "Yes."}).to_string();
    let auth = format!("Bearer {bob}");
    let answered = http(
        server.addr,
        "POST",
        "/v1/messages",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("traceparent", rest_parent.as_str()),
        ],
        Some(body.as_bytes()),
    );
    assert_eq!(answered.status, 201);
    let span = collector.span("POST /v1/messages", "http.response.status_code", "201");
    assert_eq!(span.kind, SpanKind::Server as i32);
    assert_eq!(span.trace_id, CLIENT_TRACE);
    assert_eq!(span.parent_span_id, "1111111111111111");
    for (key, value) in [
        ("http.request.method", "POST"),
        ("http.route", "/v1/messages"),
        ("network.transport", "tcp"),
        ("gen_ai.conversation.id", thread.as_str()),
        ("parley.act", "answer"),
    ] {
        assert_eq!(span.attr(key), Some(value), "{key} in {span:#?}");
    }
    let transition = span.attr("parley.transition").unwrap_or_default();
    assert!(transition.starts_with("open->"), "{span:#?}");

    // A REST refusal: its reason is the error type; a 4xx leaves the status unset.
    let missing = server.get("/v1/threads/th_999999", Some(&bob));
    assert_eq!(missing.status, 404);
    let span = collector.span("GET /v1/threads/{id}", "http.response.status_code", "404");
    assert_eq!(span.attr("error.type"), Some(missing.reason().as_str()));
    assert_eq!(span.status, 0);

    let stderr = server.terminate();
    assert!(
        !stderr.iter().any(|l| l.contains("cannot export")),
        "{stderr:?}"
    );
}

#[test]
fn stdio_messages_are_spans_flushed_at_exit() {
    let collector = Collector::start();
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let mut child = forum
        .command(&["serve", "--stdio"])
        .env("PARLEY_TOKEN", &alice)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url())
        .env("OTEL_SERVICE_NAME", "forum-under-test")
        // Only the exit's flush sends them.
        .env("OTEL_BSP_SCHEDULE_DELAY", "60000")
        .env_remove("OTEL_SDK_DISABLED")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        rpc(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        ),
        rpc(
            2,
            "tools/call",
            json!({"name": "post", "arguments": {"kind": "ask", "body": "Over stdio?"},
                   "_meta": {"traceparent": traceparent(CLIENT_TRACE, CLIENT_SPAN)}}),
        ),
    ];
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "stdio server did not exit at EOF"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{err}");
    let init = collector.span("initialize", "jsonrpc.request.id", "1");
    assert_eq!(init.attr("mcp.protocol.version"), Some("2025-11-25"));
    assert_eq!(init.attr("network.transport"), Some("pipe"));
    assert_eq!(init.service, "forum-under-test");
    let post = collector.span("tools/call post", "jsonrpc.request.id", "2");
    assert_eq!(post.attr("network.transport"), Some("pipe"));
    assert_eq!(post.attr("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(post.attr("parley.act"), Some("ask"));
    assert!(post
        .attr("gen_ai.conversation.id")
        .is_some_and(|t| t.starts_with("th_")));
    assert_eq!(post.trace_id, CLIENT_TRACE);
    assert_eq!(post.parent_span_id, CLIENT_SPAN);
    assert_eq!(post.kind, SpanKind::Server as i32);
}

#[test]
fn a_dead_collector_slows_and_fails_nothing() {
    // A port that was just free: nothing listens there.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = traced_server(&forum, &format!("http://{dead}"));
    let started = Instant::now();
    for i in 0..50 {
        let reply = mcp(
            &server,
            &alice,
            &rpc(
                i,
                "tools/call",
                json!({"name": "post", "arguments": {"kind": "ask", "body": format!("Question {i}?")}}),
            ),
            &[],
        );
        assert_eq!(reply["result"]["isError"], false, "{reply}");
    }
    // Batches go out (and fail) every 100 ms meanwhile.
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "requests were held up: {:?}",
        started.elapsed()
    );
    let stderr = server.terminate();
    let warned = stderr
        .iter()
        .filter(|l| l.contains("cannot export traces"))
        .count();
    assert_eq!(warned, 1, "warned once: {stderr:#?}");
    assert!(
        stderr.iter().any(|l| l.contains("spans were not exported")),
        "{stderr:#?}"
    );
}

#[test]
fn endpoints_this_server_cannot_use_are_refused_at_start() {
    let forum = TempForum::new();
    let out = forum
        .command(&[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--otlp-endpoint",
            "https://collector:4318",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("must be an http:// URL"), "{err}");
    let out = forum
        .command(&["serve", "--http", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("http/protobuf only"), "{err}");
    // Disabled: the endpoint is ignored and the server serves without export.
    let mut cmd = std::process::Command::new(BIN);
    cmd.arg("--db")
        .arg(&forum.db)
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--otlp-endpoint",
            "https://x",
        ])
        .env("OTEL_SDK_DISABLED", "true");
    let server = Server::spawn(cmd);
    let stderr = server.terminate();
    assert!(
        !stderr.iter().any(|l| l.contains("exporting traces")),
        "{stderr:?}"
    );
}
