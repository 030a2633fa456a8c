//! The engine: a forum over a [`Store`], the generic call, and the operations.

mod bundles;
pub(crate) mod claims;
pub(crate) mod coordination;
mod cursor;
pub(crate) mod digest;
mod group;
pub(crate) mod listen;
mod place;
pub(crate) mod post;
pub(crate) mod provenance;
pub(crate) mod read;
pub(crate) mod requests;
pub(crate) mod tokens;
pub(crate) mod view;

use std::path::Path;

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::error::{Error, Reason, Refusal, Result};
use crate::store::{is_postgres_url, RedbStore, Store};
use read::show;
use requests::provenance::ImportClaim;
use requests::{GetClaim, GetEvents, GetInbox, GetMessages, GetThread, ListThreads, Search};
use tokens::Right;

/// The operations of SPEC §11, and those appended by §14 and §18.4, in the fixed
/// order transports list them. A forum offers those of its enabled profiles
/// ([`Forum::offers`]).
pub const OPERATIONS: [&str; 20] = [
    "get_manifest",
    "whoami",
    "post",
    "get_thread",
    "list_threads",
    "get_inbox",
    "get_events",
    "get_claim",
    "get_messages",
    "search",
    "set_presence",
    "get_presence",
    "lease",
    "release",
    "get_leases",
    "get_digest",
    "put_artifact",
    "get_artifact",
    "export_claim",
    "import_claim",
];

/// A Parley forum. `Send + Sync`: share it (e.g. in an `Arc`) among threads; posts
/// are serialized by the store's single writer, reads run on snapshots.
pub struct Forum {
    pub(crate) store: Box<dyn Store>,
    pub(crate) config: Config,
    group: group::Group<post::PostJob, post::Applied>,
    callers: tokens::CallerCache,
    /// When keyed posts next forget expired keys (ms).
    next_purge: std::sync::atomic::AtomicI64,
    pub(crate) watch: std::sync::Arc<listen::Watch>,
    /// The realm key pair (SPEC §18.3). Not in `Debug`: the forum's Debug shows
    /// its config only.
    pub(crate) realm_secret: crate::provenance::RealmSecret,
    /// `Config::trusted_realms`, parsed, and this forum's own realm and key.
    pub(crate) trusted: crate::provenance::TrustedRealms,
}

