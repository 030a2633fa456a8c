//! Token administration for the host (SPEC §2): never reachable over the wire.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Forum;
use crate::error::{Error, Reason, Refusal, Result};
use crate::protocol::ids;
use crate::store::records::{IdentityRec, TokenRec};
use crate::store::ReadTx;

pub use crate::protocol::rights::Right;
use crate::protocol::rights::Rights;

/// Who a token speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// An agent: identity `<realm>:<handle>`.
    Llm,
    /// A person: identity `human:<name>`, all rights, outranks everyone.
    Human,
}

impl TokenKind {
    /// `"llm"` or `"human"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TokenKind::Llm => "llm",
            TokenKind::Human => "human",
        }
    }
}

/// What the host asks for when it issues a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSpec {
    /// Handle (llm) or name (human): 1–64 of `[a-z0-9._-]`.
    pub handle: String,
    /// Agent or person.
    pub kind: TokenKind,
    /// Rights of an llm token; ignored for a human.
    pub rights: Vec<Right>,
    /// Shown as `KI · <label>`; defaults to the handle.
    pub label: Option<String>,
}

impl TokenSpec {
    /// An agent token with these rights.
    pub fn llm(handle: &str, rights: &[Right]) -> Self {
        TokenSpec {
            handle: handle.into(),
            kind: TokenKind::Llm,
            rights: rights.to_vec(),
            label: None,
        }
    }

    /// A human token.
    pub fn human(name: &str) -> Self {
        TokenSpec {
            handle: name.into(),
            kind: TokenKind::Human,
            rights: Right::ALL.to_vec(),
            label: None,
        }
    }

    /// Sets the label.
    pub fn label(mut self, label: &str) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Reads `{"handle", "kind": "llm"|"human", "rights": [...], "label"}`;
    /// `kind` defaults to `llm`, `rights` to `["read", "write"]`.
    pub fn from_json(spec: &Value) -> Result<TokenSpec> {
        let bad = |m: &str| Error::InvalidArgument(m.to_string());
        let obj = spec
            .as_object()
            .ok_or_else(|| bad("a token spec must be a JSON object"))?;
        for key in obj.keys() {
            if !matches!(key.as_str(), "handle" | "kind" | "rights" | "label") {
                return Err(Error::InvalidArgument(format!(
                    "unknown token spec field `{key}`"
                )));
            }
        }
        let handle = obj
            .get("handle")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("`handle` must be a string"))?;
        let kind = match obj.get("kind").map(|k| k.as_str()) {
            None | Some(Some("llm")) => TokenKind::Llm,
            Some(Some("human")) => TokenKind::Human,
            _ => return Err(bad("`kind` must be \"llm\" or \"human\"")),
        };
        let rights = match obj.get("rights") {
            None => vec![Right::Read, Right::Write],
            Some(Value::Array(list)) => list
                .iter()
                .map(|r| r.as_str().and_then(Right::from_name))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("`rights` must list read, write, lock or verify"))?,
            Some(_) => return Err(bad("`rights` must be a list")),
        };
        let label = match obj.get("label") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(bad("`label` must be a string")),
        };
        Ok(TokenSpec {
            handle: handle.to_string(),
            kind,
            rights,
            label,
        })
    }
}

/// An identity the forum knows, for the host's listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityInfo {
    /// `<realm>:<handle>` or `human:<name>`.
    pub identity: String,
    /// Agent or person.
    pub kind: TokenKind,
    /// Label of its newest token.
    pub label: String,
    /// Tokens issued and not revoked.
    pub active_tokens: u64,
}

/// The SHA-256 of a token secret: the only form in which tokens are stored.
pub(crate) fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Compares two hashes in time independent of where they differ.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The table key of a token: the first half of its digest. The full digest is
/// kept in the record and compared in constant time, so that a lookup's timing
/// tells nothing about how much of a guessed secret was right.
fn key(digest: &[u8; 32]) -> &[u8] {
    &digest[..16]
}

