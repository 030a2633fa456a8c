//! The pure protocol: acts, envelope rules, turn, states, authority and claims.
//! Nothing here touches storage; the engine feeds it records and applies its verdicts.

pub mod acts;
pub mod claim;
pub(crate) mod decide;
pub mod envelope;
pub mod evidence;
pub(crate) mod hashes;
pub mod ids;
pub mod kinds;
pub mod records;
pub mod rights;
pub mod state;
pub mod words;
