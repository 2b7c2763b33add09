//! The certificate as an Open Badges 3.0 credential (1EdTech): an `OpenBadgeCredential` in the
//! W3C Verifiable Credentials 2.0 data model, signed as a VC-JWT (a compact JWS, `alg` EdDSA) with
//! the issuer's Ed25519 key, the same key that signs the tplab record.
//!
//! - The issuer is the `did:key` of that key (multicodec `ed25519-pub`, 0xed 0x01, then the 32
//!   key bytes, base58btc with the multibase prefix `z`): anyone resolves it to the key offline.
//! - The achievement (the exam, by version) has a name, description and criteria narrative that
//!   read whole in English and in Turkish (each string holds both, the certificate's language
//!   first: OB 3.0 types them as single strings, which is what badge viewers show), the lessons it
//!   covers, the exam version and the two results a sitting has (the score, the practical part).
//! - The learner is an `AchievementSubject` with no `id`, identified by `identifier`s: the salted
//!   SHA-256 of the email (`sha256$<hex of SHA-256(email + salt)>`, the email trimmed and lower
//!   case) when one was given, and the name as printed on the certificate.
//! - The JWT payload is the credential itself (OB 3.0 §8.2.4.1) with the registered claims `iss`
//!   (= `issuer.id`), `jti` (= `id`) and `nbf` (= `validFrom`); there is no `sub`, because
//!   there is no `credentialSubject.id`.
//!
//! A PNG certificate carries it in an `iTXt` chunk with the keyword [`PNG_KEYWORD`] (OB 3.0 §5.3.1
//! "baking"), beside the tplab record; the exam also writes it alone as `<stem>.jwt`.

use crate::cert::{IssuerKey, IssuerPublic};
use base64ct::{Base64, Base64UrlUnpadded, Encoding};
use ed25519_dalek::{Signature, Signer};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// The PNG `iTXt` keyword OB 3.0 bakes a credential under.
pub const PNG_KEYWORD: &str = "openbadgecredential";

/// The `@context` of every credential: VC 2.0, then OB 3.0 (in this order, OB 3.0 §B.1.2).
pub const CONTEXT: [&str; 2] = [
    "https://www.w3.org/ns/credentials/v2",
    "https://purl.imsglobal.org/spec/ob/v3p0/context-3.0.3.json",
];

/// The longest VC-JWT read: 64 KiB (tplab's are about 5 KiB).
pub const MAX_JWT_BYTES: usize = 64 << 10;

/// The longest email accepted (RFC 5321's path limit).
pub const MAX_EMAIL_CHARS: usize = 254;

/// What the `id` of a tplab credential starts with; the certificate ID follows.
const ID_PREFIX: &str = "urn:tplab:certificate:";
/// What the `id` of a tplab achievement starts with; the exam version follows.
const ACHIEVEMENT_PREFIX: &str = "urn:tplab:achievement:";
const SCORE_RESULT: &str = "urn:tplab:result:score";
const PRACTICAL_RESULT: &str = "urn:tplab:result:practical";

/// The DER header of an Ed25519 SubjectPublicKeyInfo (RFC 8410 §4: SEQUENCE { SEQUENCE { OID
/// 1.3.101.112 }, BIT STRING of 33 bytes }), which the 32 key bytes complete.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The multicodec prefix of an Ed25519 public key (`ed25519-pub`, 0xed as a varint).
const ED25519_MULTICODEC: [u8; 2] = [0xed, 0x01];

/// What a learner's credential says beyond the tplab record.
#[derive(Debug, Clone, Default)]
pub struct Subject<'a> {
    /// The learner's email; only its salted hash goes into the credential.
    pub email: Option<&'a str>,
    /// The practical part's result: `Some(true)` solved, `Some(false)` not, `None` not drawn in
    /// this sitting.
    pub practical: Option<bool>,
    /// When it was issued (Unix seconds, UTC): `validFrom` and `nbf`.
    pub issued_at_s: u64,
}

/// What a verified credential states (every string as found; shown through `escape_unsafe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The issuer's `did:key`.
    pub issuer_did: String,
    pub issuer_name: String,
    /// The certificate ID from the credential's `id`.
    pub certificate_id: String,
    /// `validFrom`, as written.
    pub valid_from: String,
    pub exam_version: String,
    pub score_percent: u32,
    pub practical: Option<bool>,
    /// The learner's name from its identifier.
    pub name: String,
    /// The salted email hash (`sha256$…`) and its salt, if the credential has one.
    pub email_hash: Option<(String, String)>,
    pub achievement_name: String,
}

impl Claims {
    /// Whether `email` is the one whose salted hash the credential holds (OB 3.0 §9.3).
    pub fn email_matches(&self, email: &str) -> bool {
        self.email_hash
            .as_ref()
            .is_some_and(|(hash, salt)| *hash == email_hash(email, salt))
    }
}

