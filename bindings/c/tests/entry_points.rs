//! Arbitrary bytes through the C entry points: whatever comes in, the result is
//! one of the documented codes, never `PARLEY_PANIC`; out-parameters are written
//! exactly when documented; every string handed out is JSON (or a token).

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use parley::*;
use proptest::prelude::*;

/// A C string from arbitrary bytes (cut at the first NUL, as C would see it).
fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no interior NUL")
}

/// Takes a string handed out by libparley, checks it is JSON, and frees it.
fn take_json(out: *mut c_char) -> serde_json::Value {
    assert!(!out.is_null());
    // SAFETY: libparley returned a NUL-terminated string that the caller owns.
    let text = unsafe { CStr::from_ptr(out) }
        .to_str()
        .expect("UTF-8 out")
        .to_owned();
    // SAFETY: the string came from libparley and is freed once.
    unsafe { parley_string_free(out) };
    serde_json::from_str(&text).expect("JSON out")
}

struct Forum(*mut parley_forum, CString);

impl Forum {
    fn new() -> Forum {
        let mut forum = ptr::null_mut();
        // SAFETY: valid out-parameter.
        let rc = unsafe {
            parley_forum_open(
                ptr::null(),
                c"{\"limits\":{\"writes_per_minute\":0}}".as_ptr(),
                &mut forum,
            )
        };
        assert_eq!(rc, PARLEY_OK);
        let mut token = ptr::null_mut();
        // SAFETY: live handle, valid strings and out-parameter.
        let rc =
            unsafe { parley_token_create(forum, c"{\"handle\":\"fuzz\"}".as_ptr(), &mut token) };
        assert_eq!(rc, PARLEY_OK);
        // SAFETY: the token came from libparley; copied, then freed once.
        let secret = unsafe { CStr::from_ptr(token) }.to_owned();
        unsafe { parley_string_free(token) };
        Forum(forum, secret)
    }
}

impl Drop for Forum {
    fn drop(&mut self) {
        // SAFETY: the handle is live and freed once.
        unsafe { parley_forum_free(self.0) };
    }
}

const SENTINEL: *mut c_char = 0x10 as *mut c_char;

fn operation() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"post".to_vec()),
        Just(b"get_thread".to_vec()),
        Just(b"get_inbox".to_vec()),
        Just(b"get_claim".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..12),
    ]
}

fn args() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        "\\{\"kind\":\"(ask|note|answer|assert)\",\"body\":\"[a-z \u{e9}]{0,20}\"(,\"thread\":[0-9]{1,2})?\\}"
            .prop_map(String::into_bytes),
        "\\{\"(thread|since|limit|claim)\":(\"[a-z_0-9]{0,8}\"|-?[0-9]{1,3}|null|\\[\\])\\}".prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn call_never_panics(op in operation(), args in args(), with_token in any::<bool>()) {
        let forum = Forum::new();
        let op = c_string(&op);
        let args = c_string(&args);
        let token = if with_token { forum.1.as_ptr() } else { ptr::null() };
        let mut out = SENTINEL;
        // SAFETY: live handle, NUL-terminated strings, valid out-parameter.
        let rc = unsafe { parley_call(forum.0, token, op.as_ptr(), args.as_ptr(), &mut out) };
        match rc {
            PARLEY_OK => { take_json(out); }
            PARLEY_REFUSED => {
                let refusal = take_json(out);
                prop_assert!(refusal["reason"].is_string());
                prop_assert!(refusal["status"].is_u64());
            }
            PARLEY_INVALID_UTF8
            | PARLEY_INVALID_JSON
            | PARLEY_UNKNOWN_OPERATION => prop_assert_eq!(out, SENTINEL),
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    #[test]
    fn mcp_always_answers_in_the_protocol(request in proptest::collection::vec(any::<u8>(), 0..96)) {
        let forum = Forum::new();
        let request = c_string(&request);
        let mut out = SENTINEL;
        // SAFETY: live handle, NUL-terminated strings, valid out-parameter.
        let rc = unsafe { parley_mcp_handle(forum.0, forum.1.as_ptr(), request.as_ptr(), &mut out) };
        match rc {
            PARLEY_OK => {
                prop_assert_ne!(out, SENTINEL);
                if !out.is_null() {
                    let response = take_json(out);
                    prop_assert_eq!(&response["jsonrpc"], "2.0");
                }
            }
            PARLEY_INVALID_UTF8 => prop_assert_eq!(out, SENTINEL),
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    #[test]
    fn settings_and_specs_never_panic(settings in args(), spec in args()) {
        let settings = c_string(&settings);
        let spec = c_string(&spec);
        let mut forum = ptr::null_mut();
        // SAFETY: NUL-terminated strings, valid out-parameter.
        let rc = unsafe { parley_forum_open(ptr::null(), settings.as_ptr(), &mut forum) };
        prop_assert!(matches!(
            rc,
            PARLEY_OK
                | PARLEY_INVALID_UTF8
                | PARLEY_INVALID_JSON
                | PARLEY_INVALID_ARGUMENT
        ), "{:?}", rc);
        prop_assert_eq!(forum.is_null(), rc != PARLEY_OK);
        if rc == PARLEY_OK {
            let mut token = SENTINEL;
            // SAFETY: live handle, NUL-terminated string, valid out-parameter.
            let rc = unsafe { parley_token_create(forum, spec.as_ptr(), &mut token) };
            prop_assert!(matches!(
                rc,
                PARLEY_OK
                    | PARLEY_INVALID_UTF8
                    | PARLEY_INVALID_JSON
                    | PARLEY_INVALID_ARGUMENT
            ), "{:?}", rc);
            prop_assert_eq!(token == SENTINEL, rc != PARLEY_OK);
            if rc == PARLEY_OK {
                // SAFETY: the token came from libparley and is freed once.
                unsafe { parley_string_free(token) };
            }
            // SAFETY: the handle is live and freed once.
            unsafe { parley_forum_free(forum) };
        }
    }
}
