//! `parley._parley.Forum`: a forum file (or an in-memory forum) held open.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use parley_forum::{Config, Durability, Error, Forum, Right, TokenKind, TokenSpec};
use pyo3::exceptions::{PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyBytes, PyDict, PyInt, PyList, PyMapping, PySequence, PyString, PyTuple,
};
use serde_json::Value;

use crate::args;
use crate::commits::CommitPipe;
use crate::convert::{to_json, to_py, type_name};
use crate::errors::to_pyerr;

/// A Parley forum. See `parley._parley.pyi` for the documented interface.
#[pyclass(module = "parley._parley", name = "Forum", subclass, frozen, weakref)]
pub(crate) struct PyForum {
    /// `None` once closed. The lock is only held to clone or take the `Arc`, never
    /// while the engine works, so a `close()` waits for no one and calls already
    /// running finish on their own reference.
    inner: RwLock<Option<Arc<Forum>>>,
    path: Option<PathBuf>,
    /// Set by `end_waits()` and `close()`; never cleared.
    waits_ended: AtomicBool,
    /// The commit pipes handed out by `_commit_fd`. Locked before `inner` is read
    /// there and after `inner` is taken in `close()`, so no pipe outlives the close.
    pipes: Mutex<Vec<CommitPipe>>,
}

impl PyForum {
    fn forum(&self) -> PyResult<Arc<Forum>> {
        let guard = self
            .inner
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        guard
            .clone()
            .ok_or_else(|| PyValueError::new_err("the forum is closed"))
    }

