//! The coordination routes over real HTTP (SPEC §16.2): `POST /v1/leases`,
//! `DELETE /v1/leases/{id}`, `GET /v1/leases`, `PUT /v1/presence`,
//! `GET /v1/presence`, against the built `parley serve --http`; every refusal path
//! of the routes, and sixteen clients racing for one lease.

mod support;

use std::sync::{Arc, Barrier};

use serde_json::{json, Value};
use support::{http, Response, Server, TempForum};

struct Fixture {
    _forum: TempForum,
    server: Server,
    /// `ainotes:alice`, read and write.
    alice: String,
    /// `ainotes:bob`, read and write.
    bob: String,
    /// `ainotes:rita`, read only.
    rita: String,
    /// `ainotes:lou`, read, write and lock.
    lou: String,
    /// `human:ann`.
    ann: String,
}

fn fixture_with(settings: &str) -> Fixture {
    let forum = TempForum::new();
    let alice = forum.token("alice", &["--rights", "read,write"]);
    let bob = forum.token("bob", &["--rights", "read,write"]);
    let rita = forum.token("rita", &["--rights", "read"]);
    let lou = forum.token("lou", &["--rights", "read,write,lock"]);
    let ann = forum.token("ann", &["--human"]);
    let server = Server::start(&forum.db, Some(settings), &[]);
    Fixture {
        _forum: forum,
        server,
        alice,
        bob,
        rita,
        lou,
        ann,
    }
}

