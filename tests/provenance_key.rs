//! SPEC §18.3's realm key in the forum, on redb and on PostgreSQL: made when the
//! forum is created, the same after a reopen (and for two engines opening one
//! PostgreSQL forum at once), public in the manifest, and never shown otherwise.

#[path = "pg/support.rs"]
mod support;

use parley_forum::provenance::RealmKey;
use parley_forum::{Config, Forum};
use serde_json::json;

#[test]
fn the_manifest_shows_the_public_key_of_the_forum() {
    for (backend, forum, _dir) in support::forums("key_manifest", Config::default) {
        let manifest = forum.call(None, "get_manifest", &json!({})).unwrap();
        let text = manifest["realm_key"].as_str().unwrap().to_owned();
        assert_eq!(text, forum.realm_key().to_string(), "{backend}");
        assert!(
            text.starts_with("ed25519:") && text.len() == 51,
            "{backend}: {text}"
        );
        assert_eq!(RealmKey::parse(&text).unwrap(), forum.realm_key());
        // Only the public half: the Debug of the forum shows no key at all.
        assert!(!format!("{forum:?}").contains("ed25519"), "{backend}");
    }
}

#[test]
fn the_key_is_kept_in_the_forum_file_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forum.redb");
    let first = Forum::open(&path, Config::default()).unwrap().realm_key();
    let again = Forum::open(&path, Config::default()).unwrap().realm_key();
    assert_eq!(first, again);
    let existing = Forum::open_existing(&path, Config::default())
        .unwrap()
        .realm_key();
    assert_eq!(first, existing);
    // Another forum has another key.
    let other = Forum::open(dir.path().join("other.redb"), Config::default()).unwrap();
    assert_ne!(other.realm_key(), first);
    // The file holding the private key is its owner's only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn the_key_is_kept_in_postgresql_and_racing_engines_agree() {
    let Some(base) = support::server() else {
        return;
    };
    let url = support::fresh_url(&base, "key_race");
    let keys: Vec<RealmKey> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    parley_postgres::open(&url, Config::default())
                        .unwrap()
                        .realm_key()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    let reopened = parley_postgres::open(&url, Config::default())
        .unwrap()
        .realm_key();
    assert_eq!(reopened, keys[0]);
    let other =
        parley_postgres::open(support::fresh_url(&base, "key_other"), Config::default()).unwrap();
    assert_ne!(other.realm_key(), keys[0]);
}

#[test]
fn a_forum_trusts_its_own_realm_and_the_realms_it_is_given() {
    let north = Forum::in_memory(Config::default()).unwrap();
    let key = north.realm_key().to_string();
    let settings = json!({ "realm": "south", "trusted_realms": { "north": key } });
    let south = Forum::in_memory(Config::from_json(&settings).unwrap()).unwrap();
    let trusted = south.trusted_realms();
    assert_eq!(trusted.get("north").unwrap().to_string(), key);
    assert_eq!(*trusted.get("south").unwrap(), south.realm_key());
    assert_eq!(trusted.len(), 2);
    // A bad key is a clear error when the forum opens.
    let mut config = Config::default();
    config
        .trusted_realms
        .insert("north".into(), "ed25519:not-a-key".into());
    let err = Forum::in_memory(config).unwrap_err().to_string();
    assert!(
        err.contains("trusted_realms") && err.contains("north"),
        "{err}"
    );
}