    fn pipes(&self) -> std::sync::MutexGuard<'_, Vec<CommitPipe>> {
        self.pipes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl PyForum {
    #[new]
    // One argument per keyword of `parley.Forum(...)`, as Python callers see them.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(
        signature = (path=None, *, realm="ainotes".to_string(), limits=None, profiles=None, guards=None, coordination=None, provenance=None, trusted_realms=None, durable=true, clock=None),
        text_signature = "(path=None, *, realm='ainotes', limits=None, profiles=['dialectic', 'listen', 'guards', 'coordination', 'provenance'], guards=None, coordination=None, provenance=None, trusted_realms=None, durable=True, clock=None)"
    )]
    fn new(
        py: Python<'_>,
        #[pyo3(from_py_with = args::path)] path: Option<PathBuf>,
        #[pyo3(from_py_with = args::realm)] realm: String,
        limits: Option<Bound<'_, PyAny>>,
        profiles: Option<Bound<'_, PyAny>>,
        guards: Option<bool>,
        coordination: Option<bool>,
        provenance: Option<bool>,
        trusted_realms: Option<Bound<'_, PyAny>>,
        #[pyo3(from_py_with = args::durable)] durable: bool,
        clock: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // Built field by field: the arguments are Python values, checked here.
        let mut config = Config {
            realm,
            durability: if durable {
                Durability::Durable
            } else {
                Durability::Volatile
            },
            ..Config::default()
        };
        if let Some(limits) = limits {
            set_limits(py, &mut config, &limits)?;
        }
        if let Some(profiles) = profiles {
            let names = str_list(&profiles, "profiles")?;
            config.set_profiles(&names).map_err(|e| to_pyerr(py, e))?;
        }
        // `guards=` switches the guards profile (SPEC §15) alone, after `profiles`.
        if let Some(guards) = guards {
            config.guards = guards;
        }
        // `coordination=` likewise switches the coordination profile (SPEC §16).
        if let Some(coordination) = coordination {
            config.coordination = coordination;
        }
        // `provenance=` likewise switches the provenance profile (SPEC §18).
        if let Some(provenance) = provenance {
            config.provenance = provenance;
        }
        // `trusted_realms=`: the realms whose bundles `import_claim` accepts (SPEC
        // §18.3), realm to `ed25519:…` key; checked with the rest by `validate`.
        if let Some(trusted) = trusted_realms {
            config.trusted_realms = str_map(&trusted, "trusted_realms")?;
        }
        if let Some(clock) = clock {
            let at = parley_forum::parse_time(&clock_text(py, &clock)?).ok_or_else(|| {
                to_pyerr(
                    py,
                    Error::InvalidArgument("clock must be an RFC 3339 time".into()),
                )
            })?;
            config.clock = Config::fixed_clock(at);
        }
        config.validate().map_err(|e| to_pyerr(py, e))?;
        let opened = match &path {
            Some(path) => {
                let path = path.clone();
                py.detach(move || parley_postgres::open(path, config))
            }
            None => Forum::in_memory(config),
        };
        let forum = opened.map_err(|e| to_pyerr(py, e))?;
        Ok(PyForum {
            inner: RwLock::new(Some(Arc::new(forum))),
            path,
            waits_ended: AtomicBool::new(false),
            pipes: Mutex::new(Vec::new()),
        })
    }

    /// The file the forum lives in (or its PostgreSQL URL, password masked), or
    /// `None` for an in-memory forum.
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.as_ref().map(|p| shown(p))
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    #[getter]
    fn realm(&self) -> PyResult<String> {
        Ok(self.forum()?.config().realm.clone())
    }

    /// The public half of the forum's realm key, `ed25519:<base64url>` (SPEC §18.3),
    /// as the manifest's `realm_key` shows it.
    #[getter]
    fn realm_key(&self) -> PyResult<String> {
        Ok(self.forum()?.realm_key().to_string())
    }

    #[getter]
    fn limits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let forum = self.forum()?;
        let dict = PyDict::new(py);
        for (name, value) in forum.config().limits.entries() {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    /// Releases the forum (and its file). Idempotent.
    fn close(&self, py: Python<'_>) {
        self.waits_ended.store(true, Ordering::SeqCst);
        let taken = self.inner.write().unwrap_or_else(|p| p.into_inner()).take();
        let pipes = std::mem::take(&mut *self.pipes());
        // Waiting calls return now with their current result; then the commit pipes
        // close (their readers see end-of-file) and, once the calls still running
        // have returned, the file. Dropping the last reference flushes and closes
        // the file: not under the GIL.
        py.detach(move || {
            if let Some(forum) = &taken {
                forum.end_waits();
            }
            drop(pipes);
            drop(taken);
        });
    }

    /// Ends every wait, now and later: each waiting read returns its current result.
    fn end_waits(&self, py: Python<'_>) {
        self.waits_ended.store(true, Ordering::SeqCst);
        if let Ok(forum) = self.forum() {
            py.detach(move || forum.end_waits());
        }
    }

    /// Whether `end_waits()` or `close()` was called.
    #[getter]
    fn waits_ended(&self) -> bool {
        self.waits_ended.load(Ordering::SeqCst)
    }

    /// A new descriptor, owned by the caller, readable after each commit.
    fn _commit_fd(&self) -> PyResult<i32> {
        let mut pipes = self.pipes();
        let forum = self.forum()?;
        pipes.retain(CommitPipe::alive);
        let ended = self.waits_ended.load(Ordering::SeqCst);
        let (pipe, fd) = CommitPipe::open(&forum, ended).map_err(|e| {
            if e.kind() == std::io::ErrorKind::Unsupported {
                PyNotImplementedError::new_err(e.to_string())
            } else {
                PyErr::from(e)
            }
        })?;
        pipes.push(pipe);
        Ok(fd)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc_info))]
    fn __exit__(&self, py: Python<'_>, _exc_info: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        let state = match self.forum() {
            Ok(forum) => format!("realm={:?}", forum.config().realm),
            Err(_) => "closed".to_string(),
        };
        match &self.path {
            Some(path) => format!("<parley.Forum path={:?} {state}>", shown(path)),
            None => format!("<parley.Forum in-memory {state}>"),
        }
    }

    #[pyo3(signature = (handle, *, kind="llm".to_string(), rights=None, label=None),
           text_signature = "(self, handle, *, kind='llm', rights=('read', 'write'), label=None)")]
    fn create_token(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::handle)] handle: String,
        #[pyo3(from_py_with = args::kind)] kind: String,
        rights: Option<Bound<'_, PyAny>>,
        #[pyo3(from_py_with = args::label)] label: Option<String>,
    ) -> PyResult<String> {
        let forum = self.forum()?;
        let rights = match rights {
            Some(rights) => str_list(&rights, "rights")?,
            None => vec!["read".to_string(), "write".to_string()],
        };
        let kind = match kind.as_str() {
            "llm" => TokenKind::Llm,
            "human" => TokenKind::Human,
            other => {
                return Err(PyValueError::new_err(format!(
                    "kind must be 'llm' or 'human', not {other:?}"
                )))
            }
        };
        let mut parsed = Vec::with_capacity(rights.len());
        for name in &rights {
            let right = Right::from_name(name).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown right {name:?}; rights are read, write, lock, verify"
                ))
            })?;
            parsed.push(right);
        }
        let spec = TokenSpec {
            handle,
            kind,
            rights: parsed,
            label,
        };
        py.detach(move || forum.create_token(&spec))
            .map_err(|e| to_pyerr(py, e))
    }

    fn revoke_token(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = args::token)] token: String,
    ) -> PyResult<bool> {
        let forum = self.forum()?;
        py.detach(move || forum.revoke_token(&token))
            .map_err(|e| to_pyerr(py, e))
    }

    fn identities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let forum = self.forum()?;
        let list = py
            .detach(move || forum.identities())
            .map_err(|e| to_pyerr(py, e))?;
        let out = PyList::empty(py);
        for info in list {
            let dict = PyDict::new(py);
            dict.set_item("identity", info.identity)?;
            dict.set_item("kind", info.kind.as_str())?;
            dict.set_item("label", info.label)?;
            dict.set_item("active_tokens", info.active_tokens)?;
            out.append(dict)?;
        }
        Ok(out)
    }

    #[pyo3(signature = (token, operation, args=None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = args::opt_token)] token: Option<String>,
        #[pyo3(from_py_with = args::operation)] operation: String,
        args: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let forum = self.forum()?;
        let args = match args {
            Some(args) => args::call_args(&args)?,
            None => Value::Null,
        };
        let result = py
            .detach(move || forum.call(token.as_deref(), &operation, &args))
            .map_err(|e| to_pyerr(py, e))?;
        to_py(py, &result)
    }

    fn mcp<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = args::opt_token)] token: Option<String>,
        request: Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let forum = self.forum()?;
        let text = if let Ok(s) = request.cast::<PyString>() {
            s.to_cow()?.into_owned()
        } else if request.is_instance_of::<PyDict>() || request.cast::<PyMapping>().is_ok() {
            to_json(&request, "request")?.to_string()
        } else {
            return Err(PyTypeError::new_err(format!(
                "request must be a dict or a JSON str, not '{}'",
                type_name(&request)
            )));
        };
        let Some(response) = py.detach(move || forum.mcp(token.as_deref(), &text)) else {
            return Ok(None);
        };
        let value: Value = serde_json::from_str(&response).map_err(|e| {
            PyValueError::new_err(format!("the MCP handler answered with invalid JSON: {e}"))
        })?;
        to_py(py, &value).map(Some)
    }

    fn manifest<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let forum = self.forum()?;
        let manifest = py.detach(move || forum.manifest());
        to_py(py, &manifest)
    }
}

