//! Writes the database files the C tests must refuse to open:
//! `newer_schema.redb`, a forum of a future schema version, and `foreign.redb`,
//! a redb file of another application.
//!
//! `cargo run -p parley-c --example fixtures -- <directory>`

use redb::{Database, TableDefinition};

/// Where a forum keeps its format version, under `format` (as the engine lays it out).
const META: TableDefinition<&str, u64> = TableDefinition::new("parley_meta");
const OTHER: TableDefinition<&str, &str> = TableDefinition::new("settings");

/// Far beyond any version this library will reach.
const FUTURE_SCHEMA: u64 = 1_000_000;

fn write(
    path: &std::path::Path,
    fill: impl FnOnce(&redb::WriteTransaction) -> Result<(), redb::Error>,
) -> Result<(), redb::Error> {
    if path.exists() {
        std::fs::remove_file(path).map_err(redb::Error::Io)?;
    }
    let db = Database::create(path)?;
    let txn = db.begin_write()?;
    fill(&txn)?;
    txn.commit()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args_os()
        .nth(1)
        .ok_or("usage: fixtures <directory>")?;
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir)?;
    write(&dir.join("newer_schema.redb"), |txn| {
        txn.open_table(META)?.insert("format", FUTURE_SCHEMA)?;
        Ok(())
    })?;
    write(&dir.join("foreign.redb"), |txn| {
        txn.open_table(OTHER)?.insert("theme", "dark")?;
        Ok(())
    })?;
    Ok(())
}
