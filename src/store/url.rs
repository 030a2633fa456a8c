//! Telling a database's URL from a forum file's path, and showing a URL without its
//! password. In the engine, not in the PostgreSQL backend (crate parley-postgres):
//! the engine alone must still recognise a `postgres://` URL, to refuse it in words
//! rather than create a file of that name, and the backend and the hosts use the
//! same rules.

/// Why the engine alone refuses a `postgres://` URL, and how to open one. Stable
/// words: hosts and tests match on them.
pub(crate) const NO_POSTGRES: &str = "this build of Parley has no PostgreSQL support; \
    open a postgres:// forum through the `parley-postgres` crate \
    (`parley_postgres::open`; the C library: \
    `cargo cbuild -p parley-c --features postgres`); the Python package parley-forum \
    and the `parley` command always have it";

/// Whether `text` names a PostgreSQL database rather than a forum file: it starts
/// with `postgres://` or `postgresql://` (in any case).
pub fn is_postgres_url(text: &str) -> bool {
    scheme(text)
        .is_some_and(|s| s.eq_ignore_ascii_case("postgres") || s.eq_ignore_ascii_case("postgresql"))
}

/// The scheme of a URL (`"mysql"` of `mysql://…`), if `text` is one.
pub fn scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let valid = !scheme.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// `url` with its password (in the user part or as a `password` parameter)
/// replaced, so it can be shown.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{name}:***@{host}")
        }
        _ => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let params: Vec<&str> = query
                .split('&')
                .map(|p| {
                    if p.starts_with("password=") {
                        "password=***"
                    } else {
                        p
                    }
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_postgres_url("postgres://u@h/db"));
        assert!(is_postgres_url("postgresql:///db?host=/tmp"));
        assert!(is_postgres_url("POSTGRES://u@h/db"));
        assert_eq!(scheme("mysql://u:pw@h/x"), Some("mysql"));
        assert_eq!(scheme("./dir/forum.redb"), None);
        assert_eq!(scheme("odd name://x"), None);
        assert!(!is_postgres_url("./parley.redb"));
        assert!(!is_postgres_url("postgres.redb"));
    }

    #[test]
    fn passwords_are_masked_wherever_they_stand() {
        assert_eq!(
            without_password("postgres://me:secret@db:5432/x?forum=a"),
            "postgres://me:***@db:5432/x?forum=a"
        );
        assert_eq!(
            without_password("postgresql://db/x?user=me&password=secret"),
            "postgresql://db/x?user=me&password=***"
        );
        assert_eq!(without_password("./forum.parley"), "./forum.parley");
    }
}
