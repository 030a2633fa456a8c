//! The realm key (SPEC §18.3): an Ed25519 pair, its public text form
//! `ed25519:<base64url, no padding, of the 32 bytes>`, signing and strict
//! verification.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::fmt;

/// The prefix of a realm key's text form.
pub const KEY_PREFIX: &str = "ed25519:";

/// A realm's public key (Ed25519). Displays as `ed25519:<base64url>`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RealmKey(VerifyingKey);

/// Why a realm key's text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a realm key is `ed25519:` and the unpadded base64url of 32 bytes of an Ed25519 public key: {0}")]
pub struct KeyError(pub(crate) &'static str);

impl RealmKey {
    /// Parses `ed25519:<base64url no pad of 32 bytes>`. Strict: the text must be
    /// the key's only spelling (no padding, no trailing bits), so that two
    /// spellings never name one key.
    pub fn parse(text: &str) -> Result<RealmKey, KeyError> {
        let b64 = text
            .strip_prefix(KEY_PREFIX)
            .ok_or(KeyError("no `ed25519:` prefix"))?;
        let bytes = URL_SAFE_NO_PAD
            .decode(b64)
            .map_err(|_| KeyError("not unpadded base64url"))?;
        let bytes: [u8; 32] = bytes.try_into().map_err(|_| KeyError("not 32 bytes"))?;
        let key = VerifyingKey::from_bytes(&bytes).map_err(|_| KeyError("not a curve point"))?;
        if key.is_weak() {
            return Err(KeyError("a small-order point"));
        }
        Ok(RealmKey(key))
    }

    /// The 32 bytes of the public key.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// Whether `sig` is this key's Ed25519 signature of `message`, checked with
    /// `verify_strict` (no malleable signatures, no small-order components).
    pub fn verify(&self, message: &[u8], sig: &[u8]) -> bool {
        let Ok(sig) = Signature::from_slice(sig) else {
            return false;
        };
        self.0.verify_strict(message, &sig).is_ok()
    }
}

impl fmt::Display for RealmKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{KEY_PREFIX}{}",
            URL_SAFE_NO_PAD.encode(self.0.as_bytes())
        )
    }
}

impl fmt::Debug for RealmKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RealmKey({self})")
    }
}

/// A realm's private key. It never leaves the forum: its `Debug` shows only the
/// public half, and it has no `Display`, no serde and no accessor to the seed
/// outside this crate.
#[derive(Clone)]
pub struct RealmSecret(SigningKey);

impl RealmSecret {
    /// A new pair from the OS random number generator.
    pub fn generate() -> Result<RealmSecret, getrandom::Error> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)?;
        Ok(RealmSecret::from_seed(&seed))
    }

    /// The pair of a 32-byte seed (RFC 8032's secret key).
    pub fn from_seed(seed: &[u8; 32]) -> RealmSecret {
        RealmSecret(SigningKey::from_bytes(seed))
    }

    /// The 32-byte seed, to store in the forum; crate-private on purpose.
    #[allow(dead_code)] // read by the stores that keep the key
    pub(crate) fn seed(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    /// The public key.
    pub fn public(&self) -> RealmKey {
        RealmKey(self.0.verifying_key())
    }

    /// The Ed25519 signature (64 bytes) of `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.0.sign(message).to_bytes()
    }
}

impl fmt::Debug for RealmSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RealmSecret(public {})", self.public())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rfc8032_test_1_through_the_wrapper() {
        // RFC 8032 §7.1, TEST 1 (empty message).
        let seed: [u8; 32] =
            hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
                .try_into()
                .unwrap();
        let secret = RealmSecret::from_seed(&seed);
        assert_eq!(
            secret.public().to_bytes().to_vec(),
            hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        );
        let sig = secret.sign(b"");
        assert_eq!(
            sig.to_vec(),
            hex(
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155\
                 5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
            )
        );
        assert!(secret.public().verify(b"", &sig));
        assert!(!secret.public().verify(b"x", &sig));
        let mut bad = sig;
        bad[0] ^= 1;
        assert!(!secret.public().verify(b"", &bad));
        assert!(!secret.public().verify(b"", &sig[..63]));
    }

    #[test]
    fn rfc8032_test_2_one_byte() {
        let seed: [u8; 32] =
            hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
                .try_into()
                .unwrap();
        let secret = RealmSecret::from_seed(&seed);
        let sig = secret.sign(&[0x72]);
        assert_eq!(
            sig.to_vec(),
            hex(
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da\
                 085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
            )
        );
    }

    #[test]
    fn key_text_round_trips_and_is_strict() {
        let secret = RealmSecret::generate().unwrap();
        let text = secret.public().to_string();
        assert!(text.starts_with("ed25519:"));
        assert_eq!(text.len(), 8 + 43);
        assert_eq!(RealmKey::parse(&text).unwrap(), secret.public());
        assert!(RealmKey::parse(&text[8..]).is_err());
        assert!(RealmKey::parse(&format!("{text}=")).is_err());
        assert!(RealmKey::parse(&text[..text.len() - 1]).is_err());
        assert!(RealmKey::parse("ed25519:").is_err());
        // The identity point (small order) is refused.
        let mut one = [0u8; 32];
        one[0] = 1;
        assert!(RealmKey::parse(&format!("ed25519:{}", URL_SAFE_NO_PAD.encode(one))).is_err());
    }

    #[test]
    fn debug_never_shows_the_seed() {
        let seed = [7u8; 32];
        let secret = RealmSecret::from_seed(&seed);
        let shown = format!("{secret:?}");
        assert!(shown.contains(&secret.public().to_string()));
        assert!(!shown.contains(&URL_SAFE_NO_PAD.encode(seed)));
        assert!(!shown.contains("7, 7"));
    }
}