fn fixture() -> Fixture {
    fixture_with(r#"{"limits":{"writes_per_minute":0}}"#)
}

impl Fixture {
    fn send(&self, method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> Response {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        http(
            self.server.addr,
            method,
            path,
            &headers,
            body.map(str::as_bytes),
        )
    }

    fn lease(&self, token: &str, args: Value) -> Response {
        self.send("POST", "/v1/leases", Some(token), Some(&args.to_string()))
    }

    fn granted(&self, token: &str, args: Value) -> Value {
        let resp = self.lease(token, args);
        assert_eq!(resp.status, 201, "{}", body(&resp));
        resp.json()["lease"].clone()
    }

    fn release(&self, token: Option<&str>, id: &str) -> Response {
        self.send("DELETE", &format!("/v1/leases/{id}"), token, None)
    }

    fn leases(&self, token: &str, query: &str) -> Vec<Value> {
        let resp = self.send("GET", &format!("/v1/leases{query}"), Some(token), None);
        assert_eq!(resp.status, 200, "{}", body(&resp));
        resp.json()["items"].as_array().unwrap().clone()
    }
}

fn body(resp: &Response) -> String {
    String::from_utf8_lossy(&resp.body).into_owned()
}

fn refused(resp: &Response, status: u16, reason: &str) {
    assert_eq!(resp.status, status, "{}", body(resp));
    assert_eq!(resp.reason(), reason, "{}", body(resp));
    assert_eq!(resp.json()["error"]["status"], status, "{}", body(resp));
}

fn ids(items: &[Value]) -> Vec<&str> {
    items.iter().map(|l| l["id"].as_str().unwrap()).collect()
}

#[test]
fn a_lease_is_granted_renewed_listed_and_released() {
    let f = fixture();
    let thread = f.server.post(
        "/v1/messages",
        Some(&f.alice),
        r#"{"kind":"ask","body":"Who edits the parser?"}"#,
    );
    assert_eq!(thread.status, 201);
    let first = f.granted(
        &f.alice,
        json!({"resource": "src/", "ttl_s": 60, "note": "refactoring", "extension": "w1"}),
    );
    assert!(first["id"].as_str().unwrap().starts_with("ls_"), "{first}");
    assert_eq!(first["resource"], "src/");
    assert_eq!(first["mode"], "exclusive");
    assert_eq!(
        first["holder"],
        json!({"identity": "ainotes:alice", "extension": "w1"})
    );
    assert_eq!(first["note"], "refactoring");
    // The same holder, resource and mode renew: same id, thread and note replaced.
    let renewed = f.granted(
        &f.alice,
        json!({"resource": "src/", "ttl_s": 120, "thread": "th_1", "note": "still", "extension": "w1"}),
    );
    assert_eq!(renewed["id"], first["id"]);
    assert_eq!(renewed["thread"], "th_1");
    assert_eq!(renewed["note"], "still");
    assert!(renewed["expires_at"].as_str() > first["expires_at"].as_str());
    let other = f.granted(
        &f.bob,
        json!({"resource": "docs/guide.md", "mode": "shared"}),
    );

    assert_eq!(f.leases(&f.rita, "").len(), 2);
    let under = f.leases(&f.rita, "?resource=src/main.rs");
    assert_eq!(ids(&under), [first["id"].as_str().unwrap()]);
    let bobs = f.leases(&f.rita, "?identity=ainotes:bob");
    assert_eq!(ids(&bobs), [other["id"].as_str().unwrap()]);
    assert!(f
        .leases(&f.rita, "?identity=ainotes:bob&resource=src/")
        .is_empty());

    let id = first["id"].as_str().unwrap();
    // The holder's identity releases, from any extension (here: none), by number too.
    let number = id.trim_start_matches("ls_");
    let resp = f.release(Some(&f.alice), number);
    assert_eq!(resp.status, 200, "{}", body(&resp));
    let released = resp.json()["lease"].clone();
    assert_eq!(released["id"], id);
    assert!(released["released_at"].is_string(), "{released}");
    assert_eq!(ids(&f.leases(&f.rita, "")), [other["id"].as_str().unwrap()]);
    // Released, the resource is free for another holder.
    f.granted(&f.bob, json!({"resource": "src/lib.rs"}));
}

#[test]
fn a_conflict_is_409_naming_the_holder() {
    let f = fixture();
    let held = f.granted(&f.alice, json!({"resource": "src/", "note": "mine"}));
    for (args, why) in [
        (
            json!({"resource": "src/main.rs"}),
            "under an exclusive prefix",
        ),
        (json!({"resource": "src"}), "the prefix itself"),
        (
            json!({"resource": "src/", "mode": "shared"}),
            "shared against exclusive",
        ),
    ] {
        let resp = f.lease(&f.bob, args);
        refused(&resp, 409, "lease_conflict");
        let leases = resp.json()["error"]["leases"].clone();
        assert_eq!(leases.as_array().map(Vec::len), Some(1), "{why}: {leases}");
        assert_eq!(leases[0]["id"], held["id"], "{why}");
        assert_eq!(leases[0]["holder"]["identity"], "ainotes:alice", "{why}");
        assert_eq!(leases[0]["note"], "mine", "{why}");
    }
    // Shared leases go together; an exclusive one then conflicts with them.
    f.granted(&f.alice, json!({"resource": "docs/", "mode": "shared"}));
    f.granted(&f.bob, json!({"resource": "docs/", "mode": "shared"}));
    refused(
        &f.lease(&f.lou, json!({"resource": "docs/a.md"})),
        409,
        "lease_conflict",
    );
    // Resources that do not overlap never conflict.
    f.granted(&f.bob, json!({"resource": "srcs/"}));
}

#[test]
fn release_is_for_the_holder_a_lock_holder_or_a_person() {
    let f = fixture();
    let a = f.granted(&f.alice, json!({"resource": "a"}));
    let b = f.granted(&f.alice, json!({"resource": "b"}));
    let c = f.granted(&f.alice, json!({"resource": "c"}));
    let id = |l: &Value| l["id"].as_str().unwrap().to_string();
    refused(
        &f.release(Some(&f.bob), &id(&a)),
        403,
        "lease_authority_missing",
    );
    // A token without `write` is refused for the right first.
    refused(
        &f.release(Some(&f.rita), &id(&a)),
        403,
        "token_right_missing",
    );
    assert_eq!(f.release(Some(&f.lou), &id(&a)).status, 200);
    assert_eq!(f.release(Some(&f.ann), &id(&b)).status, 200);
    // Released once, it is gone.
    refused(&f.release(Some(&f.ann), &id(&b)), 404, "lease_not_found");
    refused(&f.release(Some(&f.alice), "ls_999"), 404, "lease_not_found");
    refused(&f.release(Some(&f.alice), "th_1"), 400, "invalid_argument");
    refused(&f.release(None, &id(&c)), 401, "token_missing");
    let resp = f.release(Some("pt_not_a_token"), &id(&c));
    refused(&resp, 401, "token_invalid");
    assert_eq!(resp.header("www-authenticate"), Some("Bearer"));
    // An id whose escapes are not UTF-8: the token is judged first.
    refused(&f.release(None, "ls_%FF"), 401, "token_missing");
    refused(
        &f.release(Some(&f.alice), "ls_%FF"),
        400,
        "invalid_argument",
    );
    assert_eq!(f.leases(&f.rita, "").len(), 1);
}

#[test]
fn malformed_requests_are_refused_after_the_token() {
    let f = fixture();
    for bad in ["{", "[1]", "\"src/\"", "{\"resource\":"] {
        refused(
            &f.send("POST", "/v1/leases", Some(&f.alice), Some(bad)),
            400,
            "invalid_argument",
        );
        refused(
            &f.send("POST", "/v1/leases", None, Some(bad)),
            401,
            "token_missing",
        );
        refused(
            &f.send("PUT", "/v1/presence", Some("pt_nope"), Some(bad)),
            401,
            "token_invalid",
        );
        refused(
            &f.send("PUT", "/v1/presence", Some(&f.alice), Some(bad)),
            400,
            "invalid_argument",
        );
    }
    for args in [
        json!({}),
        json!({"resource": ""}),
        json!({"resource": "a//b"}),
        json!({"resource": "/a"}),
        json!({"resource": "x".repeat(201)}),
        json!({"resource": "a", "mode": "forever"}),
        json!({"resource": "a", "ttl_s": 0}),
        json!({"resource": "a", "ttl_s": 86_401}),
        json!({"resource": "a", "note": "n".repeat(201)}),
        json!({"resource": "a", "color": "red"}),
    ] {
        refused(&f.lease(&f.alice, args.clone()), 400, "invalid_argument");
    }
    refused(
        &f.lease(&f.alice, json!({"resource": "a", "thread": "th_404"})),
        404,
        "thread_not_found",
    );
    refused(
        &f.lease(&f.rita, json!({"resource": "a"})),
        403,
        "token_right_missing",
    );
    refused(
        &f.send("GET", "/v1/leases?resource=a//b", Some(&f.alice), None),
        400,
        "invalid_argument",
    );
    refused(
        &f.send("GET", "/v1/leases?resource=%FF", None, None),
        401,
        "token_missing",
    );
    refused(
        &f.send("GET", "/v1/leases?resource=%FF", Some(&f.alice), None),
        400,
        "invalid_argument",
    );
    refused(
        &f.send("GET", "/v1/leases", None, None),
        401,
        "token_missing",
    );
    refused(
        &f.send("GET", "/v1/presence", None, None),
        401,
        "token_missing",
    );
    let large = json!({"resource": "a", "note": "n".repeat(70_000)}).to_string();
    refused(
        &f.send("POST", "/v1/leases", Some(&f.alice), Some(&large)),
        413,
        "payload_too_large",
    );
    assert!(f.leases(&f.alice, "").is_empty(), "nothing was granted");
}

#[test]
fn presence_is_set_read_and_goes_stale() {
    let f = fixture();
    let put = |token: &str, args: Value| {
        f.send("PUT", "/v1/presence", Some(token), Some(&args.to_string()))
    };
    let resp = put(
        &f.alice,
        json!({"status": "working", "note": "parser", "extension": "w1"}),
    );
    assert_eq!(resp.status, 200, "{}", body(&resp));
    let item = resp.json()["presence"].clone();
    assert_eq!(item["identity"], "ainotes:alice");
    assert_eq!(item["extension"], "w1");
    assert_eq!(item["status"], "working");
    assert_eq!(item["stale"], false);
    // A read-only token may set its presence.
    let resp = put(&f.rita, json!({"status": "idle", "ttl_s": 1}));
    assert_eq!(resp.status, 200, "{}", body(&resp));
    let resp = put(&f.alice, json!({"status": "away"}));
    assert_eq!(resp.status, 200);

    let all = f.send("GET", "/v1/presence", Some(&f.bob), None);
    assert_eq!(all.status, 200);
    let items = all.json()["items"].as_array().unwrap().clone();
    let who: Vec<(String, Value)> = items
        .iter()
        .map(|i| {
            (
                i["identity"].as_str().unwrap().into(),
                i["extension"].clone(),
            )
        })
        .collect();
    assert_eq!(
        who,
        [
            ("ainotes:alice".to_string(), Value::Null),
            ("ainotes:alice".to_string(), json!("w1")),
            ("ainotes:rita".to_string(), Value::Null),
        ]
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let rita = f.send(
        "GET",
        "/v1/presence?identity=ainotes:rita",
        Some(&f.bob),
        None,
    );
    let items = rita.json()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["stale"], true, "{}", items[0]);
    assert_eq!(items[0]["status"], "idle", "the last status is kept");

    for args in [
        json!({}),
        json!({"status": "asleep"}),
        json!({"status": "idle", "ttl_s": 0}),
        json!({"status": "idle", "ttl_s": 86_401}),
        json!({"status": "idle", "note": "n".repeat(201)}),
    ] {
        refused(&put(&f.alice, args), 400, "invalid_argument");
    }
    refused(
        &f.send("GET", "/v1/presence?identity=nobody", Some(&f.bob), None),
        400,
        "invalid_argument",
    );
}

#[test]
fn switched_off_the_routes_refuse_every_call() {
    let f = fixture_with(r#"{"coordination":false}"#);
    let lease = f.lease(&f.alice, json!({"resource": "a"}));
    assert!(matches!(lease.status, 400 | 404), "{}", body(&lease));
    for (method, path, payload) in [
        ("GET", "/v1/leases", None),
        ("DELETE", "/v1/leases/ls_1", None),
        ("PUT", "/v1/presence", Some(r#"{"status":"idle"}"#)),
        ("GET", "/v1/presence", None),
    ] {
        let resp = f.send(method, path, Some(&f.alice), payload);
        assert_eq!(
            resp.status,
            lease.status,
            "{method} {path}: {}",
            body(&resp)
        );
        assert_eq!(resp.reason(), lease.reason(), "{method} {path}");
    }
}

#[test]
fn sixteen_clients_race_for_one_lease_and_exactly_one_wins() {
    let f = fixture();
    // Issued while the server runs, through the forum it serves.
    let tokens: Vec<String> = (0..16)
        .map(|i| {
            f._forum
                .token(&format!("racer{i}"), &["--rights", "read,write"])
        })
        .collect();
    let barrier = Arc::new(Barrier::new(tokens.len()));
    let addr = f.server.addr;
    let racers: Vec<_> = tokens
        .into_iter()
        .map(|token| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let auth = format!("Bearer {token}");
                let headers = [
                    ("Authorization", auth.as_str()),
                    ("Content-Type", "application/json"),
                ];
                barrier.wait();
                let args = br#"{"resource":"jobs/nightly-build"}"#;
                http(addr, "POST", "/v1/leases", &headers, Some(args))
            })
        })
        .collect();
    let answers: Vec<Response> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let won: Vec<&Response> = answers.iter().filter(|r| r.status == 201).collect();
    assert_eq!(won.len(), 1, "exactly one wins");
    for lost in answers.iter().filter(|r| r.status != 201) {
        refused(lost, 409, "lease_conflict");
        assert_eq!(
            lost.json()["error"]["leases"][0]["id"],
            won[0].json()["lease"]["id"]
        );
    }
    assert_eq!(f.leases(&f.alice, "").len(), 1);
}
