//! Certificates: a signed JSON record and a PNG that carries it.
//!
//! A record names the learner, the date, the score, the exam version, the sitting's seed and the
//! language of its picture. An issuer (a teacher) makes an Ed25519 key pair with
//! `tplab cert keygen`; the exam signs the record's canonical form (every field but `id` and
//! `signature`, compact JSON, keys sorted, after a domain tag) with the issuer's secret key. The
//! record also carries a short ID, 60 bits of SHA-256 over the same canonical form, used for file
//! names and shown on the picture. The PNG holds the signed record in an iTXt chunk; verifying a
//! PNG re-draws the record and requires the pixels to be exactly that drawing.
//!
//! [`check`] says one of three things:
//! - **valid, signed by `<fingerprint>`**: the record is well formed (a real name, a score from
//!   the pass mark to 100, a known exam version, a real date), unchanged since the holder of that
//!   key signed it, and (for a PNG) the picture shows exactly that record. It does not prove who
//!   typed the name or sat the exam, that the sitting was supervised, or that the key is the
//!   issuer you trust: compare the fingerprint with the one the issuer published, or pass
//!   `--issuer KEY`.
//! - **unsigned: consistent, but anyone could have written it**: well formed and unchanged as
//!   far as an unkeyed hash can tell, which is nothing against someone who writes a record by
//!   hand (tplab is open source).
//! - **invalid**, with the reason.

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use thiserror::Error;
use tplab_lessons::i18n::{percent, t, t_args};
use tplab_lessons::Lang;

/// The record format this version writes and reads.
pub const FORMAT: &str = "tplab-certificate-v2";

/// PNG text-chunk keyword that carries the JSON record inside the image.
pub const PNG_KEYWORD: &str = "tplab-certificate";

/// Domain tags: the ID and the signature cover tplab certificates and nothing else.
const ID_DOMAIN: &[u8] = b"tplab-certificate-v2 id\n";
const SIGN_DOMAIN: &[u8] = b"tplab-certificate-v2 signature\n";

/// The longest name a certificate holds, in characters.
pub const MAX_NAME_CHARS: usize = 80;

/// Size of the certificate picture.
pub const WIDTH: u32 = 1400;
pub const HEIGHT: u32 = 990;

/// A certificate record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Certificate {
    /// Always [`FORMAT`].
    pub format: String,
    pub name: String,
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    /// Exam score, whole percent, rounded down.
    pub score_percent: u32,
    /// One of [`crate::exam::KNOWN_VERSIONS`].
    pub exam_version: String,
    /// The seed of the sitting (it re-creates the questions asked).
    pub sitting_seed: u64,
    /// Language of the picture.
    pub lang: Lang,
    /// The issuer's Ed25519 public key, hex, or `None` for an unsigned record.
    pub issuer_key: Option<String>,
    /// `XXXX-XXXX-XXXX`, from [`Certificate::compute_id`].
    pub id: String,
    /// Ed25519 signature over [`Certificate::signed_message`], hex.
    pub signature: Option<String>,
}

/// Why a certificate could not be made, read or written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CertError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot draw the certificate: {0}")]
    Render(String),
    #[error("cannot issue this certificate: {0}")]
    Record(String),
    #[error("{} cannot be used as an issuer key: {reason}", if path.as_os_str().is_empty() { "an empty path".to_string() } else { path.display().to_string() })]
    Key { path: PathBuf, reason: String },
    #[error(transparent)]
    Store(#[from] crate::progress::StoreError),
    #[error(transparent)]
    Input(#[from] tplab_engine::capacity::models::InputFileError),
}

/// Why a certificate is not valid.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Invalid {
    #[error("not a tplab certificate record: {0}")]
    Malformed(String),
    #[error("the PNG is damaged or incomplete: {0}")]
    BadPng(String),
    #[error("the PNG carries no '{PNG_KEYWORD}' record")]
    NoRecord,
    #[error("the PNG carries more than one '{PNG_KEYWORD}' record")]
    TwoRecords,
    #[error("the PNG holds a chunk tplab does not write: {0}")]
    ForeignChunk(String),
    #[error(
        "the record is {0} bytes, over the {MAX_RECORD_BYTES}-byte limit (a record is under 1 KiB)"
    )]
    TooLarge(usize),
    #[error("the record is not acceptable: {0}")]
    Record(String),
    #[error("the record says ID {found} but its contents give {computed}: it was edited after it was issued")]
    Id { found: String, computed: String },
    #[error("the signature does not match the record: it was edited after signing, or the signature is not from the key it names")]
    Signature,
    #[error("signed by {found}, not by the issuer you named ({expected})")]
    OtherIssuer { found: String, expected: String },
    #[error("unsigned, and you asked for a certificate signed by {0}")]
    NotSigned(String),
    #[error("the picture is not the drawing of its record ({differing} of {total} pixel values differ): the name, score or date shown was changed, or the record was put into another picture")]
    Pixels { differing: usize, total: usize },
    #[error(transparent)]
    Badge(#[from] crate::badge::BadgeError),
    #[error("the Open Badges credential does not match the tplab record: {0}; the two were not issued together")]
    BadgeMismatch(String),
}

/// The result of checking a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Well formed, signed by the key with this fingerprint, and the picture (if any) matches.
    Signed {
        cert: Certificate,
        fingerprint: String,
        /// The Open Badges 3.0 credential the PNG carries beside the record, verified and
        /// matching it; `None` for a JSON record or a PNG without one (issued before tplab
        /// wrote them).
        badge: Option<crate::badge::Claims>,
    },
    /// An Open Badges 3.0 credential alone (a `.jwt` file), valid and signed by the key with
    /// this fingerprint.
    Badge {
        claims: crate::badge::Claims,
        fingerprint: String,
    },
    /// Well formed and consistent, but not signed: anyone could have written it.
    Unsigned { cert: Certificate },
    /// Not a valid certificate.
    Invalid(Invalid),
}

impl Verdict {
    /// Whether the certificate passed every check it could be given.
    pub fn is_valid(&self) -> bool {
        !matches!(self, Verdict::Invalid(_))
    }

    /// What a person reading the verdict should know: one line of verdict, then what it proves
    /// and does not prove.
    pub fn explain(&self) -> String {
        match self {
            Verdict::Signed {
                cert,
                fingerprint,
                badge,
            } => format!(
                "signed by {fingerprint}: valid\n\
                 {}\n\
                 {}\n\
                 This proves: the holder of the issuer key {fingerprint} issued this record, and it \
                 is unchanged since it was signed (for a PNG: the picture shows exactly this \
                 record).\n\
                 It does not prove: who typed the name or sat the exam, that the sitting was \
                 supervised, or that this key belongs to the issuer you trust; compare the \
                 fingerprint with the one your issuer published, or pass --issuer KEY.",
                summary(cert),
                match badge {
                    Some(b) => format!(
                        "Found: the tplab record and an Open Badges 3.0 credential (VC-JWT, \
                         EdDSA) issued by {} that matches it{}; both verified.",
                        escape_unsafe(&b.issuer_did),
                        practical_words(b.practical),
                    ),
                    None => "Found: the tplab record only (no Open Badges 3.0 credential: a \
                             JSON record, or a certificate from before tplab wrote them)."
                        .to_string(),
                },
            ),
            Verdict::Badge {
                claims,
                fingerprint,
            } => format!(
                "signed by {fingerprint}: valid Open Badges 3.0 credential\n\
                 The credential states: {} passed {} with {}% (certificate ID {}, valid from \
                 {}){}.\n\
                 Found: an Open Badges 3.0 credential (VC-JWT, EdDSA) issued by {}.\n\
                 This proves: the holder of that key issued it and it is unchanged since. It \
                 does not prove who sat the exam, or that the key is the issuer you trust: \
                 compare the fingerprint, or pass --issuer KEY.",
                escape_unsafe(&claims.name),
                escape_unsafe(&claims.exam_version),
                claims.score_percent,
                escape_unsafe(&claims.certificate_id),
                escape_unsafe(&claims.valid_from),
                practical_words(claims.practical),
                escape_unsafe(&claims.issuer_did),
            ),
            Verdict::Unsigned { cert } => format!(
                "unsigned: consistent, but anyone could have written it\n\
                 {}\n\
                 The record is well formed and its ID matches its contents, but no issuer signed \
                 it: tplab is open source and anyone can write such a record without sitting the \
                 exam. It proves nothing about the person named.",
                summary(cert)
            ),
            // The reason may quote the file (a parser's message): shown with every control or
            // direction character escaped, so it cannot rewrite the terminal line.
            Verdict::Invalid(why) => format!("invalid: {}", escape_unsafe(&why.to_string())),
        }
    }
}

/// What a credential says of the practical part, as a clause.
fn practical_words(p: Option<bool>) -> &'static str {
    match p {
        Some(true) => ", practical part solved",
        Some(false) => ", practical part not solved",
        None => ", no practical part drawn",
    }
}

/// One line of what the record states, with the name shown safely (it was validated).
fn summary(c: &Certificate) -> String {
    format!(
        "The record states: {} passed {} with {}% on {} (ID {}, sitting seed {}).",
        c.name, c.exam_version, c.score_percent, c.date, c.id, c.sitting_seed
    )
}

/// An issuer's secret key.
pub struct IssuerKey(SigningKey);

/// An issuer's public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuerPublic(VerifyingKey);

