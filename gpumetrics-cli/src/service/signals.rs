// SPDX-License-Identifier: MPL-2.0
//! The service's signals: SIGINT and SIGTERM stop it (a second one, while the channels
//! drain, ends the process at once with status 130), SIGHUP reloads its file. The
//! handlers only set flags (all they may do in a signal handler); the service's loop reads
//! them.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: `_exit` is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

extern "C" fn on_reload(_: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
}

/// Installs the handlers.
pub fn install() {
    let set = |signal: libc::c_int, handler: extern "C" fn(libc::c_int)| {
        // SAFETY: a zeroed sigaction with the handler and an empty mask is valid; the
        // handlers only touch atomics (and `_exit`).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    };
    set(libc::SIGINT, on_stop);
    set(libc::SIGTERM, on_stop);
    set(libc::SIGHUP, on_reload);
}

/// Whether SIGINT or SIGTERM came.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Whether SIGHUP came since the last call.
pub fn take_reload() -> bool {
    RELOAD.swap(false, Ordering::SeqCst)
}
