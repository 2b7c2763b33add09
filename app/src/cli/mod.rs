//! The command-line subcommands, one file each, and the stdout writer they print through.
//!
//! Printing goes through [`outln!`] and [`out!`] instead of `println!`/`print!`: a closed pipe
//! (`tplab plan … | head -1`) ends the program quietly with exit status 141, as Unix tools
//! killed by SIGPIPE do, and any other write failure (a full disk: `> /dev/full`) is an error
//! message and exit status 1, never a panic. Control characters in what is printed (a string
//! from an input file) are written escaped, on stdout and in error messages.

use std::io::Write;

/// `println!` to stdout through [`write_stdout`].
macro_rules! outln {
    () => {
        $crate::cli::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` to stdout through [`write_stdout`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))
    };
}

/// Exit status after a closed stdout pipe: 128 + SIGPIPE, what a shell reports for a tool the
/// signal ended.
pub const BROKEN_PIPE_EXIT: i32 = 141;

/// Writes to stdout; on failure ends the process through [`stdout_failed`]. Every control or
/// text-direction character but newline and tab is written escaped (`\u{1b}`), so a string from
/// an input file (a config.json's `model_type`, a hardware file's names) cannot send the
/// terminal escape sequences.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    let text = match args.as_str() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(args.to_string()),
    };
    let safe = tplab_engine::text::escape_unsafe_keep_lines(&text);
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(safe.as_bytes()) {
        stdout_failed(&e);
    }
}

/// Ends the process after a failed write to stdout: quietly (status 141) for a closed pipe,
/// with a message (status 1) for anything else.
pub fn stdout_failed(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(BROKEN_PIPE_EXIT);
    }
    eprintln!("error: cannot write to standard output: {e}");
    std::process::exit(1);
}

/// The version of the shape of every `--json` document and `--csv` table (bump it when a key
/// changes meaning or goes away; new keys do not bump it).
pub const JSON_SCHEMA: u32 = 1;

/// What every JSON document starts with: `schema` ([`JSON_SCHEMA`]), the tplab version, the
/// command and the command line it answers for (`argv`, as given).
pub fn json_stamp(command: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), JSON_SCHEMA.into());
    m.insert("tplab_version".into(), env!("CARGO_PKG_VERSION").into());
    m.insert("command".into(), command.into());
    m.insert(
        "argv".into(),
        std::env::args()
            .skip(1)
            .map(serde_json::Value::from)
            .collect::<Vec<_>>()
            .into(),
    );
    m
}

/// `value` as pretty JSON with [`json_stamp`]'s keys first: merged into an object (a key the
/// value has itself wins), or around anything else as `result`.
pub fn json_text(command: &str, value: &impl serde::Serialize) -> anyhow::Result<String> {
    let mut out = json_stamp(command);
    match serde_json::to_value(value)? {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                out.insert(k, v);
            }
        }
        other => {
            out.insert("result".into(), other);
        }
    }
    Ok(serde_json::to_string_pretty(&serde_json::Value::Object(
        out,
    ))?)
}

/// Flushes stdout at the end of a command (a full disk may only show here).
pub fn flush_stdout() {
    if let Err(e) = std::io::stdout().lock().flush() {
        stdout_failed(&e);
    }
}

/// "1 node", "8 nodes".
pub fn nodes(n: usize) -> String {
    if n == 1 {
        "1 node".to_string()
    } else {
        format!("{n} nodes")
    }
}

/// A list flag (`--tp 1,2,4`) holds each value once and at most `max` values: a repeated
/// value would be computed again for nothing, and a long list is work the user did not mean.
pub fn check_list(flag: &str, values: &[usize], max: usize) -> anyhow::Result<()> {
    if values.len() > max {
        anyhow::bail!(
            "{flag} lists {} values; at most {max} a run: give fewer, or split the run",
            values.len()
        );
    }
    if let Some(v) = first_repeat(values) {
        anyhow::bail!("{flag} lists {v} more than once: give each value once");
    }
    Ok(())
}

/// The first value of `values` that an earlier one repeats.
pub fn first_repeat<T: Eq + std::hash::Hash>(values: &[T]) -> Option<&T> {
    let mut seen = std::collections::HashSet::new();
    values.iter().find(|v| !seen.insert(*v))
}

pub mod cert;
pub mod class;
pub mod collective;
pub mod design;
pub mod gpu;
pub mod lessons;
pub mod memory;
pub mod moe;
pub mod pipeline;
pub mod plan;
pub mod precision;
pub mod quiz;
pub mod run;
pub mod serve;
pub mod train;
pub mod vocab;
