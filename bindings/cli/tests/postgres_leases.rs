//! Leases across engines (SPEC §16.2): two `parley serve --http` on one PostgreSQL
//! database, sixteen clients racing for one resource, half through each server:
//! exactly one wins, the others are refused naming the winner, and both servers
//! then list the one lease. The servers are the built binary, the database a real
//! server (`tests/pg/server.sh`).

mod common;
#[path = "../../../tests/pg/support.rs"]
mod pg;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Barrier};

use common::{http, Response, Server, BIN};

const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0}}"#;

/// `parley --db URL token create HANDLE …`, beside the running servers.
fn token(url: &str, handle: &str) -> String {
    let out = Command::new(BIN)
        .args([
            "--db",
            url,
            "token",
            "create",
            handle,
            "--rights",
            "read,write",
        ])
        .env_remove("PARLEY_DB")
        .output()
        .expect("runs parley");
    assert!(
        out.status.success(),
        "token create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn send(
    server: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> Response {
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    http(server, method, path, &headers, body.map(str::as_bytes))
}

#[test]
fn sixteen_clients_on_two_servers_race_for_one_lease_and_exactly_one_wins() {
    let Some(base) = pg::server() else {
        return;
    };
    let url = pg::fresh_url(&base, "lease16");
    // The first token makes the forum; both servers then open it.
    let tokens: Vec<String> = (0..16).map(|i| token(&url, &format!("racer{i}"))).collect();
    let servers = [
        Server::start(Path::new(&url), Some(SETTINGS), &[]),
        Server::start(Path::new(&url), Some(SETTINGS), &[]),
    ];
    let addrs = [servers[0].addr, servers[1].addr];

    for round in 0..3 {
        let resource = format!("jobs/build-{round}");
        let barrier = Arc::new(Barrier::new(tokens.len()));
        let racers: Vec<_> = tokens
            .iter()
            .enumerate()
            .map(|(i, token)| {
                let (barrier, token) = (Arc::clone(&barrier), token.clone());
                let addr = addrs[i % 2];
                let body = format!(r#"{{"resource":"{resource}","ttl_s":60}}"#);
                std::thread::spawn(move || {
                    barrier.wait();
                    send(addr, "POST", "/v1/leases", &token, Some(&body))
                })
            })
            .collect();
        let answers: Vec<Response> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let won: Vec<&Response> = answers.iter().filter(|r| r.status == 201).collect();
        assert_eq!(won.len(), 1, "round {round}: exactly one wins");
        let winner = won[0].json()["lease"].clone();
        for lost in answers.iter().filter(|r| r.status != 201) {
            assert_eq!(lost.status, 409, "{}", String::from_utf8_lossy(&lost.body));
            assert_eq!(lost.reason(), "lease_conflict");
            assert_eq!(lost.json()["error"]["leases"][0]["id"], winner["id"]);
        }
        // Both servers see the one lease.
        for addr in addrs {
            let path = format!("/v1/leases?resource={resource}");
            let listed = send(addr, "GET", &path, &tokens[0], None).json();
            let items = listed["items"].as_array().unwrap();
            assert_eq!(items.len(), 1, "{listed}");
            assert_eq!(items[0]["id"], winner["id"]);
        }
    }
    for server in servers {
        server.terminate();
    }
}
