//! C ABI of Parley (being written).
