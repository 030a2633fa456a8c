//! DNS-rebinding protection by `Host`: loopback names pass, any other name is
//! refused with 421 on every route (REST, `/mcp`, unknown routes) unless
//! `--allow-host` admits it.

mod support;

use serde_json::json;
use support::{exchange, get_with_host, post_with_host, rpc, Response, Server, TempForum};

/// A foreign host's refusal names the flag that admits it; a missing Host's says so.
fn assert_host_refused_rest(resp: &Response, host: &str) {
    let needle = if host == "(none)" {
        "no Host"
    } else {
        "--allow-host"
    };
    assert_eq!(
        resp.status,
        421,
        "{host}: {:?}",
        String::from_utf8_lossy(&resp.body)
    );
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let body = resp.json();
    assert_eq!(body["error"]["reason"], "host_not_allowed", "{host}");
    assert_eq!(body["error"]["status"], 421);
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains(needle)));
}

fn assert_host_refused_mcp(resp: &Response, host: &str) {
    assert_eq!(
        resp.status,
        421,
        "{host}: {:?}",
        String::from_utf8_lossy(&resp.body)
    );
    let body = resp.json();
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body["id"].is_null());
    assert_eq!(body["error"]["code"], -32600);
    assert_eq!(
        body["error"]["data"]["reason"], "host_not_allowed",
        "{host}"
    );
    assert_eq!(body["error"]["data"]["status"], 421);
}

fn tools_list() -> Vec<u8> {
    rpc(1, "tools/list", json!({})).into_bytes()
}

#[test]
fn loopback_hosts_pass_and_foreign_hosts_are_refused_on_every_route() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let server = Server::start(&forum.db, None, &[]);
    let addr = server.addr;
    let port = addr.port();

    for host in [
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_string(),
        "localhost".to_string(),
        format!("localhost:{port}"),
        "LocalHost:1234".to_string(),
        format!("[::1]:{port}"),
        "[::1]".to_string(),
    ] {
        let got = get_with_host(addr, "/v1/manifest", Some(&host));
        assert_eq!(got.status, 200, "{host}");
        let mcp = post_with_host(addr, "/mcp", &host, None, &tools_list());
        assert_eq!(mcp.status, 200, "{host}");
        assert!(mcp.json()["result"]["tools"].is_array(), "{host}");
    }

    let envelope = json!({"kind": "ask", "body": "Rebound?"}).to_string();
    for host in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        "localhost.evil.example".to_string(),
        format!("127.0.0.1.nip.io:{port}"),
        "localhost:abc".to_string(),
        "127.0.0.2".to_string(),
        "[::2]".to_string(),
    ] {
        assert_host_refused_rest(&get_with_host(addr, "/v1/manifest", Some(&host)), &host);
        assert_host_refused_rest(&get_with_host(addr, "/no/such/route", Some(&host)), &host);
        assert_host_refused_rest(
            &post_with_host(
                addr,
                "/v1/messages",
                &host,
                Some(&alice),
                envelope.as_bytes(),
            ),
            &host,
        );
        assert_host_refused_mcp(
            &post_with_host(addr, "/mcp", &host, None, &tools_list()),
            &host,
        );
        let call = rpc(
            2,
            "tools/call",
            json!({"name": "post", "arguments": {"kind": "ask", "body": "Rebound over MCP?"}}),
        );
        assert_host_refused_mcp(
            &post_with_host(addr, "/mcp", &host, Some(&alice), call.as_bytes()),
            &host,
        );
    }

    // No Host at all is refused too (HTTP/1.1 requires one; a browser always sends it).
    let none = get_with_host(addr, "/v1/manifest", None);
    assert_host_refused_rest(&none, "(none)");
    // An absolute request target names the host the request is for, whatever `Host` says.
    let absolute = exchange(
        addr,
        b"GET http://evil.example/v1/manifest HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_host_refused_rest(&absolute, "absolute form");

    // Nothing a refused request carried was stored.
    let threads = server.get("/v1/threads", Some(&alice));
    assert_eq!(threads.status, 200);
    assert_eq!(threads.json()["items"], json!([]));
}

#[test]
fn allow_host_admits_a_name_with_any_port_or_one_port() {
    let forum = TempForum::new();
    forum.token("alice", &[]);
    let server = Server::start(
        &forum.db,
        None,
        &[
            "--allow-host",
            "Forum.Example",
            "--allow-host",
            "pinned.example:9000",
            "--allow-host",
            "[fd00::7]",
        ],
    );
    let addr = server.addr;
    for host in [
        "forum.example",
        "forum.example:8080",
        "FORUM.EXAMPLE:7878",
        "pinned.example:9000",
        "[fd00::7]:7878",
        "localhost",
    ] {
        assert_eq!(
            get_with_host(addr, "/v1/manifest", Some(host)).status,
            200,
            "{host}"
        );
        let mcp = post_with_host(addr, "/mcp", host, None, &tools_list());
        assert_eq!(mcp.status, 200, "{host}");
    }
    for host in [
        "pinned.example",
        "pinned.example:9001",
        "other.example",
        "sub.forum.example",
    ] {
        assert_host_refused_rest(&get_with_host(addr, "/v1/manifest", Some(host)), host);
        assert_host_refused_mcp(
            &post_with_host(addr, "/mcp", host, None, &tools_list()),
            host,
        );
    }
}