/// First line of a secret key file: what the file is, before anything else.
pub const SECRET_KEY_TAG: &str = "tplab-issuer-secret-key-v2";
/// First line of a public key file (`.pub`).
pub const PUBLIC_KEY_TAG: &str = "tplab-issuer-public-key-v2";
/// The first line of the secret key files tplab wrote before the tags above (still read: the
/// line names a secret key, so such a file is never a public key read as a secret).
const OLD_SECRET_HEADER: &str = "# tplab issuer secret key (Ed25519 seed, hex). Keep it private.";
/// The start of the first line of the `.pub` files tplab wrote before the tags above.
const OLD_PUBLIC_HEADER: &str = "# tplab issuer public key";

/// Largest key file read: 4 KiB (a key file is under 300 bytes).
pub const MAX_KEY_FILE_BYTES: u64 = 4096;

/// What a key file's first line says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Secret,
    Public,
    /// 64 hex digits with no line saying what they are: a public key written by hand.
    BareHex,
    Unknown,
}

fn key_kind(text: &str) -> KeyKind {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        Some(SECRET_KEY_TAG) | Some(OLD_SECRET_HEADER) => KeyKind::Secret,
        Some(PUBLIC_KEY_TAG) => KeyKind::Public,
        Some(l) if l.starts_with(OLD_PUBLIC_HEADER) => KeyKind::Public,
        Some(l) if l.len() == 64 && l.bytes().all(|b| b.is_ascii_hexdigit()) => KeyKind::BareHex,
        _ => KeyKind::Unknown,
    }
}

/// Why key-file text is not the key asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyTextError {
    /// A public key where a secret key is needed.
    PublicNotSecret,
    /// A secret key where a public key is needed.
    SecretNotPublic,
    /// Not a tplab key file, or a damaged one.
    Garbage(String),
}

impl std::fmt::Display for KeyTextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::PublicNotSecret => write!(
                f,
                "it is a public key, which only checks certificates; sign with the secret key \
                 file `tplab cert keygen` wrote with it (the same name without .pub)"
            ),
            Self::SecretNotPublic => write!(
                f,
                "it is a secret key; give the public key, the .pub file `tplab cert keygen` wrote \
                 beside it (and keep the secret key private)"
            ),
            Self::Garbage(why) => write!(f, "{why}"),
        }
    }
}

impl IssuerKey {
    /// A new random key from the operating system's random source.
    pub fn generate() -> Result<Self, CertError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| CertError::Record(format!("no randomness: {e}")))?;
        Ok(Self(SigningKey::from_bytes(&seed)))
    }

    /// A key from its 32-byte seed (tests use fixed seeds).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self(SigningKey::from_bytes(&seed))
    }

    pub fn public(&self) -> IssuerPublic {
        IssuerPublic(self.0.verifying_key())
    }

    /// The secret key file's text: the [`SECRET_KEY_TAG`] line, a comment, the seed in hex.
    pub fn to_file_text(&self) -> String {
        format!(
            "{SECRET_KEY_TAG}\n# Ed25519 seed, hex. Keep it private: whoever holds it can sign \
             certificates. Publish the .pub file instead.\n{}\n",
            hex(&self.0.to_bytes())
        )
    }

    /// Reads a secret key file: its first line must say it is one ([`SECRET_KEY_TAG`], or the
    /// header of the files earlier tplab versions wrote); a public key is refused.
    pub fn from_file_text(text: &str) -> Result<Self, KeyTextError> {
        match key_kind(text) {
            KeyKind::Secret => {}
            KeyKind::Public | KeyKind::BareHex => return Err(KeyTextError::PublicNotSecret),
            KeyKind::Unknown => {
                return Err(KeyTextError::Garbage(format!(
                    "not a tplab secret key file (its first line is not '{SECRET_KEY_TAG}'); \
                     make one with `tplab cert keygen`"
                )))
            }
        }
        let line = key_line(text).ok_or_else(|| {
            KeyTextError::Garbage("no line of 64 hex digits (the key); the file is damaged".into())
        })?;
        let seed: [u8; 32] = unhex(line)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| KeyTextError::Garbage("the key line is not 64 hex digits".into()))?;
        Ok(Self::from_seed(seed))
    }

    /// Loads a secret key file: a regular file of at most [`MAX_KEY_FILE_BYTES`] (a FIFO or
    /// device is refused before opening), owner-only on Unix (no access for the group or
    /// others: `chmod 600 FILE`), that says it is a secret key.
    pub fn load(path: &Path) -> Result<Self, CertError> {
        let key_err = |reason: String| CertError::Key {
            path: path.to_path_buf(),
            reason,
        };
        let bytes = tplab_engine::capacity::models::read_input_bytes(
            path,
            "secret key",
            MAX_KEY_FILE_BYTES,
        )
        .map_err(|e| key_err(e.to_string()))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| key_err("it is not text; make a key with `tplab cert keygen`".into()))?;
        let key = Self::from_file_text(&text).map_err(|e| {
            let mut reason = e.to_string();
            if e == KeyTextError::PublicNotSecret {
                if let Some(secret) = path.to_str().and_then(|p| p.strip_suffix(".pub")) {
                    reason = format!(
                        "it is a public key, which only checks certificates; sign with the \
                         secret key file `tplab cert keygen` wrote beside it: {secret}"
                    );
                }
            }
            key_err(reason)
        })?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .map_err(|source| CertError::Read {
                    path: path.to_path_buf(),
                    source,
                })?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                return Err(key_err(format!(
                    "the secret key is readable by others (mode {:03o}): anyone who read it can \
                     sign certificates in your name. Make it owner-only with `chmod 600 {}`, or, \
                     if others may have copied it, make a new key with `tplab cert keygen --force` \
                     and publish the new fingerprint",
                    mode & 0o777,
                    path.display()
                )));
            }
        }
        Ok(key)
    }

    fn sign(&self, msg: &[u8]) -> Signature {
        self.0.sign(msg)
    }

    /// The Ed25519 key (the Open Badges credential is signed with it too).
    pub(crate) fn signing_key(&self) -> &SigningKey {
        &self.0
    }
}

impl IssuerPublic {
    /// Reads a public key: 64 hex digits, alone or as the key line of a `.pub` file, or the
    /// `.pub.pem` (PEM) and `.pub.jwk` (JWK) forms. A secret key, in any form, is refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::parse_text(text).map_err(|e| e.to_string())
    }

    fn parse_text(text: &str) -> Result<Self, KeyTextError> {
        let want = || {
            KeyTextError::Garbage(
                "expected 64 hex digits, a PEM or a JWK (an Ed25519 public key)".into(),
            )
        };
        // The .pub.pem and .pub.jwk files `tplab cert keygen` writes beside the .pub.
        if let Some(read) = Self::from_pem_or_jwk(text) {
            return read.map_err(KeyTextError::Garbage);
        }
        match key_kind(text) {
            KeyKind::Secret => return Err(KeyTextError::SecretNotPublic),
            KeyKind::Public | KeyKind::BareHex => {}
            KeyKind::Unknown => return Err(want()),
        }
        let line = key_line(text).ok_or_else(want)?;
        let bytes: [u8; 32] = unhex(line)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(want)?;
        VerifyingKey::from_bytes(&bytes).map(Self).map_err(|_| {
            KeyTextError::Garbage(
                "those 64 hex digits are not a valid Ed25519 public key".to_string(),
            )
        })
    }

    /// `--issuer KEY`: a path to a `.pub`, `.pub.pem` or `.pub.jwk` file, the key's 64 hex
    /// digits, or its `did:key`.
    pub fn from_arg(arg: &str) -> Result<Self, CertError> {
        let path = Path::new(arg);
        let key_err = |reason: String| CertError::Key {
            path: path.to_path_buf(),
            reason,
        };
        if arg.starts_with("did:key:") {
            return Self::from_did_key(arg).map_err(key_err);
        }
        // A FIFO, device or folder is refused before anything opens it.
        let exists = tplab_engine::capacity::models::check_regular_file(path, "public key")
            .map_err(|e| key_err(e.to_string()))?;
        if exists {
            let bytes = tplab_engine::capacity::models::read_input_bytes(
                path,
                "public key",
                MAX_KEY_FILE_BYTES,
            )
            .map_err(|e| key_err(e.to_string()))?;
            let text = String::from_utf8(bytes).map_err(|_| {
                key_err("it is not text; give a .pub file made by `tplab cert keygen`".into())
            })?;
            return Self::parse_text(&text).map_err(|e| key_err(e.to_string()));
        }
        Self::parse(arg).map_err(|reason| {
            key_err(format!(
                "{reason}; give a .pub file made by `tplab cert keygen` or its hex key"
            ))
        })
    }

    pub fn to_hex(&self) -> String {
        hex(self.0.as_bytes())
    }

    /// The 32 key bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        self.0.as_bytes()
    }

    /// A key from its 32 bytes; `None` if they are not a valid Ed25519 public key.
    pub fn from_bytes(bytes: &[u8; 32]) -> Option<Self> {
        VerifyingKey::from_bytes(bytes).ok().map(Self)
    }

    pub(crate) fn verifying_key(&self) -> &VerifyingKey {
        &self.0
    }

    /// The `.pub` file's text: the [`PUBLIC_KEY_TAG`] line, the fingerprint, the key in hex.
    pub fn to_file_text(&self) -> String {
        format!(
            "{PUBLIC_KEY_TAG}\n# Ed25519, hex; fingerprint {}\n{}\n",
            self.fingerprint(),
            self.to_hex()
        )
    }

    /// `ed25519:` and the first 8 bytes of SHA-256 of the key, in four groups.
    pub fn fingerprint(&self) -> String {
        let h = Sha256::digest(self.0.as_bytes());
        let hx = hex(&h[..8]);
        format!(
            "ed25519:{}-{}-{}-{}",
            &hx[0..4],
            &hx[4..8],
            &hx[8..12],
            &hx[12..16]
        )
    }
}

