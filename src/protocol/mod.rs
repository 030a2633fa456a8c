//! The pure protocol: acts, envelope rules, turn, states, authority and claims.
//! Nothing here touches storage; the engine feeds it records and applies its verdicts.

pub(crate) mod acts;
pub(crate) mod artifact;
pub(crate) mod claim;
pub(crate) mod coordination;
pub(crate) mod decide;
pub(crate) mod envelope;
pub(crate) mod evidence;
pub(crate) mod guards;
pub(crate) mod hashes;
pub(crate) mod id_types;
pub(crate) mod ids;
pub(crate) mod kinds;
pub(crate) mod limits;
pub mod records;
pub(crate) mod refusal;
pub(crate) mod rights;
pub(crate) mod state;
pub(crate) mod views;
pub(crate) mod words;
