//! An export into an existing folder, killed at every rename and every fsync it makes (strace's
//! fault injection delivers SIGKILL on entry to the N-th call of one syscall): whatever the
//! instant, the folder holds the whole old set or the whole new set, with the user's own file,
//! and the next export leaves nothing behind.
//!
//! Needs `strace` (Linux). Without it the test says so and passes, unless
//! `TPLAB_REQUIRE_STRACE=1` (CI sets it), where a missing strace fails it.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;
use tplab_engine::export::ExportSet;

/// The files of a set.
const NAMES: [&str; 3] = ["tensors.safetensors", "shards.safetensors", "trace.json"];

/// Set by the parent: the child test below exports into this folder.
const CHILD_ENV: &str = "TPLAB_EXPORT_KILL_CHILD";

/// The child: one export of the new set ("seed 2") into the folder `$TPLAB_EXPORT_KILL_CHILD`.
/// Without the variable (an ordinary test run) it does nothing.
#[test]
fn child_export() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let target = PathBuf::from(dir);
    let mut set = ExportSet::new(&target).expect("start");
    for n in NAMES {
        set.write(n, b"seed 2").expect("write");
    }
    set.commit().expect("commit");
}

fn strace_available() -> bool {
    Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A fresh folder with the old set ("seed 1") and a user's own file.
fn fresh(parent: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(parent);
    let target = parent.join("out");
    std::fs::create_dir_all(&target).expect("mkdir");
    for n in NAMES {
        std::fs::write(target.join(n), "seed 1").expect("write old");
    }
    std::fs::write(target.join("mine.txt"), "keep").expect("write mine");
    target
}

/// Which whole set the folder holds ("seed 1" or "seed 2"), or why it holds none.
fn whole_set(target: &Path) -> Result<String, String> {
    let files: Vec<String> = NAMES
        .iter()
        .map(|n| std::fs::read_to_string(target.join(n)).unwrap_or_else(|e| format!("<{e}>")))
        .collect();
    let mine = std::fs::read_to_string(target.join("mine.txt")).unwrap_or_default();
    if mine != "keep" {
        return Err(format!("the user's file is {mine:?}; set {files:?}"));
    }
    if files.iter().all(|f| f == &files[0]) && (files[0] == "seed 1" || files[0] == "seed 2") {
        Ok(files[0].clone())
    } else {
        Err(format!("not a whole set: {files:?}"))
    }
}

/// Everything in `parent` but the folder `out`: what a killed export left behind.
fn leftovers(parent: &Path) -> Vec<String> {
    std::fs::read_dir(parent)
        .expect("readable")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "out")
        .collect()
}

#[test]
fn a_kill_at_every_rename_and_fsync_leaves_a_whole_set() {
    if !strace_available() {
        assert!(
            std::env::var_os("TPLAB_REQUIRE_STRACE").is_none(),
            "TPLAB_REQUIRE_STRACE is set but strace cannot run; install it (apt-get install strace)"
        );
        eprintln!("strace is not installed: the kill-at-every-syscall test did not run");
        return;
    }
    let exe = std::env::current_exe().expect("test binary");
    let parent = std::env::temp_dir().join(format!("tplab-export-kill-{}", std::process::id()));
    let mut kills = 0;
    let mut exchange_kills = 0;
    for syscall in ["rename", "renameat", "renameat2", "fsync", "fdatasync"] {
        for n in 1.. {
            let target = fresh(&parent);
            let out = Command::new("strace")
                .args(["-f", "-qq", "-o", "/dev/null", "-e"])
                // Injection applies to traced calls only.
                .arg(format!("trace={syscall}"))
                .arg("-e")
                .arg(format!("inject={syscall}:signal=KILL:when={n}"))
                .arg(&exe)
                .args(["--exact", "child_export", "--test-threads=1", "--quiet"])
                .env(CHILD_ENV, &target)
                .output()
                .expect("strace runs");
            let killed = !out.status.success();
            let state = whole_set(&target);
            assert!(
                state.is_ok(),
                "killed at {syscall} #{n}: {}\n{}",
                state.unwrap_err(),
                String::from_utf8_lossy(&out.stderr)
            );
            if !killed {
                // The export ran whole: there was no N-th call to kill at.
                assert_eq!(
                    state.as_deref(),
                    Ok("seed 2"),
                    "{syscall} #{n}: complete run"
                );
                assert!(leftovers(&parent).is_empty(), "{:?}", leftovers(&parent));
                break;
            }
            kills += 1;
            if syscall == "renameat2" {
                exchange_kills += 1;
            }
            // The next export (its start: recovery) leaves a whole set and nothing else. The
            // killed process is gone, so its staging folder counts as abandoned.
            drop(ExportSet::new(&target).expect("recover"));
            let after = whole_set(&target);
            assert!(
                after.is_ok(),
                "after {syscall} #{n}: {}",
                after.unwrap_err()
            );
            assert!(
                leftovers(&parent).is_empty(),
                "after {syscall} #{n}: {:?}",
                leftovers(&parent)
            );
            assert!(n < 100, "{syscall}: more than 100 calls in one export");
        }
    }
    // An exchange, its syncs and the staging writes' syncs: a handful of kill points at least.
    assert!(kills >= 6, "only {kills} kill points");
    assert!(
        exchange_kills >= 1,
        "the export never called renameat2 (no exchange)"
    );
    let _ = std::fs::remove_dir_all(&parent);
}
