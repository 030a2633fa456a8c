//! The forum's tables, versioned: migrations run on open, under the forum's lock.

use super::conn::Pooled;
use parley_forum::provenance::RealmSecret;
use parley_forum::{Error, Result};

/// Each entry takes the schema from the version of its index to the next. A
/// database whose version is past the end was written by a newer release and is
/// refused. Ids are `bigint`: records and positions are those of the redb file
/// (`docs/storage.md`), in the same encodings.
const MIGRATIONS: &[&str] = &[
    // Version 1.
    "CREATE TABLE parley_meta (key text PRIMARY KEY, value bigint NOT NULL);
     CREATE TABLE tokens (key bytea PRIMARY KEY, rec bytea NOT NULL);
     CREATE TABLE identities (name text COLLATE \"C\" PRIMARY KEY, rec bytea NOT NULL);
     CREATE TABLE threads (id bigint PRIMARY KEY, rec bytea NOT NULL);
     CREATE TABLE messages (id bigint PRIMARY KEY, thread bigint NOT NULL, rec bytea NOT NULL);
     CREATE INDEX messages_by_thread ON messages (thread, id);
     CREATE TABLE claims (id bigint PRIMARY KEY, rec bytea NOT NULL);
     CREATE TABLE events (id bigint PRIMARY KEY, thread bigint NOT NULL, rec bytea NOT NULL);
     CREATE INDEX events_by_thread ON events (thread, id);
     CREATE TABLE turns (identity text NOT NULL, pos bigint NOT NULL, thread bigint NOT NULL,
                         PRIMARY KEY (identity, pos));
     CREATE TABLE activity (state smallint NOT NULL, pos bigint NOT NULL, thread bigint NOT NULL,
                            PRIMARY KEY (state, pos));
     CREATE INDEX activity_by_pos ON activity (pos);
     CREATE TABLE writes (identity text NOT NULL, message bigint NOT NULL, at bigint NOT NULL,
                          PRIMARY KEY (identity, message));
     CREATE TABLE words (word text NOT NULL, message bigint NOT NULL, thread bigint NOT NULL,
                         PRIMARY KEY (word, message));
     CREATE TABLE idempotency (identity text NOT NULL, key text NOT NULL,
                               message bigint NOT NULL, at bigint NOT NULL,
                               PRIMARY KEY (identity, key));
     CREATE INDEX idempotency_by_age ON idempotency (at);
     -- One more at every commit (`cache.rs`).
     INSERT INTO parley_meta (key, value) VALUES ('generation', 0);",
    // Version 2: the word index is one row per message, its distinct words in an
    // array under a GIN index, instead of a row (and a B-tree entry) per word: a
    // post's 50 or so words cost the server about 310 µs as rows and 55 µs as one
    // array (`docs/decisions/0005-postgres-batch-statements.md`). GIN's pending list
    // takes the new entries and merges them in bulk later, as the redb file's word tail does.
    "CREATE TABLE message_words (message bigint PRIMARY KEY, thread bigint NOT NULL,
                                 words text[] NOT NULL);
     INSERT INTO message_words (message, thread, words)
         SELECT message, min(thread), array_agg(word ORDER BY word) FROM words GROUP BY message;
     DROP TABLE words;
     CREATE INDEX message_words_words ON message_words USING gin (words);",
    // Version 3: what each commit changed of the records engines cache, so that an
    // engine whose cache another engine's commits made stale forgets only those
    // records (`begin.rs`). An older release commits without a row here; the gap
    // it leaves makes the other engines start their caches over.
    "CREATE TABLE changes (generation bigint PRIMARY KEY, rec text NOT NULL);",
    // Version 4: the text the engine compares (words, identities, keys) in the "C"
    // collation, as `identities.name` was from the start. Equality is the same in
    // every deterministic collation, and the redb file orders bytes, so no answer
    // changes. But a database's default collation (C.UTF-8, en_US.UTF-8, ...)
    // compares through the C library's locale code, and the word index's GIN
    // entries are compared that way on every batch (measured in
    // `docs/decisions/0006-postgres-c-collation.md`).
    "ALTER TABLE message_words ALTER COLUMN words TYPE text[] COLLATE \"C\";
     ALTER TABLE turns ALTER COLUMN identity TYPE text COLLATE \"C\";
     ALTER TABLE writes ALTER COLUMN identity TYPE text COLLATE \"C\";
     ALTER TABLE idempotency ALTER COLUMN identity TYPE text COLLATE \"C\",
                             ALTER COLUMN key TYPE text COLLATE \"C\";
     ALTER TABLE parley_meta ALTER COLUMN key TYPE text COLLATE \"C\";",
    // Version 5: the coordination profile (SPEC §16). No extension is '' in
    // `presence`; lease ids are counted in `parley_meta`, as a released lease's row
    // goes and its id must never come back.
    "CREATE TABLE presence (identity text COLLATE \"C\" NOT NULL,
                            extension text COLLATE \"C\" NOT NULL,
                            rec bytea NOT NULL, PRIMARY KEY (identity, extension));
     CREATE TABLE leases (id bigint PRIMARY KEY, rec bytea NOT NULL);
     INSERT INTO parley_meta (key, value) VALUES ('lease_last', 0);",
    // Version 6: the provenance profile (SPEC §18). The realm key pair, its 32-byte
    // Ed25519 seed under the name 'ed25519_seed', made by the first engine that opens
    // the forum (`realm_secret`); like every table of the forum, readable by the roles
    // the database grants it to, and by no view or response. The artifacts (§18.1),
    // keyed by the SHA-256 of their bytes, written once. The imported claims (§18.3),
    // keyed by (realm, claim there): the key makes a second import of one claim fail
    // even past the engine's check.
    "CREATE TABLE realm_key (name text COLLATE \"C\" PRIMARY KEY, seed bytea NOT NULL);
     CREATE TABLE artifacts (digest bytea PRIMARY KEY, media_type text NOT NULL,
                             created_at bigint NOT NULL, content bytea NOT NULL);
     CREATE TABLE imports (realm text COLLATE \"C\" NOT NULL, claim text COLLATE \"C\" NOT NULL,
                           local bigint NOT NULL, PRIMARY KEY (realm, claim));",
];

