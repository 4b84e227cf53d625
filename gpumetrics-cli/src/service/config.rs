// SPDX-License-Identifier: MPL-2.0
//! The configuration file of `gpumetrics monitor` (TOML): `[prometheus] address`, the
//! `[defaults]` every channel starts from, and one `[[channel]]` table per channel.
//!
//! A channel's keys are the command's options, by the same names and with the same syntax
//! (`metrics = "psnr,vmaf"`, `window = "1s"`, `alert = ["vmaf<70:2s"]`, `vmaf-model = ...`):
//! each key becomes the option it names and the channel's arguments are checked as the
//! command checks its own ([`cli::from_matches`], [`plan::check`]), so a channel accepts
//! exactly what `gpumetrics REF DIST` accepts. Beside them a channel has `name`,
//! `distorted`, `reference`, `signal-timeout` and `stats-file`. The options that make no
//! sense for a channel of a service (the output of one run, its end, alignment: [`NOT_KEYS`])
//! are refused with the reason.
//!
//! A bad file is refused as a whole, before anything starts, with the file, the line and
//! the key ([`ConfigError`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::{DeTable, DeValue};

use crate::cli::{self, Args};
use crate::monitor;
use crate::plan::{self, Plan};

/// The options of the command that a channel cannot take, and why.
const NOT_KEYS: &[(&str, &str)] = &[
    ("inputs", "give `distorted` and `reference`"),
    (
        "format",
        "the service writes events (--format of `gpumetrics monitor`)",
    ),
    ("output", "a channel writes its records with `stats-file`"),
    ("plot", "a service draws no plots"),
    ("map", "a service writes no map files"),
    ("map-video", "a service writes no map files"),
    ("offset", "live channels are paired by running time"),
    (
        "align-frames",
        "live alignment (`align = \"auto\"`) judges each offset on the frames as they come",
    ),
    ("frames", "a channel runs until the service stops"),
    ("fail", "a service judges with alerts (`alert`)"),
    ("fail-below", "a service judges with alerts (`alert`)"),
    ("threads", "one setting of the process"),
    (
        "prometheus",
        "one endpoint for every channel: [prometheus] address",
    ),
    ("quiet", "one setting of the process"),
    ("verbose", "one setting of the process"),
    ("help", "not a setting"),
    ("version", "not a setting"),
];

/// The keys of a channel that are not options of the command.
const OWN_KEYS: &[&str] = &[
    "name",
    "distorted",
    "reference",
    "signal-timeout",
    "stats-file",
];

/// How long a channel may deliver no frame before it is down, unless its
/// `signal-timeout` says.
pub const DEFAULT_SIGNAL_TIMEOUT: Duration = Duration::from_secs(5);

/// A refused file: where, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based; none for an error of the whole file (it cannot be read).
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// A checked file.
#[derive(Debug, Clone)]
pub struct Config {
    /// `[prometheus] address`: one endpoint for every channel.
    pub prometheus: Option<String>,
    pub channels: Vec<Channel>,
}

/// One channel, checked.
#[derive(Debug, Clone)]
pub struct Channel {
    /// Unique in the file; the `channel` label and the events' `channel`.
    pub name: String,
    pub distorted: String,
    pub reference: Option<String>,
    /// The command's arguments its keys give (`[REF] DIST --key=value ...`): what the
    /// channel runs with ([`Channel::arguments`]), and what tells a changed channel on
    /// reload.
    pub argv: Vec<String>,
    /// No frame for this long: the channel is down.
    pub signal_timeout: Duration,
    /// The element's `stats-file`.
    pub stats_file: Option<PathBuf>,
    /// The GPU round robin gave a channel without a `device` key ([`spread`]); not part of
    /// what tells a changed channel, so that a reload does not move running channels.
    pub spread_device: Option<u32>,
}

impl Channel {
    /// The command's arguments and plan of the channel, as the command checks them (they
    /// were checked when the file was read).
    pub fn arguments(&self) -> Result<(Args, Plan), String> {
        match self.spread_device {
            Some(d) if !self.pins_device() => {
                let mut argv = self.argv.clone();
                argv.push(format!("--device={d}"));
                check(&[], &argv)
            }
            _ => check(&[], &self.argv),
        }
    }

    /// Whether the channel's `device` key (its own or the defaults') pins it.
    pub fn pins_device(&self) -> bool {
        self.argv.iter().any(|a| a.starts_with("--device="))
    }