impl std::fmt::Debug for Forum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forum")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Forum {
    /// Creates or opens the forum file at `path`.
    ///
    /// A file written by a newer schema version is refused with
    /// [`Error::SchemaTooNew`]; a redb file of another application with
    /// [`Error::NotAForum`]. A forum in PostgreSQL opens through the crate
    /// `parley-postgres` (`parley_postgres::open`, which takes a path too): here a
    /// `postgres://` (or `postgresql://`) URL is refused with [`Error::Storage`],
    /// saying so, and never taken for a file's name.
    pub fn open(path: impl AsRef<Path>, config: Config) -> Result<Forum> {
        Forum::open_in(path.as_ref(), config, true)
    }

    /// Opens the forum at `path` as [`Forum::open`] does, but only a forum that is
    /// already there: a missing or empty file is refused and left as it was (not a
    /// byte written), so that a mistyped path on a read never starts a forum.
    pub fn open_existing(path: impl AsRef<Path>, config: Config) -> Result<Forum> {
        Forum::open_in(path.as_ref(), config, false)
    }

    fn open_in(path: &Path, config: Config, create: bool) -> Result<Forum> {
        config.validate()?;
        if let Some(text) = path.to_str() {
            if is_postgres_url(text) {
                return Err(Error::storage(format!(
                    "{}: {}",
                    crate::store::without_password(text),
                    crate::store::NO_POSTGRES
                )));
            }
            // Another database's URL is refused, not taken for a file's name (nor
            // echoed with its password).
            if let Some(scheme) = crate::store::scheme(text) {
                return Err(Error::storage(format!(
                    "{}: `{scheme}://` names no storage Parley has; use a forum file's \
                     path or a postgres:// URL",
                    crate::store::without_password(text)
                )));
            }
        }
        let (durability, progress) = (config.durability, config.progress.as_ref());
        let store = if create {
            RedbStore::open_with(path, durability, progress)?
        } else {
            RedbStore::open_existing_with(path, durability, progress)?
        };
        Forum::with_store(Box::new(store), config)
    }

    /// A forum in memory, gone when dropped. For tests and throwaway use.
    pub fn in_memory(config: Config) -> Result<Forum> {
        config.validate()?;
        Forum::with_store(Box::new(RedbStore::in_memory()?), config)
    }

    /// A forum over another storage backend (see [`crate::storage`]).
    pub fn with_store(store: Box<dyn Store>, config: Config) -> Result<Forum> {
        config.validate()?;
        let watch: std::sync::Arc<listen::Watch> = Default::default();
        // Another engine's commits ring this forum's waits too. The ring holds the
        // watch weakly: a backend's thread never keeps a dropped forum's bell.
        let bell = std::sync::Arc::downgrade(&watch);
        store.on_foreign_commit(std::sync::Arc::new(move || {
            if let Some(watch) = bell.upgrade() {
                watch.ring();
            }
        }));
        // A backend that keeps no key pair signs with one that lives as long as
        // the forum (`Store::realm_secret`).
        let realm_secret = match store.realm_secret() {
            Some(secret) => secret,
            None => crate::provenance::RealmSecret::generate()
                .map_err(|e| Error::storage(format!("OS random source: {e}")))?,
        };
        let mut trusted = config.trusted()?;
        trusted.insert(config.realm.clone(), realm_secret.public());
        Ok(Forum {
            trusted,
            realm_secret,
            callers: tokens::CallerCache::new(!store.shared()),
            store,
            config,
            group: Default::default(),
            next_purge: Default::default(),
            watch,
        })
    }

    /// Whether other engines may share this forum at once (a forum in PostgreSQL).
    /// Each call then reads what they may have changed from the database: a host
    /// should make calls only where blocking is allowed (not on an async worker).
    pub fn is_shared(&self) -> bool {
        self.store.shared()
    }

    /// The public half of the forum's realm key (SPEC §18.3), made when the forum
    /// was created and kept in it; `to_string()` gives its text form
    /// `ed25519:<base64url>`, as the manifest shows it.
    pub fn realm_key(&self) -> crate::provenance::RealmKey {
        self.realm_secret.public()
    }

    /// The realms whose bundles this forum accepts, with their keys:
    /// [`Config::trusted_realms`] and the forum's own realm and key. What
    /// `parley verify-bundle` and [`provenance::verify_bundle`](crate::provenance::verify_bundle)
    /// take.
    pub fn trusted_realms(&self) -> &crate::provenance::TrustedRealms {
        &self.trusted
    }

    /// The settings the forum was opened with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether this forum offers `operation`: one of [`OPERATIONS`] whose profile,
    /// if it has one, is on. The manifest and the MCP tool list show these only.
    pub fn offers(&self, operation: &str) -> bool {
        OPERATIONS.contains(&operation)
            && (operation != "get_claim" || self.config.dialectic)
            && (self.config.coordination || !coordination::OPERATIONS.contains(&operation))
            && (self.config.provenance || !provenance::OPERATIONS.contains(&operation))
            // Claims travel only where there are claims (the dialectic profile).
            && (self.config.dialectic || !provenance::CLAIM_OPERATIONS.contains(&operation))
    }

    pub(crate) fn now(&self) -> i64 {
        (self.config.clock)()
    }

    /// `whoami`: the token's identity, kind, rights and label, and the realm.
    pub(crate) fn whoami(
        &self,
        token: Option<&str>,
        req: &requests::Args<()>,
    ) -> Result<crate::protocol::views::WhoAmI> {
        let tx = self.store.read()?;
        let caller = self.authenticate(&*tx, token)?;
        req.clone()?;
        Ok(crate::protocol::views::WhoAmI {
            identity: caller.identity.clone(),
            kind: if caller.human { "human" } else { "llm" }.to_string(),
            rights: Right::ALL
                .iter()
                .filter(|r| caller.has(**r))
                .map(|r| r.as_str().to_string())
                .collect(),
            label: caller.label.clone(),
            realm: self.config.realm.clone(),
        })
    }

    /// Runs `f`, turning a panic inside the engine into [`Error::Internal`], so that
    /// no caller (and no FFI boundary) sees one. A panic is a bug, not a damaged
    /// file: redb's own assertions on a damaged file are caught where redb opens
    /// and checks it (`store::redb::open::unpanicked`) and reported as storage errors.
    pub(crate) fn guarded<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or_else(|panic| Err(Error::from_panic(&*panic)))
    }

    /// The generic entry (SPEC §11.3): runs `operation` with JSON `args` for the
    /// holder of `token`, and returns the result as JSON.
    ///
    /// A refusal is [`Error::Refused`] with the stable reason; an operation that does
    /// not exist is [`Error::UnknownOperation`].
    ///
    /// A panic inside the call is [`Error::Internal`], never an unwind into the
    /// host.
    pub fn call(&self, token: Option<&str>, operation: &str, args: &Value) -> Result<Value> {
        self.guarded(|| self.dispatch(token, operation, args))
    }

    fn dispatch(&self, token: Option<&str>, operation: &str, args: &Value) -> Result<Value> {
        let empty = Map::new();
        let args_obj = match args {
            Value::Null => &empty,
            Value::Object(map) => map,
            _ if operation == "post" => return Err(post::not_an_envelope()),
            _ if OPERATIONS.contains(&operation) => {
                return Err(Refusal::new(
                    Reason::InvalidArgument,
                    "arguments must be a JSON object",
                )
                .into())
            }
            _ => return Err(Error::UnknownOperation(operation.to_string())),
        };
        let (config, guards) = (&self.config, self.config.guards);
        match operation {
            "get_manifest" => {
                requests::only(args_obj, &[])?;
                Ok(self.manifest())
            }
            "whoami" => {
                let me = self.whoami(token, &requests::only(args_obj, &[]))?;
                Ok(json!({
                    "identity": me.identity,
                    "kind": me.kind,
                    "rights": me.rights,
                    "label": me.label,
                    "realm": me.realm,
                }))
            }
            "post" => self.post(token, args),
            "get_thread" => self.get_thread(token, &GetThread::parse(args_obj)),
            "list_threads" => {
                let req = ListThreads::parse(args_obj, config);
                let wait = req.as_ref().ok().and_then(|r| r.wait);
                self.wait_for_items(wait, || self.list_threads(token, &req))
                    .map(|l| l.json(|t| show::thread(t, guards)))
            }
            "get_inbox" => {
                let req = GetInbox::parse(args_obj, config);
                let wait = req.as_ref().ok().and_then(|r| r.wait);
                self.wait_for_items(wait, || self.get_inbox(token, &req))
                    .map(|l| l.json(|w| show::waiting(w, guards)))
            }
            "get_events" => {
                let req = GetEvents::parse(args_obj, config);
                let wait = req.as_ref().ok().and_then(|r| r.wait);
                self.wait_for_items(wait, || self.get_events(token, &req))
                    .map(|l| l.json(show::event))
            }
            "get_messages" => {
                let req = GetMessages::parse(args_obj, config);
                let wait = req.as_ref().ok().and_then(|r| r.wait);
                self.wait_for_items(wait, || self.get_messages(token, &req))
                    .map(|l| l.json(show::message))
            }
            "search" => self
                .search(token, &Search::parse(args_obj, config))
                .map(|l| l.json(|h| show::hit(h, guards))),
            "get_claim" => self
                .get_claim(token, &GetClaim::parse(args_obj))
                .map(|c| c.json()),
            "get_digest" => self.get_digest(token, &GetThread::parse(args_obj)),
            // Without the dialectic profile there are no claims to carry, and the
            // two are unknown, as `get_claim` is (§10); with it and the provenance
            // profile off they are refused like the profile's artifact operations.
            "export_claim" | "import_claim" if self.config.dialectic => {
                self.provenance_on(operation)?;
                if operation == "export_claim" {
                    self.export_claim(token, &GetClaim::parse(args_obj))
                } else {
                    self.import_claim(token, &ImportClaim::parse(args_obj))
                }
            }
            op if coordination::OPERATIONS.contains(&op) => {
                self.coordination_call(token, op, args_obj)
            }
            op if provenance::ARTIFACT_OPERATIONS.contains(&op) => {
                self.provenance_call(token, op, args)
            }
            other => Err(Error::UnknownOperation(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn forum_is_send_and_sync() {
        assert_send_sync::<Forum>();
    }

    #[test]
    fn unknown_operations_and_bad_args() {
        let forum = Forum::in_memory(Config::default()).unwrap();
        assert!(matches!(
            forum.call(None, "fly", &Value::Null),
            Err(Error::UnknownOperation(_))
        ));
        let err = forum.call(None, "get_thread", &json!([1])).unwrap_err();
        assert_eq!(err.refusal().unwrap().reason, Reason::InvalidArgument);
        let err = forum.call(None, "whoami", &Value::Null).unwrap_err();
        assert_eq!(err.refusal().unwrap().reason, Reason::TokenMissing);
        let err = forum
            .call(Some("pt_x"), "whoami", &Value::Null)
            .unwrap_err();
        assert_eq!(err.refusal().unwrap().reason, Reason::TokenInvalid);
    }
}
