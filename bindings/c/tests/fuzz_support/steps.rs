//! One step of a fuzz case: a call through the C entry points, checked against
//! the contract of `include/parley.h` (see `entry_points.rs`).

use super::*;

pub(super) fn step(world: &mut World, op: &Op) -> Result<(), TestCaseError> {
    match op {
        Op::Open {
            path,
            settings,
            out,
        } => {
            let file = match path {
                PathArg::Null => None,
                PathArg::Name(name) => Some(world.scratch.path(name)),
            };
            let c_path = file
                .as_ref()
                .map(|p| CString::new(p.as_os_str().as_bytes()).unwrap());
            let c_settings = settings.c();
            let mut handle = SENTINEL.cast::<parley_forum>();
            let out_ptr: *mut *mut parley_forum = if *out { &mut handle } else { ptr::null_mut() };
            let existed = file.as_deref().is_some_and(Path::exists);
            // SAFETY: NULL or NUL-terminated strings; NULL or a valid out-parameter.
            let rc = unsafe { parley_forum_open(ptr_of(&c_path), ptr_of(&c_settings), out_ptr) };
            let expected: Vec<parley_result> =
                match first_failure(&[Param::Pointer(*out), Param::OptJson(settings)]) {
                    Some(code) => vec![code],
                    None => match settings.json().map(|v| Config::from_json(&v)) {
                        Some(Err(_)) => vec![PARLEY_INVALID_ARGUMENT],
                        _ if file.is_none() => vec![PARLEY_OK],
                        _ if existed && !world.forums_on_disk.contains(file.as_ref().unwrap()) => {
                            vec![PARLEY_STORAGE, PARLEY_NOT_A_FORUM]
                        }
                        _ => vec![PARLEY_OK],
                    },
                };
            settle("parley_forum_open", rc, &expected)?;
            if rc == PARLEY_OK {
                prop_assert!(!handle.is_null() && handle != SENTINEL.cast());
                // SAFETY: a new handle, freed once.
                unsafe { parley_forum_free(handle) };
                if let Some(file) = file {
                    if !world.forums_on_disk.contains(&file) {
                        world.forums_on_disk.push(file);
                    }
                }
            } else {
                prop_assert_eq!(handle, SENTINEL.cast::<parley_forum>());
            }
        }
        Op::Integrity { path, out } => {
            let file = match path {
                PathArg::Null => None,
                PathArg::Name(name) => Some(world.scratch.path(name)),
            };
            let c_path = file
                .as_ref()
                .map(|p| CString::new(p.as_os_str().as_bytes()).unwrap());
            let mut byte = 0x55u8;
            let out_ptr: *mut bool = if *out {
                (&mut byte as *mut u8).cast()
            } else {
                ptr::null_mut()
            };
            // SAFETY: NULL or a NUL-terminated path; NULL or one writable byte.
            let rc = unsafe { parley_check_integrity(ptr_of(&c_path), out_ptr) };
            let expected = match (out, &file) {
                (false, _) | (true, None) => vec![PARLEY_NULL_PARAMETER],
                (true, Some(f)) if world.forums_on_disk.contains(f) => vec![PARLEY_OK],
                (true, Some(f)) if !f.exists() => vec![PARLEY_STORAGE],
                (true, Some(_)) => vec![PARLEY_STORAGE, PARLEY_NOT_A_FORUM],
            };
            settle("parley_check_integrity", rc, &expected)?;
            if rc == PARLEY_OK {
                prop_assert_eq!(byte, 1, "a closed forum is intact");
            } else {
                prop_assert_eq!(byte, 0x55);
            }
        }
        Op::TokenCreate { forum, spec, out } => {
            let c_spec = spec.c();
            let mut token = SENTINEL;
            let out_ptr: *mut *mut c_char = if *out { &mut token } else { ptr::null_mut() };
            // SAFETY: NULL or the live handle; NULL or a NUL-terminated string;
            // NULL or a valid out-parameter.
            let rc = unsafe { parley_token_create(world.forum(*forum), ptr_of(&c_spec), out_ptr) };
            let expected = match first_failure(&[
                Param::Pointer(*forum),
                Param::Pointer(*out),
                Param::Json(spec),
            ]) {
                Some(code) => vec![code],
                None => match TokenSpec::from_json(&spec.json().unwrap()) {
                    Err(_) => vec![PARLEY_INVALID_ARGUMENT],
                    Ok(_) => vec![PARLEY_OK, PARLEY_INVALID_ARGUMENT],
                },
            };
            settle("parley_token_create", rc, &expected)?;
            if rc == PARLEY_OK {
                let secret = take(token);
                prop_assert!(secret.starts_with("pt_"), "{}", secret);
                world.tokens.push((CString::new(secret).unwrap(), true));
            } else {
                prop_assert_eq!(token, SENTINEL);
            }
        }
        Op::TokenRevoke { forum, token } => {
            let (c_token, text, issued) = world.token(token);
            // SAFETY: NULL or the live handle; NULL or a NUL-terminated string.
            let rc = unsafe { parley_token_revoke(world.forum(*forum), ptr_of(&c_token)) };
            let expected = match first_failure(&[Param::Pointer(*forum), Param::Str(&text)]) {
                Some(code) => code,
                None => match issued {
                    Some(i) if world.tokens[i].1 => PARLEY_OK,
                    _ => PARLEY_INVALID_ARGUMENT,
                },
            };
            settle("parley_token_revoke", rc, &[expected])?;
            if let (PARLEY_OK, Some(i)) = (rc, issued) {
                world.tokens[i].1 = false;
            }
        }
        Op::Call {
            forum,
            token,
            operation,
            args,
            out,
        } => {
            let (c_token, token_text, _) = world.token(token);
            let c_operation = operation.c();
            let c_args = args.c();
            let mut result = SENTINEL;
            let out_ptr: *mut *mut c_char = if *out { &mut result } else { ptr::null_mut() };
            let before = world.writes_seen();
            // SAFETY: NULL or the live handle; NULL or NUL-terminated strings; NULL
            // or a valid out-parameter.
            let rc = unsafe {
                parley_call(
                    world.forum(*forum),
                    ptr_of(&c_token),
                    ptr_of(&c_operation),
                    ptr_of(&c_args),
                    out_ptr,
                )
            };
            let expected = match first_failure(&[
                Param::Pointer(*forum),
                Param::Pointer(*out),
                Param::OptStr(&token_text),
                Param::Str(operation),
                Param::OptJson(args),
            ]) {
                Some(code) => vec![code],
                None => {
                    // Arguments that are not an object are refused for every
                    // operation of the protocol, offered by this forum or not; an
                    // operation of the coordination or provenance profile (both off
                    // here) is refused too (`invalid_argument`, SPEC §16, §18).
                    let op = operation.utf8().unwrap();
                    let object = args.json().is_none_or(|v| v.is_null() || v.is_object());
                    let offered = world.operations.iter().any(|o| o == op);
                    let profile_off = [
                        "set_presence",
                        "get_presence",
                        "lease",
                        "release",
                        "get_leases",
                        "put_artifact",
                        "get_artifact",
                    ]
                    .contains(&op)
                        // Claims travel only where there are claims: without the
                        // dialectic profile they are unknown, as `get_claim` is.
                        || (["export_claim", "import_claim"].contains(&op)
                            && world.operations.iter().any(|o| o == "get_claim"));
                    if offered || ((!object || profile_off) && OPERATIONS.contains(&op)) {
                        vec![PARLEY_OK, PARLEY_REFUSED]
                    } else {
                        vec![PARLEY_UNKNOWN_OPERATION]
                    }
                }
            };
            settle("parley_call", rc, &expected)?;
            match rc {
                PARLEY_OK => {
                    take_json(result);
                }
                PARLEY_REFUSED => check_refusal(&take_json(result))?,
                _ => prop_assert_eq!(result, SENTINEL),
            }
            let wrote = world.writes_seen() != before;
            let posted = rc == PARLEY_OK && operation.utf8() == Some("post");
            prop_assert_eq!(wrote, posted, "a write exactly when a post succeeds");
            if posted {
                world.all_rung("a post")?;
            }
        }
        Op::Mcp {
            forum,
            token,
            request,
            out,
        } => {
            let (c_token, token_text, _) = world.token(token);
            let c_request = request.c();
            let mut response = SENTINEL;
            let out_ptr: *mut *mut c_char = if *out { &mut response } else { ptr::null_mut() };
            let before = world.writes_seen();
            // SAFETY: NULL or the live handle; NULL or NUL-terminated strings; NULL
            // or a valid out-parameter.
            let rc = unsafe {
                parley_mcp_handle(
                    world.forum(*forum),
                    ptr_of(&c_token),
                    ptr_of(&c_request),
                    out_ptr,
                )
            };
            let expected = first_failure(&[
                Param::Pointer(*forum),
                Param::Pointer(*out),
                Param::OptStr(&token_text),
                Param::Str(request),
            ])
            .unwrap_or(PARLEY_OK);
            settle("parley_mcp_handle", rc, &[expected])?;
            let mut posted = false;
            if rc == PARLEY_OK {
                prop_assert_ne!(response, SENTINEL);
                if !response.is_null() {
                    let response = take_json(response);
                    prop_assert_eq!(&response["jsonrpc"], "2.0", "{}", response);
                    prop_assert!(response.get("id").is_some(), "{}", response);
                    prop_assert!(
                        response.get("result").is_some() != response.get("error").is_some(),
                        "exactly one of result and error: {}",
                        response
                    );
                    let sent = request.json().unwrap_or_default();
                    posted = sent["method"] == "tools/call"
                        && sent["params"]["name"] == "post"
                        && response["result"]["isError"] == false;
                    if response["result"]["isError"] == true {
                        check_refusal(&response["result"]["structuredContent"]["error"])?;
                    }
                }
            } else {
                prop_assert_eq!(response, SENTINEL);
            }
            let wrote = world.writes_seen() != before;
            prop_assert_eq!(wrote, posted, "a write exactly when a post succeeds");
            if posted {
                world.all_rung("a post over MCP")?;
            }
        }
        Op::EndWaits { forum } => {
            // SAFETY: NULL or the live handle.
            let rc = unsafe { parley_forum_end_waits(world.forum(*forum)) };
            let expected = first_failure(&[Param::Pointer(*forum)]).unwrap_or(PARLEY_OK);
            settle("parley_forum_end_waits", rc, &[expected])?;
            if rc == PARLEY_OK {
                world.all_rung("parley_forum_end_waits")?;
            }
        }
        Op::CommitFd { forum, out } => {
            let mut fd: c_int = -7;
            let out_ptr: *mut c_int = if *out { &mut fd } else { ptr::null_mut() };
            // SAFETY: NULL or the live handle; NULL or one writable int.
            let rc = unsafe { parley_forum_commit_fd(world.forum(*forum), out_ptr) };
            let expected =
                first_failure(&[Param::Pointer(*forum), Param::Pointer(*out)]).unwrap_or(PARLEY_OK);
            settle("parley_forum_commit_fd", rc, &[expected])?;
            if rc == PARLEY_OK {
                prop_assert!(fd >= 0, "a descriptor: {}", fd);
                // SAFETY: a new descriptor, handed over to the caller, owned once.
                let mut reader = unsafe { UnixStream::from_raw_fd(fd) };
                prop_assert!(drain(&mut reader).is_some(), "non-blocking, open");
                world.commit_fds.push(reader);
            } else {
                prop_assert_eq!(fd, -7);
            }
        }
        Op::Manifest { forum, out } | Op::Identities { forum, out } => {
            let manifest = matches!(op, Op::Manifest { .. });
            let mut json = SENTINEL;
            let out_ptr: *mut *mut c_char = if *out { &mut json } else { ptr::null_mut() };
            // SAFETY: NULL or the live handle; NULL or a valid out-parameter.
            let rc = unsafe {
                if manifest {
                    parley_forum_manifest(world.forum(*forum), out_ptr)
                } else {
                    parley_forum_identities(world.forum(*forum), out_ptr)
                }
            };
            let expected =
                first_failure(&[Param::Pointer(*forum), Param::Pointer(*out)]).unwrap_or(PARLEY_OK);
            settle("parley_forum_manifest/identities", rc, &[expected])?;
            if rc != PARLEY_OK {
                prop_assert_eq!(json, SENTINEL);
            } else if manifest {
                prop_assert_eq!(&take_json(json)["parley"], "1");
            } else {
                let list = take_json(json);
                let active: u64 = list
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i["active_tokens"].as_u64().unwrap())
                    .sum();
                prop_assert_eq!(active, world.live_tokens(), "{}", list);
            }
        }
        Op::ResultName(code) => {
            let before = last_error();
            let name = parley_result_name(*code);
            prop_assert!(!name.is_null());
            // SAFETY: a static NUL-terminated string.
            let text = unsafe { CStr::from_ptr(name) }.to_str().unwrap();
            if is_code(*code) {
                prop_assert!(text.starts_with("PARLEY_") && text != "PARLEY_UNKNOWN_RESULT");
            } else {
                prop_assert_eq!(text, "PARLEY_UNKNOWN_RESULT");
                prop_assert_eq!(name, parley_result_name(u32::MAX), "one static string");
            }
            // SAFETY: as above.
            let version = unsafe { CStr::from_ptr(parley_version()) };
            prop_assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
            // SAFETY: NULL is a no-op for both.
            unsafe {
                parley_string_free(ptr::null_mut());
                parley_forum_free(ptr::null_mut());
            }
            prop_assert_eq!(last_error(), before, "only code-returning calls set it");
        }
        Op::LastErrorCopy { len, null_buf } => {
            let message = last_error();
            let mut buf = vec![0x55u8; len + 8];
            let ptr: *mut c_char = if *null_buf {
                ptr::null_mut()
            } else {
                buf.as_mut_ptr().cast()
            };
            // SAFETY: `buf` has `len` (and more) writable bytes, or is NULL with 0.
            let full = unsafe { parley_last_error_copy(ptr, *len) };
            prop_assert_eq!(full, message.len());
            if *len > 0 {
                let n = message.len().min(len - 1);
                prop_assert_eq!(&buf[..n], &message.as_bytes()[..n]);
                prop_assert_eq!(buf[n], 0);
                prop_assert!(
                    buf[n + 1..].iter().all(|b| *b == 0x55),
                    "wrote past the NUL"
                );
            } else {
                prop_assert!(buf.iter().all(|b| *b == 0x55), "wrote with a length of 0");
            }
            prop_assert_eq!(last_error(), message);
        }
    }
    Ok(())
}