/// The public key of any form of a key (`cert show-key`): a secret key file (loaded with its
/// checks: owner-only, says it is secret), a `.pub` file, 64 hex digits or a `did:key`.
pub fn public_of_any(arg: &str) -> Result<IssuerPublic, CertError> {
    let path = Path::new(arg);
    let is_file = !arg.starts_with("did:key:")
        && tplab_engine::capacity::models::check_regular_file(path, "key").unwrap_or(false);
    if is_file {
        let bytes =
            tplab_engine::capacity::models::read_input_bytes(path, "key", MAX_KEY_FILE_BYTES)
                .map_err(|e| CertError::Key {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
        if key_kind(&String::from_utf8_lossy(&bytes)) == KeyKind::Secret {
            return IssuerKey::load(path).map(|k| k.public());
        }
    }
    IssuerPublic::from_arg(arg)
}

/// Environment variable naming the issuer's secret key file the exam signs with.
pub const ISSUER_KEY_ENV: &str = "TPLAB_ISSUER_KEY";

/// The issuer key the exam signs with, and where it came from: `explicit` (a `--issuer-key`
/// flag), else `$TPLAB_ISSUER_KEY`, else `issuer.key` in the data folder if it exists. `None`
/// when none is configured (certificates are then unsigned). A key that is named but cannot be
/// read is an error, never a silent fall-back to unsigned.
pub fn configured_issuer(
    explicit: Option<&Path>,
    store: &crate::progress::Store,
) -> Result<Option<(IssuerKey, PathBuf)>, CertError> {
    let named = explicit.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(ISSUER_KEY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let path = match named {
        Some(p) => p,
        None => {
            let p = store.issuer_key_path();
            if !p.exists() {
                return Ok(None);
            }
            p
        }
    };
    Ok(Some((IssuerKey::load(&path)?, path)))
}

fn key_line(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .find(|l| l.len() == 64 && l.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    // Hex digits only: `from_str_radix` alone would take "+f" as 15.
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// Checks a learner's name for a certificate: not empty, at most [`MAX_NAME_CHARS`]
/// characters, no surrounding spaces, no control characters (newlines, escapes), no
/// bidirectional overrides or isolates (U+202A–U+202E, U+2066–U+2069), no invisible
/// formatting characters.
pub fn check_name(name: &str) -> Result<(), String> {
    if !name.chars().any(char::is_alphanumeric) {
        return Err("the name is empty (it needs at least one letter or digit)".into());
    }
    if name.trim() != name {
        return Err("the name starts or ends with spaces".into());
    }
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        return Err(format!(
            "the name has {n} characters; at most {MAX_NAME_CHARS} fit a certificate"
        ));
    }
    if let Some(c) = name.chars().find(|&c| forbidden_in_name(c)) {
        return Err(format!(
            "the name contains U+{:04X}, a control or text-direction character that could make \
             it display as something else; type the name without it",
            c as u32
        ));
    }
    Ok(())
}

/// `text` with every character [`check_name`] forbids written as `\u{..}` (the shared helper
/// every printed string from a file goes through).
pub use tplab_engine::text::escape_unsafe;

fn forbidden_in_name(c: char) -> bool {
    tplab_engine::text::is_unsafe_char(c)
}

impl Certificate {
    /// A new record, checked (see [`Certificate::validate`]) and signed with `issuer` if given.
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        name: &str,
        date: &str,
        score_percent: u32,
        exam_version: &str,
        sitting_seed: u64,
        lang: Lang,
        issuer: Option<&IssuerKey>,
    ) -> Result<Self, CertError> {
        let mut c = Self {
            format: FORMAT.to_string(),
            name: name.trim().to_string(),
            date: date.to_string(),
            score_percent,
            exam_version: exam_version.to_string(),
            sitting_seed,
            lang,
            issuer_key: issuer.map(|k| k.public().to_hex()),
            id: String::new(),
            signature: None,
        };
        c.validate().map_err(CertError::Record)?;
        c.id = c.compute_id();
        c.signature = issuer.map(|k| hex(&k.sign(&c.signed_message()).to_bytes()));
        Ok(c)
    }

    /// The record's rules: format, name ([`check_name`]), a real date not after tomorrow (UTC),
    /// a known exam version, and a score from that version's pass mark to 100.
    pub fn validate(&self) -> Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "format '{}' is not {FORMAT}",
                self.format.escape_debug()
            ));
        }
        check_name(&self.name)?;
        let day = crate::time::parse_date(&self.date)?;
        let today = (crate::time::unix_now_s() / 86_400) as i64;
        if day > today + 1 {
            return Err(format!("the date {} is in the future", self.date));
        }
        let Some(pass) = crate::exam::known_pass_mark(&self.exam_version) else {
            return Err(format!(
                "'{}' is not an exam this tplab knows ({})",
                self.exam_version.escape_debug(),
                crate::exam::KNOWN_VERSIONS
                    .iter()
                    .map(|(v, _)| *v)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        if self.score_percent > 100 {
            return Err(format!(
                "a score of {}% is impossible (0 to 100)",
                self.score_percent
            ));
        }
        if self.score_percent < pass {
            return Err(format!(
                "a score of {}% is below the pass mark of {} ({pass}%)",
                self.score_percent, self.exam_version
            ));
        }
        Ok(())
    }

    /// Compact JSON of every field but `id` and `signature`, keys sorted.
    pub fn canonical_json(&self) -> String {
        // serde_json's map is sorted (no preserve_order feature): canonical key order.
        serde_json::json!({
            "date": self.date,
            "exam_version": self.exam_version,
            "format": self.format,
            "issuer_key": self.issuer_key,
            "lang": self.lang,
            "name": self.name,
            "score_percent": self.score_percent,
            "sitting_seed": self.sitting_seed,
        })
        .to_string()
    }

    /// What the issuer signs: a domain tag and the canonical record.
    pub fn signed_message(&self) -> Vec<u8> {
        [SIGN_DOMAIN, self.canonical_json().as_bytes()].concat()
    }

    /// The ID this record should carry.
    pub fn compute_id(&self) -> String {
        let mut h = Sha256::new();
        h.update(ID_DOMAIN);
        h.update(self.canonical_json().as_bytes());
        let b32 = base32(&h.finalize());
        format!("{}-{}-{}", &b32[0..4], &b32[4..8], &b32[8..12])
    }

    /// The signer's fingerprint if the record is signed (the signature is not checked here).
    pub fn issuer(&self) -> Option<IssuerPublic> {
        self.issuer_key
            .as_deref()
            .and_then(|k| IssuerPublic::parse(k).ok())
    }

    /// Checks the record alone (no picture): rules, ID, signature, and `issuer` if given.
    pub fn check_record(&self, issuer: Option<&IssuerPublic>) -> Verdict {
        if let Err(why) = self.validate() {
            return Verdict::Invalid(Invalid::Record(why));
        }
        let computed = self.compute_id();
        if computed != self.id {
            return Verdict::Invalid(Invalid::Id {
                found: self.id.escape_debug().to_string(),
                computed,
            });
        }
        match (&self.issuer_key, &self.signature) {
            (None, None) => match issuer {
                Some(want) => Verdict::Invalid(Invalid::NotSigned(want.fingerprint())),
                None => Verdict::Unsigned { cert: self.clone() },
            },
            (Some(key), Some(sig)) => {
                let Ok(public) = IssuerPublic::parse(key) else {
                    return Verdict::Invalid(Invalid::Record(
                        "issuer_key is not an Ed25519 public key".into(),
                    ));
                };
                // Lower-case only, as signing writes it: one signature, one record (an
                // upper-case copy would be a second record that verifies).
                let canonical = !sig.bytes().any(|b| b.is_ascii_uppercase());
                let Some(sig) = unhex(sig)
                    .filter(|_| canonical)
                    .and_then(|b| <[u8; 64]>::try_from(b).ok())
                    .map(|b| Signature::from_bytes(&b))
                else {
                    return Verdict::Invalid(Invalid::Record(
                        "its signature is not an Ed25519 signature (128 lower-case hexadecimal \
                         digits): it was cut or edited; ask the issuer for the certificate again"
                            .into(),
                    ));
                };
                if public
                    .0
                    .verify_strict(&self.signed_message(), &sig)
                    .is_err()
                {
                    return Verdict::Invalid(Invalid::Signature);
                }
                if let Some(want) = issuer {
                    if *want != public {
                        return Verdict::Invalid(Invalid::OtherIssuer {
                            found: public.fingerprint(),
                            expected: want.fingerprint(),
                        });
                    }
                }
                Verdict::Signed {
                    cert: self.clone(),
                    fingerprint: public.fingerprint(),
                    badge: None,
                }
            }
            (Some(_), None) => Verdict::Invalid(Invalid::Record(
                "it names an issuer_key but carries no signature: the signature was removed; \
                 ask the issuer for the certificate again"
                    .into(),
            )),
            (None, Some(_)) => Verdict::Invalid(Invalid::Record(
                "a signature without the issuer_key it was made with".into(),
            )),
        }
    }

    /// File stem, e.g. `tplab-certificate-ABCD-EFGH-IJKL`.
    pub fn file_stem(&self) -> String {
        format!("tplab-certificate-{}", self.id)
    }

    /// The record as JSON (pretty).
    pub fn to_json(&self) -> Result<String, CertError> {
        serde_json::to_string_pretty(self).map_err(|e| CertError::Render(e.to_string()))
    }

    /// Writes `<stem>.json` and `<stem>.png` (the PNG also carries the record) into `dir`,
    /// atomically. Returns both paths.
    pub fn write(&self, dir: &Path) -> Result<(PathBuf, PathBuf), CertError> {
        self.write_with_badge(dir, None).map(|(j, p, _)| (j, p))
    }

    /// [`Certificate::write`], and with an Open Badges 3.0 credential (a VC-JWT from
    /// [`crate::badge::issue`]): baked into the PNG beside the record, and alone as
    /// `<stem>.jwt`, whose path comes third.
    pub fn write_with_badge(
        &self,
        dir: &Path,
        badge: Option<&str>,
    ) -> Result<(PathBuf, PathBuf, Option<PathBuf>), CertError> {
        let json_path = dir.join(format!("{}.json", self.file_stem()));
        let png_path = dir.join(format!("{}.png", self.file_stem()));
        let png = self.render_png_with(badge)?;
        crate::progress::write_atomic(&json_path, self.to_json()?.as_bytes())?;
        crate::progress::write_atomic(&png_path, &png)?;
        let jwt_path = match badge {
            Some(jwt) => {
                let p = dir.join(format!("{}.jwt", self.file_stem()));
                crate::progress::write_atomic(&p, format!("{jwt}\n").as_bytes())?;
                Some(p)
            }
            None => None,
        };
        Ok((json_path, png_path, jwt_path))
    }

    /// The picture as RGB bytes ([`WIDTH`] × [`HEIGHT`], row-major), drawn from the record alone
    /// and exactly reproducible (what verification compares a PNG with).
    pub fn render_rgb(&self) -> Result<Vec<u8>, CertError> {
        let font = FontRef::try_from_slice(epaint_default_fonts::UBUNTU_LIGHT)
            .map_err(|e| CertError::Render(e.to_string()))?;
        let mut c = Canvas::new(WIDTH, HEIGHT, [250, 247, 238]);
        let navy = [24, 44, 92];
        let gold = [176, 137, 48];
        c.frame(30, 6, navy);
        c.frame(48, 2, gold);
        let issuer = self.issuer().map(|k| k.fingerprint());
        let lang = self.lang;
        let title = t(lang, "cert-pic-title");
        let course = t(lang, "cert-pic-course");
        let certifies = t(lang, "cert-pic-certifies");
        let passed = t_args(
            lang,
            "cert-pic-passed",
            &[
                ("exam", self.exam_version.clone()),
                ("score", percent(lang, f64::from(self.score_percent), 0)),
            ],
        );
        let date_l = t(lang, "cert-pic-date");
        let signed = match &issuer {
            Some(f) => t_args(lang, "cert-pic-signed", &[("key", f.to_string())]),
            None => t(lang, "cert-pic-unsigned"),
        };
        let verify_l = t(lang, "cert-pic-verify");
        c.text_centered(&font, &title, 64.0, 190.0, navy);
        c.text_centered(&font, &course, 40.0, 270.0, gold);
        c.text_centered(&font, &certifies, 30.0, 390.0, [60, 60, 60]);
        c.text_centered(&font, &self.name, 76.0, 500.0, [20, 20, 20]);
        c.text_centered(&font, &passed, 30.0, 590.0, [60, 60, 60]);
        c.text_centered(
            &font,
            &format!("{date_l}: {}      ID: {}", self.date, self.id),
            30.0,
            740.0,
            navy,
        );
        c.text_centered(&font, &signed, 24.0, 800.0, [70, 70, 70]);
        c.text_centered(&font, &verify_l, 22.0, 850.0, [90, 90, 90]);
        Ok(c.px)
    }

    /// The certificate as a PNG, with the JSON record in an iTXt chunk.
    pub fn render_png(&self) -> Result<Vec<u8>, CertError> {
        self.render_png_with(None)
    }

    /// [`Certificate::render_png`], with an Open Badges 3.0 credential (a VC-JWT) in a second
    /// iTXt chunk, keyword [`crate::badge::PNG_KEYWORD`], right after the record's.
    pub fn render_png_with(&self, badge: Option<&str>) -> Result<Vec<u8>, CertError> {
        let px = self.render_rgb()?;
        let record = serde_json::to_string(self).map_err(|e| CertError::Render(e.to_string()))?;
        encode_png(WIDTH, HEIGHT, &px, &record, badge)
    }
}

/// Reads a record from bytes: a JSON record, or a PNG through the record it carries (the
/// picture is not compared here; see [`check`]). Never panics, whatever the bytes.
pub fn parse(bytes: &[u8]) -> Result<Certificate, Invalid> {
    if bytes.starts_with(PNG_SIGNATURE) {
        return decode_png(bytes).map(|(c, _, _)| c);
    }
    parse_json(bytes)
}

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

fn parse_json(bytes: &[u8]) -> Result<Certificate, Invalid> {
    let text = std::str::from_utf8(bytes).map_err(|e| Invalid::Malformed(e.to_string()))?;
    serde_json::from_str(text).map_err(|e| {
        // The first format: name, date, score, exam version and an unkeyed ID, nothing else.
        let v1 = serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| {
            v.get("format").is_none()
                && ["name", "date", "score_percent", "exam_version", "id"]
                    .iter()
                    .all(|k| v.get(k).is_some())
        });
        Invalid::Malformed(if v1 {
            "a record of tplab's first certificate format (an unkeyed ID, no signature), which \
             anyone can write; it proves nothing: sit the exam again for a signed certificate"
                .to_string()
        } else {
            e.to_string()
        })
    })
}

/// Largest certificate file read: 8 MiB. A tplab PNG is about 100 KiB and a record under
/// 1 KiB; the limit is checked on the file's metadata before a byte is read.
pub const MAX_CERT_FILE_BYTES: u64 = 8 << 20;

/// Largest record a PNG may carry, after inflating a compressed text chunk: 64 KiB (a record is
/// under 1 KiB). Inflating stops at this size: a small chunk that inflates to gigabytes is
/// refused having allocated at most this much.
pub const MAX_RECORD_BYTES: usize = 64 << 10;

/// The chunks of a certificate PNG, in the order tplab writes them: `IHDR`, the `iTXt` record,
/// optionally the `iTXt` Open Badges credential (keyword `openbadgecredential`) right after it,
/// one or more `IDAT`, `IEND`, and nothing after. Any other chunk could change what a viewer
/// shows without changing the pixels verification compares (an APNG's `acTL`/`fcTL`/`fdAT`
/// show other frames; `gAMA`, `cHRM`, `iCCP`, `sRGB`, `sBIT`, `tRNS`, `PLTE`, `bKGD` change the
/// colours), so it is refused. Returns the record's text and the credential's.
fn certificate_chunks(bytes: &[u8]) -> Result<(String, Option<String>), Invalid> {
    let bad = |m: String| Invalid::BadPng(m);
    let mut pos = PNG_SIGNATURE.len();
    let mut order: Vec<[u8; 4]> = Vec::new();
    let mut record = None;
    let mut badge = None;
    loop {
        if pos == bytes.len() {
            return Err(bad(
                "the file ends before its IEND chunk (cut short?)".into()
            ));
        }
        let head = bytes
            .get(pos..pos + 8)
            .ok_or_else(|| bad("a chunk header is cut short".into()))?;
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = [head[4], head[5], head[6], head[7]];
        let shown = String::from_utf8_lossy(&kind).escape_debug().to_string();
        // Checked: a length near 4 GiB must not wrap around on a 32-bit target (the browser).
        let cut = || bad(format!("chunk '{shown}' is cut short"));
        let data_end = (pos + 8).checked_add(len).ok_or_else(cut)?;
        let data = bytes.get(pos + 8..data_end).ok_or_else(cut)?;
        let crc = bytes.get(data_end..data_end + 4).ok_or_else(cut)?;
        if crc32(&[&kind, data]) != u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]) {
            return Err(bad(format!(
                "chunk '{shown}' is damaged (its CRC does not match)"
            )));
        }
        pos = data_end + 4;
        let expected: &[&[u8; 4]] = match order.last() {
            None => &[b"IHDR"],
            Some(b"IHDR") => &[b"iTXt"],
            // The record, then (once) the credential, then the image.
            Some(b"iTXt") if badge.is_none() => &[b"iTXt", b"IDAT"],
            Some(b"iTXt") => &[b"IDAT"],
            Some(b"IDAT") => &[b"IDAT", b"IEND"],
            _ => &[],
        };
        if !expected.contains(&&kind) {
            if order.last() == Some(b"IHDR") && &kind == b"IDAT" {
                return Err(Invalid::NoRecord);
            }
            let text_chunk = matches!(&kind, b"tEXt" | b"zTXt" | b"iTXt");
            let keyword = data.split(|&b| b == 0).next().unwrap_or_default();
            if text_chunk && record.is_some() && keyword == PNG_KEYWORD.as_bytes() {
                return Err(Invalid::TwoRecords);
            }
            let after = order
                .last()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .unwrap_or_else(|| "the signature".into());
            let why = match &kind {
                b"acTL" | b"fcTL" | b"fdAT" => {
                    " (an animation chunk: a viewer would show other frames than the one verified)"
                }
                b"gAMA" | b"cHRM" | b"iCCP" | b"sRGB" | b"sBIT" | b"tRNS" | b"PLTE" | b"bKGD" => {
                    " (a colour chunk: a viewer would paint other colours than the ones verified)"
                }
                _ if order.last() == Some(b"IEND") => " (data after the end of the image)",
                _ => "",
            };
            return Err(Invalid::ForeignChunk(format!(
                "'{shown}' after {after}{why}; a tplab certificate holds only IHDR, its iTXt \
                 record, IDAT and IEND, in that order (and right after the record, its iTXt \
                 Open Badges credential)"
            )));
        }
        if &kind == b"iTXt" {
            let keyword = data.split(|&b| b == 0).next().unwrap_or_default();
            let badge_kw = crate::badge::PNG_KEYWORD.as_bytes();
            match (&record, keyword) {
                (None, k) if k == badge_kw => {
                    return Err(Invalid::ForeignChunk(format!(
                        "the iTXt '{}' credential comes before the record; tplab writes IHDR, \
                         its iTXt record, its iTXt Open Badges credential, IDAT and IEND, in \
                         that order",
                        crate::badge::PNG_KEYWORD
                    )))
                }
                (None, _) => record = Some(itxt_record(data, PNG_KEYWORD)?),
                (Some(_), k) if k == PNG_KEYWORD.as_bytes() => return Err(Invalid::TwoRecords),
                (Some(_), k) if k == badge_kw => {
                    badge = Some(itxt_record(data, crate::badge::PNG_KEYWORD)?)
                }
                (Some(_), k) => {
                    return Err(Invalid::ForeignChunk(format!(
                        "an iTXt chunk '{}' after the record; the only text a tplab certificate \
                         holds beside its record is the Open Badges credential ('{}')",
                        String::from_utf8_lossy(k).escape_debug(),
                        crate::badge::PNG_KEYWORD
                    )))
                }
            }
        }
        order.push(kind);
        if &kind == b"IEND" {
            if pos != bytes.len() {
                return Err(Invalid::ForeignChunk(format!(
                    "{} bytes after IEND (data after the end of the image); a tplab \
                     certificate holds only IHDR, its iTXt record, IDAT and IEND, in that order",
                    bytes.len() - pos
                )));
            }
            return record.ok_or(Invalid::NoRecord).map(|r| (r, badge));
        }
    }
}

