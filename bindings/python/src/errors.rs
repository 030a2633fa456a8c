//! Library errors as Python exceptions.
//!
//! The exception classes live in `parley._errors` (plain Python, so they pickle,
//! subclass and document like any other); this module only chooses which one to
//! raise. The mapping of reasons to status codes stays in the engine's `Reason`.

use parley_forum::{Error, OPERATIONS};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::convert::to_py;

/// The Python exception for a library error.
pub(crate) fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    match raise(py, err) {
        Ok(err) | Err(err) => err,
    }
}

fn raise(py: Python<'_>, err: Error) -> PyResult<PyErr> {
    let errors = py.import("parley._errors")?;
    let exc = match err {
        Error::Refused(refusal) => {
            let data = to_py(py, &refusal.to_json())?;
            errors.getattr("_refusal_from_data")?.call1((data,))?
        }
        Error::UnknownOperation(op) => {
            return Ok(PyValueError::new_err(format!(
                "unknown operation `{op}`; the operations are {}",
                OPERATIONS.join(", ")
            )))
        }
        Error::InvalidArgument(message) => return Ok(PyValueError::new_err(message)),
        Error::SchemaTooNew { found, supported } => {
            let message = Error::SchemaTooNew { found, supported }.to_string();
            errors
                .getattr("SchemaTooNewError")?
                .call1((message, found, supported))?
        }
        Error::NotAForum(message) => {
            let message = Error::NotAForum(message).to_string();
            errors.getattr("NotAForumError")?.call1((message,))?
        }
        Error::Storage(message) => {
            let message = Error::Storage(message).to_string();
            errors.getattr("StorageError")?.call1((message,))?
        }
        Error::Internal(message) => {
            let message = Error::Internal(message).to_string();
            errors.getattr("InternalError")?.call1((message,))?
        }
        other => errors.getattr("ParleyError")?.call1((other.to_string(),))?,
    };
    Ok(PyErr::from_value(exc))
}