    /// Whether `other` is the same channel with the same settings (a reload leaves it
    /// running).
    pub fn same_as(&self, other: &Channel) -> bool {
        self.name == other.name
            && self.argv == other.argv
            && self.signal_timeout == other.signal_timeout
            && self.stats_file == other.stats_file
    }
}

/// Reads and checks `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        path: path.to_path_buf(),
        line: None,
        key: None,
        message: format!("cannot read it: {e}"),
    })?;
    let mut config = parse(path, &text)?;
    spread(
        &mut config.channels,
        gpumetrics_engine::devices::device_count(),
    );
    Ok(config)
}

/// A key with its line, as the file gives it.
struct Key<'a> {
    name: String,
    line: usize,
    value: &'a DeValue<'a>,
}

/// Checks `text`, the contents of `path`.
pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let err = |line: Option<usize>, key: Option<&str>, message: String| ConfigError {
        path: path.to_path_buf(),
        line,
        key: key.map(str::to_string),
        message,
    };
    let doc = DeTable::parse(text).map_err(|e| {
        err(
            e.span().map(|s| line_of(s.start)),
            None,
            format!("not valid TOML: {}", e.message().trim_end()),
        )
    })?;
    let mut prometheus = None;
    let mut defaults: Vec<Key> = Vec::new();
    let mut tables: Vec<(usize, Vec<Key>)> = Vec::new();
    for (k, v) in doc.get_ref().iter() {
        let name = k.get_ref().as_ref();
        let line = line_of(k.span().start);
        match (name, v.get_ref()) {
            ("prometheus", DeValue::Table(t)) => {
                for (k, v) in t.iter() {
                    let key = k.get_ref().as_ref();
                    let line = Some(line_of(k.span().start));
                    match (key, v.get_ref().as_str()) {
                        ("address", Some(a)) => {
                            monitor::parse_address(a).map_err(|e| {
                                err(line, Some("prometheus.address"), e.to_string())
                            })?;
                            prometheus = Some(a.trim().to_string());
                        }
                        ("address", None) => {
                            return Err(err(
                                line,
                                Some("prometheus.address"),
                                "a string, host:port (e.g. \"127.0.0.1:9310\")".into(),
                            ));
                        }
                        (other, _) => {
                            return Err(err(
                                line,
                                Some(&format!("prometheus.{other}")),
                                "unknown key: [prometheus] has `address` only".into(),
                            ));
                        }
                    }
                }
            }
            ("defaults", DeValue::Table(t)) => {
                defaults = t
                    .iter()
                    .map(|(k, v)| Key {
                        name: k.get_ref().to_string(),
                        line: line_of(k.span().start),
                        value: v.get_ref(),
                    })
                    .collect();
                for key in &defaults {
                    if matches!(key.name.as_str(), "name" | "distorted" | "reference") {
                        return Err(err(
                            Some(key.line),
                            Some(&format!("defaults.{}", key.name)),
                            "each channel gives its own".into(),
                        ));
                    }
                }
            }
            ("channel", DeValue::Array(a)) => {
                for item in a {
                    let DeValue::Table(t) = item.get_ref() else {
                        return Err(err(
                            Some(line_of(item.span().start)),
                            Some("channel"),
                            "each channel is a [[channel]] table".into(),
                        ));
                    };
                    let keys = t
                        .iter()
                        .map(|(k, v)| Key {
                            name: k.get_ref().to_string(),
                            line: line_of(k.span().start),
                            value: v.get_ref(),
                        })
                        .collect();
                    tables.push((line_of(item.span().start), keys));
                }
            }
            (known @ ("prometheus" | "defaults"), _) => {
                return Err(err(Some(line), Some(known), "must be a table".into()));
            }
            ("channel", _) => {
                return Err(err(
                    Some(line),
                    Some("channel"),
                    "channels are [[channel]] tables".into(),
                ));
            }
            (other, _) => {
                return Err(err(
                    Some(line),
                    Some(other),
                    "unknown key: the file has [prometheus], [defaults] and [[channel]] tables"
                        .into(),
                ));
            }
        }
    }
    if tables.is_empty() {
        return Err(err(
            None,
            None,
            "no channel: add a [[channel]] table with `name` and `distorted`".into(),
        ));
    }
    let commands = command_keys();
    let mut channels: Vec<Channel> = Vec::new();
    for (table_line, keys) in &tables {
        let channel = channel(&commands, &defaults, keys, *table_line)
            .map_err(|(line, key, message)| err(line, key.as_deref(), message))?;
        if channels.iter().any(|c| c.name == channel.name) {
            let line = keys.iter().find(|k| k.name == "name").map(|k| k.line);
            return Err(err(
                line,
                Some("name"),
                format!(
                    "'{}' names two channels: each needs its own name",
                    channel.name
                ),
            ));
        }
        channels.push(channel);
    }
    Ok(Config {
        prometheus,
        channels,
    })
}

