// SPDX-License-Identifier: MPL-2.0
//! What the command works out from its arguments alone, before any input is opened: the
//! metrics, the fields they give, the `--fail` rules and alert rules, `--every`. Every
//! mistake found here is a usage error, so that a typo does not cost a long decode.

use anyhow::{Result, anyhow, bail};
use gpumetrics_engine::{EngineError, MetricSet, Options, metric};

use crate::cli::{self, Args};
use crate::exit::{Failure, usage};
use crate::{fail, fields, metric_names, monitor, options};

/// The run settled from the arguments, the same for one distorted file or several.
pub struct Plan {
    /// One input, measured alone with the no-reference metrics (no reference given).
    pub single: bool,
    /// The element's form (`psnr+ssim`).
    pub metrics: String,
    /// Every field the run can produce ([`fields::of_run`]).
    pub run_fields: Vec<&'static str>,
    /// The `--fail-below` and `--fail` rules, in that order.
    pub rules: Vec<fail::Rule>,
    /// The element's `subsample` (`--every` or `--subsample`).
    pub subsample: Option<u32>,
    /// Every N-th pair scored (1: each).
    pub every: u64,
    /// The option that set `subsample`, for the table's `skipped` count.
    pub skipped_by: &'static str,
    /// `--alert`: the rules joined as the element's `alerts`, and parsed.
    pub alerts: Option<(String, Vec<gstgpumetrics::alerts::Rule>)>,
}

impl Plan {
    /// The metrics as a set.
    pub fn metric_set(&self) -> MetricSet {
        metric_set(&self.metrics)
    }

    /// The alert rules (none without `--alert`).
    pub fn alert_rules(&self) -> &[gstgpumetrics::alerts::Rule] {
        self.alerts.as_ref().map_or(&[][..], |(_, rules)| rules)
    }
}

/// Checks the arguments and settles the run from them; the error is a usage error, but for
/// an `-o` or `--plot` that cannot be written.
pub fn check(args: &Args) -> Result<Plan, Failure> {
    let single = args.single();
    if single && !args.reference_only.is_empty() {
        let flags = &args.reference_only;
        return Err(usage(anyhow!(
            "{} {} a reference input, and there is one input only: DIST alone is measured \
             with the no-reference metrics, with nothing to align, scale or pair it with (give \
             the reference first to compare: gpumetrics REF DIST)",
            flags.join(", "),
            if flags.len() == 1 { "needs" } else { "need" }
        )));
    }
    let list = args
        .metrics
        .clone()
        .unwrap_or_else(|| metric_names::default_list(single));
    let metrics = metric_names::parse(&list, single).map_err(|e| {
        usage(anyhow!(
            "--metrics {}: {e}",
            gstgpumetrics::quote::quoted(&list)
        ))
    })?;
    check_options(&metrics, &args.metric_options).map_err(usage)?;
    check_thresholds(&metrics, &args.fail_below, single).map_err(usage)?;
    let mut run_fields = fields::of_run(metric_set(&metrics), single);
    // `--map`: the records carry its statistics too.
    if let Some(m) = &args.map {
        run_fields.extend(m.kind.fields().iter().map(|f| f.name));
    }
    let mut rules: Vec<fail::Rule> = args
        .fail_below
        .iter()
        .map(|t| fail::Rule::below(&t.field, t.value))
        .collect();
    for text in &args.fail {
        rules.push(fail::Rule::parse(text, &run_fields).map_err(|e| usage(anyhow!(e)))?);
    }
    // `--every` is the element's `subsample` (temporal metrics see every frame), as is
    // `--subsample`: one setting under two names.
    if args.every > 1
        && let Some(n) = args.subsample
        && u64::from(n) != args.every
    {
        return Err(usage(anyhow!(
            "--every {} and --subsample {n} are the same setting (the element's subsample): \
             give one",
            args.every
        )));
    }
    let (subsample, skipped_by) = match (args.every, args.subsample) {
        (1, n) => (n, "--subsample"),
        // The range clap allows.
        (n, _) => (Some(n as u32), "--every"),
    };
    let every = subsample.map_or(1, u64::from);
    let alerts = monitor::check_alerts_with_map(
        &args.alerts,
        metric_set(&metrics),
        single,
        args.map.as_ref().map(|m| m.kind),
    )
    .map_err(|e| usage(anyhow!(e)))?;
    if let Some(p) = &args.plot {
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if !matches!(ext.as_deref(), Some("png" | "svg")) {
            return Err(usage(anyhow!(
                "--plot {}: the file name must end in .png or .svg",
                p.display()
            )));
        }
    }
    if let (Some(a), Some(b)) = (&args.map, &args.map_video)
        && a.kind != b.kind
    {
        return Err(usage(anyhow!(
            "--map {} and --map-video {}: the element makes one map; give both the same NAME",
            a.kind.name(),
            b.kind.name()
        )));
    }
    if let Some(m) = &args.map_video {
        if single {
            return Err(usage(anyhow!(
                "--map-video {}: a distortion map compares the distorted video with its \
                 reference: give REF and DIST",
                m.kind.name()
            )));
        }
        check_writable(&m.dir).map_err(|e| {
            usage(anyhow!(
                "--map-video {}: cannot write it: {e}",
                m.dir.display()
            ))
        })?;
    }
    if let Some(m) = &args.map {
        if single {
            return Err(usage(anyhow!(
                "--map {}: a distortion map compares the distorted video with its reference: \
                 give REF and DIST",
                m.kind.name()
            )));
        }
        crate::maps::prepare(m).map_err(usage)?;
    }
    for (flag, path) in [("-o", &args.output), ("--plot", &args.plot)] {
        if let Some(p) = path {
            check_writable(p)
                .map_err(|e| anyhow!("{flag} {}: cannot write it: {e}", p.display()))?;
        }
    }
    Ok(Plan {
        single,
        metrics,
        run_fields,
        rules,
        subsample,
        every,
        skipped_by,
        alerts,
    })
}