/// A sequence of str; a lone str (or bytes) is refused rather than read as its letters.
fn str_list(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    let is_text = value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>();
    if is_text || value.cast::<PySequence>().is_err() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a sequence of str (a list or tuple), not '{}'",
            type_name(value)
        )));
    }
    let mut out = Vec::new();
    for (i, item) in value.try_iter()?.enumerate() {
        let item = item?;
        let text = item.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{what}[{i}] must be a str, not '{}'",
                type_name(&item)
            ))
        })?;
        out.push(text.to_cow()?.into_owned());
    }
    Ok(out)
}

/// A dict of str to str (`trusted_realms`), in a stable order.
fn str_map(value: &Bound<'_, PyAny>, what: &str) -> PyResult<BTreeMap<String, String>> {
    let dict = value.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a dict of str to str, not '{}'",
            type_name(value)
        ))
    })?;
    let mut out = BTreeMap::new();
    for (key, item) in dict.iter() {
        let Ok(name) = key.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "{what}: keys must be str, not '{}'",
                type_name(&key)
            )));
        };
        let Ok(text) = item.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "{what}[{}] must be a str, not '{}'",
                key.repr()?,
                type_name(&item)
            )));
        };
        out.insert(name.to_cow()?.into_owned(), text.to_cow()?.into_owned());
    }
    Ok(out)
}

/// `limits` must map limit names to non-negative ints; booleans are not ints here.
fn set_limits(py: Python<'_>, config: &mut Config, limits: &Bound<'_, PyAny>) -> PyResult<()> {
    let dict = limits.cast::<PyDict>().map_err(|_| {
        PyTypeError::new_err(format!(
            "limits must be a dict of str to int, not '{}'",
            type_name(limits)
        ))
    })?;
    let invalid = |message: String| to_pyerr(py, Error::InvalidArgument(message));
    for (key, value) in dict.iter() {
        let Ok(name) = key.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "limits: keys must be str, not '{}'",
                type_name(&key)
            )));
        };
        if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(format!(
                "limits[{}] must be an int, not '{}'",
                key.repr()?,
                type_name(&value)
            )));
        }
        let name = name.to_cow()?;
        let Ok(n) = value.extract::<usize>() else {
            return Err(invalid(format!(
                "limit {name} must be a non-negative integer"
            )));
        };
        if !config.limits.set(&name, n) {
            return Err(invalid(format!("unknown limit `{name}`")));
        }
    }
    Ok(())
}

/// `clock` is an RFC 3339 string or a timezone-aware `datetime`.
fn clock_text(py: Python<'_>, clock: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = clock.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    let datetime = py.import("datetime")?.getattr("datetime")?;
    if clock.is_instance(&datetime)? {
        if clock.getattr("tzinfo")?.is_none() || clock.call_method0("utcoffset")?.is_none() {
            return Err(PyValueError::new_err(
                "clock: a datetime must be timezone-aware",
            ));
        }
        return clock.call_method0("isoformat")?.extract();
    }
    Err(PyTypeError::new_err(format!(
        "clock must be an RFC 3339 str or a timezone-aware datetime, not '{}'",
        type_name(clock)
    )))
}

/// A forum's path as shown: a URL's password is masked (reprs land in logs and
/// test reports).
fn shown(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    if parley_forum::storage::scheme(&text).is_some() {
        parley_forum::storage::without_password(&text)
    } else {
        text.into_owned()
    }
}
