//! `parley._parley`: the native layer of the Python package `parley`.
//!
//! Deliberately thin: a `Forum` class over the engine's generic call, token
//! administration, the MCP handler and commit notifications as a file descriptor
//! (for `parley.aio`), with the GIL released while the engine works or waits.
//! The idiomatic API (sessions, tool schemas, asyncio) is Python in `python/parley/`.

mod args;
mod commits;
mod convert;
mod errors;
mod forum;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

/// Native core of Parley (use the `parley` package, not this module).
#[pymodule]
fn _parley(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<forum::PyForum>()?;
    m.add("VERSION", parley_forum::VERSION)?;
    m.add("OPERATIONS", PyTuple::new(py, parley_forum::OPERATIONS)?)?;
    let reasons = PyList::empty(py);
    for reason in parley_forum::Reason::ALL {
        let entry = PyDict::new(py);
        entry.set_item("reason", reason.as_str())?;
        entry.set_item("status", reason.status())?;
        entry.set_item("summary", reason.summary())?;
        reasons.append(entry)?;
    }
    m.add("REASONS", reasons)?;
    m.add_function(wrap_pyfunction!(check_integrity, m)?)?;
    // Test builds only (tests/python/run.sh): the body that makes a post panic
    // inside the engine. An attribute, not an export (`add` would list it in
    // `__all__`, which the stubs describe as a wheel has it).
    #[cfg(feature = "fault-injection")]
    m.setattr("_FAULT_BODY", parley_forum::fault::FAULT_BODY)?;
    Ok(())
}

/// Checks a closed forum file for damage; `True` when it is sound.
#[pyfunction]
fn check_integrity(
    py: Python<'_>,
    #[pyo3(from_py_with = args::required_path)] path: std::path::PathBuf,
) -> PyResult<bool> {
    py.detach(move || parley_forum::storage::check_integrity(&path))
        .map_err(|e| errors::to_pyerr(py, e))
}