/// The metrics of the element's form (`psnr+vmaf`).
pub fn metric_set(metrics: &str) -> MetricSet {
    metrics
        .split('+')
        .filter_map(MetricSet::named)
        .fold(MetricSet::default(), |set, m| set | m)
}

/// Checks the metrics' options as the engine will, before anything is decoded: the values
/// that only the metric can judge (a VMAF model that does not load) are usage errors too.
/// `metrics` is the element's form (`psnr+vmaf`).
fn check_options(metrics: &str, given: &[options::Given]) -> Result<()> {
    let requested = metric_set(metrics);
    let mut set = Options::new();
    for (spec, value) in given {
        set.set(spec.name, value.clone())?;
    }
    match metric::check_options(requested, &set) {
        Err(EngineError::InvalidOption { option, why }) => {
            // A text option's value may be quoted whole by the metric (a `--vmaf-model`
            // path): bounded as every quoted value is.
            let text = match set.get(option) {
                Some(gpumetrics_engine::OptionValue::Text(v)) => v,
                _ => String::new(),
            };
            bail!(
                "--{option}: {}",
                gstgpumetrics::quote::bounded_within(&why, &text)
            )
        }
        // Anything else depends on the real frames: the run says it.
        _ => Ok(()),
    }
}

/// Refuses a `--fail-below` on a field of a metric that is not measured (clap has checked
/// that the field is the registry's, and higher-is-better), and with one input (`single`) on
/// a field of the reference (`ref-si`). Fields that depend on an option or on the input
/// (`ssim-u`) are checked after the run.
fn check_thresholds(metrics: &str, thresholds: &[cli::Threshold], single: bool) -> Result<()> {
    let run_fields = fields::of_run(metric_set(metrics), single);
    for t in thresholds {
        let from = metric::all().find(|i| i.fields.iter().any(|f| f.name == t.field));
        if let Some(info) = from
            && !metrics.split('+').any(|m| m == info.name)
        {
            bail!(
                "--fail-below {}: no field `{}` with --metrics {}: it comes from {} (add it \
                 to --metrics)",
                t.field,
                t.field,
                metrics.replace('+', ","),
                info.name
            );
        }
        if single && from.is_some() && !run_fields.contains(&t.field.as_str()) {
            bail!(
                "--fail-below {}: a field of the reference input, and there is one input only \
                 (gpumetrics REF DIST measures the reference too); the fields of this run are {}",
                t.field,
                run_fields.join(", ")
            );
        }
    }
    Ok(())
}

/// Checks before decoding that `path` can be written (its folder exists, it is not a
/// folder, the file system lets us), so that a typo in `-o` or `--plot` does not cost the
/// run. A file the check creates is removed again.
fn check_writable(path: &std::path::Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::other("it is a folder: give a file name"));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