/// The text of an iTXt chunk's data: keyword `want` ([`PNG_KEYWORD`] or the Open Badges one),
/// no language tag or translated keyword, the text plain or zlib-compressed (inflated to at
/// most [`MAX_RECORD_BYTES`]).
fn itxt_record(data: &[u8], want: &str) -> Result<String, Invalid> {
    use std::io::Read;
    let bad = |m: &str| Invalid::BadPng(format!("the iTXt chunk {m}"));
    let mut parts = data.splitn(2, |&b| b == 0);
    let keyword = parts.next().unwrap_or_default();
    let rest = parts.next().ok_or_else(|| bad("has no keyword"))?;
    if keyword != want.as_bytes() {
        return Err(Invalid::NoRecord);
    }
    let (&flag, rest) = rest.split_first().ok_or_else(|| bad("is cut short"))?;
    let (&method, rest) = rest.split_first().ok_or_else(|| bad("is cut short"))?;
    // Language tag, then translated keyword, each ended by a zero byte; then the text.
    let mut fields = rest.splitn(3, |&b| b == 0);
    let (lang, translated, text) = match (fields.next(), fields.next(), fields.next()) {
        (Some(l), Some(t), Some(x)) => (l, t, x),
        _ => return Err(bad("is cut short")),
    };
    if !lang.is_empty() || !translated.is_empty() {
        return Err(bad(
            "has a language tag or translated keyword tplab does not write",
        ));
    }
    let text = match (flag, method) {
        (0, _) => {
            if text.len() > MAX_RECORD_BYTES {
                return Err(Invalid::TooLarge(text.len()));
            }
            text.to_vec()
        }
        (1, 0) => {
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(text)
                .take(MAX_RECORD_BYTES as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| bad(&format!("does not inflate: {e}")))?;
            if out.len() > MAX_RECORD_BYTES {
                return Err(Invalid::TooLarge(out.len()));
            }
            out
        }
        _ => return Err(bad("has an unknown compression")),
    };
    String::from_utf8(text).map_err(|_| bad("is not UTF-8"))
}

