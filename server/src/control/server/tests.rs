//! Tests of the admin channel's server.

use std::fs;
use std::os::unix::fs::FileTypeExt;

use super::*;
use parley_forum::Config;

struct Fixture {
    _dir: tempfile::TempDir,
    db: PathBuf,
    forum: Arc<Forum>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.redb");
    let forum = Arc::new(Forum::in_memory(Config::default()).unwrap());
    Fixture {
        _dir: dir,
        db,
        forum,
    }
}

fn exchange(stream: &mut UnixStream, line: &str) -> Value {
    writeln!(stream, "{line}").unwrap();
    let mut reply = String::new();
    BufReader::new(stream.try_clone().unwrap())
        .read_line(&mut reply)
        .unwrap();
    serde_json::from_str(&reply).unwrap()
}

fn other_user(_: &UnixStream) -> io::Result<u32> {
    Ok(own_uid().wrapping_add(1))
}

#[test]
fn a_peer_of_another_user_is_refused_and_disconnected() {
    let f = fixture();
    let backend: Arc<dyn Backend> = Arc::new(Direct(Arc::clone(&f.forum)));
    let channel = Channel::start_with(&f.db, backend, other_user, LIMITS).unwrap();
    let mut stream = UnixStream::connect(socket_path(&f.db)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut first = String::new();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    reader.read_line(&mut first).unwrap();
    let reply: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(reply["error"]["kind"], "peer_refused");
    // Nothing more is read from this peer: the connection is closed.
    let _ = writeln!(stream, r#"{{"op":"token_list"}}"#);
    let mut rest = String::new();
    assert_eq!(reader.read_line(&mut rest).unwrap_or(0), 0);
    drop(channel);
    assert!(!socket_path(&f.db).exists());
}

#[test]
fn the_own_user_is_served_and_requests_are_checked() {
    let f = fixture();
    let backend: Arc<dyn Backend> = Arc::new(Direct(Arc::clone(&f.forum)));
    let mut channel = Channel::start_with(&f.db, backend, peer_uid, LIMITS).unwrap();
    let mut s = UnixStream::connect(socket_path(&f.db)).unwrap();
    let created = exchange(
        &mut s,
        r#"{"op":"token_create","spec":{"handle":"ann","kind":"human"}}"#,
    );
    let token = created["ok"]["token"].as_str().unwrap().to_string();
    let who = exchange(
        &mut s,
        &json!({"op":"call","token":token,"operation":"whoami"}).to_string(),
    );
    assert_eq!(who["ok"]["identity"], "human:ann");
    for (line, kind) in [
        ("{", "bad_request"),
        ("[1]", "bad_request"),
        (r#"{"op":"drop_all"}"#, "bad_request"),
        (r#"{"op":"token_revoke"}"#, "bad_request"),
        (r#"{"op":"call","operation":7}"#, "bad_request"),
        (
            r#"{"op":"call","token":1,"operation":"whoami"}"#,
            "bad_request",
        ),
        (r#"{"op":"call","operation":"nope"}"#, "unknown_operation"),
        (
            r#"{"op":"token_create","spec":{"handle":"Bad Name","kind":"llm"}}"#,
            "invalid_argument",
        ),
    ] {
        assert_eq!(exchange(&mut s, line)["error"]["kind"], kind, "{line}");
    }
    let refused = exchange(
        &mut s,
        r#"{"op":"call","token":"pt_nope","operation":"whoami"}"#,
    );
    assert_eq!(refused["refused"]["reason"], "token_invalid");
    // The connection outlives every bad request.
    assert!(exchange(&mut s, r#"{"op":"token_list"}"#)["ok"]["identities"].is_array());
    // Stopping closes the open connection and removes the socket.
    channel.stop();
    let mut rest = String::new();
    assert_eq!(BufReader::new(s).read_line(&mut rest).unwrap_or(0), 0);
    assert!(!socket_path(&f.db).exists());
}

#[test]
fn lines_are_bounded_and_checked() {
    let mut input = io::Cursor::new(b"abc\n\xff\nabcdefgh\nxy".to_vec());
    let mut seen = Vec::new();
    while let Some(line) = read_line(&mut input, 4).unwrap() {
        seen.push(match line {
            Line::Text(t) => t,
            Line::TooLong => "<too long>".into(),
            Line::NotUtf8 => "<not utf-8>".into(),
        });
        if seen.last().map(String::as_str) == Some("<too long>") {
            break;
        }
    }
    assert_eq!(seen, ["abc", "<not utf-8>", "<too long>"]);
    // A line of exactly the limit is whole.
    let mut input = io::Cursor::new(b"abcd\n".to_vec());
    assert!(matches!(read_line(&mut input, 4).unwrap(), Some(Line::Text(t)) if t == "abcd"));
}

#[test]
fn the_socket_is_only_removed_while_it_is_ours() {
    let f = fixture();
    let backend: Arc<dyn Backend> = Arc::new(Direct(Arc::clone(&f.forum)));
    let channel = Channel::start_with(&f.db, backend, peer_uid, LIMITS).unwrap();
    let path = socket_path(&f.db);
    // Someone replaced the socket by a file of their own: shutdown leaves it.
    fs::remove_file(&path).unwrap();
    fs::write(&path, b"theirs").unwrap();
    drop(channel);
    assert_eq!(fs::read(&path).unwrap(), b"theirs");
}

fn start(f: &Fixture, limits: Limits) -> Channel {
    let backend: Arc<dyn Backend> = Arc::new(Direct(Arc::clone(&f.forum)));
    Channel::start_with(&f.db, backend, peer_uid, limits).unwrap()
}

fn ended(stream: UnixStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut rest = String::new();
    BufReader::new(stream).read_line(&mut rest).unwrap_or(0) == 0
}

#[test]
fn connections_past_the_cap_are_told_busy() {
    let f = fixture();
    let limits = Limits {
        max_connections: 2,
        idle: Duration::from_secs(30),
    };
    let _channel = start(&f, limits);
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = UnixStream::connect(socket_path(&f.db)).unwrap();
        assert!(exchange(&mut s, r#"{"op":"token_list"}"#)["ok"].is_object());
        held.push(s);
    }
    // One more is told at once, before it says anything, and closed.
    let third = UnixStream::connect(socket_path(&f.db)).unwrap();
    assert_eq!(first_reply(&third)["error"]["kind"], "busy");
    assert!(ended(third));
    // A slot freed is a slot again (once the server has seen the close).
    drop(held.pop());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = UnixStream::connect(socket_path(&f.db)).unwrap();
        let _ = writeln!(s, r#"{{"op":"token_list"}}"#);
        if first_reply(&s)["ok"].is_object() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the slot was not freed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn first_reply(stream: &UnixStream) -> Value {
    let mut line = String::new();
    BufReader::new(stream.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

#[test]
fn a_silent_connection_is_closed_after_the_idle_time() {
    let f = fixture();
    let limits = Limits {
        max_connections: 4,
        idle: Duration::from_millis(200),
    };
    let _channel = start(&f, limits);
    let s = UnixStream::connect(socket_path(&f.db)).unwrap();
    let began = std::time::Instant::now();
    assert!(ended(s));
    assert!(began.elapsed() >= Duration::from_millis(150));
}

#[test]
fn a_live_channel_is_not_replaced() {
    let f = fixture();
    let first = start(&f, LIMITS);
    let backend: Arc<dyn Backend> = Arc::new(Direct(Arc::clone(&f.forum)));
    let Err(StartError::Refuse(message)) = Channel::start_with(&f.db, backend, peer_uid, LIMITS)
    else {
        panic!("a second channel started on a live socket");
    };
    assert!(message.contains("another server answers"), "{message}");
    // The first one still serves.
    let mut s = UnixStream::connect(socket_path(&f.db)).unwrap();
    assert!(exchange(&mut s, r#"{"op":"token_list"}"#)["ok"].is_object());
    drop(first);
}

#[test]
fn a_socket_of_another_user_is_left_alone() {
    let f = fixture();
    let path = socket_path(&f.db);
    drop(UnixListener::bind(&path).unwrap());
    // As seen by a server of another uid, this stale socket is not its own.
    let Err(StartError::Refuse(message)) = clear_the_way(&path, own_uid().wrapping_add(1)) else {
        panic!("another user's socket was cleared");
    };
    assert!(message.contains("socket of another user"), "{message}");
    assert!(fs::symlink_metadata(&path).unwrap().file_type().is_socket());
    // Its own stale socket is cleared.
    clear_the_way(&path, own_uid()).unwrap();
    assert!(!path.exists());
}

/// A backend whose posts fail inside the server.
struct Panics(Arc<Forum>);

impl Backend for Panics {
    fn forum(&self) -> &Forum {
        &self.0
    }

    fn post(&self, _: Option<&str>, _: &Value) -> Result<Value, Error> {
        panic!("a bug in the post path")
    }
}

#[test]
fn a_request_that_fails_inside_the_server_is_answered_internal() {
    let f = fixture();
    let backend: Arc<dyn Backend> = Arc::new(Panics(Arc::clone(&f.forum)));
    let _channel = Channel::start_with(&f.db, backend, peer_uid, LIMITS).unwrap();
    let mut s = UnixStream::connect(socket_path(&f.db)).unwrap();
    let reply = exchange(&mut s, r#"{"op":"call","operation":"post","args":{}}"#);
    assert_eq!(reply["error"]["kind"], "internal");
    // The connection, and the server, go on.
    assert!(exchange(&mut s, r#"{"op":"token_list"}"#)["ok"].is_object());
}