/// `sha256$` and the hex SHA-256 of the trimmed, lower-case email followed by the salt.
pub fn email_hash(email: &str, salt: &str) -> String {
    let mut h = Sha256::new();
    h.update(email.trim().to_lowercase().as_bytes());
    h.update(salt.as_bytes());
    format!("sha256${}", hex(&h.finalize()))
}

/// Checks an email for a credential: one `@` with text on both sides, a dot in the domain, no
/// spaces, control or direction characters, at most [`MAX_EMAIL_CHARS`].
pub fn check_email(email: &str) -> Result<(), String> {
    let e = email.trim();
    let n = e.chars().count();
    if n > MAX_EMAIL_CHARS {
        return Err(format!(
            "the email has {n} characters; at most {MAX_EMAIL_CHARS}"
        ));
    }
    if let Some(c) = e
        .chars()
        .find(|&c| c.is_whitespace() || tplab_engine::text::is_unsafe_char(c))
    {
        return Err(format!(
            "the email contains U+{:04X} (a space, control or text-direction character); type \
             it without",
            c as u32
        ));
    }
    let mut parts = e.split('@');
    let ok = match (parts.next(), parts.next(), parts.next()) {
        (Some(local), Some(domain), None) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        _ => false,
    };
    if !ok {
        return Err(format!(
            "'{}' is not an email address (name@example.org)",
            e.escape_debug()
        ));
    }
    Ok(())
}

/// Why a credential is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadgeError {
    #[error("the Open Badges credential is not a compact JWT: {0}")]
    Malformed(String),
    #[error("the Open Badges credential breaks the OB 3.0 / VC-JWT rules: {0}")]
    Rule(String),
    #[error("the Open Badges credential's signature does not match: it was edited after signing, or not signed by the did:key it names")]
    Signature,
    #[error("the Open Badges credential is {0} bytes, over the {MAX_JWT_BYTES}-byte limit")]
    TooLarge(usize),
}

impl IssuerPublic {
    /// The key's `did:key` (multicodec ed25519-pub, base58btc).
    pub fn did_key(&self) -> String {
        let mut bytes = ED25519_MULTICODEC.to_vec();
        bytes.extend_from_slice(self.as_bytes());
        format!("did:key:z{}", base58_encode(&bytes))
    }

    /// The key of a `did:key` naming an Ed25519 key (a DID URL's `#fragment` is ignored).
    pub fn from_did_key(did: &str) -> Result<Self, String> {
        let base = did.split('#').next().unwrap_or_default();
        let Some(mb) = base.strip_prefix("did:key:z") else {
            return Err(format!(
                "'{}' is not a did:key in base58btc (did:key:z…)",
                base.escape_debug()
            ));
        };
        let bytes =
            base58_decode(mb).ok_or_else(|| "the did:key is not valid base58btc".to_string())?;
        let key = bytes
            .strip_prefix(&ED25519_MULTICODEC[..])
            .and_then(|k| <[u8; 32]>::try_from(k).ok())
            .ok_or_else(|| "the did:key does not name an Ed25519 public key".to_string())?;
        Self::from_bytes(&key)
            .ok_or_else(|| "the did:key's bytes are not a valid Ed25519 public key".to_string())
    }

    /// Reads what [`Self::to_pem`] or [`Self::to_jwk`] wrote (the `.pub.pem` and `.pub.jwk`
    /// files `tplab cert keygen` writes): `None` when the text is neither form, an error naming
    /// the rule when it is one of them but not an Ed25519 public key.
    pub fn from_pem_or_jwk(text: &str) -> Option<Result<Self, String>> {
        let t = text.trim();
        if t.starts_with("-----BEGIN PRIVATE KEY-----") {
            return Some(Err(
                "it is a private key (PEM); give the public one, the .pub.pem \
                             file `tplab cert keygen` wrote"
                    .into(),
            ));
        }
        if let Some(body) = t
            .strip_prefix("-----BEGIN PUBLIC KEY-----")
            .and_then(|b| b.strip_suffix("-----END PUBLIC KEY-----"))
        {
            let b64: String = body.split_whitespace().collect();
            let der =
                Base64::decode_vec(&b64).map_err(|_| "the PEM's body is not base64".to_string());
            return Some(der.and_then(|der| {
                let key = der
                    .strip_prefix(&ED25519_SPKI_PREFIX[..])
                    .and_then(|k| <[u8; 32]>::try_from(k).ok())
                    .ok_or("the PEM is not an Ed25519 public key (tplab's keys are Ed25519)")?;
                IssuerPublic::from_bytes(&key)
                    .ok_or_else(|| "the PEM's 32 bytes are not a valid Ed25519 public key".into())
            }));
        }
        if t.starts_with('{') {
            let v: Value = match serde_json::from_str(t) {
                Ok(v) => v,
                Err(_) => return Some(Err("not a JWK: the JSON does not parse".into())),
            };
            if v.get("d").is_some() {
                return Some(Err(
                    "the JWK holds a private key ('d'); give the public one, \
                                 the .pub.jwk file `tplab cert keygen` wrote"
                        .into(),
                ));
            }
            if v["kty"] != "OKP" || v["crv"] != "Ed25519" {
                return Some(Err(
                    "the JWK is not an Ed25519 key (it needs \"kty\": \"OKP\", \"crv\": \"Ed25519\")"
                        .into(),
                ));
            }
            let key = v["x"]
                .as_str()
                .and_then(|x| Base64UrlUnpadded::decode_vec(x).ok())
                .and_then(|k| <[u8; 32]>::try_from(k).ok());
            return Some(match key.and_then(|k| IssuerPublic::from_bytes(&k)) {
                Some(k) => Ok(k),
                None => {
                    Err("the JWK's \"x\" is not a 32-byte Ed25519 public key in base64url".into())
                }
            });
        }
        None
    }