/// The command's options a channel may set: long name, and whether it takes a value and
/// how many times.
struct CommandKey {
    long: String,
    takes_value: bool,
    many: bool,
}

fn command_keys() -> Vec<CommandKey> {
    cli::command()
        .get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?.to_string();
            let action = a.get_action();
            Some(CommandKey {
                long,
                takes_value: action.takes_values(),
                many: matches!(action, clap::ArgAction::Append),
            })
        })
        .collect()
}

type KeyError = (Option<usize>, Option<String>, String);

/// One channel from its keys over the defaults: its arguments, checked as the command
/// checks its own.
fn channel(
    commands: &[CommandKey],
    defaults: &[Key],
    keys: &[Key],
    table_line: usize,
) -> Result<Channel, KeyError> {
    let key_err = |k: &Key, message: String| (Some(k.line), Some(k.name.clone()), message);
    let text = |k: &Key| -> Result<String, KeyError> {
        k.value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| key_err(k, format!("a string, not {}", k.value.type_str())))
    };
    let mut name = None;
    let mut distorted = None;
    let mut reference = None;
    let mut signal_timeout = DEFAULT_SIGNAL_TIMEOUT;
    let mut stats_file = None;
    // The options, the channel's own replacing the defaults' of the same key.
    let mut options: Vec<(&Key, Vec<String>)> = Vec::new();
    for k in defaults.iter().chain(keys) {
        match k.name.as_str() {
            "name" => {
                let n = text(k)?;
                if n.trim().is_empty() || n.chars().any(|c| c.is_control()) {
                    return Err(key_err(k, "a name of printable characters".into()));
                }
                name = Some(n);
            }
            "distorted" => distorted = Some(text(k)?),
            "reference" => reference = Some(text(k)?),
            "signal-timeout" => {
                let t = text(k)?;
                let ns = monitor::parse_duration(&t).map_err(|e| key_err(k, e.to_string()))?;
                if ns == 0 {
                    return Err(key_err(k, "a duration above 0, e.g. \"2s\"".into()));
                }
                signal_timeout = Duration::from_nanos(ns);
            }
            "stats-file" => stats_file = Some(PathBuf::from(text(k)?)),
            _ => {
                let argv = option_argv(commands, k)?;
                options.retain(|(o, _)| canonical(&o.name) != canonical(&k.name));
                options.push((k, argv));
            }
        }
    }
    let name = name.ok_or((
        Some(table_line),
        Some("name".to_string()),
        "missing: every channel has a unique name".to_string(),
    ))?;
    let distorted = distorted.ok_or((
        Some(table_line),
        Some("distorted".to_string()),
        format!("missing: channel '{name}' needs its input (a URI or a file)"),
    ))?;
    let inputs: Vec<String> = reference
        .iter()
        .cloned()
        .chain([distorted.clone()])
        .collect();
    // Each option alone first, so that an error names its key (with the channel's
    // metrics, which the other options are read against); then all together.
    let metrics: Vec<String> = options
        .iter()
        .find(|(k, _)| k.name == "metrics")
        .map(|(_, a)| a.clone())
        .unwrap_or_default();
    for (k, argv) in &options {
        let mut with = argv.clone();
        if k.name != "metrics" {
            with.extend(metrics.iter().cloned());
        }
        check(&inputs, &with).map_err(|e| key_err(k, e))?;
    }
    let argv: Vec<String> = options.iter().flat_map(|(_, a)| a.clone()).collect();
    check(&inputs, &argv)
        .map_err(|e| (Some(table_line), None, format!("channel '{name}': {e}")))?;
    let mut full = inputs;
    full.extend(argv);
    Ok(Channel {
        name,
        distorted,
        reference,
        argv: full,
        signal_timeout,
        stats_file,
        spread_device: None,
    })
}

