//! Argument extraction with messages that name the argument on every Python
//! version (exception notes, which pyo3 uses for that, only exist from 3.11).

use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyMapping, PyString};
use serde_json::Value;

use crate::convert::{to_json, type_name};

fn wrong(name: &str, wanted: &str, obj: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!("{name} must be {wanted}, not '{}'", type_name(obj)))
}

fn text(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(wrong(name, "a str", obj)),
    }
}

fn opt_text(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<String>> {
    if obj.is_none() {
        return Ok(None);
    }
    match obj.cast::<PyString>() {
        Ok(s) => Ok(Some(s.to_cow()?.into_owned())),
        Err(_) => Err(wrong(name, "a str or None", obj)),
    }
}

macro_rules! text_args {
    ($($fun:ident = $name:literal,)*) => {$(
        pub(crate) fn $fun(obj: &Bound<'_, PyAny>) -> PyResult<String> {
            text(obj, $name)
        }
    )*};
}

macro_rules! opt_text_args {
    ($($fun:ident = $name:literal,)*) => {$(
        pub(crate) fn $fun(obj: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
            opt_text(obj, $name)
        }
    )*};
}

text_args! {
    realm = "realm",
    handle = "handle",
    kind = "kind",
    token = "token",
    operation = "operation",
}

opt_text_args! {
    label = "label",
    opt_token = "token",
}

/// `durable` is a real bool: `"no"` or `0` would silently mean something else.
pub(crate) fn durable(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    match obj.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(wrong("durable", "a bool", obj)),
    }
}

/// A file path: `str` or `os.PathLike`, or `None` for an in-memory forum.
pub(crate) fn path(obj: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if obj.is_none() {
        return Ok(None);
    }
    obj.extract::<PathBuf>()
        .map(Some)
        .map_err(|_| wrong("path", "a str, an os.PathLike or None", obj))
}

/// A path that must be given (for `check_integrity`).
pub(crate) fn required_path(obj: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    obj.extract::<PathBuf>()
        .map_err(|_| wrong("path", "a str or an os.PathLike", obj))
}

/// The `args` of the generic call: a mapping, or `None` for no arguments. Any other
/// value would reach the engine as JSON it refuses (`invalid_body` for a list given
/// to `post`), but in Python it is an argument of the wrong type, and the caller
/// learns that as a `TypeError`, as for every other argument.
pub(crate) fn call_args(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if obj.is_instance_of::<PyDict>() || obj.cast::<PyMapping>().is_ok() {
        return to_json(obj, "args");
    }
    Err(wrong("args", "a mapping (dict) or None", obj))
}
