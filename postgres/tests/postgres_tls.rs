//! TLS to PostgreSQL: the URL's `sslmode` and `sslrootcert`, against real servers
//! on 127.0.0.1 (one with `ssl = on` and a certificate signed by a CA this test
//! makes, one without TLS).

#[path = "../../tests/pg/support.rs"]
mod support;
#[path = "../../tests/pg/tcp_server.rs"]
mod tcp_server;

use std::path::Path;

use parley_forum::{Config, Error, Forum, Right, TokenSpec};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use serde_json::json;
use tcp_server::TcpServer;

/// A CA: its certificate (PEM) and what signs with it.
fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// A server certificate for `names` (DNS names or IP addresses), signed by
/// `issuer`: the certificate and its key, in PEM.
fn server_cert(issuer: &Issuer<'_, KeyPair>, names: &[&str]) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "parley test server");
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// Opens the forum of `url` and posts to it: the connection works end to end.
fn opens(url: &str) -> Forum {
    let forum =
        parley_postgres::open(url, Config::default()).unwrap_or_else(|e| panic!("{url}: {e}"));
    let token = forum
        .create_token(&TokenSpec::llm("bob", &[Right::Read, Right::Write]))
        .unwrap();
    forum
        .call(
            Some(&token),
            "post",
            &json!({"parley": "1", "kind": "ask", "body": "over TLS?"}),
        )
        .unwrap();
    forum
}

fn refused(url: &str) -> String {
    let err = parley_postgres::open(url, Config::default()).expect_err(url);
    assert!(matches!(err, Error::Storage(_)), "{url}: {err}");
    err.to_string()
}

/// Whether every connection of application `app` is encrypted, and how many.
fn encrypted(server: &TcpServer, app: &str) -> (bool, i64) {
    let row = server
        .admin()
        .query_one(
            "SELECT coalesce(bool_and(s.ssl), false), count(*) FROM pg_stat_activity a \
             JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = $1",
            &[&app],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

#[test]
fn verify_full_connects_by_the_right_host_name_and_refuses_a_wrong_one() {
    if support::server().is_none() {
        return;
    }
    let (ca_pem, issuer) = ca("parley test CA");
    let (cert, key) = server_cert(&issuer, &["localhost", "127.0.0.1"]);
    let server = TcpServer::start(Some((&cert, &key)));
    let files = tempfile::tempdir().unwrap();
    let root = write(files.path(), "ca.pem", &ca_pem);
    let (other_ca, _) = ca("another CA");
    let other_root = write(files.path(), "other-ca.pem", &other_ca);

    for host in ["localhost", "127.0.0.1"] {
        let app = support::fresh_name("full");
        let forum = opens(&server.url(
            host,
            &format!("sslmode=verify-full&sslrootcert={root}&application_name={app}&forum={app}"),
        ));
        let (all, n) = encrypted(&server, &app);
        assert!(
            all && n >= 2,
            "{host}: {n} connections, all over TLS: {all}"
        );
        drop(forum);
    }

    // The right address under a name the certificate does not hold.
    let wrong = server.url(
        "wrong.invalid",
        &format!("hostaddr=127.0.0.1&sslmode=verify-full&sslrootcert={root}&connect_timeout=3"),
    );
    let text = refused(&wrong);
    assert!(text.contains("cannot reach PostgreSQL"), "{text}");
    assert!(text.to_lowercase().contains("certificate"), "{text}");
    // verify-ca checks the chain only: the same name is accepted.
    let app = support::fresh_name("ca");
    opens(&format!(
        "{}&application_name={app}&forum={app}",
        wrong.replace("verify-full", "verify-ca")
    ));
    // A certificate of a CA not trusted is refused by both.
    for mode in ["verify-full", "verify-ca"] {
        let text = refused(&server.url(
            "localhost",
            &format!("sslmode={mode}&sslrootcert={other_root}&connect_timeout=3"),
        ));
        assert!(
            text.to_lowercase().contains("certificate"),
            "{mode}: {text}"
        );
    }
    // require (and the default, prefer) encrypt without checking the certificate.
    for params in ["sslmode=require", ""] {
        let app = support::fresh_name("req");
        let _forum = opens(&server.url(
            "127.0.0.1",
            &format!("{params}&application_name={app}&forum={app}"),
        ));
        let (all, n) = encrypted(&server, &app);
        assert!(
            all && n >= 2,
            "`{params}`: {n} connections, all over TLS: {all}"
        );
    }
    // disable never encrypts.
    let app = support::fresh_name("off");
    let _forum = opens(&server.url(
        "127.0.0.1",
        &format!("sslmode=disable&application_name={app}&forum={app}"),
    ));
    let (all, n) = encrypted(&server, &app);
    assert!(
        !all && n >= 2,
        "sslmode=disable: {n} connections, over TLS: {all}"
    );
}

#[test]
fn require_and_verify_are_refused_by_a_server_without_tls() {
    if support::server().is_none() {
        return;
    }
    let server = TcpServer::start(None);
    let (ca_pem, _) = ca("parley test CA");
    let files = tempfile::tempdir().unwrap();
    let root = write(files.path(), "ca.pem", &ca_pem);
    let text = refused(&server.url("127.0.0.1", "sslmode=require&connect_timeout=3"));
    assert!(text.contains("does not support TLS"), "{text}");
    let text = refused(&server.url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={root}&connect_timeout=3"),
    ));
    assert!(text.contains("does not support TLS"), "{text}");
    // prefer (the default) and disable connect in the clear.
    for params in ["sslmode=prefer", "", "sslmode=disable"] {
        let app = support::fresh_name("plain");
        let _forum = opens(&server.url(
            "127.0.0.1",
            &format!("{params}&application_name={app}&forum={app}"),
        ));
    }
}

#[test]
fn an_unknown_sslmode_or_a_verify_mode_without_a_root_certificate_is_refused() {
    let text = refused("postgres://me:secret@localhost/x?sslmode=allow");
    assert!(
        text.contains(
            "sslmode=`allow` is not one of disable, prefer, require, verify-ca, verify-full"
        ),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
    let text = refused("postgres://me@localhost/x?sslmode=verify-full");
    assert!(
        text.contains("sslmode=verify-full needs sslrootcert=PATH"),
        "{text}"
    );
    let text =
        refused("postgres://me@localhost/x?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem");
    assert!(
        text.contains("cannot read certificates from /nonexistent/ca.pem"),
        "{text}"
    );
    let empty = tempfile::NamedTempFile::new().unwrap();
    let text = refused(&format!(
        "postgres://me@localhost/x?sslmode=verify-ca&sslrootcert={}",
        empty.path().display()
    ));
    assert!(text.contains("holds no usable CA certificate"), "{text}");
}

#[test]
fn over_a_unix_socket_prefer_connects_in_the_clear_and_require_is_refused() {
    let Some(base) = support::server() else {
        return;
    };
    drop(opens(&support::fresh_url(
        &format!("{base}&sslmode=prefer"),
        "sock",
    )));
    let text = refused(&format!("{base}&sslmode=require"));
    assert!(text.contains("does not support TLS"), "{text}");
}
