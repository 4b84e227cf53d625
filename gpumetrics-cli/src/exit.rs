// SPDX-License-Identifier: MPL-2.0
//! How the command ends: an error carries its exit status ([`Failure`]: a usage error, a
//! run error, no pair compared), and a closed stdout (`gpumetrics ... | head`) ends it the
//! way it ends other tools, by SIGPIPE.

use std::io::Write;

use anyhow::{Context, Result};

use crate::cli;

/// An error with the exit status it ends the command with.
pub struct Failure {
    pub status: i32,
    pub error: anyhow::Error,
}

/// A usage error: the arguments cannot give a run (checked before anything is decoded).
pub fn usage(error: anyhow::Error) -> Failure {
    Failure {
        status: cli::EXIT_USAGE,
        error,
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure {
            status: cli::EXIT_RUN_ERROR,
            error,
        }
    }
}

/// Writes `text` to stdout; the error (a full disk, a closed pipe) is the command's.
pub fn print_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .context("writing the summary to stdout")
}

/// Whether `error` comes from writing to a closed pipe (`gpumetrics ... | head`).
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Ends the process the way a closed pipe ends other tools: by SIGPIPE, quietly (the
/// shell's status 141; `set -o pipefail` treats it as it treats `head`'s other writers).
pub fn die_of_sigpipe() -> ! {
    // SAFETY: restoring the default disposition and raising the signal in this thread; the
    // process ends there (Rust ignores SIGPIPE at start-up so that writes return EPIPE).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + libc::SIGPIPE)
}