/// Finds the live token record for a secret.
pub(crate) fn lookup(tx: &dyn ReadTx, token: &str) -> Result<Option<TokenRec>> {
    lookup_digest(tx, &hash(token))
}

/// [`lookup`] of a token by its digest.
fn lookup_digest(tx: &dyn ReadTx, digest: &[u8; 32]) -> Result<Option<TokenRec>> {
    let Some(rec) = tx.token(key(digest))? else {
        return Ok(None);
    };
    let stored: [u8; 32] = unhex(&rec.digest).unwrap_or([0; 32]);
    Ok((constant_time_eq(&stored, digest) && !rec.revoked).then_some(rec))
}

/// The digest of a presented token; `None` when none (or an empty one) was given.
pub(crate) fn presented(token: Option<&str>) -> Option<[u8; 32]> {
    token.filter(|t| !t.is_empty()).map(hash)
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl Forum {
    /// Issues a token and returns its secret. The secret is shown only here; the
    /// forum keeps its SHA-256. A second token for an identity is allowed (rotation).
    pub fn create_token(&self, spec: &TokenSpec) -> Result<String> {
        if !ids::is_handle(&spec.handle) {
            return Err(Error::InvalidArgument(format!(
                "handle `{}` must be 1-64 characters of [a-z0-9._-], starting with a letter or digit",
                spec.handle
            )));
        }
        let label = spec.label.clone().unwrap_or_else(|| spec.handle.clone());
        if label.trim().is_empty() || label.chars().count() > 64 {
            return Err(Error::InvalidArgument("a label is 1-64 characters".into()));
        }
        let (identity, rights) = match spec.kind {
            TokenKind::Llm => (
                format!("{}:{}", self.config.realm, spec.handle),
                Rights::of(&spec.rights),
            ),
            TokenKind::Human => (format!("human:{}", spec.handle), Rights::ALL),
        };
        let mut secret_bytes = [0u8; 24];
        getrandom::fill(&mut secret_bytes)
            .map_err(|e| Error::storage(format!("OS random source: {e}")))?;
        let secret = format!("pt_{}", hex(&secret_bytes));
        let now = self.now();
        let mut tx = self.store.write()?;
        let mut ident = match tx.identity(&identity)? {
            Some(existing) if existing.human != (spec.kind == TokenKind::Human) => {
                return Err(Error::InvalidArgument(format!(
                    "{identity} exists with another kind"
                )));
            }
            Some(existing) => existing,
            None => IdentityRec {
                human: spec.kind == TokenKind::Human,
                label: label.clone(),
                tokens: 0,
                revoked: 0,
                created_at: now,
            },
        };
        ident.tokens += 1;
        ident.label = label.clone();
        tx.put_identity(&identity, &ident)?;
        let digest = hash(&secret);
        let rec = TokenRec {
            digest: hex(&digest),
            identity,
            human: spec.kind == TokenKind::Human,
            rights,
            label,
            revoked: false,
            created_at: now,
        };
        tx.put_token(key(&digest), &rec)?;
        tx.commit()?;
        self.watch.ring();
        Ok(secret)
    }

    /// Revokes a token. Returns `false` when it was unknown or already revoked.
    pub fn revoke_token(&self, token: &str) -> Result<bool> {
        let digest = hash(token);
        // Forgotten before and after the commit: a post in between reads the
        // token from the store, which still says what is committed.
        self.callers.forget(&digest);
        let mut tx = self.store.write()?;
        let Some(mut rec) = lookup(&*tx, token)? else {
            return Ok(false);
        };
        rec.revoked = true;
        tx.put_token(key(&digest), &rec)?;
        if let Some(mut ident) = tx.identity(&rec.identity)? {
            ident.revoked += 1;
            tx.put_identity(&rec.identity, &ident)?;
        }
        tx.commit()?;
        self.callers.forget(&digest);
        // Waiting calls of this token run again now, and are refused.
        self.watch.ring();
        Ok(true)
    }

    /// Every identity the forum has issued a token to, in name order.
    pub fn identities(&self) -> Result<Vec<IdentityInfo>> {
        let tx = self.store.read()?;
        Ok(tx
            .identities()?
            .into_iter()
            .map(|(identity, rec)| IdentityInfo {
                identity,
                kind: if rec.human {
                    TokenKind::Human
                } else {
                    TokenKind::Llm
                },
                label: rec.label,
                active_tokens: rec.tokens - rec.revoked,
            })
            .collect())
    }
}

/// The caller behind a token.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) identity: String,
    pub(crate) human: bool,
    pub(crate) rights: Rights,
    pub(crate) label: String,
}

