//! The first round trip of a writer: the transaction, the forum's lock, and
//! whether this engine's cache (`cache.rs`) still holds, or can be brought up to
//! date, or must start over.
//!
//! Each step is taken only when it is likely needed, because each costs the
//! server time inside the forum's lock, which every engine's writers wait for:
//! - the forum's generation, always;
//! - the changes of other engines' commits since the cache's generation
//!   (`changes`), when the listener heard another engine commit;
//! - the last ids (the end of four primary keys, whose planning cost about as
//!   much as the rest of the round trip), only when the cache was never filled.
//!
//! When a guess was wrong (another engine committed unheard of yet, or its
//! changes do not reach back to the cache's generation), a second round trip reads
//! what is missing.

use postgres::SimpleQueryRow;

use super::cache::{self, Changed, Version, View};
use super::conn::{Conn, Pool};
use super::sql::damaged;
use parley_forum::Result;

/// The last id of each kind, in [`IdKind`](parley_forum::storage::IdKind) order.
const LAST_IDS: &str = "SELECT (SELECT coalesce(max(id), 0) FROM threads)::text, \
     (SELECT coalesce(max(id), 0) FROM messages)::text, \
     (SELECT coalesce(max(id), 0) FROM claims)::text, \
     (SELECT coalesce(max(id), 0) FROM events)::text";

/// Changes older than this many generations are dropped: an engine whose cache
/// is further behind starts it over.
pub(super) const CHANGES_KEPT: i64 = 1024;
/// The commits whose generation is a multiple of this drop the old changes.
pub(super) const CHANGES_PRUNED_EVERY: i64 = 64;

/// Opens the writer's transaction on `conn` under the forum's lock `lock`, and
/// returns its view of the cache.
pub(super) fn begin(conn: &mut Conn, pool: &Pool, lock: i64) -> Result<View> {
    let known = cache::known(&pool.cache);
    let heard = pool
        .foreign
        .swap(false, std::sync::atomic::Ordering::AcqRel);
    let since = known.as_ref().filter(|_| heard).map(|v| v.generation);
    // The generation is read by a statement after the lock's: a statement's
    // snapshot is taken when it starts, before its lock waits.
    let mut sql = format!(
        "BEGIN; SELECT pg_advisory_xact_lock({lock}); \
         SELECT value::text, \
         pg_postmaster_start_time()::text || ' ' || 'messages'::regclass::oid::text \
         FROM parley_meta WHERE key = 'generation'"
    );
    if let Some(g) = since {
        sql.push_str("; ");
        sql.push_str(&changes_since(g));
    }
    if known.is_none() {
        sql.push_str("; ");
        sql.push_str(LAST_IDS);
    }
    // Last, so that the answers above keep their places. A failure discards the
    // connection (`Tx::writer`), so a flag that is set was sent once and succeeded.
    if !conn.posts_prepared {
        sql.push_str("; ");
        sql.push_str(super::posts::PREPARE);
    }
    let sets = conn.simple_sets(&sql)?;
    conn.posts_prepared = true;
    let now = version(set(&sets, 2)?)?;
    let mut ids = match known {
        None => Some(last_ids(set(&sets, 3)?)?),
        Some(_) => None,
    };
    let mut view = View::begin(&pool.cache, now.clone());
    if !view.is_warm() {
        if let Some(at) = known.as_ref().filter(|at| at.server == now.server) {
            let changes = match since {
                Some(_) => changes(set(&sets, 3)?)?,
                None => changes(set(&conn.simple_sets(&changes_since(at.generation))?, 0)?)?,
            };
            if cache::catch_up(&pool.cache, &now, &changes) {
                view = View::begin(&pool.cache, now);
            }
        }
    }
    if !view.is_warm() && ids.is_none() {
        ids = Some(last_ids(set(&conn.simple_sets(LAST_IDS)?, 0)?)?);
    }
    if let Some(ids) = ids {
        view.seen.borrow_mut().last_ids = ids.map(Some);
    }
    Ok(view)
}

fn changes_since(generation: i64) -> String {
    format!(
        "SELECT generation::text, rec FROM changes WHERE generation > {generation} \
         ORDER BY generation"
    )
}

/// The rows of statement `i` of a round trip.
fn set(sets: &[Vec<SimpleQueryRow>], i: usize) -> Result<&[SimpleQueryRow]> {
    sets.get(i)
        .map(Vec::as_slice)
        .ok_or_else(|| damaged("answer to a writer's first statements"))
}

/// The text columns of the one row a statement returned.
fn one_row<const N: usize>(rows: &[SimpleQueryRow], what: &str) -> Result<[String; N]> {
    match rows {
        [row] if row.len() == N => Ok(std::array::from_fn(|i| {
            row.get(i).unwrap_or_default().to_string()
        })),
        _ => Err(damaged(what)),
    }
}

fn number(text: &str, what: &str) -> Result<i64> {
    text.parse().map_err(|_| damaged(what))
}

/// The forum's version.
fn version(rows: &[SimpleQueryRow]) -> Result<Version> {
    let [generation, server] = one_row(rows, "generation")?;
    Ok(Version {
        generation: number(&generation, "generation")?,
        server,
    })
}

/// The last ids, in [`IdKind`](parley_forum::storage::IdKind) order.
fn last_ids(rows: &[SimpleQueryRow]) -> Result<[u64; 4]> {
    let texts: [String; 4] = one_row(rows, "id")?;
    let mut ids = [0; 4];
    for (id, text) in ids.iter_mut().zip(&texts) {
        *id = number(text, "id")? as u64;
    }
    Ok(ids)
}

/// The changes of the commits after a generation, in order.
fn changes(rows: &[SimpleQueryRow]) -> Result<Vec<(i64, Changed)>> {
    rows.iter()
        .map(|row| {
            let generation = number(row.get(0).unwrap_or_default(), "change")?;
            let change = serde_json::from_str(row.get(1).unwrap_or_default())
                .map_err(|_| damaged("change"))?;
            Ok((generation, change))
        })
        .collect()
}