    /// The key as a PEM `PUBLIC KEY` (SubjectPublicKeyInfo, RFC 8410), what `openssl` and
    /// `openbadges-verifier -k` read.
    pub fn to_pem(&self) -> String {
        let mut der = ED25519_SPKI_PREFIX.to_vec();
        der.extend_from_slice(self.as_bytes());
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            Base64::encode_string(&der)
        )
    }

    /// The key as a JWK (RFC 8037: `kty` OKP, `crv` Ed25519, `x` the key in base64url), with its
    /// `did:key` verification method as `kid`.
    pub fn to_jwk(&self) -> Value {
        json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": Base64UrlUnpadded::encode_string(self.as_bytes()),
            "kid": self.verification_method(),
        })
    }

    /// `did:key:z…#z…`: the key's verification method in its DID document.
    pub fn verification_method(&self) -> String {
        let did = self.did_key();
        let frag = did.trim_start_matches("did:key:").to_string();
        format!("{did}#{frag}")
    }
}

/// The lessons the exam covers: (slug, English title, Turkish title), in course order.
fn lessons() -> Vec<(String, String, String)> {
    tplab_lessons::Catalog::embedded()
        .map(|c| {
            c.lessons
                .into_iter()
                .map(|l| (l.slug, l.title.en, l.title.tr))
                .collect()
        })
        .unwrap_or_default()
}

/// `first` then `second`, as one string a viewer shows whole.
fn both(lang: crate::Lang, en: &str, tr: &str, sep: &str) -> String {
    match lang {
        crate::Lang::Tr => format!("{tr}{sep}{en}"),
        crate::Lang::En => format!("{en}{sep}{tr}"),
    }
}

