//! A database of its own on the test server, for tests that change a database's
//! settings. Apart from `support.rs`, which the command's tests share and which
//! needs no PostgreSQL client.

use super::support::fresh_name;

/// A database of its own on the server, dropped (with its connections) when the
/// guard is: for tests that change a database's settings.
pub struct Database {
    admin: String,
    pub name: String,
    /// `base` naming this database.
    pub url: String,
}

impl Database {
    pub fn create(base: &str, tag: &str) -> Database {
        let name = fresh_name(tag);
        let mut admin = postgres::Client::connect(base, postgres::NoTls).expect("connects");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("a database of its own");
        Database {
            admin: base.to_string(),
            url: on_database(base, &name),
            name,
        }
    }

    /// Runs `sql` on the server's own database (to alter this one).
    pub fn admin(&self, sql: &str) {
        let mut admin = postgres::Client::connect(&self.admin, postgres::NoTls).expect("connects");
        admin.batch_execute(sql).expect(sql);
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = admin.batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name));
        }
    }
}

/// `base` with its database (the URL's path) replaced by `name`.
pub fn on_database(base: &str, name: &str) -> String {
    let (scheme, rest) = base.split_once("://").expect("a URL");
    let end = rest.find('?').unwrap_or(rest.len());
    let (authority_and_path, query) = rest.split_at(end);
    let authority = authority_and_path
        .split_once('/')
        .map_or(authority_and_path, |(a, _)| a);
    format!("{scheme}://{authority}/{name}{query}")
}
