//! The admin socket's safe creation and removal: nothing at its path that is not
//! this user's own stale socket is ever touched, and the socket is never reachable
//! by another user, not even for an instant.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use super::StartError;

pub(super) fn own_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Makes sure `path` is free for a new socket: absent, or a stale socket of this
/// user (`own`) that nobody answers (it is removed). Anything else is left untouched.
pub(super) fn clear_the_way(path: &Path, own: u32) -> Result<(), StartError> {
    let shown = path.display();
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StartError::Refuse(format!("cannot inspect {shown}: {e}"))),
    };
    if !meta.file_type().is_socket() {
        return Err(StartError::Refuse(format!(
            "{shown} exists and is not a socket; the server's admin channel needs that name. \
             It was left untouched: move it away, or serve a forum file of another name"
        )));
    }
    if meta.uid() != own {
        return Err(StartError::Refuse(format!(
            "{shown} is a socket of another user (uid {}); it was left untouched",
            meta.uid()
        )));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(StartError::Refuse(format!(
            "another server answers on {shown}; it was left untouched"
        ))),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            // Nobody listens: a server that was killed left it. Removed only if it
            // is still the socket just inspected.
            remove_if_ours(path, (meta.dev(), meta.ino()));
            eprintln!("parley: replaced a stale admin socket at {shown}");
            Ok(())
        }
        Err(e) => Err(StartError::Refuse(format!(
            "{shown} is a socket that cannot be probed ({e}); it was left untouched"
        ))),
    }
}

/// Binds the socket in a fresh 0700 directory beside `path`, sets and checks its
/// mode 0600 there, then links it to `path` (a link never replaces a file that
/// appeared meanwhile). Returns the listener and the socket's device and inode.
pub(super) fn bind_privately(path: &Path) -> Result<(UnixListener, (u64, u64)), StartError> {
    let shown = path.display();
    let unavailable = |what: &str, e: io::Error| StartError::Unavailable(format!("{what}: {e}"));
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let private = tempfile::Builder::new()
        .prefix(".parley-admin-")
        .tempdir_in(dir)
        .map_err(|e| {
            unavailable(
                &format!("cannot make a private directory in {}", dir.display()),
                e,
            )
        })?;
    let staged = private.path().join("s");
    let listener = UnixListener::bind(&staged)
        .map_err(|e| unavailable(&format!("cannot bind a socket beside {shown}"), e))?;
    fs::set_permissions(&staged, fs::Permissions::from_mode(0o600))
        .map_err(|e| unavailable("cannot set the socket's mode", e))?;
    let meta =
        fs::symlink_metadata(&staged).map_err(|e| unavailable("cannot inspect the socket", e))?;
    if !meta.file_type().is_socket() || meta.mode() & 0o777 != 0o600 || meta.uid() != own_uid() {
        return Err(StartError::Unavailable(format!(
            "the socket did not come out as a 0600 socket of this user (mode {:o})",
            meta.mode() & 0o7777
        )));
    }
    match fs::hard_link(&staged, path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            return Err(StartError::Refuse(format!(
                "{shown} appeared while the admin channel started; it was left untouched"
            )))
        }
        Err(e) => {
            return Err(unavailable(
                &format!("cannot link the socket to {shown}"),
                e,
            ))
        }
    }
    // The private directory and its name for the socket go; the listener stays.
    drop(private);
    Ok((listener, (meta.dev(), meta.ino())))
}

/// Removes `path` if it is still the file with this device and inode.
pub(super) fn remove_if_ours(path: &Path, (dev, ino): (u64, u64)) {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.dev() == dev && meta.ino() == ino {
            let _ = fs::remove_file(path);
        }
    }
}