/// CRC-32 (ISO 3309, the PNG chunk checksum) of the concatenated parts.
fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for part in parts {
        for &b in *part {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
        }
    }
    !c
}

/// Decodes a whole PNG (every chunk to the end: a cut file fails) and returns its record and
/// its pixels, which must be 8-bit RGB of the certificate's size. The chunks are checked first
/// ([`certificate_chunks`]); the record is read from there, not by the image decoder.
fn decode_png(bytes: &[u8]) -> Result<(Certificate, Vec<u8>, Option<String>), Invalid> {
    let (record, badge) = certificate_chunks(bytes)?;
    let cert = parse_json(record.as_bytes())?;
    let bad = |e: &dyn std::fmt::Display| Invalid::BadPng(e.to_string());
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_ignore_text_chunk(true);
    // Refuse pictures far larger than a certificate before allocating for them.
    decoder.set_limits(png::Limits {
        bytes: 3 * (WIDTH as usize) * (HEIGHT as usize) * 2,
    });
    let mut reader = decoder.read_info().map_err(|e| bad(&e))?;
    let (w, h, color, depth) = {
        let i = reader.info();
        (i.width, i.height, i.color_type, i.bit_depth)
    };
    if (w, h, color, depth) != (WIDTH, HEIGHT, png::ColorType::Rgb, png::BitDepth::Eight) {
        return Err(Invalid::BadPng(format!(
            "a {w}×{h} {color:?} {depth:?} image, not a {WIDTH}×{HEIGHT} 8-bit RGB certificate"
        )));
    }
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| Invalid::BadPng("the image size overflows".into()))?;
    let mut px = vec![0; size];
    reader.next_frame(&mut px).map_err(|e| bad(&e))?;
    reader.finish().map_err(|e| bad(&e))?;
    Ok((cert, px, badge))
}

/// Checks certificate bytes (a `.json` record or a `.png`): the record's rules, ID and
/// signature, `issuer` if given, and for a PNG that every pixel is the drawing of the record.
/// Never panics, whatever the bytes.
pub fn check(bytes: &[u8], issuer: Option<&IssuerPublic>) -> Verdict {
    check_at(bytes, issuer, crate::time::unix_now_s())
}

/// [`check`] at the Unix time `now_s` (an Open Badges credential's `validFrom` must not be
/// after it).
pub fn check_at(bytes: &[u8], issuer: Option<&IssuerPublic>, now_s: u64) -> Verdict {
    // A VC-JWT alone (`.jwt`): its header is base64url of `{"`.
    if bytes.trim_ascii_start().starts_with(b"eyJ") {
        return check_badge_alone(bytes, issuer, now_s);
    }
    let (cert, pixels, badge) = if bytes.starts_with(PNG_SIGNATURE) {
        match decode_png(bytes) {
            Ok((c, px, badge)) => (c, Some(px), badge),
            Err(e) => return Verdict::Invalid(e),
        }
    } else {
        match parse_json(bytes) {
            Ok(c) => (c, None, None),
            Err(e) => return Verdict::Invalid(e),
        }
    };
    let verdict = cert.check_record(issuer);
    if !verdict.is_valid() {
        return verdict;
    }
    if let Some(px) = pixels {
        match cert.render_rgb() {
            Ok(expected) => {
                let differing = expected.iter().zip(&px).filter(|(a, b)| a != b).count()
                    + expected.len().abs_diff(px.len());
                if differing > 0 {
                    return Verdict::Invalid(Invalid::Pixels {
                        differing,
                        total: expected.len(),
                    });
                }
            }
            Err(e) => return Verdict::Invalid(Invalid::BadPng(e.to_string())),
        }
    }
    match (verdict, badge) {
        (v, None) => v,
        (
            Verdict::Signed {
                cert, fingerprint, ..
            },
            Some(jwt),
        ) => match check_badge_against(&cert, &jwt, now_s) {
            Ok(claims) => Verdict::Signed {
                cert,
                fingerprint,
                badge: Some(claims),
            },
            Err(e) => Verdict::Invalid(e),
        },
        (_, Some(_)) => Verdict::Invalid(Invalid::BadgeMismatch(
            "the record is unsigned, and a credential is only issued with a signed record".into(),
        )),
    }
}

/// Verifies a PNG's credential and that it states what the signed record states: the same
/// certificate ID, issuer key, name, exam, score and date.
fn check_badge_against(
    cert: &Certificate,
    jwt: &str,
    now_s: u64,
) -> Result<crate::badge::Claims, Invalid> {
    let (claims, public) = crate::badge::verify(jwt, now_s)?;
    let mismatch = |what: &str| Err(Invalid::BadgeMismatch(format!("its {what} differs")));
    if cert.issuer().as_ref() != Some(&public) {
        return mismatch("issuer key");
    }
    if claims.certificate_id != cert.id {
        return mismatch("certificate ID");
    }
    if claims.name != cert.name {
        return mismatch("learner name");
    }
    if claims.exam_version != cert.exam_version {
        return mismatch("exam version");
    }
    if claims.score_percent != cert.score_percent {
        return mismatch("score");
    }
    if !claims.valid_from.starts_with(&cert.date) {
        return mismatch("date");
    }
    Ok(claims)
}

