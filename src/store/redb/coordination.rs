//! The coordination profile's records (SPEC §16) in the forum file: presence by
//! (identity, extension), leases by id, and the lease counter in `META`.

use crate::store::records::{LeaseRec, PresenceRec};
use redb::ReadableTable;

use super::open::OrStorage;
use super::tables::{LEASES, META, PRESENCE};
use super::Writer;
use crate::error::Result;
use crate::store::codec::{decode_json as decode, encode_json as encode};

/// The `META` key of the last lease id issued.
const LEASE_LAST: &str = "lease_last";

/// The presence table's key of a record: no extension is `""`.
fn presence_key(rec: &PresenceRec) -> (&str, &str) {
    (&rec.identity, rec.extension.as_deref().unwrap_or(""))
}

/// Presence records of one identity or all, in key order: identity, then
/// extension with none (`""`) first.
pub(super) fn presences(
    table: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    identity: Option<&str>,
) -> Result<Vec<PresenceRec>> {
    let mut out = Vec::new();
    match identity {
        // Every key of one identity: from (identity, "") up to, not including,
        // the next identity (identities hold no NUL character).
        Some(id) => {
            let end = format!("{id}\0");
            for entry in table.range((id, "")..(end.as_str(), "")).or_storage()? {
                out.push(decode(entry.or_storage()?.1.value())?);
            }
        }
        None => {
            for entry in table.iter().or_storage()? {
                out.push(decode(entry.or_storage()?.1.value())?);
            }
        }
    }
    Ok(out)
}

/// Every stored lease, by id.
pub(super) fn leases(table: &impl ReadableTable<u64, &'static [u8]>) -> Result<Vec<LeaseRec>> {
    let mut out = Vec::new();
    for entry in table.iter().or_storage()? {
        let (_, v) = entry.or_storage()?;
        out.push(decode(v.value())?);
    }
    Ok(out)
}

/// One stored lease.
pub(super) fn lease(
    table: &impl ReadableTable<u64, &'static [u8]>,
    id: u64,
) -> Result<Option<LeaseRec>> {
    match table.get(id).or_storage()? {
        Some(guard) => Ok(Some(decode(guard.value())?)),
        None => Ok(None),
    }
}

impl Writer<'_> {
    pub(super) fn write_presence(&mut self, rec: &PresenceRec) -> Result<()> {
        self.table(PRESENCE)?
            .insert(presence_key(rec), encode(rec)?.as_slice())
            .or_storage()?;
        Ok(())
    }

    pub(super) fn take_lease_id(&mut self) -> Result<u64> {
        let mut meta = self.table(META)?;
        let last = meta.get(LEASE_LAST).or_storage()?.map_or(0, |v| v.value());
        meta.insert(LEASE_LAST, last + 1).or_storage()?;
        Ok(last + 1)
    }

    pub(super) fn write_lease(&mut self, rec: &LeaseRec) -> Result<()> {
        self.table(LEASES)?
            .insert(rec.id, encode(rec)?.as_slice())
            .or_storage()?;
        Ok(())
    }

    pub(super) fn delete_lease(&mut self, id: u64) -> Result<()> {
        self.table(LEASES)?.remove(id).or_storage()?;
        Ok(())
    }
}
