//! Python module of Parley (being written).
