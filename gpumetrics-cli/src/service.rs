// SPDX-License-Identifier: MPL-2.0
//! `gpumetrics monitor CONFIG`: every channel of a configuration file ([`config`]) in one
//! process, one pipeline per channel ([`channel`]), until SIGINT or SIGTERM; then every
//! channel stops cleanly (its last window and summary said) and the command exits 0.
//!
//! SIGHUP reads the file again: new channels start, removed ones stop (their series go),
//! changed ones restart, the others run on untouched. A file that is refused on reload is
//! reported and the channels keep running as they were.
//!
//! What happens is said as events on stdout ([`events`]); `[prometheus] address` serves
//! every channel's series on one endpoint, which the service holds open while it runs
//! ([`gstgpumetrics::Channels`]).

mod channel;
mod config;
mod events;
mod signals;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Arg, ArgAction, Command, value_parser};
use serde_json::json;

use crate::cli::{EXIT_RUN_ERROR, EXIT_USAGE};
use channel::{Handle, Shared};
use events::{Events, Format};

/// How often the service looks at its signals.
const TICK: Duration = Duration::from_millis(100);

fn command() -> Command {
    Command::new("gpumetrics monitor")
        .about("Runs every channel of a configuration file, self-healing, until SIGINT or SIGTERM")
        .long_about(
            "Runs every channel of a configuration file (TOML) in one process: one pipeline \
             per channel, rebuilt with backoff when its input stops delivering frames or \
             fails; one Prometheus endpoint for all ([prometheus] address); events as JSON \
             lines on stdout. SIGHUP reads the file again (new channels start, removed ones \
             stop, changed ones restart); SIGINT or SIGTERM stops every channel cleanly.\n\n\
             A channel's keys are the options of `gpumetrics` with the same names and syntax \
             (metrics, window, alert, backend, decode, vmaf-model, ...), plus name, \
             distorted, reference, signal-timeout and stats-file; [defaults] gives any of \
             them to every channel. Exit status: 0 stopped by a signal, 1 the service \
             cannot start (its Prometheus address), 2 a bad file (with its line and key).",
        )
        .arg(
            Arg::new("config")
                .value_name("CONFIG")
                .required(true)
                .value_parser(value_parser!(PathBuf))
                .help("The configuration file (TOML)"),
        )
        .arg(
            Arg::new("format")
                .long("format")
                .short('f')
                .value_parser(value_parser!(Format))
                .default_value("jsonl")
                .help("Events as JSON lines (jsonl) or as text lines (table)"),
        )
        .arg(
            Arg::new("check")
                .long("check")
                .action(ArgAction::SetTrue)
                .help("Check the file and exit: 0 when it is good, 2 with its errors"),
        )
}