/// The credential (unsigned) of a signed tplab certificate.
pub fn credential(
    cert: &crate::cert::Certificate,
    issuer: &IssuerPublic,
    subject: &Subject<'_>,
    salt: &str,
) -> Value {
    let lang = cert.lang;
    let version = &cert.exam_version;
    let pass = crate::exam::known_pass_mark(version).unwrap_or(80);
    let lessons = lessons();
    let list = |pick: fn(&(String, String, String)) -> &String| {
        // "1. …; 2. …", but a title that ends in a question mark is not followed by a
        // semicolon ("…neden gerekir? 2. …").
        let mut out = String::new();
        for (i, l) in lessons.iter().enumerate() {
            if i > 0 {
                out.push_str(if out.ends_with('?') { " " } else { "; " });
            }
            out.push_str(&format!("{}. {}", i + 1, pick(l)));
        }
        out
    };
    let n = lessons.len();
    let name = both(
        lang,
        "Tensor Parallelism for Large Models: tplab certificate exam",
        "Büyük Modeller için Tensör Paralelliği: tplab sertifika sınavı",
        " / ",
    );
    let description = both(
        lang,
        &format!(
            "Awarded for passing the tplab certificate exam ({version}) on tensor parallelism: \
             how a transformer layer is split across GPUs, the collectives this needs, their \
             cost, and how to plan a split for a given model and cluster."
        ),
        &format!(
            "tplab sertifika sınavını ({version}) geçenlere verilir. Sınav tensör paralelliğini \
             ölçer: bir dönüştürücü (transformer) katmanının GPU'lara nasıl bölündüğünü, bunun \
             gerektirdiği toplu iletişim işlemlerini ve maliyetlerini, verilen bir model ve \
             küme için bölmenin nasıl planlandığını."
        ),
        "\n\n",
    );
    let narrative = both(
        lang,
        &format!(
            "Pass a sitting of the tplab certificate exam ({version}) with at least {pass}%: 20 \
             questions drawn afresh at every sitting, 8 of them generated by the simulator with \
             new numbers, among them, in every sitting, a practical part in which the learner \
             picks the plan that solves a design lab challenge. The exam covers the {n} lessons \
             of the course: {}.",
            list(|l| &l.1)
        ),
        &format!(
            "tplab sertifika sınavından ({version}) en az %{pass} puan almak: her oturumda \
             yeniden seçilen 20 soru; bunların 8'ini benzetici her seferinde yeni sayılarla \
             üretir. Her oturumdaki pratik bölümde öğrenci, tasarım laboratuvarındaki bir görevi \
             çözen planı seçer. Sınav, kursun {n} dersini kapsar: {}.",
            list(|l| &l.2)
        ),
        "\n\n",
    );
    let mut identifiers = Vec::new();
    if let Some(email) = subject.email {
        identifiers.push(json!({
            "type": "IdentityObject",
            "identityType": "emailAddress",
            "hashed": true,
            "identityHash": email_hash(email, salt),
            "salt": salt,
        }));
    }
    identifiers.push(json!({
        "type": "IdentityObject",
        "identityType": "name",
        "hashed": false,
        "identityHash": cert.name,
    }));
    let mut results = vec![json!({
        "type": ["Result"],
        "resultDescription": SCORE_RESULT,
        "value": cert.score_percent.to_string(),
    })];
    if let Some(solved) = subject.practical {
        results.push(json!({
            "type": ["Result"],
            "resultDescription": PRACTICAL_RESULT,
            "status": if solved { "Completed" } else { "Failed" },
        }));
    }
    let did = issuer.did_key();
    let valid_from = crate::time::date_time(subject.issued_at_s);
    json!({
        "@context": CONTEXT,
        "id": format!("{ID_PREFIX}{}", cert.id),
        "type": ["VerifiableCredential", "OpenBadgeCredential"],
        "name": name,
        "issuer": {
            "id": did,
            "type": ["Profile"],
            "name": format!("tplab issuer {}", issuer.fingerprint()),
        },
        "validFrom": valid_from,
        "credentialSubject": {
            "type": ["AchievementSubject"],
            "identifier": identifiers,
            "achievement": {
                "id": format!("{ACHIEVEMENT_PREFIX}{version}"),
                "type": ["Achievement"],
                "achievementType": "Certificate",
                "name": name,
                "description": description,
                "criteria": { "narrative": narrative },
                "version": version,
                "tag": lessons.iter().map(|l| l.0.clone()).collect::<Vec<_>>(),
                "resultDescription": [
                    {
                        "id": SCORE_RESULT,
                        "type": ["ResultDescription"],
                        "name": both(lang, "Exam score (percent)", "Sınav puanı (yüzde)", " / "),
                        "resultType": "Percent",
                        "requiredValue": pass.to_string(),
                        "valueMin": "0",
                        "valueMax": "100",
                    },
                    {
                        "id": PRACTICAL_RESULT,
                        "type": ["ResultDescription"],
                        "name": both(
                            lang,
                            "Practical part: the design lab challenge",
                            "Pratik bölüm: tasarım laboratuvarı görevi",
                            " / ",
                        ),
                        "resultType": "Status",
                    },
                ],
            },
            "result": results,
        },
    })
}

/// A fresh salt for an email hash: 16 random bytes, hex.
pub fn fresh_salt() -> Result<String, String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| format!("no randomness: {e}"))?;
    Ok(hex(&b))
}

/// The credential signed as a VC-JWT: header `{"alg":"EdDSA","kid":<did:key#…>,"typ":"JWT"}`,
/// payload the credential with `iss`, `jti` and `nbf`.
pub fn sign(credential: &Value, key: &IssuerKey) -> Result<String, String> {
    let public = key.public();
    let mut payload = credential
        .as_object()
        .cloned()
        .ok_or("the credential is not a JSON object")?;
    let get = |k: &str| payload.get(k).cloned().unwrap_or(Value::Null);
    let issuer_id = get("issuer").get("id").cloned().unwrap_or(Value::Null);
    let id = get("id");
    let nbf = get("validFrom")
        .as_str()
        .ok_or("no validFrom")
        .and_then(|s| crate::time::parse_date_time(s).map_err(|_| "a bad validFrom"))?;
    payload.insert("iss".into(), issuer_id);
    payload.insert("jti".into(), id);
    payload.insert("nbf".into(), json!(nbf));
    let header = json!({
        "alg": "EdDSA",
        "kid": public.verification_method(),
        "typ": "JWT",
    });
    let input = format!(
        "{}.{}",
        Base64UrlUnpadded::encode_string(header.to_string().as_bytes()),
        Base64UrlUnpadded::encode_string(Value::Object(payload).to_string().as_bytes())
    );
    let sig: Signature = key.signing_key().sign(input.as_bytes());
    Ok(format!(
        "{input}.{}",
        Base64UrlUnpadded::encode_string(&sig.to_bytes())
    ))
}

