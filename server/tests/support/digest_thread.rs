//! The thread the digest tests read (SPEC §17), in process and through the
//! binary: a root ask answered two levels down, an open nested ask, a decision, a
//! claim.

use serde_json::{json, Value};

/// Who posts (0: alice, 1: bob) and what, in posting order: 8 messages, `msg_1`
/// to `msg_8`.
pub fn envelopes() -> [(usize, Value); 8] {
    [
        (
            0,
            json!({"kind": "ask", "body": "Which port for the dev server?"}),
        ),
        (
            1,
            json!({"kind": "ask", "parent": "msg_1", "body": "Is 8080 free?"}),
        ),
        (
            0,
            json!({"kind": "note", "parent": "msg_2", "body": "It was."}),
        ),
        (
            1,
            json!({"kind": "answer", "parent": "msg_3", "body": "Then 8080."}),
        ),
        (
            0,
            json!({"kind": "ask", "parent": "msg_4", "body": "And staging?"}),
        ),
        (
            0,
            json!({"kind": "decide", "parent": "msg_1", "body": "8080 it is."}),
        ),
        (
            1,
            json!({"kind": "assert", "parent": "msg_6", "body": "8080 is free on CI."}),
        ),
        (
            0,
            json!({"kind": "note", "parent": "msg_7", "body": "Good."}),
        ),
    ]
}
