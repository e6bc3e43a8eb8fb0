//! The account key and the JSON Web Signatures every ACME request carries (RFC 8555 §6.2):
//! ES256 (ECDSA P-256 with SHA-256, RFC 7518 §3.4) in the flattened JSON serialization,
//! the key's JWK (RFC 7517) and its thumbprint (RFC 7638), and key authorizations (§8.1).

use std::io;

use aws_lc_rs::digest::{digest, SHA256};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

/// base64url without padding, the encoding of every binary field in JOSE and ACME.
pub(crate) fn b64url(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The account's ES256 key pair, with its PKCS#8 form (what storage keeps).
pub(crate) struct AccountKey {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
    rng: SystemRandom,
}

/// Who signs a request: the key itself (only `newAccount`, §6.2) or the account it
/// registered, by its URL.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Signer<'a> {
    /// The `jwk` header field: the public key.
    Jwk,
    /// The `kid` header field: the account URL.
    Kid(&'a str),
}

impl AccountKey {
    /// A new random P-256 key.
    pub(crate) fn generate() -> io::Result<AccountKey> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| io::Error::other("cannot generate a P-256 key"))?;
        AccountKey::from_pkcs8(doc.as_ref())
    }

    /// The key of a PKCS#8 document (a P-256 ECDSA key).
    pub(crate) fn from_pkcs8(pkcs8: &[u8]) -> io::Result<AccountKey> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("not a PKCS#8 P-256 key: {e}"),
                )
            })?;
        Ok(AccountKey {
            pair,
            pkcs8: pkcs8.to_vec(),
            rng: SystemRandom::new(),
        })
    }

    /// The PKCS#8 DER of the private key.
    pub(crate) fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The public key's coordinates, base64url: (x, y).
    fn coordinates(&self) -> (String, String) {
        // An uncompressed point: 0x04, then 32 bytes of x and 32 of y.
        let point = self.pair.public_key().as_ref();
        (b64url(&point[1..33]), b64url(&point[33..65]))
    }

    /// The public key as a JWK.
    pub(crate) fn jwk(&self) -> Value {
        let (x, y) = self.coordinates();
        json!({ "crv": "P-256", "kty": "EC", "x": x, "y": y })
    }

    /// The JWK thumbprint (RFC 7638, SHA-256), base64url.
    pub(crate) fn thumbprint(&self) -> String {
        let (x, y) = self.coordinates();
        thumbprint(&[("crv", "P-256"), ("kty", "EC"), ("x", &x), ("y", &y)])
    }

    /// The key authorization of a challenge's `token` (RFC 8555 §8.1).
    pub(crate) fn key_authorization(&self, token: &str) -> String {
        key_authorization(token, &self.thumbprint())
    }

    /// A flattened JWS of `payload` for `url` (`None`: the empty payload of a POST-as-GET,
    /// §6.3), signed as `signer` with `nonce`.
    pub(crate) fn sign(
        &self,
        url: &str,
        nonce: &str,
        signer: Signer<'_>,
        payload: Option<&Value>,
    ) -> io::Result<Value> {
        let mut protected = json!({ "alg": "ES256", "nonce": nonce, "url": url });
        match signer {
            Signer::Jwk => protected["jwk"] = self.jwk(),
            Signer::Kid(kid) => protected["kid"] = Value::from(kid),
        }
        let protected = b64url(protected.to_string());
        let payload = payload.map_or_else(String::new, |p| b64url(p.to_string()));
        let signature = self.sign_bytes(format!("{protected}.{payload}").as_bytes())?;
        Ok(json!({ "protected": protected, "payload": payload, "signature": b64url(signature) }))
    }

    /// The ES256 signature of `input`: r and s, 32 bytes each (RFC 7518 §3.4), not DER.
    fn sign_bytes(&self, input: &[u8]) -> io::Result<Vec<u8>> {
        let sig = self
            .pair
            .sign(&self.rng, input)
            .map_err(|_| io::Error::other("ECDSA signing failed"))?;
        Ok(sig.as_ref().to_vec())
    }
}

/// The RFC 7638 thumbprint of a JWK given by its required members, already sorted by name:
/// SHA-256 over their JSON with no whitespace, base64url.
pub(crate) fn thumbprint(members: &[(&str, &str)]) -> String {
    let fields: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{}", Value::from(*k), Value::from(*v)))
        .collect();
    let canonical = format!("{{{}}}", fields.join(","));
    b64url(digest(&SHA256, canonical.as_bytes()))
}

