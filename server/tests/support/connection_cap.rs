//! The connection cap's refusal as a client sees it, shared by the in-process
//! tests (`server/tests/connections.rs`) and the end-to-end ones of the binary.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::http_client::{try_http, Response};

/// Far longer than a capped client waits to be served.
const BOUND: Duration = Duration::from_secs(30);

/// Checks that `resp` is the cap's refusal: 503, `Retry-After`, a JSON error body
/// with the stable reason, and the connection closed.
pub fn assert_cap_refusal(resp: &Response) {
    assert_eq!(
        resp.status,
        503,
        "{:?}",
        String::from_utf8_lossy(&resp.body)
    );
    let retry: u64 = resp
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("Retry-After in seconds");
    assert!(retry >= 1);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(resp.header("connection"), Some("close"));
    let body = resp.json();
    assert_eq!(body["error"]["reason"], "too_many_connections");
    assert_eq!(body["error"]["status"], 503);
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("connections")));
}

/// One request from a well-behaved client: `Ok(200)` once it is served, the
/// response when it is refused (a 503 from the cap).
pub fn normal_client(addr: SocketAddr) -> Result<(), Response> {
    let resp = try_http(addr, "GET", "/v1/manifest", &[], None).expect("an answer, not a hang");
    if resp.status == 200 {
        assert_eq!(resp.json()["parley"], "1");
        Ok(())
    } else {
        Err(resp)
    }
}

/// Retries a normal client until it is served, checking every refusal on the way.
pub fn served_eventually(addr: SocketAddr) -> usize {
    let began = Instant::now();
    let mut refusals = 0;
    loop {
        match normal_client(addr) {
            Ok(()) => return refusals,
            Err(resp) => {
                assert_cap_refusal(&resp);
                refusals += 1;
            }
        }
        assert!(began.elapsed() < BOUND, "a normal client was never served");
        std::thread::sleep(Duration::from_millis(50));
    }
}