impl Caller {
    pub(crate) fn has(&self, right: Right) -> bool {
        self.human || self.rights.has(right)
    }

    /// Humans and lock holders confirm states (§7.1).
    pub(crate) fn confirmer(&self) -> bool {
        self.has(Right::Lock)
    }

    /// The caller as the protocol's rules see them.
    pub(crate) fn actor(&self) -> crate::protocol::decide::Actor<'_> {
        crate::protocol::decide::Actor {
            identity: &self.identity,
            human: self.human,
            confirmer: self.confirmer(),
        }
    }

    pub(crate) fn require(&self, right: Right) -> Result<(), Refusal> {
        if self.has(right) {
            Ok(())
        } else {
            Err(Refusal::new(
                Reason::TokenRightMissing,
                format!("this token lacks the `{}` right", right.as_str()),
            )
            .with_right(right))
        }
    }
}

/// Callers of recently seen tokens, by digest, so a post does not read and decode
/// its token record again. Revocation removes the entry before and after its
/// commit, so no post is admitted on a revoked token.
pub(crate) struct CallerCache {
    map: RwLock<HashMap<[u8; 32], Arc<Caller>>>,
    /// Off when other engines share the forum: one of them may revoke a token at
    /// any moment, and a cached caller would outlive the revocation.
    on: bool,
}

/// More distinct live tokens than this and the cache starts over.
const CACHE_MAX: usize = 4096;

impl CallerCache {
    pub(crate) fn new(on: bool) -> Self {
        CallerCache {
            map: RwLock::default(),
            on,
        }
    }

    fn get(&self, digest: &[u8; 32]) -> Option<Arc<Caller>> {
        if !self.on {
            return None;
        }
        self.map
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(digest)
            .cloned()
    }

    fn put(&self, digest: [u8; 32], caller: &Arc<Caller>) {
        if !self.on {
            return;
        }
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        if map.len() >= CACHE_MAX {
            map.clear();
        }
        map.insert(digest, Arc::clone(caller));
    }

    fn forget(&self, digest: &[u8; 32]) {
        self.map
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(digest);
    }
}

impl Forum {
    /// The identity a token speaks for, or `None` for a token that is unknown,
    /// revoked or unreadable. For request logs and diagnostics, which must name the
    /// caller and never the token; every decision goes through the operations.
    pub fn identity_of(&self, token: &str) -> Option<String> {
        let digest = presented(Some(token))?;
        if let Some(caller) = self.callers.get(&digest) {
            return Some(caller.identity.clone());
        }
        let tx = self.store.read().ok()?;
        self.authenticate_digest(&*tx, Some(&digest))
            .ok()
            .map(|caller| caller.identity.clone())
    }

    /// Resolves a token to its caller: `token_missing` or `token_invalid` otherwise.
    pub(crate) fn authenticate(&self, tx: &dyn ReadTx, token: Option<&str>) -> Result<Arc<Caller>> {
        self.authenticate_digest(tx, presented(token).as_ref())
    }