/// Issues the credential of a signed certificate: built, then signed. `None` for an unsigned
/// certificate (a credential needs a signature) or one signed by another key.
pub fn issue(
    cert: &crate::cert::Certificate,
    key: &IssuerKey,
    subject: &Subject<'_>,
) -> Result<Option<String>, String> {
    if cert.issuer().as_ref() != Some(&key.public()) {
        return Ok(None);
    }
    if let Some(e) = subject.email {
        check_email(e)?;
    }
    let salt = fresh_salt()?;
    let c = credential(cert, &key.public(), subject, &salt);
    sign(&c, key).map(Some)
}

/// Verifies a VC-JWT as OB 3.0 §8.2.6 and §9.1 say (the signature with the key of the issuer's
/// `did:key`, `iss`/`jti`/`nbf` against the credential, the validity window, the types and the
/// context), then reads it as a tplab credential. Never panics, whatever the text.
pub fn verify(token: &str, now_s: u64) -> Result<(Claims, IssuerPublic), BadgeError> {
    let mal = |m: &str| BadgeError::Malformed(m.to_string());
    let rule = |m: String| BadgeError::Rule(m);
    let token = token.trim();
    if token.len() > MAX_JWT_BYTES {
        return Err(BadgeError::TooLarge(token.len()));
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [h, p, s] = parts[..] else {
        return Err(mal("it is not three base64url parts joined by dots"));
    };
    let decode = |part: &str, what: &str| {
        Base64UrlUnpadded::decode_vec(part)
            .map_err(|_| BadgeError::Malformed(format!("its {what} is not base64url")))
    };
    let header: Value = serde_json::from_slice(&decode(h, "header")?)
        .map_err(|e| BadgeError::Malformed(format!("its header is not JSON: {e}")))?;
    let payload: Value = serde_json::from_slice(&decode(p, "payload")?)
        .map_err(|e| BadgeError::Malformed(format!("its payload is not JSON: {e}")))?;
    let sig = decode(s, "signature")?;
    let header = header
        .as_object()
        .ok_or_else(|| mal("its header is not a JSON object"))?;
    if header.get("alg").and_then(Value::as_str) != Some("EdDSA") {
        return Err(rule(format!(
            "the header's alg is {}, not EdDSA (an Ed25519 signature)",
            header.get("alg").unwrap_or(&Value::Null)
        )));
    }
    if let Some(extra) = header
        .keys()
        .find(|k| !["alg", "kid", "typ"].contains(&k.as_str()))
    {
        return Err(rule(format!(
            "the header has '{}' (OB 3.0 allows alg, kid, jwk and typ; tplab writes alg, kid, \
             typ)",
            extra.escape_debug()
        )));
    }
    let vc = payload
        .as_object()
        .ok_or_else(|| mal("its payload is not a JSON object"))?;
    let str_at = |v: &Map<String, Value>, k: &str| -> Result<String, BadgeError> {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| BadgeError::Rule(format!("'{k}' is missing or not a string")))
    };
    let issuer = vc
        .get("issuer")
        .and_then(Value::as_object)
        .ok_or_else(|| rule("the issuer is missing".into()))?;
    let issuer_did = str_at(issuer, "id")?;
    let public =
        IssuerPublic::from_did_key(&issuer_did).map_err(|e| rule(format!("the issuer: {e}")))?;
    // The signature, before anything the payload says is believed.
    let sig = <[u8; 64]>::try_from(sig.as_slice())
        .map(|b| Signature::from_bytes(&b))
        .map_err(|_| BadgeError::Signature)?;
    let signed = &token[..h.len() + 1 + p.len()];
    if public
        .verifying_key()
        .verify_strict(signed.as_bytes(), &sig)
        .is_err()
    {
        return Err(BadgeError::Signature);
    }
    if let Some(kid) = header.get("kid") {
        let kid = kid.as_str().unwrap_or_default();
        if kid.split('#').next() != Some(issuer_did.as_str()) {
            return Err(rule(format!(
                "the header's kid '{}' is not a key of the issuer {issuer_did}",
                kid.escape_debug()
            )));
        }
    }
    let context: Vec<&str> = vc
        .get("@context")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if context.len() < 2 || context[..2] != CONTEXT {
        return Err(rule(format!(
            "@context must start with {} and {}",
            CONTEXT[0], CONTEXT[1]
        )));
    }
    let types: Vec<&str> = vc
        .get("type")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !types.contains(&"VerifiableCredential")
        || !(types.contains(&"OpenBadgeCredential") || types.contains(&"AchievementCredential"))
    {
        return Err(rule(
            "type must hold VerifiableCredential and OpenBadgeCredential".into(),
        ));
    }
    let id = str_at(vc, "id")?;
    if str_at(vc, "iss")? != issuer_did {
        return Err(rule("the iss claim is not issuer.id".into()));
    }
    if str_at(vc, "jti")? != id {
        return Err(rule("the jti claim is not the credential's id".into()));
    }
    let valid_from = str_at(vc, "validFrom")?;
    let from_s = crate::time::parse_date_time(&valid_from).map_err(rule)?;
    if vc.get("nbf").and_then(Value::as_u64) != Some(from_s) {
        return Err(rule("the nbf claim is not validFrom".into()));
    }
    // Five minutes of clock skew between issuer and verifier.
    if from_s > now_s + 300 {
        return Err(rule(format!(
            "it is not valid yet (validFrom {valid_from})"
        )));
    }
    if let Some(exp) = vc.get("exp") {
        if exp.as_u64().is_none_or(|e| e < now_s) {
            return Err(rule("it has expired (exp)".into()));
        }
    }
    if vc.contains_key("sub") {
        return Err(rule(
            "a sub claim, but tplab's credential subject has no id for it to match".into(),
        ));
    }
    // Now the tplab reading.
    let certificate_id = id
        .strip_prefix(ID_PREFIX)
        .ok_or_else(|| rule(format!("its id does not start with {ID_PREFIX}")))?
        .to_string();
    let subject = vc
        .get("credentialSubject")
        .and_then(Value::as_object)
        .ok_or_else(|| rule("credentialSubject is missing".into()))?;
    let achievement = subject
        .get("achievement")
        .and_then(Value::as_object)
        .ok_or_else(|| rule("the achievement is missing".into()))?;
    let exam_version = str_at(achievement, "version")?;
    let mut name = None;
    let mut email_hash = None;
    for i in subject
        .get("identifier")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
    {
        let kind = str_at(i, "identityType")?;
        let hashed = i.get("hashed").and_then(Value::as_bool);
        match (kind.as_str(), hashed) {
            ("name", Some(false)) => name = Some(str_at(i, "identityHash")?),
            ("emailAddress", Some(true)) => {
                email_hash = Some((str_at(i, "identityHash")?, str_at(i, "salt")?))
            }
            _ => {}
        }
    }
    let name = name.ok_or_else(|| rule("no identifier names the learner".into()))?;
    let mut score = None;
    let mut practical = None;
    for r in subject
        .get("result")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
    {
        match r.get("resultDescription").and_then(Value::as_str) {
            Some(SCORE_RESULT) => score = str_at(r, "value")?.parse::<u32>().ok(),
            Some(PRACTICAL_RESULT) => {
                practical = match str_at(r, "status")?.as_str() {
                    "Completed" => Some(true),
                    "Failed" => Some(false),
                    other => {
                        return Err(rule(format!(
                            "the practical result's status '{}' is not Completed or Failed",
                            other.escape_debug()
                        )))
                    }
                }
            }
            _ => {}
        }
    }
    let score_percent = score.ok_or_else(|| rule("no score result".into()))?;
    Ok((
        Claims {
            issuer_name: str_at(issuer, "name").unwrap_or_default(),
            issuer_did,
            certificate_id,
            valid_from,
            exam_version,
            score_percent,
            practical,
            name,
            email_hash,
            achievement_name: str_at(achievement, "name")?,
        },
        public,
    ))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const B58: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// Base58 (the Bitcoin alphabet, multibase `z`): the bytes as a big number in base 58, one `1`
/// per leading zero byte.
fn base58_encode(bytes: &[u8]) -> String {
    let zeros = bytes.iter().take_while(|&&b| b == 0).count();
    // Little-endian base-58 digits of the number.
    let mut digits: Vec<u8> = Vec::new();
    for &b in &bytes[zeros..] {
        let mut carry = u32::from(b);
        for d in digits.iter_mut() {
            carry += u32::from(*d) << 8;
            *d = (carry % 58) as u8;
            carry /= 58;
        }
        while carry > 0 {
            digits.push((carry % 58) as u8);
            carry /= 58;
        }
    }
    std::iter::repeat_n('1', zeros)
        .chain(
            digits
                .iter()
                .rev()
                .map(|&d| char::from(B58[usize::from(d)])),
        )
        .collect()
}

/// The inverse of [`base58_encode`]; `None` for a character outside the alphabet or a text over
/// 128 characters (a did:key is 48).
fn base58_decode(text: &str) -> Option<Vec<u8>> {
    if text.len() > 128 {
        return None;
    }
    let zeros = text.bytes().take_while(|&c| c == b'1').count();
    // Little-endian bytes of the number.
    let mut bytes: Vec<u8> = Vec::new();
    for c in text.bytes().skip(zeros) {
        let mut carry = B58.iter().position(|&a| a == c)? as u32;
        for b in bytes.iter_mut() {
            carry += u32::from(*b) * 58;
            *b = (carry & 0xff) as u8;
            carry >>= 8;
        }
        while carry > 0 {
            bytes.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    let mut out = vec![0u8; zeros];
    out.extend(bytes.iter().rev());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cert::Certificate;
    use crate::Lang;

    #[test]
    fn base58_round_trips_and_matches_known_values() {
        assert_eq!(base58_encode(b""), "");
        assert_eq!(base58_encode(&[0]), "1");
        assert_eq!(base58_encode(&[0, 0, 1]), "112");
        assert_eq!(base58_encode(b"hello world"), "StV1DL6CwTryKyV");
        assert_eq!(base58_decode("StV1DL6CwTryKyV").unwrap(), b"hello world");
        assert_eq!(base58_decode("112").unwrap(), vec![0, 0, 1]);
        assert!(base58_decode("0OIl").is_none());
        for n in 0..40u8 {
            let v: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37) ^ n).collect();
            assert_eq!(base58_decode(&base58_encode(&v)).unwrap(), v);
        }
    }

    #[test]
    fn the_pem_and_jwk_files_read_back_as_the_key_and_secrets_or_others_are_refused() {
        let k = IssuerKey::from_seed([5; 32]).public();
        let pem = k.to_pem();
        let jwk = serde_json::to_string_pretty(&k.to_jwk()).unwrap();
        assert_eq!(IssuerPublic::parse(&pem), Ok(k.clone()));
        assert_eq!(IssuerPublic::parse(&jwk), Ok(k.clone()));
        assert_eq!(IssuerPublic::parse(&format!("\n{pem}\n")), Ok(k.clone()));
        let refused = |text: &str, says: &str| {
            let e = IssuerPublic::parse(text).expect_err(text);
            assert!(e.contains(says), "{text}: {e}");
        };
        refused(
            "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----",
            "private key",
        );
        refused(
            &jwk.replacen("\"kty\"", "\"d\": \"AAAA\", \"kty\"", 1),
            "private key ('d')",
        );
        refused(&jwk.replace("Ed25519", "X25519"), "not an Ed25519 key");
        refused(&jwk.replace("\"x\": \"", "\"x\": \"AA"), "32-byte");
        refused(
            "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VuAyEA\n-----END PUBLIC KEY-----",
            "not an Ed25519 public key",
        );
        refused(
            "-----BEGIN PUBLIC KEY-----\n%%%\n-----END PUBLIC KEY-----",
            "base64",
        );
        refused("{ not json", "does not parse");
    }

    #[test]
    fn did_key_pem_and_jwk_match_the_published_test_vector_forms() {
        // RFC 8032 test 1's public key; its did:key is the W3C did:key spec's first example's
        // form (z6Mk… for every Ed25519 key).
        let pk =
            IssuerPublic::parse("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
                .unwrap();
        let did = pk.did_key();
        assert!(did.starts_with("did:key:z6Mk"), "{did}");
        assert_eq!(IssuerPublic::from_did_key(&did).unwrap(), pk);
        assert_eq!(
            IssuerPublic::from_did_key(&pk.verification_method()).unwrap(),
            pk
        );
        assert!(IssuerPublic::from_did_key("did:key:zQ3s").is_err());
        assert!(IssuerPublic::from_did_key("did:web:example.org").is_err());
        // The JWK's x is RFC 8037 Appendix A.2's.
        assert_eq!(
            pk.to_jwk()["x"],
            "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
        );
        assert_eq!(pk.to_jwk()["crv"], "Ed25519");
        let pem = pk.to_pem();
        assert!(
            pem.starts_with("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA"),
            "{pem}"
        );
        assert!(pem.ends_with("-----END PUBLIC KEY-----\n"));
    }

    fn cert() -> (Certificate, IssuerKey) {
        let key = IssuerKey::from_seed([7; 32]);
        let c = Certificate::issue(
            "Şule Öztürk",
            "2026-11-30",
            85,
            "exam-v2",
            42,
            Lang::Tr,
            Some(&key),
        )
        .unwrap();
        (c, key)
    }

    const AT: u64 = 1_796_000_000; // 2026-11-30T...

    fn subject(email: Option<&str>) -> Subject<'_> {
        Subject {
            email,
            practical: Some(true),
            issued_at_s: AT,
        }
    }

    #[test]
    fn an_issued_credential_verifies_and_says_what_the_record_says() {
        let (c, key) = cert();
        let jwt = issue(&c, &key, &subject(Some("Sule@Example.org")))
            .unwrap()
            .unwrap();
        let (claims, public) = verify(&jwt, AT + 10).unwrap();
        assert_eq!(public, key.public());
        assert_eq!(claims.issuer_did, key.public().did_key());
        assert_eq!(claims.certificate_id, c.id);
        assert_eq!(claims.score_percent, 85);
        assert_eq!(claims.exam_version, "exam-v2");
        assert_eq!(claims.practical, Some(true));
        assert_eq!(claims.name, "Şule Öztürk");
        assert!(claims.email_matches("sule@example.org"));
        assert!(claims.email_matches(" SULE@example.org "));
        assert!(!claims.email_matches("ali@example.org"));
        // Turkish first for a Turkish certificate, English after it.
        assert!(claims.achievement_name.starts_with("Büyük Modeller"));
        assert!(claims.achievement_name.contains("Tensor Parallelism"));
        // No email: no hash; the name still identifies the learner.
        let jwt = issue(&c, &key, &subject(None)).unwrap().unwrap();
        let (claims, _) = verify(&jwt, AT).unwrap();
        assert_eq!(claims.email_hash, None);
        // The email itself is nowhere in the token.
        let jwt = issue(&c, &key, &subject(Some("sule@example.org")))
            .unwrap()
            .unwrap();
        let payload = Base64UrlUnpadded::decode_vec(jwt.split('.').nth(1).unwrap()).unwrap();
        assert!(!String::from_utf8(payload).unwrap().contains("example.org"));
        // Not issued for a certificate another key signed, nor an unsigned one.
        assert_eq!(
            issue(&c, &IssuerKey::from_seed([8; 32]), &subject(None)).unwrap(),
            None
        );
    }

    #[test]
    fn the_credential_has_the_ob3_shape() {
        let (c, key) = cert();
        let v = credential(&c, &key.public(), &subject(Some("a@b.org")), "00ff");
        assert_eq!(v["@context"], json!(CONTEXT));
        assert_eq!(v["validFrom"], crate::time::date_time(AT));
        let s = &v["credentialSubject"];
        assert_eq!(s["type"], json!(["AchievementSubject"]));
        assert!(s.get("id").is_none());
        assert_eq!(
            s["identifier"][0]["identityHash"],
            email_hash("a@b.org", "00ff")
        );
        let a = &s["achievement"];
        for k in ["name", "description"] {
            assert!(a[k].as_str().unwrap().contains("tplab"), "{k}");
        }
        let narrative = a["criteria"]["narrative"].as_str().unwrap();
        assert!(narrative.contains("%80") && narrative.contains("at least 80%"));
        assert!(narrative.contains("1. What tensor parallelism is"));
        assert!(narrative.contains("1. Tensör paralelliği nedir"));
        assert_eq!(a["tag"][0], "what-is-tp");
        assert_eq!(s["result"][1]["status"], "Completed");
    }

    #[test]
    fn every_edit_and_every_wrong_key_is_refused() {
        let (c, key) = cert();
        let jwt = issue(&c, &key, &subject(None)).unwrap().unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        let payload = String::from_utf8(Base64UrlUnpadded::decode_vec(parts[1]).unwrap()).unwrap();
        let forged = payload.replace("\"value\":\"85\"", "\"value\":\"99\"");
        assert_ne!(forged, payload);
        let edited = format!(
            "{}.{}.{}",
            parts[0],
            Base64UrlUnpadded::encode_string(forged.as_bytes()),
            parts[2]
        );
        assert_eq!(verify(&edited, AT), Err(BadgeError::Signature));
        // Re-signed by another key but still naming the first key's did:key.
        let other = IssuerKey::from_seed([9; 32]);
        let v: Value = serde_json::from_str(&payload).unwrap();
        let resigned = sign(&v, &other).unwrap();
        assert_eq!(verify(&resigned, AT), Err(BadgeError::Signature));
        // alg none, a cut token, garbage, not yet valid, oversized.
        let none = format!(
            "{}.{}.",
            Base64UrlUnpadded::encode_string(br#"{"alg":"none"}"#),
            parts[1]
        );
        assert!(verify(&none, AT).is_err());
        assert!(verify(&parts[..2].join("."), AT).is_err());
        assert!(verify("not a token", AT).is_err());
        assert!(matches!(verify(&jwt, AT - 3600), Err(BadgeError::Rule(_))));
        assert!(matches!(
            verify(&"a".repeat(MAX_JWT_BYTES + 1), AT),
            Err(BadgeError::TooLarge(_))
        ));
    }

    #[test]
    fn emails_are_checked() {
        assert!(check_email("sule@example.org").is_ok());
        for bad in [
            "",
            "sule",
            "a@b",
            "a@@b.org",
            "a b@c.org",
            "a@b.org\u{202e}",
            "@b.org",
        ] {
            assert!(check_email(bad).is_err(), "{bad:?}");
        }
    }
}
