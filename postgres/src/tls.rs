//! TLS to the database: libpq's `sslmode` and `sslrootcert` URL parameters,
//! through rustls.
//!
//! The modes mean what they mean to libpq, so a URL that works with `psql` works
//! here:
//! - `disable`: never TLS.
//! - `prefer` (when absent): TLS when the server offers it, else a plain
//!   connection. The certificate is not checked (the chain is, when
//!   `sslrootcert` is given).
//! - `require`: TLS or no connection. The certificate is not checked (the chain
//!   is, when `sslrootcert` is given).
//! - `verify-ca`: TLS, and the server's certificate must chain to a CA of
//!   `sslrootcert`.
//! - `verify-full`: as `verify-ca`, and the certificate must name the host of the
//!   URL (a DNS name or an IP address in its subject alternative names).
//!
//! The `verify-*` modes need `sslrootcert`: this build reads no system store of
//! CAs, and a mode that checks nothing while its name says it checks would be a
//! trap.

use std::path::Path;
use std::sync::Arc;

use postgres::config::SslMode as Driver;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres_rustls::MakeRustlsConnect;

use parley_forum::{Error, Result};

/// The values `sslmode` takes, as libpq spells them.
const MODES: &str = "disable, prefer, require, verify-ca, verify-full";

/// How a connection uses TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// The mode a URL's `sslmode` names; `None` for a value libpq does not know.
    pub(super) fn parse(text: &str) -> Option<SslMode> {
        Some(match text {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// Whether the driver may fall back to a plain connection.
    pub(super) fn driver(self) -> Driver {
        match self {
            SslMode::Disable => Driver::Disable,
            SslMode::Prefer => Driver::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => Driver::Require,
        }
    }
}

/// The refusal of an `sslmode` value libpq does not know.
pub(super) fn unknown_mode(shown: &str, value: &str) -> Error {
    Error::storage(format!("{shown}: sslmode=`{value}` is not one of {MODES}"))
}

/// The TLS connector of `mode`, trusting the CAs of the PEM file `root` if given.
pub(super) fn connector(
    shown: &str,
    mode: SslMode,
    root: Option<&Path>,
) -> Result<MakeRustlsConnect> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let roots = match root {
        Some(path) => Some(Arc::new(read_roots(shown, path)?)),
        None if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) => {
            let mode = if mode == SslMode::VerifyCa {
                "verify-ca"
            } else {
                "verify-full"
            };
            return Err(Error::storage(format!(
                "{shown}: sslmode={mode} needs sslrootcert=PATH, a PEM file of the CA \
                 certificates that sign the server's certificate"
            )));
        }
        None => None,
    };
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::storage(format!("TLS for {shown}: {e}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = match roots {
        Some(roots) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                .build()
                .map_err(|e| Error::storage(format!("{shown}: sslrootcert: {e}")))?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(AnyName(webpki))
            }
        }
        None => Arc::new(Unchecked(provider)),
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The certificates of a PEM file.
fn read_roots(shown: &str, path: &Path) -> Result<RootCertStore> {
    let shown_path = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<std::result::Result<Vec<_>, _>>())
        .map_err(|e| {
            Error::storage(format!(
                "{shown}: sslrootcert: cannot read certificates from {shown_path}: {e}"
            ))
        })?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(Error::storage(format!(
            "{shown}: sslrootcert: {shown_path} holds no usable CA certificate (PEM)"
        )));
    }
    Ok(roots)
}

/// `verify-ca` (and `require` or `prefer` with `sslrootcert`): the chain must lead
/// to a trusted CA; the name in the certificate is not compared with the host.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        // webpki checks the name only after the chain: a wrong name means the
        // chain was good.
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without `sslrootcert`, as in libpq: the connection is
/// encrypted, and the certificate is not checked. The handshake's signatures
/// still are, so the session's keys belong to the certificate shown.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_takes_libpq_values_only() {
        assert_eq!(SslMode::parse("verify-full"), Some(SslMode::VerifyFull));
        assert_eq!(SslMode::parse("verify-ca"), Some(SslMode::VerifyCa));
        assert_eq!(SslMode::parse("disable"), Some(SslMode::Disable));
        assert_eq!(SslMode::parse("allow"), None);
        assert_eq!(SslMode::parse("REQUIRE"), None);
        assert_eq!(SslMode::VerifyCa.driver(), Driver::Require);
        assert_eq!(SslMode::Prefer.driver(), Driver::Prefer);
    }

    #[test]
    fn verify_modes_need_a_root_certificate_and_a_readable_one() {
        let err = connector("db", SslMode::VerifyFull, None)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("needs sslrootcert"), "{err}");
        let err = connector(
            "db",
            SslMode::VerifyCa,
            Some(Path::new("/nonexistent/ca.pem")),
        )
        .err()
        .expect("refused");
        assert!(
            err.to_string().contains("cannot read certificates"),
            "{err}"
        );
        assert!(connector("db", SslMode::Require, None).is_ok());
    }
}
