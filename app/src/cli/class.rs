//! `tplab class`: a live class on this machine. Starts the class server (tplab-class: HTTP and
//! WebSocket, SQLite in the data folder), serves the web edition from `dist/` when it is built,
//! and prints the join address, the short join code, a QR code and the teacher's console link.
//! A class left running (Ctrl-C, a crash) is resumed by the next start on the same data folder;
//! `--new` ends it and starts another; `--export csv|json` writes the latest class's results.

use anyhow::{bail, Context};
use clap::Args;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use tplab_class::server::{precompress, Stopped};
use tplab_class::store::Store;
use tplab_class::{Limits, ServerConfig};

#[derive(Args, Clone, Debug)]
pub struct ClassArgs {
    /// The address to listen on: 127.0.0.1 (this machine only), 0.0.0.0 (every interface), or
    /// this machine's address on the room's network (students' devices must reach it).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    #[arg(long, default_value_t = 8036)]
    pub port: u16,
    /// The address students open, when it is not the bind address (with --bind 0.0.0.0:
    /// http://192.168.1.20:8036).
    #[arg(long, value_parser = parse_url)]
    pub url: Option<String>,
    /// The web edition's folder (scripts/web-build.sh writes dist/).
    #[arg(long, default_value = "dist")]
    pub dist: PathBuf,
    /// Where classes are kept (default: `classes` in the data folder, TPLAB_DATA_DIR).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// No names: students are "Student 1", "Student 2", …
    #[arg(long)]
    pub anonymous: bool,
    /// End the class left running in the data folder and start a new one.
    #[arg(long)]
    pub new: bool,
    /// Connections one address may open (raise it when many students share one address), 1 to
    /// 100000.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_per_address: u64,
    /// Write the latest class's results to stdout (csv: one row per student and question; json:
    /// everything) and exit.
    #[arg(long, value_parser = ["csv", "json"])]
    pub export: Option<String>,
    /// Open this machine's app as the teacher's console, connected to the class (the server
    /// runs as long as the window is open).
    #[arg(long, conflicts_with = "export")]
    pub console: bool,
    /// The issuer key that signs the certificates of students who pass the exam in class
    /// (`tplab cert keygen`; default: issuer.key in the data folder, if there is one). It stays
    /// on this machine. Without one the exam is graded and no certificate is issued.
    #[arg(long)]
    pub issuer_key: Option<PathBuf>,
}

/// Set when Ctrl-C paused the class: `tplab class --console` then closes its window too (the
/// console without its server would only try to reconnect).
pub static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn data_dir(a: &ClassArgs) -> anyhow::Result<PathBuf> {
    match &a.data {
        Some(d) => Ok(d.clone()),
        None => Ok(tplab_quiz::progress::Store::from_env()
            .context("no data folder: set TPLAB_DATA_DIR or pass --data")?
            .root()
            .join("classes")),
    }
}

/// The bind address from the flags, with an error that names the fix.
pub fn bind_addr(bind: &str, port: u16) -> anyhow::Result<SocketAddr> {
    let ip: IpAddr = bind.trim().trim_matches(['[', ']']).parse().map_err(|_| {
        anyhow::anyhow!(
            "--bind {bind:?} is not an IP address: use 127.0.0.1 (this machine only), 0.0.0.0 \
             (every interface) or this machine's address on the room's network, e.g. 192.168.1.20"
        )
    })?;
    if port < 1024 {
        bail!(
            "--port {port} is below 1024 (a port only the system's administrator may open, or 0, \
             which is not one students can type): choose one from 1024 to 65535, e.g. 8036"
        );
    }
    Ok(SocketAddr::new(ip, port))
}

/// `--url`: an http or https address (it becomes the join link and its QR code).
fn parse_url(s: &str) -> Result<String, String> {
    let lower = s.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
        .ok_or_else(|| {
            "expected an http:// or https:// address students can open, e.g. \
             http://192.168.1.20:8036"
                .to_string()
        })?;
    if rest.is_empty() || rest.starts_with('/') || s.len() > 2000 {
        return Err("expected an address with a host, e.g. http://192.168.1.20:8036".to_string());
    }
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("an address has no spaces or control characters".to_string());
    }
    Ok(s.to_string())
}