/// A `.jwt` file: the credential alone, verified, and read as a tplab certificate (its name,
/// exam and score follow the record's rules).
fn check_badge_alone(bytes: &[u8], issuer: Option<&IssuerPublic>, now_s: u64) -> Verdict {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Verdict::Invalid(Invalid::Malformed("a .jwt file that is not text".into()));
    };
    let (claims, public) = match crate::badge::verify(text, now_s) {
        Ok(c) => c,
        Err(e) => return Verdict::Invalid(e.into()),
    };
    if let Err(why) = check_name(&claims.name) {
        return Verdict::Invalid(Invalid::Record(why));
    }
    match crate::exam::known_pass_mark(&claims.exam_version) {
        Some(pass) if (pass..=100).contains(&claims.score_percent) => {}
        _ => {
            return Verdict::Invalid(Invalid::Record(format!(
                "exam '{}' with {}% is not a pass of an exam this tplab knows",
                claims.exam_version.escape_debug(),
                claims.score_percent
            )))
        }
    }
    if let Some(want) = issuer {
        if *want != public {
            return Verdict::Invalid(Invalid::OtherIssuer {
                found: public.fingerprint(),
                expected: want.fingerprint(),
            });
        }
    }
    Verdict::Badge {
        claims,
        fingerprint: public.fingerprint(),
    }
}

impl Verdict {
    /// The Open Badges credential's claims, if one was found and verified.
    pub fn badge(&self) -> Option<&crate::badge::Claims> {
        match self {
            Verdict::Signed { badge, .. } => badge.as_ref(),
            Verdict::Badge { claims, .. } => Some(claims),
            _ => None,
        }
    }
}

/// Reads and checks a certificate file (see [`check`]): a regular file (a FIFO or device is
/// refused before opening) of at most [`MAX_CERT_FILE_BYTES`].
pub fn verify_file(path: &Path, issuer: Option<&IssuerPublic>) -> Result<Verdict, CertError> {
    let bytes =
        tplab_engine::capacity::models::read_input_bytes(path, "certificate", MAX_CERT_FILE_BYTES)?;
    Ok(check(&bytes, issuer))
}

/// RFC 4648 base32, upper case, no padding.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    let (mut buf, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buf = (buf << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buf >> bits) & 31) as usize]));
        }
        buf &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buf << (5 - bits)) & 31) as usize]));
    }
    out
}

/// An RGB image to draw on.
struct Canvas {
    w: u32,
    h: u32,
    px: Vec<u8>,
}

impl Canvas {
    fn new(w: u32, h: u32, bg: [u8; 3]) -> Self {
        let px = bg
            .iter()
            .copied()
            .cycle()
            .take((w * h * 3) as usize)
            .collect();
        Self { w, h, px }
    }

    fn blend(&mut self, x: i64, y: i64, rgb: [u8; 3], alpha: f32) {
        if x < 0 || y < 0 || x >= i64::from(self.w) || y >= i64::from(self.h) {
            return;
        }
        let i = ((y as u32 * self.w + x as u32) * 3) as usize;
        let a = alpha.clamp(0.0, 1.0);
        for (k, &c) in rgb.iter().enumerate() {
            let old = f32::from(self.px[i + k]);
            self.px[i + k] = (old + (f32::from(c) - old) * a).round() as u8;
        }
    }

    /// A rectangular frame `inset` pixels from the edge, `thick` pixels wide.
    fn frame(&mut self, inset: u32, thick: u32, rgb: [u8; 3]) {
        for y in inset..self.h - inset {
            for x in inset..self.w - inset {
                let edge = x < inset + thick
                    || y < inset + thick
                    || x >= self.w - inset - thick
                    || y >= self.h - inset - thick;
                if edge {
                    self.blend(i64::from(x), i64::from(y), rgb, 1.0);
                }
            }
        }
    }

    /// Draws `text` centred horizontally with its baseline at `baseline_y`; shrinks it to fit.
    fn text_centered(
        &mut self,
        font: &FontRef<'_>,
        text: &str,
        size_px: f32,
        baseline_y: f32,
        rgb: [u8; 3],
    ) {
        let max_w = self.w as f32 - 160.0;
        let mut size = size_px;
        let width = |size: f32| {
            let sf = font.as_scaled(PxScale::from(size));
            let mut w = 0.0;
            let mut prev = None;
            for ch in text.chars() {
                let id = sf.glyph_id(ch);
                if let Some(p) = prev {
                    w += sf.kern(p, id);
                }
                w += sf.h_advance(id);
                prev = Some(id);
            }
            w
        };
        while width(size) > max_w && size > 8.0 {
            size *= 0.95;
        }
        let sf = font.as_scaled(PxScale::from(size));
        let mut x = (self.w as f32 - width(size)) / 2.0;
        let mut prev = None;
        for ch in text.chars() {
            let id = sf.glyph_id(ch);
            if let Some(p) = prev {
                x += sf.kern(p, id);
            }
            let glyph = id.with_scale_and_position(PxScale::from(size), point(x, baseline_y));
            x += sf.h_advance(id);
            prev = Some(id);
            if let Some(outline) = font.outline_glyph(glyph) {
                let b = outline.px_bounds();
                let (ox, oy) = (b.min.x as i64, b.min.y as i64);
                let mut hits = Vec::new();
                outline
                    .draw(|gx, gy, cov| hits.push((ox + i64::from(gx), oy + i64::from(gy), cov)));
                for (px, py, cov) in hits {
                    self.blend(px, py, rgb, cov);
                }
            }
        }
    }
}

