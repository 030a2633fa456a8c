//! Python values to JSON and back.
//!
//! Only the JSON types cross: `dict` (string keys), `list`/`tuple`, `str`, `int`,
//! `float`, `bool` and `None`. Anything else is a `TypeError` naming where it sat,
//! so a caller learns which argument was wrong instead of getting a refusal about
//! a value it never meant to send.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted: a self-containing list must not overflow the stack.
const MAX_DEPTH: usize = 64;

/// Converts a Python value to JSON; `what` names it in error messages (`"args"`).
pub(crate) fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    convert(obj, what, 0)
}

fn convert(obj: &Bound<'_, PyAny>, at: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{at}: nested more than {MAX_DEPTH} levels deep"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(n) = obj.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = obj.extract::<u64>() {
            return Ok(Value::from(n));
        }
        return Err(PyValueError::new_err(format!(
            "{at}: integer out of the 64-bit range"
        )));
    }
    if obj.is_instance_of::<PyFloat>() {
        let f: f64 = obj.extract()?;
        return Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err(format!("{at}: {f} is not a finite number")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (key, value) in dict.iter() {
            let key = dict_key(&key, at)?;
            let inner = convert(&value, &format!("{at}[{key:?}]"), depth + 1)?;
            map.insert(key, inner);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            items.push(convert(&item?, &format!("{at}[{i}]"), depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    if let Ok(mapping) = obj.cast::<PyMapping>() {
        let mut map = Map::new();
        for pair in mapping.items()?.iter() {
            let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
            let key = dict_key(&key, at)?;
            let inner = convert(&value, &format!("{at}[{key:?}]"), depth + 1)?;
            map.insert(key, inner);
        }
        return Ok(Value::Object(map));
    }
    Err(PyTypeError::new_err(format!(
        "{at}: a value of type '{}' cannot be sent as JSON (use dict, list, tuple, str, int, float, bool or None)",
        type_name(obj)
    )))
}

fn dict_key(key: &Bound<'_, PyAny>, at: &str) -> PyResult<String> {
    match key.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{at}: dictionary keys must be str, not '{}'",
            type_name(key)
        ))),
    }
}

/// The type name of a value, for error messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Converts JSON to Python: objects become `dict`, arrays `list`.
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}