/// Runs `gpumetrics monitor` with the command line `argv` (`gpumetrics monitor ...`): its
/// exit status.
pub fn main(argv: Vec<OsString>) -> i32 {
    let matches = match command().try_get_matches_from(argv.into_iter().skip(1)) {
        Ok(m) => m,
        Err(e) => e.exit(),
    };
    let path = matches
        .get_one::<PathBuf>("config")
        .cloned()
        .unwrap_or_default();
    let format = matches
        .get_one::<Format>("format")
        .copied()
        .unwrap_or(Format::Jsonl);
    if let Err(e) = gst::init() {
        eprintln!("gpumetrics monitor: error: cannot initialise GStreamer: {e}");
        return EXIT_RUN_ERROR;
    }
    if let Err(e) = gstgpumetrics::plugin_register_static() {
        eprintln!("gpumetrics monitor: error: cannot register the gpumetrics element: {e}");
        return EXIT_RUN_ERROR;
    }
    let config = match config::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gpumetrics monitor: error: {e}");
            return EXIT_USAGE;
        }
    };
    if matches.get_flag("check") {
        eprintln!(
            "gpumetrics monitor: {}: {} channel{}, good",
            path.display(),
            config.channels.len(),
            if config.channels.len() == 1 { "" } else { "s" }
        );
        return 0;
    }
    signals::install();
    let events = Arc::new(Events::new(format, Box::new(std::io::stdout())));
    let prometheus = match &config.prometheus {
        Some(address) => match gstgpumetrics::Channels::open(address) {
            Ok(c) => {
                events.emit(
                    None,
                    "prometheus",
                    events::keys([("url", json!(format!("http://{}/metrics", c.bound())))]),
                );
                Some((address.clone(), Arc::new(c)))
            }
            Err(e) => {
                eprintln!("gpumetrics monitor: error: {e}");
                return EXIT_RUN_ERROR;
            }
        },
        None => None,
    };
    let shared = Arc::new(Shared::new(events, prometheus));
    let mut running: Vec<Handle> = Vec::new();
    for spec in config.channels {
        match Handle::start(spec, shared.clone()) {
            Ok(h) => running.push(h),
            Err(e) => {
                eprintln!("gpumetrics monitor: error: cannot start a channel's thread: {e}");
                stop_all(running);
                return EXIT_RUN_ERROR;
            }
        }
    }
    while !signals::stop_requested() {
        std::thread::sleep(TICK);
        if signals::take_reload() {
            running = reload(&path, running, &shared);
        }
    }
    shared.events.emit(
        None,
        "stopping",
        events::keys([("channels", json!(running.len()))]),
    );
    stop_all(running);
    shared.events.emit(None, "stopped", Default::default());
    0
}

/// Stops every channel: all asked first, so that they drain together, then each waited for.
fn stop_all(running: Vec<Handle>) {
    for h in &running {
        h.ask_stop();
    }
    for h in running {
        h.join();
    }
}

/// SIGHUP: the file read again and the channels brought in line with it; the running set
/// as it was when the file is refused.
fn reload(path: &std::path::Path, running: Vec<Handle>, shared: &Arc<Shared>) -> Vec<Handle> {
    let config = match config::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gpumetrics monitor: reload refused, the channels run on: {e}");
            shared.events.emit(
                None,
                "reload-refused",
                events::keys([("error", json!(e.to_string()))]),
            );
            return running;
        }
    };
    if config.prometheus.as_deref() != shared.prometheus.as_ref().map(|(a, _)| a.as_str()) {
        shared.events.emit(
            None,
            "reload-note",
            events::keys([(
                "note",
                json!("[prometheus] address changed: it takes effect when the service restarts"),
            )]),
        );
    }
    let mut kept = Vec::new();
    let mut leaving = Vec::new();
    let (mut added, mut removed, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    for h in running {
        match config.channels.iter().find(|c| c.name == h.spec.name) {
            Some(c) if c.same_as(&h.spec) => kept.push(h),
            Some(_) => {
                changed.push(h.spec.name.clone());
                leaving.push(h);
            }
            None => {
                removed.push(h.spec.name.clone());
                leaving.push(h);
            }
        }
    }
    for h in &leaving {
        h.ask_stop();
    }
    for h in leaving {
        h.join();
    }
    if let Some((_, service)) = &shared.prometheus {
        for name in &removed {
            service.remove(name);
        }
    }
    for spec in config.channels {
        if kept.iter().any(|h| h.spec.name == spec.name) {
            continue;
        }
        if !changed.contains(&spec.name) {
            added.push(spec.name.clone());
        }
        match Handle::start(spec, shared.clone()) {
            Ok(h) => kept.push(h),
            Err(e) => eprintln!("gpumetrics monitor: cannot start a channel's thread: {e}"),
        }
    }
    shared.events.emit(
        None,
        "reloaded",
        events::keys([
            ("added", json!(added)),
            ("removed", json!(removed)),
            ("changed", json!(changed)),
            ("channels", json!(kept.len())),
        ]),
    );
    kept
}
