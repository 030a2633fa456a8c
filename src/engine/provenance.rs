//! The provenance profile (SPEC §18): artifacts, quorum, signed claims across realms.

/// The profile's operations, in the order of SPEC §18.4, as the manifest lists
/// them under `profiles.provenance`.
pub(crate) const OPERATIONS: [&str; 4] = [
    "put_artifact",
    "get_artifact",
    "export_claim",
    "import_claim",
];