/// The schema version this release writes.
pub(super) const SCHEMA_VERSION: u64 = MIGRATIONS.len() as u64;

/// Migrates the forum's schema, creating it first when `create` is set (a forum
/// that is not there is otherwise refused, nothing created); returns its cursor
/// key and its realm key pair.
pub(super) fn prepare(pooled: &mut Pooled<'_>, create: bool) -> Result<(u64, RealmSecret)> {
    let (target_schema, lock, shown) = {
        let t = pooled.target();
        (t.schema.clone(), t.lock, t.shown.clone())
    };
    let conn = pooled.get();
    conn.batch("BEGIN")?;
    let result = (|| {
        conn.exec("SELECT pg_advisory_xact_lock($1)", &[&lock])?;
        let tables: Vec<String> = conn
            .rows(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
                &[&target_schema],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if !tables.is_empty() && !tables.iter().any(|t| t == "parley_meta") {
            return Err(Error::NotAForum(format!(
                "{shown}: the schema {target_schema} holds tables of another application \
                 ({}); Parley left it untouched. Name another forum with ?forum=NAME",
                tables.join(", ")
            )));
        }
        if tables.is_empty() && !create {
            return Err(Error::NotAForum(format!(
                "{shown}: no forum in the schema {target_schema}; Parley created none \
                 (only an open that may create a forum starts one: `parley serve`, \
                 `parley token create`, `Forum::open`)"
            )));
        }
        conn.batch(&format!("CREATE SCHEMA IF NOT EXISTS {target_schema}"))?;
        let found: u64 = if tables.is_empty() {
            0
        } else {
            meta(conn, "schema_version")?.unwrap_or(0)
        };
        if found > SCHEMA_VERSION {
            return Err(Error::SchemaTooNew {
                found,
                supported: SCHEMA_VERSION,
            });
        }
        for (v, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            conn.batch(sql)?;
            set_meta(conn, "schema_version", v as u64 + 1)?;
        }
        let key = match meta(conn, "cursor_key")? {
            Some(k) => k,
            None => {
                let mut bytes = [0u8; 8];
                getrandom::fill(&mut bytes)
                    .map_err(|e| Error::storage(format!("OS random source: {e}")))?;
                let k = u64::from_le_bytes(bytes);
                set_meta(conn, "cursor_key", k)?;
                k
            }
        };
        Ok((key, realm_secret(conn)?))
    })();
    match result {
        Ok(key) => {
            conn.batch("COMMIT")?;
            Ok(key)
        }
        Err(e) => {
            if conn.batch("ROLLBACK").is_err() {
                pooled.discard();
            }
            Err(e)
        }
    }
}

/// The forum's realm key: a new pair is offered if absent, and whatever row is
/// there afterwards is read back, so that engines racing to make it agree (the
/// advisory lock serialises `prepare` already; the insert-if-absent keeps that
/// true without it).
fn realm_secret(conn: &mut super::conn::Conn) -> Result<RealmSecret> {
    // A seed of our own making rather than a `RealmSecret`'s: the engine gives
    // out no pair's seed, and a pair is just its seed (RFC 8032's secret key).
    let mut offered = [0u8; 32];
    getrandom::fill(&mut offered).map_err(|e| Error::storage(format!("OS random source: {e}")))?;
    conn.exec(
        "INSERT INTO realm_key (name, seed) VALUES ('ed25519_seed', $1) ON CONFLICT (name) DO NOTHING",
        &[&offered.as_slice()],
    )?;
    let row = conn
        .row(
            "SELECT seed FROM realm_key WHERE name = 'ed25519_seed'",
            &[],
        )?
        .ok_or_else(|| Error::storage("the realm key is missing after it was made".to_owned()))?;
    let seed: Vec<u8> = row.get(0);
    let seed = <[u8; 32]>::try_from(seed.as_slice())
        .map_err(|_| Error::storage("the realm key is damaged (not 32 bytes)".to_owned()))?;
    Ok(RealmSecret::from_seed(&seed))
}

fn meta(conn: &mut super::conn::Conn, key: &str) -> Result<Option<u64>> {
    Ok(conn
        .row("SELECT value FROM parley_meta WHERE key = $1", &[&key])?
        .map(|r| r.get::<_, i64>(0) as u64))
}

fn set_meta(conn: &mut super::conn::Conn, key: &str, value: u64) -> Result<()> {
    conn.exec(
        "INSERT INTO parley_meta (key, value) VALUES ($1, $2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&key, &(value as i64)],
    )?;
    Ok(())
}