fn encode_png(
    w: u32,
    h: u32,
    px: &[u8],
    record_json: &str,
    badge: Option<&str>,
) -> Result<Vec<u8>, CertError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.add_itxt_chunk(PNG_KEYWORD.to_string(), record_json.to_string())
            .map_err(|e| CertError::Render(e.to_string()))?;
        if let Some(jwt) = badge {
            enc.add_itxt_chunk(crate::badge::PNG_KEYWORD.to_string(), jwt.to_string())
                .map_err(|e| CertError::Render(e.to_string()))?;
        }
        let mut wr = enc
            .write_header()
            .map_err(|e| CertError::Render(e.to_string()))?;
        wr.write_image_data(px)
            .map_err(|e| CertError::Render(e.to_string()))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> IssuerKey {
        IssuerKey::from_seed([7; 32])
    }

    fn cert(signed: bool) -> Certificate {
        let k = key();
        Certificate::issue(
            "Şule Öztürk",
            "2026-11-30",
            85,
            "exam-v2",
            42,
            Lang::Tr,
            signed.then_some(&k),
        )
        .unwrap()
    }

    #[test]
    fn base32_matches_rfc4648_vectors() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY");
        assert_eq!(base32(b"fo"), "MZXQ");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
    }

    #[test]
    fn canonical_form_and_id_are_stable() {
        let c = cert(true);
        assert_eq!(c.id.len(), 14);
        assert_eq!(c, cert(true), "Ed25519 signatures are deterministic");
        let pk = key().public().to_hex();
        assert_eq!(
            c.canonical_json(),
            format!(
                r#"{{"date":"2026-11-30","exam_version":"exam-v2","format":"tplab-certificate-v2","issuer_key":"{pk}","lang":"tr","name":"Şule Öztürk","score_percent":85,"sitting_seed":42}}"#
            )
        );
        let mut h = Sha256::new();
        h.update(b"tplab-certificate-v2 id\n");
        h.update(c.canonical_json().as_bytes());
        assert_eq!(c.id.replace('-', ""), base32(&h.finalize())[..12]);
    }

    #[test]
    fn signed_and_unsigned_records_say_what_they_are() {
        let k = key();
        match cert(true).check_record(None) {
            Verdict::Signed { fingerprint, .. } => {
                assert_eq!(fingerprint, k.public().fingerprint())
            }
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            cert(true).check_record(Some(&k.public())),
            Verdict::Signed { .. }
        ));
        let other = IssuerKey::from_seed([8; 32]).public();
        assert!(matches!(
            cert(true).check_record(Some(&other)),
            Verdict::Invalid(Invalid::OtherIssuer { .. })
        ));
        let u = cert(false);
        assert!(matches!(u.check_record(None), Verdict::Unsigned { .. }));
        assert!(u
            .check_record(None)
            .explain()
            .starts_with("unsigned: consistent, but anyone could have written it"));
        assert!(matches!(
            u.check_record(Some(&k.public())),
            Verdict::Invalid(Invalid::NotSigned(_))
        ));
        let e = cert(true).check_record(None).explain();
        assert!(e.starts_with("signed by ed25519:"), "{e}");
        assert!(e.contains("It does not prove"), "{e}");
    }

    #[test]
    fn every_edit_of_a_signed_record_breaks_it() {
        let c = cert(true);
        let json = c.to_json().unwrap();
        for (from, to) in [
            ("Şule Öztürk", "Sule Ozturk"),
            ("\"score_percent\": 85", "\"score_percent\": 95"),
            ("2026-11-30", "2026-11-29"),
            ("\"sitting_seed\": 42", "\"sitting_seed\": 43"),
            ("\"lang\": \"tr\"", "\"lang\": \"en\""),
        ] {
            assert!(json.contains(from), "{from}");
            let v = check(json.replace(from, to).as_bytes(), None);
            assert!(
                matches!(v, Verdict::Invalid(Invalid::Id { .. })),
                "{from} -> {to}: {v:?}"
            );
        }
        // Edit and recompute the public ID: the signature still catches it.
        let mut forged = c.clone();
        forged.score_percent = 100;
        forged.id = forged.compute_id();
        assert_eq!(
            forged.check_record(None),
            Verdict::Invalid(Invalid::Signature)
        );
        // Strip the signature but keep the key: not a valid signed record either.
        let mut stripped = c.clone();
        stripped.signature = None;
        assert!(matches!(
            stripped.check_record(None),
            Verdict::Invalid(Invalid::Record(ref why)) if why.contains("carries no signature")
        ));
        // A signature cut short, emptied, written in upper case (the same bytes: a second
        // record that would verify) or with a sign ("+f" parses as a number) is named as such.
        let sig = c.signature.clone().unwrap();
        let signed = format!("+{}", &sig[1..]);
        for cut in [
            String::new(),
            sig[..40].to_string(),
            sig.to_ascii_uppercase(),
            signed,
        ] {
            let mut short = c.clone();
            short.signature = Some(cut);
            assert!(matches!(
                short.check_record(None),
                Verdict::Invalid(Invalid::Record(ref why)) if why.contains("128 lower-case hexadecimal")
            ));
        }
        // Re-formatting alone is no edit.
        let compact = serde_json::to_string(&c).unwrap();
        assert!(matches!(
            check(compact.as_bytes(), None),
            Verdict::Signed { .. }
        ));
    }

    #[test]
    fn first_format_records_are_named_and_refused() {
        let v1 = r#"{"name":"Ali","date":"2026-11-30","score_percent":85,"exam_version":"exam-v1","id":"AAAA-BBBB-CCCC"}"#;
        let e = check(v1.as_bytes(), None).explain();
        assert!(e.contains("first certificate format"), "{e}");
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("Şule Öztürk").is_ok());
        assert!(check_name("李小龍").is_ok());
        for bad in [
            "",
            "   ",
            " Ali",
            "Ali\nVeli",
            "Ali\u{202E}ilev",
            "Ali\u{2066}x",
            "A\u{200B}li",
            "\u{1b}[31mAli",
            "---",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"a".repeat(MAX_NAME_CHARS + 1)).is_err());
        assert!(Certificate::issue("", "2026-11-30", 90, "exam-v2", 1, Lang::En, None).is_err());
    }

    #[test]
    fn png_round_trips_and_is_a_real_image_with_ink() {
        let c = cert(true);
        let bytes = c.render_png().unwrap();
        assert!(matches!(check(&bytes, None), Verdict::Signed { .. }));
        assert_eq!(parse(&bytes).unwrap(), c);
        let (_, px, _) = decode_png(&bytes).unwrap();
        // The name line (baseline 500, 76 px) is drawn: dark pixels in the middle band.
        let dark = (430..510)
            .flat_map(|y| (200..1200).map(move |x| (y, x)))
            .filter(|&(y, x)| px[(y * WIDTH as usize + x) * 3] < 100)
            .count();
        assert!(dark > 2000, "{dark} dark pixels");
    }

    #[test]
    fn write_puts_a_json_and_a_png_that_verify() {
        let dir = tempfile::tempdir().unwrap();
        let c = cert(false);
        let (json, png) = c.write(dir.path()).unwrap();
        assert!(matches!(
            verify_file(&json, None).unwrap(),
            Verdict::Unsigned { .. }
        ));
        assert!(matches!(
            verify_file(&png, None).unwrap(),
            Verdict::Unsigned { .. }
        ));
        assert!(verify_file(&dir.path().join("missing.json"), None).is_err());
    }

    #[test]
    fn key_files_round_trip() {
        let k = IssuerKey::generate().unwrap();
        let again = IssuerKey::from_file_text(&k.to_file_text()).unwrap();
        assert_eq!(again.public(), k.public());
        let p = IssuerPublic::parse(&k.public().to_file_text()).unwrap();
        assert_eq!(p, k.public());
        assert_eq!(IssuerPublic::parse(&k.public().to_hex()).unwrap(), p);
        assert!(IssuerPublic::parse("nope").is_err());
        assert!(IssuerKey::from_file_text("zz").is_err());
        assert_ne!(IssuerKey::generate().unwrap().public(), k.public());
        assert!(p.fingerprint().starts_with("ed25519:"));
        assert_eq!(p.fingerprint().len(), "ed25519:".len() + 19);
    }

    /// The chunks of a PNG: (type, data), after the signature.
    fn chunks(png: &[u8]) -> Vec<([u8; 4], Vec<u8>)> {
        let mut out = Vec::new();
        let mut pos = 8;
        while pos + 8 <= png.len() {
            let len = u32::from_be_bytes(png[pos..pos + 4].try_into().unwrap()) as usize;
            let kind: [u8; 4] = png[pos + 4..pos + 8].try_into().unwrap();
            out.push((kind, png[pos + 8..pos + 8 + len].to_vec()));
            pos += 12 + len;
        }
        out
    }

    /// A PNG of these chunks (CRCs computed).
    fn assemble(chunks: &[([u8; 4], Vec<u8>)]) -> Vec<u8> {
        let mut out = PNG_SIGNATURE.to_vec();
        for (kind, data) in chunks {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            out.extend_from_slice(kind);
            out.extend_from_slice(data);
            out.extend_from_slice(&crc32(&[kind, data]).to_be_bytes());
        }
        out
    }

    #[test]
    fn crc32_matches_the_png_checksum() {
        // The IEND chunk's CRC, as every PNG ends.
        assert_eq!(crc32(&[b"IEND", b""]), 0xAE42_6082);
        assert_eq!(crc32(&[b"123456789"]), 0xCBF4_3926);
    }

    #[test]
    fn a_certificate_png_is_ihdr_record_idat_iend() {
        let png = cert(true).render_png().unwrap();
        let kinds: Vec<[u8; 4]> = chunks(&png).into_iter().map(|(k, _)| k).collect();
        assert_eq!(kinds.first(), Some(b"IHDR"));
        assert_eq!(kinds.get(1), Some(b"iTXt"));
        assert_eq!(kinds.last(), Some(b"IEND"));
        assert!(kinds[2..kinds.len() - 1].iter().all(|k| k == b"IDAT"));
        // Re-assembled from its chunks it is the same file, and valid.
        assert_eq!(assemble(&chunks(&png)), png);
        assert!(matches!(check(&png, None), Verdict::Signed { .. }));
    }

    #[test]
    fn every_chunk_tplab_does_not_write_is_refused() {
        let png = cert(true).render_png().unwrap();
        let base = chunks(&png);
        let idat = base.iter().position(|(k, _)| k == b"IDAT").unwrap();
        let end = base.len() - 1;
        // (chunk, where it goes: index in the chunk list), as an attacker would place it.
        let cases: [(&[u8; 4], Vec<u8>, usize); 12] = [
            // APNG: animation control, a frame, frame data (Bob's frame after Alice's IDAT).
            (b"acTL", [0, 0, 0, 1, 0, 0, 0, 0].to_vec(), 1),
            (b"fcTL", vec![0; 26], idat),
            (b"fdAT", vec![0, 0, 0, 1, 120, 156, 3, 0, 0, 0, 0, 1], end),
            // Colour and gamma: a gamma of 1/100000 paints the picture black in browsers.
            (b"gAMA", 1u32.to_be_bytes().to_vec(), 1),
            (b"cHRM", vec![0; 32], 1),
            (b"iCCP", b"x\0\0\x78\x9c\x03\0\0\0\0\x01".to_vec(), 1),
            (b"sRGB", vec![0], 1),
            (b"tRNS", vec![0, 250, 0, 247, 0, 238], idat),
            // Other text (a second record in another chunk type), a private chunk, and a
            // chunk after the image's end.
            (b"tEXt", b"Comment\0Bob".to_vec(), idat),
            (
                b"zTXt",
                b"Comment\0\0\x78\x9c\x03\0\0\0\0\x01".to_vec(),
                idat,
            ),
            (b"prIV", vec![1, 2, 3], idat),
            (b"IDAT", vec![], end + 1),
        ];
        for (kind, data, at) in cases {
            let mut c = base.clone();
            c.insert(at, (*kind, data));
            let v = check(&assemble(&c), None);
            assert!(
                matches!(v, Verdict::Invalid(Invalid::ForeignChunk(_))),
                "{}: {v:?}",
                String::from_utf8_lossy(kind)
            );
        }
        // A second record, no record, chunks out of order, and bytes after IEND.
        let mut two = base.clone();
        two.insert(2, base[1].clone());
        assert_eq!(
            check(&assemble(&two), None),
            Verdict::Invalid(Invalid::TwoRecords)
        );
        let mut none = base.clone();
        none.remove(1);
        assert_eq!(
            check(&assemble(&none), None),
            Verdict::Invalid(Invalid::NoRecord)
        );
        let mut swapped = base.clone();
        swapped.swap(0, 1);
        let mut trailing = png.clone();
        trailing.extend_from_slice(b"Bob");
        for (what, bytes) in [("order", assemble(&swapped)), ("trailing", trailing)] {
            let v = check(&bytes, None);
            assert!(
                matches!(v, Verdict::Invalid(Invalid::ForeignChunk(_))),
                "{what}: {v:?}"
            );
            assert!(
                v.explain().contains("IHDR, its iTXt record, IDAT and IEND"),
                "{what}"
            );
        }
    }

    /// The certificate's PNG with its record in a zlib-compressed iTXt chunk of `text`.
    fn with_compressed_record(png: &[u8], text: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(text).unwrap();
        let mut data = format!("{PNG_KEYWORD}\0").into_bytes();
        data.extend_from_slice(&[1, 0, 0, 0]);
        data.extend(z.finish().unwrap());
        let mut c = chunks(png);
        c[1] = (*b"iTXt", data);
        assemble(&c)
    }

    #[test]
    fn a_compressed_record_verifies_within_the_cap_and_is_refused_over_it() {
        let c = cert(true);
        let png = c.render_png().unwrap();
        let record = serde_json::to_string(&c).unwrap();
        let ok = with_compressed_record(&png, record.as_bytes());
        assert!(matches!(check(&ok, None), Verdict::Signed { .. }));
        // 64 MiB of spaces after the record (valid JSON whitespace): about 64 KiB compressed.
        let mut huge = record.into_bytes();
        huge.resize(64 << 20, b' ');
        let bomb = with_compressed_record(&png, &huge);
        assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
        assert_eq!(
            check(&bomb, None),
            Verdict::Invalid(Invalid::TooLarge(MAX_RECORD_BYTES + 1))
        );
    }

    #[test]
    fn key_files_say_what_they_are_and_a_public_key_never_signs() {
        let k = key();
        let secret = k.to_file_text();
        let public = k.public().to_file_text();
        assert!(secret.starts_with(SECRET_KEY_TAG));
        assert!(public.starts_with(PUBLIC_KEY_TAG));
        // A public key, in any form, is refused as a secret key; and the other way round.
        let old_public = format!(
            "# tplab issuer public key (Ed25519, hex), fingerprint {}\n{}\n",
            k.public().fingerprint(),
            k.public().to_hex()
        );
        for text in [public.as_str(), old_public.as_str(), &k.public().to_hex()] {
            assert_eq!(
                IssuerKey::from_file_text(text).err(),
                Some(KeyTextError::PublicNotSecret),
                "{text}"
            );
        }
        assert_eq!(
            IssuerPublic::parse_text(&secret).err(),
            Some(KeyTextError::SecretNotPublic)
        );
        assert!(IssuerPublic::parse(&secret).unwrap_err().contains(".pub"));
        // Garbage is neither.
        for text in [
            "",
            "zz",
            "hello\n",
            &"g".repeat(64),
            "tplab-issuer-secret-key-v2\nnope\n",
        ] {
            assert!(
                matches!(
                    IssuerKey::from_file_text(text),
                    Err(KeyTextError::Garbage(_))
                ),
                "{text:?}"
            );
        }
        // Secret keys of the earlier format (their header names them secret) still load.
        let old_secret = format!("{OLD_SECRET_HEADER}\n{}\n", hex(&[7; 32]));
        assert_eq!(
            IssuerKey::from_file_text(&old_secret).unwrap().public(),
            k.public()
        );
        assert_eq!(IssuerPublic::parse(&old_public).unwrap(), k.public());
    }

    #[cfg(unix)]
    #[test]
    fn loading_a_secret_key_refuses_a_public_key_a_readable_key_and_a_fifo() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let k = key();
        let secret = dir.path().join("teacher.key");
        let public = dir.path().join("teacher.key.pub");
        std::fs::write(&secret, k.to_file_text()).unwrap();
        std::fs::write(&public, k.public().to_file_text()).unwrap();
        for p in [&secret, &public] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert_eq!(IssuerKey::load(&secret).unwrap().public(), k.public());
        let e = IssuerKey::load(&public).err().unwrap().to_string();
        assert!(
            e.contains("public key") && e.ends_with(&secret.display().to_string()),
            "{e}"
        );
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = IssuerKey::load(&secret).err().unwrap().to_string();
        assert!(e.contains("chmod 600") && e.contains("644"), "{e}");
        let fifo = dir.path().join("fifo.key");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = IssuerKey::load(&fifo).err().unwrap().to_string();
        assert!(e.contains("FIFO"), "{e}");
        let e = IssuerPublic::from_arg(fifo.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("FIFO"), "{e}");
    }

    /// A signed certificate's PNG with its Open Badges credential (no email), and the JWT.
    fn badged() -> (Certificate, Vec<u8>, String) {
        let c = cert(true);
        let at = crate::time::parse_date_time("2026-11-30T10:00:00Z").unwrap();
        let subject = crate::badge::Subject {
            email: Some("sule@example.org"),
            practical: Some(false),
            issued_at_s: at,
        };
        let jwt = crate::badge::issue(&c, &key(), &subject).unwrap().unwrap();
        let png = c.render_png_with(Some(&jwt)).unwrap();
        (c, png, jwt)
    }

    #[test]
    fn a_png_carries_the_record_then_the_open_badges_credential_and_both_verify() {
        let (c, png, jwt) = badged();
        let kinds: Vec<[u8; 4]> = chunks(&png).into_iter().map(|(k, _)| k).collect();
        assert_eq!(&kinds[..3], [*b"IHDR", *b"iTXt", *b"iTXt"]);
        assert!(chunks(&png)[2].1.starts_with(b"openbadgecredential\0"));
        match check(&png, None) {
            Verdict::Signed {
                badge: Some(b),
                cert,
                ..
            } => {
                assert_eq!(cert, c);
                assert_eq!(b.certificate_id, c.id);
                assert_eq!(b.practical, Some(false));
                assert!(b.email_matches("sule@example.org"));
            }
            v => panic!("{v:?}"),
        }
        let e = check(&png, None).explain();
        assert!(
            e.contains("Found: the tplab record and an Open Badges 3.0 credential"),
            "{e}"
        );
        assert!(e.contains("practical part not solved"), "{e}");
        // A certificate from before (no credential) still verifies, and says so.
        let old = c.render_png().unwrap();
        let e = check(&old, None).explain();
        assert!(e.starts_with("signed by ed25519:"), "{e}");
        assert!(e.contains("Found: the tplab record only"), "{e}");
        // The .jwt alone.
        let v = check(jwt.as_bytes(), Some(&key().public()));
        assert!(matches!(v, Verdict::Badge { .. }), "{v:?}");
        assert!(v.explain().contains("valid Open Badges 3.0 credential"));
        let other = IssuerKey::from_seed([8; 32]).public();
        assert!(matches!(
            check(jwt.as_bytes(), Some(&other)),
            Verdict::Invalid(Invalid::OtherIssuer { .. })
        ));
    }

    #[test]
    fn the_credential_chunk_is_accepted_only_right_after_the_record_and_once() {
        let (_, png, _) = badged();
        let base = chunks(&png);
        let foreign = |v: &Verdict| matches!(v, Verdict::Invalid(Invalid::ForeignChunk(_)));
        // Before the record.
        let mut before = base.clone();
        before.swap(1, 2);
        assert!(foreign(&check(&assemble(&before), None)));
        // Twice.
        let mut twice = base.clone();
        twice.insert(3, base[2].clone());
        assert!(foreign(&check(&assemble(&twice), None)));
        // After the image data.
        let mut late = base.clone();
        let badge = late.remove(2);
        let end = late.len() - 1;
        late.insert(end, badge);
        assert!(foreign(&check(&assemble(&late), None)));
        // Another iTXt keyword where the credential goes.
        let mut other = base.clone();
        other[2].1 = b"Comment\0\0\0\0\0Bob".to_vec();
        assert!(foreign(&check(&assemble(&other), None)));
        // The record again where the credential goes.
        let mut again = base.clone();
        again[2] = base[1].clone();
        assert_eq!(
            check(&assemble(&again), None),
            Verdict::Invalid(Invalid::TwoRecords)
        );
    }

    #[test]
    fn an_edited_or_foreign_credential_fails_the_whole_certificate() {
        let (c, png, jwt) = badged();
        let base = chunks(&png);
        let with = |token: &str| {
            let mut c2 = base.clone();
            let mut data = b"openbadgecredential\0\0\0\0\0".to_vec();
            data.extend_from_slice(token.as_bytes());
            c2[2].1 = data;
            assemble(&c2)
        };
        // One character of the signature changed.
        let mut bad = jwt.clone().into_bytes();
        let last = bad.len() - 2;
        bad[last] = if bad[last] == b'A' { b'B' } else { b'A' };
        let v = check(&with(&String::from_utf8(bad).unwrap()), None);
        assert!(matches!(v, Verdict::Invalid(Invalid::Badge(_))), "{v:?}");
        // A valid credential of another certificate (another score) by the same key.
        let mut other = c.clone();
        other.score_percent = 90;
        other.id = other.compute_id();
        let subject = crate::badge::Subject {
            email: None,
            practical: None,
            issued_at_s: crate::time::parse_date_time("2026-11-30T10:00:00Z").unwrap(),
        };
        let foreign_jwt = crate::badge::sign(
            &crate::badge::credential(&other, &key().public(), &subject, "00"),
            &key(),
        )
        .unwrap();
        let v = check(&with(&foreign_jwt), None);
        assert!(
            matches!(v, Verdict::Invalid(Invalid::BadgeMismatch(_))),
            "{v:?}"
        );
        assert!(
            v.explain().contains("not issued together"),
            "{}",
            v.explain()
        );
        // An unsigned record with a credential.
        let u = cert(false);
        let v = check(&u.render_png_with(Some(&jwt)).unwrap(), None);
        assert!(
            matches!(v, Verdict::Invalid(Invalid::BadgeMismatch(_))),
            "{v:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn verify_refuses_a_fifo_and_an_oversized_file_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("cert.png");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = verify_file(&fifo, None).unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        // A sparse file over the limit: refused from its size, nothing read.
        let big = dir.path().join("big.png");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_CERT_FILE_BYTES + 1)
            .unwrap();
        let e = verify_file(&big, None).unwrap_err().to_string();
        assert!(e.contains("limit"), "{e}");
    }
}
