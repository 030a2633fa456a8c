//! The client side of the admin channel: what the command line uses when a running
//! server answers beside the forum file.

use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use parley_forum::{Error, IdentityInfo, TokenKind};
use serde_json::{json, Value};

use super::Tokens;
use super::{broken, outcome, socket_path};
use crate::human::Call;

/// The largest reply read: a whole thread can be large, but not without bound.
const MAX_REPLY: u64 = 256 << 20;
/// How long a reply may take. A post waits for its batch to be on disk, and a
/// server under load is slower, but one that answers nothing this long is stuck.
const REPLY_TIMEOUT: Duration = Duration::from_secs(120);

/// A connection to a running server's admin channel.
pub struct Client {
    path: PathBuf,
    connection: Mutex<Connection>,
}

struct Connection {
    input: BufReader<UnixStream>,
    output: UnixStream,
}

impl Client {
    /// Connects to the channel of the forum file `db`. `Ok(None)`: no server answers
    /// there (no socket, a stale one, or something that is not a socket), and the
    /// command may open the file itself. A socket served by another user is an error:
    /// the command's token is not sent to it.
    pub fn connect(db: &Path) -> Result<Option<Client>, String> {
        Client::connect_as(db, rustix::process::geteuid().as_raw())
    }

    /// [`Client::connect`] for the user `own`.
    fn connect_as(db: &Path, own: u32) -> Result<Option<Client>, String> {
        if super::is_shared(db) {
            return Ok(None);
        }
        let path = socket_path(db);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_socket() => {}
            _ => return Ok(None),
        }
        let stream = match UnixStream::connect(&path) {
            Ok(stream) => stream,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return Err(format!(
                    "the admin channel at {} is not open to this user ({e})",
                    path.display()
                ))
            }
            // Refused (a stale socket), or gone since it was seen.
            Err(_) => return Ok(None),
        };
        match super::peer_uid(&stream) {
            Ok(uid) if uid == own => {}
            Ok(uid) => {
                return Err(format!(
                    "the admin channel at {} is served by another user (uid {uid}); it is not used",
                    path.display(),
                ))
            }
            Err(e) => {
                return Err(format!(
                    "cannot tell who serves the admin channel at {}: {e}",
                    path.display()
                ))
            }
        }
        let setup = |s: &UnixStream| -> io::Result<UnixStream> {
            s.set_read_timeout(Some(REPLY_TIMEOUT))?;
            s.set_write_timeout(Some(REPLY_TIMEOUT))?;
            s.try_clone()
        };
        let reading = setup(&stream).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(Client {
            path,
            connection: Mutex::new(Connection {
                input: BufReader::new(reading),
                output: stream,
            }),
        }))
    }

    /// Sends one request and returns the engine outcome its reply carries.
    fn request(&self, request: &Value) -> Result<Value, Error> {
        let mut conn = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        let failed = |e: io::Error| broken(&format!("{}: {e}", self.path.display()));
        writeln!(conn.output, "{request}").map_err(failed)?;
        let mut line = Vec::new();
        (&mut conn.input)
            .take(MAX_REPLY)
            .read_until(b'\n', &mut line)
            .map_err(failed)?;
        if line.last() != Some(&b'\n') {
            return Err(broken(&if line.is_empty() {
                format!("{}: the server closed the connection", self.path.display())
            } else {
                format!(
                    "{}: a reply cut short or over {MAX_REPLY} bytes",
                    self.path.display()
                )
            }));
        }
        let reply = serde_json::from_slice(&line)
            .map_err(|e| broken(&format!("a reply that is not JSON ({e})")))?;
        outcome(reply)
    }
}

impl Call for Client {
    fn call(&self, token: Option<&str>, operation: &str, args: &Value) -> Result<Value, Error> {
        self.request(&json!({ "op": "call", "token": token, "operation": operation, "args": args }))
    }
}

impl Tokens for Client {
    fn create(&self, spec: &Value) -> Result<String, Error> {
        let result = self.request(&json!({ "op": "token_create", "spec": spec }))?;
        result["token"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| broken("token_create answered without a token"))
    }

    fn revoke(&self, token: &str) -> Result<bool, Error> {
        let result = self.request(&json!({ "op": "token_revoke", "token": token }))?;
        result["revoked"]
            .as_bool()
            .ok_or_else(|| broken("token_revoke answered without `revoked`"))
    }

    fn identities(&self) -> Result<Vec<IdentityInfo>, Error> {
        let result = self.request(&json!({ "op": "token_list" }))?;
        let Some(list) = result["identities"].as_array() else {
            return Err(broken("token_list answered without `identities`"));
        };
        Ok(list
            .iter()
            .map(|i| IdentityInfo {
                identity: i["identity"].as_str().unwrap_or("?").to_string(),
                kind: if i["kind"] == "human" {
                    TokenKind::Human
                } else {
                    TokenKind::Llm
                },
                label: i["label"].as_str().unwrap_or("").to_string(),
                active_tokens: i["active_tokens"].as_u64().unwrap_or(0),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn only_a_live_socket_is_a_channel() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("f.redb");
        let own = rustix::process::geteuid().as_raw();
        assert!(Client::connect_as(&db, own).unwrap().is_none());
        fs::write(socket_path(&db), b"a file").unwrap();
        assert!(Client::connect_as(&db, own).unwrap().is_none());
        fs::remove_file(socket_path(&db)).unwrap();
        drop(UnixListener::bind(socket_path(&db)).unwrap());
        assert!(Client::connect_as(&db, own).unwrap().is_none());
    }

    #[test]
    fn a_channel_served_by_another_user_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("f.redb");
        let _listener = UnixListener::bind(socket_path(&db)).unwrap();
        let own = rustix::process::geteuid().as_raw();
        assert!(Client::connect_as(&db, own).unwrap().is_some());
        let err = Client::connect_as(&db, own.wrapping_add(1)).err().unwrap();
        assert!(err.contains("served by another user"), "{err}");
    }
}