/// Spreads the channels without a `device` key over `count` CUDA devices in turn (round
/// robin in the file's order); with one device or none, nothing changes.
pub fn spread(channels: &mut [Channel], count: usize) {
    if count < 2 {
        return;
    }
    for (i, c) in channels.iter_mut().filter(|c| !c.pins_device()).enumerate() {
        c.spread_device = Some((i % count) as u32);
    }
}

/// `alerts` is `alert`, as the element's property names it.
fn canonical(key: &str) -> &str {
    if key == "alerts" { "alert" } else { key }
}

/// The command-line arguments of one option key.
fn option_argv(commands: &[CommandKey], k: &Key) -> Result<Vec<String>, KeyError> {
    let key_err = |message: String| (Some(k.line), Some(k.name.clone()), message);
    let long = canonical(&k.name);
    if let Some((_, why)) = NOT_KEYS.iter().find(|(n, _)| *n == long) {
        return Err(key_err(format!("not a channel key: {why}")));
    }
    let Some(command) = commands.iter().find(|c| c.long == long) else {
        return Err(key_err(format!(
            "unknown key: a channel takes {} and the options of `gpumetrics --help` \
             (without their --), but for {}",
            OWN_KEYS.join(", "),
            NOT_KEYS
                .iter()
                .map(|(n, _)| *n)
                .filter(|n| !matches!(*n, "help" | "version" | "inputs"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let scalar = |v: &DeValue| -> Result<String, KeyError> {
        match v {
            DeValue::String(s) => Ok(s.to_string()),
            DeValue::Integer(i) => {
                let digits = i.as_str().replace('_', "");
                i64::from_str_radix(
                    digits
                        .trim_start_matches(['0', 'x', 'o', 'b'])
                        .trim_start_matches('+'),
                    i.radix(),
                )
                .map(|n| {
                    if i.radix() == 10 {
                        digits.clone()
                    } else {
                        n.to_string()
                    }
                })
                .map_err(|e| key_err(format!("{}: {e}", i.as_str())))
            }
            DeValue::Float(f) => Ok(f.as_str().replace('_', "")),
            DeValue::Boolean(b) => Ok(b.to_string()),
            other => Err(key_err(format!(
                "a string, number or boolean, not {}",
                other.type_str()
            ))),
        }
    };
    let flag = format!("--{long}");
    if !command.takes_value {
        return match k.value {
            DeValue::Boolean(true) => Ok(vec![flag]),
            DeValue::Boolean(false) => Ok(Vec::new()),
            other => Err(key_err(format!(
                "true or false (a switch), not {}",
                other.type_str()
            ))),
        };
    }
    match k.value {
        DeValue::Array(items) => {
            if !command.many {
                return Err(key_err("takes one value, not a list".into()));
            }
            items
                .iter()
                .map(|item| scalar(item.get_ref()).map(|v| format!("{flag}={v}")))
                .collect()
        }
        v => Ok(vec![format!("{flag}={}", scalar(v)?)]),
    }
}

/// The command's arguments `inputs` + `argv`, checked as the command checks them: what
/// `gpumetrics` would say of them, on one line.
fn check(inputs: &[String], argv: &[String]) -> Result<(Args, Plan), String> {
    let line = ["gpumetrics".to_string()]
        .into_iter()
        .chain(inputs.iter().cloned())
        .chain(argv.iter().cloned());
    let matches = cli::command()
        .try_get_matches_from(line)
        .map_err(|e| clap_text(&e))?;
    let args = cli::from_matches(&matches).map_err(|e| clap_text(&e))?;
    let plan = plan::check(&args).map_err(|f| format!("{:#}", f.error))?;
    Ok((args, plan))
}

/// clap's message without its `error: ` prefix, usage and tips.
fn clap_text(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.trim_start_matches("error: ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init() {
        gst::init().unwrap();
        gstgpumetrics::plugin_register_static().unwrap();
    }

    fn parsed(text: &str) -> Result<Config, ConfigError> {
        init();
        parse(Path::new("monitor.toml"), text)
    }

    fn refused(text: &str) -> ConfigError {
        parsed(text).expect_err("the file is refused")
    }

    const GOOD: &str = r#"
[prometheus]
address = "127.0.0.1:9310"

[defaults]
backend = "cpu"
metrics = "blur,black"
window = "1s"
signal-timeout = "2s"

[[channel]]
name = "news-hd"
distorted = "udp://127.0.0.1:5000"
reference = "udp://127.0.0.1:5001"
metrics = "psnr,ssim"
alerts = ["psnr-y<30:2s", "ssim<0.9"]
stats-file = "/tmp/news-hd.jsonl"

[[channel]]
name = "sports"
distorted = "udp://127.0.0.1:5002"
subsample = 2
"#;

    #[test]
    fn a_file_gives_each_channel_its_keys_over_the_defaults() {
        let c = parsed(GOOD).unwrap();
        assert_eq!(c.prometheus.as_deref(), Some("127.0.0.1:9310"));
        let [news, sports] = &c.channels[..] else {
            panic!("two channels")
        };
        let (news_args, news_plan) = news.arguments().unwrap();
        let (sports_args, sports_plan) = sports.arguments().unwrap();
        assert_eq!(news.name, "news-hd");
        assert_eq!(news_args.reference.as_deref(), Some("udp://127.0.0.1:5001"));
        assert_eq!(news_args.distorted, "udp://127.0.0.1:5000");
        assert_eq!(news.reference.as_deref(), Some("udp://127.0.0.1:5001"));
        assert_eq!(news_plan.metrics, "psnr+ssim");
        assert_eq!(news_args.alerts, ["psnr-y<30:2s", "ssim<0.9"]);
        assert_eq!(news_args.window, Some(1_000_000_000));
        assert_eq!(news.signal_timeout, Duration::from_secs(2));
        assert_eq!(
            news.stats_file.as_deref(),
            Some(Path::new("/tmp/news-hd.jsonl"))
        );
        // The defaults' metrics, one input: no-reference metrics alone.
        assert!(sports_plan.single);
        assert_eq!(sports_plan.metrics, "blur+black");
        assert_eq!(sports_args.subsample, Some(2));
        assert!(!news.same_as(sports));
        assert!(news.same_as(&parsed(GOOD).unwrap().channels[0]));
    }

    /// A metric option is a channel key like any other: `cvvdp-display` takes the reference's
    /// display model names and refuses others with the line and key.
    #[test]
    fn a_channel_takes_cvvdp_display() {
        let c = parsed(
            "[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nreference = \"y.mp4\"\n\
             metrics = \"cvvdp\"\ncvvdp-display = \"standard_hdr_pq\"\n",
        )
        .unwrap();
        let (args, plan) = c.channels[0].arguments().unwrap();
        assert_eq!(plan.metrics, "cvvdp");
        let display = args
            .metric_options
            .iter()
            .find(|(spec, _)| spec.name == "cvvdp-display")
            .map(|(spec, v)| spec.format(v));
        assert_eq!(display.as_deref(), Some("standard_hdr_pq"));
        let e = refused(
            "[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nreference = \"y.mp4\"\n\
             metrics = \"cvvdp\"\ncvvdp-display = \"crt\"\n",
        );
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(6), Some("cvvdp-display")),
            "{e}"
        );
    }

    #[test]
    fn a_bad_file_is_refused_with_its_line_and_key() {
        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nwindow = \"soon\"\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(4), Some("window")), "{e}");
        assert!(e.to_string().starts_with("monitor.toml:4: window: "), "{e}");

        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\ncolour = 1\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(4), Some("colour")), "{e}");
        assert!(e.message.starts_with("unknown key"), "{e}");

        let e = refused(
            "[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\n\n[[channel]]\nname = \"a\"\ndistorted = \"y.mp4\"\n",
        );
        assert_eq!((e.line, e.key.as_deref()), (Some(6), Some("name")), "{e}");
        assert!(e.message.contains("two channels"), "{e}");

        let e = refused(
            "[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nmetrics = \"blur\"\nalert = [\"psnr-y<30\"]\n",
        );
        assert_eq!((e.line, e.key.as_deref()), (Some(5), Some("alert")), "{e}");

        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nframes = 10\n");
        assert!(e.message.starts_with("not a channel key"), "{e}");

        let e = refused("[[channel]]\nname = \"a\"\n");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(1), Some("distorted")),
            "{e}"
        );

        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nmetrics = [\n");
        assert_eq!(e.key, None, "{e}");
        assert!(e.message.starts_with("not valid TOML"), "{e}");
        assert!(e.line.is_some(), "{e}");

        let e = refused(
            "[prometheus]\naddress = \"9310\"\n[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\n",
        );
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(2), Some("prometheus.address")),
            "{e}"
        );

        let e =
            refused("[defaults]\nname = \"a\"\n[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\n");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(2), Some("defaults.name")),
            "{e}"
        );

        let e = refused("channels = 1\n");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(1), Some("channels")),
            "{e}"
        );

        let e = refused("[prometheus]\naddress = \"127.0.0.1:9310\"\n");
        assert!(e.message.starts_with("no channel"), "{e}");

        // A full-reference metric without a reference: its key.
        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nmetrics = \"psnr\"\n");
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(4), Some("metrics")),
            "{e}"
        );
        assert!(e.message.contains("needs a reference"), "{e}");
        // Keys good alone and not together: the channel's line.
        let e =
            refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nevery = 2\nsubsample = 3\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(1), None), "{e}");
        assert!(e.message.contains("channel 'a'"), "{e}");
    }

    /// Channels without `device` spread over the GPUs in turn; `device = N` and
    /// `device = "auto"` pin a channel; a bad `device` names its line and key.
    #[test]
    fn channels_spread_over_the_gpus_unless_device_pins_them() {
        use crate::cli::DeviceArg;
        let text = "[[channel]]\nname = \"a\"\ndistorted = \"a.mp4\"\n\
                    [[channel]]\nname = \"b\"\ndistorted = \"b.mp4\"\ndevice = 3\n\
                    [[channel]]\nname = \"c\"\ndistorted = \"c.mp4\"\n\
                    [[channel]]\nname = \"d\"\ndistorted = \"d.mp4\"\ndevice = \"auto\"\n\
                    [[channel]]\nname = \"e\"\ndistorted = \"e.mp4\"\n";
        let device = |c: &Channel| c.arguments().unwrap().0.device;
        // One GPU (or none): as before, no channel gets a device it did not ask for.
        let mut one = parsed(text).unwrap().channels;
        spread(&mut one, 1);
        let got: Vec<_> = one.iter().map(device).collect();
        assert_eq!(
            got,
            [
                None,
                Some(DeviceArg::Index(3)),
                None,
                Some(DeviceArg::Auto),
                None
            ]
        );
        // Two GPUs: a, c, e in turn; b and d keep their key.
        let mut two = parsed(text).unwrap().channels;
        spread(&mut two, 2);
        let got: Vec<_> = two.iter().map(device).collect();
        assert_eq!(
            got,
            [
                Some(DeviceArg::Index(0)),
                Some(DeviceArg::Index(3)),
                Some(DeviceArg::Index(1)),
                Some(DeviceArg::Auto),
                Some(DeviceArg::Index(0))
            ]
        );
        // Where a channel was spread does not make it a changed channel on reload.
        assert!(two[2].same_as(&one[2]));
        // The defaults' device pins every channel.
        let mut pinned =
            parsed("[defaults]\ndevice = 1\n[[channel]]\nname = \"a\"\ndistorted = \"a.mp4\"\n")
                .unwrap()
                .channels;
        spread(&mut pinned, 4);
        assert_eq!(device(&pinned[0]), Some(DeviceArg::Index(1)));

        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\ndevice = \"gpu1\"\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(4), Some("device")), "{e}");
        assert!(e.message.contains("index (0, 1, ...) or auto"), "{e}");
        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\ndevice = -1\n");
        assert_eq!((e.line, e.key.as_deref()), (Some(4), Some("device")), "{e}");
    }

    #[test]
    fn switches_lists_and_numbers_become_the_commands_arguments() {
        let c = parsed(
            "[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nreference = \"r.mp4\"\nscale = true\nmetrics = \"psnr\"\nsubsample = 1_0\n",
        )
        .unwrap();
        let a = &c.channels[0];
        let (args, _) = a.arguments().unwrap();
        assert!(args.scale);
        assert_eq!(args.subsample, Some(10));
        assert_eq!(
            a.argv,
            [
                "r.mp4",
                "x.mp4",
                "--metrics=psnr",
                "--scale",
                "--subsample=10"
            ]
        );
        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nscale = \"yes\"\n");
        assert!(e.message.contains("true or false"), "{e}");
        let e = refused("[[channel]]\nname = \"a\"\ndistorted = \"x.mp4\"\nmetrics = [\"blur\"]\n");
        assert!(e.message.contains("one value"), "{e}");
    }
}