    /// [`Self::authenticate`] of a token hashed beforehand ([`presented`]): a post
    /// hashes its token before it queues, outside the batch's serial part.
    pub(crate) fn authenticate_digest(
        &self,
        tx: &dyn ReadTx,
        digest: Option<&[u8; 32]>,
    ) -> Result<Arc<Caller>> {
        let digest = *digest.ok_or_else(|| {
            Error::Refused(Refusal::new(
                Reason::TokenMissing,
                "this operation needs a token",
            ))
        })?;
        if let Some(caller) = self.callers.get(&digest) {
            return Ok(caller);
        }
        let rec = lookup_digest(tx, &digest)?.ok_or_else(|| {
            Error::Refused(Refusal::new(
                Reason::TokenInvalid,
                "the token is unknown or revoked",
            ))
        })?;
        // Shared, not copied: every post of a known token reads it.
        let caller = Arc::new(Caller {
            identity: rec.identity,
            human: rec.human,
            rights: rec.rights,
            label: rec.label,
        });
        self.callers.put(digest, &caller);
        Ok(caller)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    #[test]
    fn tokens_are_issued_revoked_and_listed() {
        let forum = Forum::in_memory(Config::default()).unwrap();
        let t1 = forum
            .create_token(&TokenSpec::llm("alice", &[Right::Read]))
            .unwrap();
        let t2 = forum
            .create_token(&TokenSpec::llm("alice", &[Right::Read]))
            .unwrap();
        assert_ne!(t1, t2);
        assert!(forum.revoke_token(&t1).unwrap());
        assert!(!forum.revoke_token(&t1).unwrap());
        assert!(!forum.revoke_token("pt_nope").unwrap());
        let ids = forum.identities().unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(ids[0].identity, "ainotes:alice");
        assert_eq!(ids[0].active_tokens, 1);
        let tx = forum.store.read().unwrap();
        assert!(lookup(&*tx, &t1).unwrap().is_none());
        assert!(lookup(&*tx, &t2).unwrap().is_some());
    }

    #[test]
    fn identity_of_names_the_holder_of_a_live_token_only() {
        let forum = Forum::in_memory(Config::default()).unwrap();
        let token = forum
            .create_token(&TokenSpec::llm("alice", &[Right::Read]))
            .unwrap();
        assert_eq!(forum.identity_of(&token).as_deref(), Some("ainotes:alice"));
        // Twice: the second answer comes from the cache.
        assert_eq!(forum.identity_of(&token).as_deref(), Some("ainotes:alice"));
        assert!(forum.revoke_token(&token).unwrap());
        assert_eq!(forum.identity_of(&token), None);
        assert_eq!(forum.identity_of("pt_not-a-token"), None);
        assert_eq!(forum.identity_of(""), None);
    }

    #[test]
    fn a_revoked_token_is_refused_even_after_it_was_cached() {
        let forum = Forum::in_memory(Config::default()).unwrap();
        let token = forum
            .create_token(&TokenSpec::llm("alice", &[Right::Read]))
            .unwrap();
        let whoami = |t: &str| forum.call(Some(t), "whoami", &serde_json::json!({}));
        assert_eq!(whoami(&token).unwrap()["identity"], "ainotes:alice");
        assert!(forum.callers.get(&hash(&token)).is_some());
        assert!(forum.revoke_token(&token).unwrap());
        let err = whoami(&token).unwrap_err();
        assert_eq!(err.refusal().unwrap().reason, Reason::TokenInvalid);
    }

    #[test]
    fn bad_specs_are_refused() {
        let forum = Forum::in_memory(Config::default()).unwrap();
        assert!(forum.create_token(&TokenSpec::llm("Bad", &[])).is_err());
        assert!(
            TokenSpec::from_json(&serde_json::json!({"handle": "a", "rights": ["fly"]})).is_err()
        );
        assert!(
            TokenSpec::from_json(&serde_json::json!({"handle": "a", "kind": "robot"})).is_err()
        );
        forum.create_token(&TokenSpec::human("ann")).unwrap();
        let s = TokenSpec::from_json(&serde_json::json!({"handle": "ann", "kind": "llm"})).unwrap();
        forum.create_token(&s).unwrap(); // ainotes:ann is another identity than human:ann
    }
}
