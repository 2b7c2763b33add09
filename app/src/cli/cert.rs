//! `tplab cert keygen` makes an issuer's key pair; `tplab cert verify FILE [--issuer KEY]` says
//! whether a certificate is signed and valid, unsigned, or invalid, and what that proves.

use anyhow::Context;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tplab_engine::text::escape_unsafe_keep_lines;
use tplab_quiz::cert::{verify_file, IssuerKey, IssuerPublic, Verdict, ISSUER_KEY_ENV};
use tplab_quiz::progress::{write_key_pair, Store};

/// Flags of `tplab cert`.
#[derive(Args, Debug, Clone)]
pub struct CertArgs {
    #[command(subcommand)]
    pub command: CertCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub enum CertCommand {
    /// Make an issuer key pair: the secret key FILE (owner-only, mode 0600) and FILE.pub.
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
        /// The issuer's public key (a .pub file or its 64 hex digits): the certificate must be
        /// signed by it.
        #[arg(long)]
        issuer: Option<String>,
    },
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
        CertCommand::Verify { file, issuer } => Ok(verify(&file, issuer.as_deref())),
    }
}

/// Exit status of `cert verify` when the certificate or the issuer key could not be read, or
/// the verdict could not be written: no verdict was given.
pub const EXIT_UNREADABLE: u8 = 2;

/// `cert verify`: prints the verdict and returns its exit status ([`exit_code`]), or prints why
/// there is none and returns [`EXIT_UNREADABLE`].
fn verify(file: &std::path::Path, issuer: Option<&str>) -> ExitCode {
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
                escape_unsafe_keep_lines(&format!("{msg:#}"))
            );
            return ExitCode::from(EXIT_UNREADABLE);
        }
    };
    let mut out = std::io::stdout().lock();
    let written = writeln!(out, "{}", verdict.explain()).and_then(|()| out.flush());
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(super::BROKEN_PIPE_EXIT);
        }
        eprintln!("error: cannot write the verdict to standard output: {e}");
        return ExitCode::from(EXIT_UNREADABLE);
    }
    exit_code(&verdict)
}

/// 0 signed and valid, 3 unsigned, 1 invalid.
pub fn exit_code(v: &Verdict) -> ExitCode {
    match v {
        Verdict::Signed { .. } => ExitCode::SUCCESS,
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
    Ok(format!(
        "issuer key {fp}\n  secret key: {} (owner-only; keep it private: whoever holds it can sign certificates)\n  public key: {}\n\
         The exam signs with the secret key when it is issuer.key in the data folder, or named by \
         {ISSUER_KEY_ENV}=FILE or `tplab quiz --exam --issuer-key FILE`.\n\
         Publish the fingerprint {fp} (or the .pub file); anyone can then check a certificate with\n  \
         tplab cert verify CERTIFICATE --issuer {}",
        out.display(),
        pub_path.display(),
        pub_path.display(),
        fp = public.fingerprint(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
