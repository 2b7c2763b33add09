//! `tplab cert keygen` makes an issuer's key pair (and the public key as PEM and JWK);
//! `tplab cert show-key KEY` prints a key's fingerprint, did:key, PEM and JWK;
//! `tplab cert verify FILE [--issuer KEY] [--email EMAIL]` says whether a certificate is signed
//! and valid, unsigned, or invalid, which parts it found (the tplab record, the Open Badges 3.0
//! credential) and what that proves.

use anyhow::Context;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tplab_engine::text::escape_unsafe_keep_lines;
use tplab_quiz::cert::{
    public_of_any, verify_file, IssuerKey, IssuerPublic, Verdict, ISSUER_KEY_ENV,
};
use tplab_quiz::progress::{write_key_pair, Store};

/// Flags of `tplab cert`.
#[derive(Args, Debug, Clone)]
pub struct CertArgs {
    #[command(subcommand)]
    pub command: CertCommand,
}

/// `cert issue --practical`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Practical {
    Solved,
    Failed,
    None,
}

#[derive(Subcommand, Debug, Clone)]
pub enum CertCommand {
    /// Make an issuer key pair: the secret key FILE (owner-only, mode 0600) and FILE.pub, and the
    /// public key as FILE.pub.pem and FILE.pub.jwk (for Open Badges verifiers).
    Keygen {
        /// Where to write the secret key (default: issuer.key in the data folder, which the
        /// exam then signs with).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Replace an existing key (certificates signed with the old one then verify only with
        /// the old public key).
        #[arg(long)]
        force: bool,
    },
    /// Check a certificate (.json record or .png). Exit status: 0 signed and valid, 3 unsigned
    /// (consistent, but anyone could have written it), 1 invalid, 2 could not read the
    /// certificate or issuer key, or write the verdict.
    Verify {
        file: PathBuf,
        /// The issuer's public key (a .pub file, its 64 hex digits or its did:key): the
        /// certificate must be signed by it.
        #[arg(long)]
        issuer: Option<String>,
        /// The learner's email: the certificate's Open Badges credential must hold its salted
        /// hash (OB 3.0 §9.3, recipient verification).
        #[arg(long)]
        email: Option<String>,
    },
    /// Issue a signed certificate directly, as the holder of the issuer key (a sitting supervised
    /// outside tplab, or a test of the badge tools): the record, the PNG and the Open Badges 3.0
    /// credential, written into --out.
    Issue {
        /// The issuer's secret key file (made by `tplab cert keygen`).
        #[arg(long)]
        issuer_key: PathBuf,
        /// The learner's name, as the certificate shows it.
        #[arg(long)]
        name: String,
        /// The score in whole percent, from the exam's pass mark to 100.
        #[arg(long)]
        score: u32,
        /// The learner's email: only its salted hash goes into the credential.
        #[arg(long)]
        email: Option<String>,
        /// The practical part's result: solved, failed, or none (not sat).
        #[arg(long, default_value = "none")]
        practical: Practical,
        /// Language of the picture, and the one the credential's texts start with: en or tr.
        #[arg(long, default_value = "en")]
        lang: tplab_quiz::Lang,
        /// The exam version the certificate names.
        #[arg(long, default_value = "exam-v2")]
        exam_version: String,
        /// The sitting's seed (0: not sat in tplab).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The folder to write into (default: the certificates folder of the data folder).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Print an issuer key's public forms: fingerprint, did:key, PEM and JWK. KEY: the secret
    /// key file, its .pub file, the 64 hex digits or a did:key (a secret key is never printed).
    ShowKey { key: String },
}

pub fn run(args: CertArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CertCommand::Keygen { out, force } => {
            let out = match out {
                Some(p) => p,
                None => Store::from_env()?.issuer_key_path(),
            };
            outln!("{}", keygen(&out, force)?);
            Ok(ExitCode::SUCCESS)
        }
        CertCommand::Verify {
            file,
            issuer,
            email,
        } => Ok(verify(&file, issuer.as_deref(), email.as_deref())),
        CertCommand::Issue {
            issuer_key,
            name,
            score,
            email,
            practical,
            lang,
            exam_version,
            seed,
            out,
        } => {
            let out = match out {
                Some(p) => p,
                None => Store::from_env()?.certificates_dir(),
            };
            let practical = match practical {
                Practical::Solved => Some(true),
                Practical::Failed => Some(false),
                Practical::None => None,
            };
            let paths = issue(&IssueArgs {
                issuer_key: &issuer_key,
                name: &name,
                score,
                email: email.as_deref(),
                practical,
                lang,
                exam_version: &exam_version,
                seed,
                out: &out,
            })?;
            for p in paths {
                outln!("{}", p.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        CertCommand::ShowKey { key } => {
            let public = public_of_any(&key)?;
            outln!("{}", show_key(&public));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What `cert issue` issues.
pub struct IssueArgs<'a> {
    pub issuer_key: &'a std::path::Path,
    pub name: &'a str,
    pub score: u32,
    pub email: Option<&'a str>,
    pub practical: Option<bool>,
    pub lang: tplab_quiz::Lang,
    pub exam_version: &'a str,
    pub seed: u64,
    pub out: &'a std::path::Path,
}

/// `cert issue`: a signed record and its Open Badges credential, written into `out`; returns
/// the paths (PNG, JSON, JWT).
pub fn issue(a: &IssueArgs<'_>) -> anyhow::Result<Vec<PathBuf>> {
    use tplab_quiz::badge;
    if let Some(e) = a.email {
        badge::check_email(e).map_err(|e| anyhow::anyhow!("--email: {e}"))?;
    }
    let key = IssuerKey::load(a.issuer_key)?;
    let at = tplab_quiz::unix_now_s();
    let c = tplab_quiz::cert::Certificate::issue(
        a.name,
        &tplab_quiz::civil_date(at),
        a.score,
        a.exam_version,
        a.seed,
        a.lang,
        Some(&key),
    )?;
    let jwt = badge::issue(
        &c,
        &key,
        &badge::Subject {
            email: a.email,
            practical: a.practical,
            issued_at_s: at,
        },
    )
    .map_err(|e| anyhow::anyhow!("issuing the Open Badges credential: {e}"))?;
    std::fs::create_dir_all(a.out)
        .with_context(|| format!("creating the folder {}", a.out.display()))?;
    let (json, png, jwt) = c
        .write_with_badge(a.out, jwt.as_deref())
        .with_context(|| format!("writing the certificate into {}", a.out.display()))?;
    Ok([Some(png), Some(json), jwt].into_iter().flatten().collect())
}

/// A public key's forms, as `cert show-key` prints them.
pub fn show_key(public: &IssuerPublic) -> String {
    let jwk = serde_json::to_string_pretty(&public.to_jwk()).unwrap_or_default();
    format!(
        "fingerprint: {}\ndid:key: {}\nhex: {}\n\nPEM (SubjectPublicKeyInfo; openssl, openbadges-verifier -k):\n{}\nJWK (RFC 8037):\n{jwk}",
        public.fingerprint(),
        public.did_key(),
        public.to_hex(),
        public.to_pem(),
    )
}

/// Exit status of `cert verify` when the certificate or the issuer key could not be read, or
/// the verdict could not be written: no verdict was given.
pub const EXIT_UNREADABLE: u8 = 2;

/// `cert verify`: prints the verdict and returns its exit status ([`exit_code`]), or prints why
/// there is none and returns [`EXIT_UNREADABLE`].
fn verify(file: &std::path::Path, issuer: Option<&str>, email: Option<&str>) -> ExitCode {
    let verdict = issuer
        .map(IssuerPublic::from_arg)
        .transpose()
        .and_then(|issuer| verify_file(file, issuer.as_ref()));
    let verdict = match verdict {
        Ok(v) => v,
        Err(e) => {
            let msg = anyhow::Error::from(e);
            eprintln!(
                "error: {}
no verdict: the certificate was not checked",
                escape_unsafe_keep_lines(&tplab_engine::text::shorten_long_words(&format!(
                    "{msg:#}"
                )))
            );
            return ExitCode::from(EXIT_UNREADABLE);
        }
    };
    // The recipient check (OB 3.0 §9.3): the email's salted hash must be the credential's.
    let recipient = email.map(|e| match verdict.badge() {
        Some(b) if b.email_matches(e) => Ok(
            "Recipient: the email given is the one whose salted hash the credential holds."
                .to_string(),
        ),
        Some(b) if b.email_hash.is_none() => Err(
            "recipient not verified: the credential holds no email hash (issued without --email)"
                .to_string(),
        ),
        Some(_) => {
            Err("recipient not verified: the credential was issued to another email".to_string())
        }
        None => Err(
            "recipient not verified: no valid Open Badges credential to check the email against"
                .to_string(),
        ),
    });
    let mut text = verdict.explain();
    if let Some(r) = &recipient {
        text.push('\n');
        text.push_str(r.as_ref().unwrap_or_else(|e| e));
    }
    let mut out = std::io::stdout().lock();
    let written = writeln!(out, "{text}").and_then(|()| out.flush());
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(super::BROKEN_PIPE_EXIT);
        }
        eprintln!("error: cannot write the verdict to standard output: {e}");
        return ExitCode::from(EXIT_UNREADABLE);
    }
    if matches!(recipient, Some(Err(_))) {
        return ExitCode::FAILURE;
    }
    exit_code(&verdict)
}

/// 0 signed and valid, 3 unsigned, 1 invalid.
pub fn exit_code(v: &Verdict) -> ExitCode {
    match v {
        Verdict::Signed { .. } | Verdict::Badge { .. } => ExitCode::SUCCESS,
        Verdict::Unsigned { .. } => ExitCode::from(3),
        Verdict::Invalid(_) => ExitCode::FAILURE,
    }
}

/// Writes a new key pair: the secret key at `out` (mode 0600) and the public key at `out.pub`,
/// both or neither (temp files, then renames; see [`write_key_pair`]), never over an existing
/// file unless `force`. A bare file name means the current folder. Returns what to tell the
/// issuer.
pub fn keygen(out: &std::path::Path, force: bool) -> anyhow::Result<String> {
    let key = IssuerKey::generate()?;
    let public = key.public();
    let mut pub_path = out.as_os_str().to_owned();
    pub_path.push(".pub");
    let pub_path = PathBuf::from(pub_path);
    write_key_pair(
        (out, key.to_file_text().as_bytes()),
        (&pub_path, public.to_file_text().as_bytes()),
        force,
    )
    .context("writing the key pair (nothing was written)")?;
    // The public key's standard forms, derived from the pair just written.
    let suffixed = |ext: &str| {
        let mut p = pub_path.as_os_str().to_owned();
        p.push(ext);
        PathBuf::from(p)
    };
    let (pem_path, jwk_path) = (suffixed(".pem"), suffixed(".jwk"));
    let jwk = serde_json::to_string_pretty(&public.to_jwk())? + "\n";
    for (path, text) in [(&pem_path, public.to_pem()), (&jwk_path, jwk)] {
        tplab_quiz::progress::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing the public key as {}", path.display()))?;
    }
    Ok(format!(
        "issuer key {fp}\n  did:key: {did}\n  secret key: {} (owner-only; keep it private: whoever holds it can sign certificates)\n  public key: {} (and {}, {})\n\
         The exam signs with the secret key when it is issuer.key in the data folder, or named by \
         {ISSUER_KEY_ENV}=FILE or `tplab quiz --exam --issuer-key FILE`.\n\
         Publish the fingerprint {fp} (or the .pub file); anyone can then check a certificate with\n  \
         tplab cert verify CERTIFICATE --issuer {}",
        out.display(),
        pub_path.display(),
        pem_path.display(),
        jwk_path.display(),
        pub_path.display(),
        fp = public.fingerprint(),
        did = public.did_key(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed line of a secret key file.
    fn secret_hex(key: &std::path::Path) -> String {
        std::fs::read_to_string(key)
            .unwrap()
            .lines()
            .last()
            .unwrap()
            .to_string()
    }

    #[test]
    fn keygen_writes_an_owner_only_key_and_refuses_to_overwrite_it() {
        let dir = std::env::temp_dir().join(format!("tplab-cli-keygen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let key = dir.join("teacher.key");
        let text = keygen(&key, false).unwrap();
        assert!(text.starts_with("issuer key ed25519:"), "{text}");
        let secret = IssuerKey::load(&key).unwrap();
        let public = IssuerPublic::from_arg(&format!("{}.pub", key.display())).unwrap();
        assert_eq!(secret.public(), public);
        assert!(text.contains(&public.fingerprint()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // The public key's standard forms beside it, and what show-key prints.
        let pem = std::fs::read_to_string(format!("{}.pub.pem", key.display())).unwrap();
        assert_eq!(pem, public.to_pem());
        let jwk: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{}.pub.jwk", key.display())).unwrap(),
        )
        .unwrap();
        assert_eq!(jwk, public.to_jwk());
        assert!(text.contains(&public.did_key()), "{text}");
        let shown = show_key(&public_of_any(key.to_str().unwrap()).unwrap());
        assert!(
            shown.contains(&pem) && shown.contains(&public.did_key()),
            "{shown}"
        );
        assert!(
            !shown.contains(&secret_hex(&key)),
            "the secret is never shown"
        );
        assert_eq!(public_of_any(&public.did_key()).unwrap(), public);
        // cert issue: a signed certificate with its credential, the email checkable.
        let out = dir.join("issued");
        let paths = issue(&IssueArgs {
            issuer_key: &key,
            name: "Ece",
            score: 90,
            email: Some("ece@example.org"),
            practical: Some(true),
            lang: tplab_quiz::Lang::En,
            exam_version: "exam-v2",
            seed: 0,
            out: &out,
        })
        .unwrap();
        assert_eq!(paths.len(), 3, "{paths:?}");
        for p in &paths {
            let v = verify_file(p, Some(&public)).unwrap();
            assert_eq!(exit_code(&v), ExitCode::SUCCESS, "{}", v.explain());
            if !p.to_string_lossy().ends_with(".json") {
                let b = v.badge().expect("a credential");
                assert!(b.email_matches("ece@example.org") && b.practical == Some(true));
            }
        }
        let err = keygen(&key, false).unwrap_err();
        assert!(format!("{err:#}").contains("--force"), "{err:#}");
        assert_eq!(IssuerKey::load(&key).unwrap().public(), public, "kept");
        keygen(&key, true).unwrap();
        assert_ne!(IssuerKey::load(&key).unwrap().public(), public, "replaced");
        // A certificate signed with it verifies only against it.
        let c = tplab_quiz::cert::Certificate::issue(
            "Ece",
            "2026-11-30",
            95,
            "exam-v2",
            1,
            tplab_quiz::Lang::En,
            Some(&secret),
        )
        .unwrap();
        let (json, _) = c.write(&dir).unwrap();
        let v = verify_file(&json, Some(&public)).unwrap();
        assert_eq!(exit_code(&v), ExitCode::SUCCESS);
        let v = verify_file(&json, Some(&IssuerKey::load(&key).unwrap().public())).unwrap();
        assert_eq!(exit_code(&v), ExitCode::FAILURE);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