/// `token.thumbprint` (RFC 8555 §8.1).
pub(crate) fn key_authorization(token: &str, thumbprint: &str) -> String {
    format!("{token}.{thumbprint}")
}

/// SHA-256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, bytes).as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn unb64(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    // RFC 7515 Appendix A.3: the ES256 example key and signature.
    const A3_X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
    const A3_Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";
    const A3_D: &str = "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI";
    const A3_INPUT: &str = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
    const A3_SIG: &str =
        "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";

    fn a3_key() -> AccountKey {
        let public = [&[4u8][..], &unb64(A3_X), &unb64(A3_Y)].concat();
        let pair = EcdsaKeyPair::from_private_key_and_public_key(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &unb64(A3_D),
            &public,
        )
        .unwrap();
        let pkcs8 = pair.to_pkcs8v1().unwrap();
        AccountKey::from_pkcs8(pkcs8.as_ref()).unwrap()
    }

    fn verify(x: &str, y: &str, input: &[u8], sig: &[u8]) -> bool {
        let public = [&[4u8][..], &unb64(x), &unb64(y)].concat();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, public)
            .verify(input, sig)
            .is_ok()
    }

    #[test]
    fn jwk_of_the_rfc_7515_key() {
        let key = a3_key();
        assert_eq!(
            key.jwk(),
            json!({ "crv": "P-256", "kty": "EC", "x": A3_X, "y": A3_Y })
        );
        // The RFC's signature verifies against the coordinates we encode.
        assert!(verify(A3_X, A3_Y, A3_INPUT.as_bytes(), &unb64(A3_SIG)));
    }

    #[test]
    fn thumbprint_of_the_rfc_7638_example() {
        // RFC 7638 §3.1 (an RSA key: the canonical form is the same for every key type).
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
        assert_eq!(
            thumbprint(&[("e", "AQAB"), ("kty", "RSA"), ("n", n)]),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    #[test]
    fn ec_thumbprint_hashes_the_sorted_members() {
        let key = a3_key();
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{A3_X}","y":"{A3_Y}"}}"#);
        assert_eq!(key.thumbprint(), b64url(sha256(canonical.as_bytes())));
    }

    #[test]
    fn key_authorization_is_token_dot_thumbprint() {
        let key = a3_key();
        let ka = key.key_authorization("evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA");
        assert_eq!(
            ka,
            format!(
                "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.{}",
                key.thumbprint()
            )
        );
    }

    #[test]
    fn signed_requests_verify_and_carry_the_header() {
        let key = AccountKey::generate().unwrap();
        let reloaded = AccountKey::from_pkcs8(key.pkcs8()).unwrap();
        assert_eq!(reloaded.jwk(), key.jwk());

        let payload = json!({ "termsOfServiceAgreed": true });
        let jws = key
            .sign("https://ca/new-acct", "n0nce", Signer::Jwk, Some(&payload))
            .unwrap();
        let (protected, body, sig) = (
            jws["protected"].as_str().unwrap(),
            jws["payload"].as_str().unwrap(),
            jws["signature"].as_str().unwrap(),
        );
        let header: Value = serde_json::from_slice(&unb64(protected)).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["nonce"], "n0nce");
        assert_eq!(header["url"], "https://ca/new-acct");
        assert_eq!(header["jwk"], key.jwk());
        assert!(header.get("kid").is_none());
        let decoded: Value = serde_json::from_slice(&unb64(body)).unwrap();
        assert_eq!(decoded, payload);
        let jwk = key.jwk();
        let (x, y) = (jwk["x"].as_str().unwrap(), jwk["y"].as_str().unwrap());
        let input = format!("{protected}.{body}");
        assert!(verify(x, y, input.as_bytes(), &unb64(sig)));

        // POST-as-GET: kid, and an empty payload.
        let jws = key
            .sign(
                "https://ca/order/1",
                "n2",
                Signer::Kid("https://ca/acct/7"),
                None,
            )
            .unwrap();
        assert_eq!(jws["payload"], "");
        let header: Value =
            serde_json::from_slice(&unb64(jws["protected"].as_str().unwrap())).unwrap();
        assert_eq!(header["kid"], "https://ca/acct/7");
        assert!(header.get("jwk").is_none());
    }
}
