//! A panic inside the engine, through the C entry points: `PARLEY_PANIC` with a
//! message that says "panicked", not that the file is damaged; the out-parameter
//! stays NULL; the handle is not poisoned (the engine caught the panic and its
//! state is whole), so the next post on it succeeds. The panic comes from the
//! engine's `fault-injection` feature, which only test builds carry.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use ::parley_forum::fault::FAULT_BODY;
use parley::*;
use serde_json::{json, Value};

/// `parley_call` of `operation` with `args`: the code and the JSON result.
unsafe fn call(
    forum: *mut parley_forum,
    token: &CStr,
    operation: &CStr,
    args: &Value,
) -> (parley_result, Option<Value>) {
    let args = CString::new(args.to_string()).unwrap();
    let mut out: *mut c_char = ptr::null_mut();
    let code = parley_call(
        forum,
        token.as_ptr(),
        operation.as_ptr(),
        args.as_ptr(),
        &mut out,
    );
    if out.is_null() {
        return (code, None);
    }
    let text = CStr::from_ptr(out).to_str().unwrap().to_string();
    parley_string_free(out);
    (code, Some(serde_json::from_str(&text).unwrap()))
}

unsafe fn token(forum: *mut parley_forum, handle: &str) -> CString {
    let spec = CString::new(json!({"handle": handle, "kind": "llm"}).to_string()).unwrap();
    let mut out: *mut c_char = ptr::null_mut();
    assert_eq!(
        parley_token_create(forum, spec.as_ptr(), &mut out),
        PARLEY_OK
    );
    let token = CStr::from_ptr(out).to_owned();
    parley_string_free(out);
    token
}

#[test]
fn a_panic_inside_the_engine_is_parley_panic_and_the_handle_stays_usable() {
    let mut forum = ptr::null_mut();
    // SAFETY: valid pointers throughout (a NULL path opens a forum in memory);
    // every string handed out is freed, and the handle is freed at the end.
    unsafe {
        assert_eq!(
            parley_forum_open(ptr::null(), ptr::null(), &mut forum),
            PARLEY_OK
        );
        let (alice, bob) = (token(forum, "alice"), token(forum, "bob"));
        let (code, asked) = call(
            forum,
            &alice,
            c"post",
            &json!({"kind": "ask", "body": "Port?"}),
        );
        assert_eq!(code, PARLEY_OK);
        let thread = asked.unwrap()["thread"]["id"].as_str().unwrap().to_string();

        let fault = json!({"kind": "note", "thread": thread, "body": FAULT_BODY});
        let (code, out) = call(forum, &alice, c"post", &fault);
        assert_eq!(code, PARLEY_PANIC);
        assert!(out.is_none(), "no result on a failure");
        let message = CStr::from_ptr(parley_last_error()).to_str().unwrap();
        assert!(message.contains("internal error"), "{message}");
        assert!(message.contains("panicked"), "{message}");
        assert!(!message.contains("damaged"), "{message}");

        let note = json!({"kind": "note", "thread": thread, "body": "7878."});
        let (code, _) = call(forum, &bob, c"post", &note);
        assert_eq!(
            code,
            PARLEY_OK,
            "{}",
            CStr::from_ptr(parley_last_error()).to_str().unwrap()
        );
        let (_, view) = call(forum, &bob, c"get_thread", &json!({"thread": thread}));
        assert!(!view.unwrap().to_string().contains(FAULT_BODY));
        parley_forum_free(forum);
    }
}