/// The QR code of `url` as terminal lines (two rows of modules per line).
fn qr_lines(url: &str) -> anyhow::Result<String> {
    use qrcode::render::unicode::Dense1x2;
    let code = qrcode::QrCode::new(url.as_bytes())
        .context("the join address is too long for a QR code")?;
    Ok(code
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

/// Runs the class until it ends or is interrupted; `console` receives the teacher's link
/// (over loopback when the class listens on every interface) once the server listens.
pub fn run(
    a: ClassArgs,
    console: Option<std::sync::mpsc::Sender<String>>,
) -> anyhow::Result<ExitCode> {
    let data = data_dir(&a)?;
    if let Some(format) = &a.export {
        let store = Store::open(&data)?;
        let Some(rec) = store.latest_class()? else {
            bail!(
                "no class in {}: run `tplab class` first (or pass --data with the folder a class used)",
                data.display()
            );
        };
        match format.as_str() {
            "json" => outln!("{}", tplab_class::export::json(&rec)),
            _ => out!("{}", tplab_class::export::csv(&rec)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let addr = bind_addr(&a.bind, a.port)?;
    let dist = a.dist.join("index.html").is_file().then(|| a.dist.clone());
    match &dist {
        Some(d) => match precompress(d) {
            Ok((n, before, after)) if n > 0 => eprintln!(
                "web edition: {} ({n} files, {:.1} MB, {:.1} MB compressed)",
                d.display(),
                before as f64 / 1e6,
                after as f64 / 1e6
            ),
            Ok(_) => {}
            Err(e) => eprintln!(
                "web edition: cannot write compressed copies into {} ({e}); serving it \
                 compressed on the fly",
                d.display()
            ),
        },
        None => eprintln!(
            "note: no web edition in {} (no index.html): students' browsers will be told to wait; \
             build it with scripts/web-build.sh, or pass --dist",
            a.dist.display()
        ),
    }
    let mut config = ServerConfig::new(addr, data.clone());
    config.dist = dist;
    config.anonymous = a.anonymous;
    config.new_class = a.new;
    config.log_stderr = true;
    config.issuer_key = match &a.issuer_key {
        Some(k) => Some(k.clone()),
        None => tplab_quiz::progress::Store::from_env()
            .ok()
            .map(|s| s.issuer_key_path())
            .filter(|p| p.is_file()),
    };
    if let Some(k) = &config.issuer_key {
        eprintln!(
            "certificates from the exam in class are signed with {}",
            k.display()
        );
    }
    let defaults = Limits::default();
    config.limits = Limits {
        connections_per_address: usize::try_from(a.max_per_address).unwrap_or(usize::MAX),
        // A room behind one address (NAT) mistypes the code more often in all: the limit on
        // wrong codes grows with the devices the address may hold (still a few thousand
        // guesses a class against 31^6 codes).
        join_attempts: defaults
            .join_attempts
            .max(u32::try_from(2 * a.max_per_address).unwrap_or(u32::MAX)),
        ..defaults
    };
    let url_arg = a.url.clone();
    let stopped = tplab_class::serve_blocking(config, |r| {
        let base = match &url_arg {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => format!("http://{}", r.addr),
        };
        let join = format!("{base}/?class={}", r.code);
        if let Some(tx) = &console {
            let local = if r.addr.ip().is_unspecified() {
                format!("http://127.0.0.1:{}", r.addr.port())
            } else {
                format!("http://{}", r.addr)
            };
            let _ = tx.send(format!("{local}/#teacher={}", r.secret));
        }
        outln!(
            "{} class — data in {}",
            if r.resumed {
                "Resumed the"
            } else {
                "Started a"
            },
            data.display()
        );
        outln!();
        outln!("  Join: {join}");
        outln!("  Code: {}", r.code);
        outln!();
        match qr_lines(&join) {
            Ok(q) => outln!("{q}"),
            Err(e) => outln!("  (no QR code: {e})"),
        }
        outln!();
        outln!(
            "  Teacher's console (keep it private): {base}/#teacher={}",
            r.secret
        );
        outln!("  Export: tplab class --export csv > class.csv");
        if r.addr.ip().is_loopback() {
            outln!();
            outln!(
                "  This machine only: to let students' devices in, restart with --bind set to \
                 this machine's address on the room's network (or 0.0.0.0 with --url)."
            );
        } else if r.addr.ip().is_unspecified() && url_arg.is_none() {
            outln!();
            outln!(
                "  Listening on every interface: pass --url http://<this machine's address>:{} \
                 so the join link and QR code name an address students can reach.",
                r.addr.port()
            );
        }
        outln!("  Ctrl-C pauses the class (the next start resumes it); the console ends it.");
        crate::cli::flush_stdout();
    })?;
    match stopped {
        Stopped::Ended => outln!("The class has ended; its join code no longer works."),
        Stopped::Interrupted => {
            outln!("Paused: `tplab class` on the same data folder resumes the class.");
            crate::cli::flush_stdout();
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_addresses_name_the_fix() {
        assert!(bind_addr("127.0.0.1", 8036).is_ok());
        assert!(bind_addr("::1", 8036).is_ok());
        let e = bind_addr("localhost:80", 8036).unwrap_err().to_string();
        assert!(e.contains("0.0.0.0"), "{e}");
        assert!(bind_addr("127.0.0.1", 0).is_err());
    }

    #[test]
    fn the_qr_code_renders() {
        let q = qr_lines("http://192.168.1.20:8036/?class=ABC234").unwrap();
        assert!(q.lines().count() > 10);
    }
}
