// SPDX-License-Identifier: MPL-2.0
//! Metric names, read from the element's `metrics` flags type (`gstgpumetrics::Metrics`)
//! rather than written down here, so that a metric added to the element is offered by the
//! command (and by `--metrics all`) without a change to it.

use gpumetrics_engine::{MetricSet, metric};
use gst::glib;
use gst::prelude::*;

/// The nicks of the element's metrics flags, in flag order (e.g. `psnr`, `ssim`, ...): its
/// metrics, without the named sets ([`sets`]).
pub fn available() -> Vec<String> {
    nicks(true)
}

/// The nicks of the element's flags that stand for several metrics (`aom-ctc`).
pub fn sets() -> Vec<String> {
    nicks(false)
}

/// The nicks of the flags of one bit (`single`) or of several.
fn nicks(single: bool) -> Vec<String> {
    let class = glib::FlagsClass::with_type(gstgpumetrics::Metrics::static_type())
        .expect("Metrics is a flags type");
    class
        .values()
        .iter()
        .filter(|v| (v.value().count_ones() == 1) == single)
        .map(|v| v.nick().to_string())
        .collect()
}

/// The nicks of the element's metrics that need no reference (what one input can be
/// measured with), in flag order.
pub fn no_reference() -> Vec<String> {
    let set = metric::no_reference();
    available()
        .into_iter()
        .filter(|n| MetricSet::named(n).is_some_and(|m| set.contains(m)))
        .collect()
}

/// The `--metrics` a run gets when none is given: `psnr` for two inputs; every no-reference
/// metric for one.
pub fn default_list(single: bool) -> String {
    if single { "all".into() } else { "psnr".into() }
}

/// Turns `--metrics` (`psnr,ssim`, a named set such as `aom-ctc`, or `all`) into the
/// element's string form (`psnr+ssim`).
/// With one input (`single`), `all` is every no-reference metric, and a metric that needs a
/// reference is an error naming it (and the no-reference metrics).
pub fn parse(list: &str, single: bool) -> Result<String, String> {
    let available = if single { no_reference() } else { available() };
    let known: Vec<String> = self::available().into_iter().chain(sets()).collect();
    let mut chosen: Vec<String> = Vec::new();
    for name in list
        .split([',', '+'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let name = name.to_ascii_lowercase();
        if name == "all" {
            chosen = available.clone();
            break;
        }
        // Accept `msssim` / `ms_ssim` for `ms-ssim`.
        let canon = known
            .iter()
            .find(|a| a.replace('-', "") == name.replace(['-', '_'], ""))
            .ok_or_else(|| {
                format!(
                    "unknown metric `{}`: choose from {} or all",
                    gstgpumetrics::quote::quoted(&name),
                    known.join(", ")
                )
            })?;
        if !chosen.contains(canon) {
            chosen.push(canon.clone());
        }
    }
    if chosen.is_empty() {
        return Err(format!(
            "no metric given: choose from {} or all",
            available.join(", ")
        ));
    }
    if single {
        let set = chosen
            .iter()
            .filter_map(|n| MetricSet::named(n))
            .fold(MetricSet::default(), |s, m| s | m);
        let needing: Vec<&str> = metric::needing_reference(set).map(|i| i.name).collect();
        if !needing.is_empty() {
            return Err(format!(
                "{} {} a reference input, and there is one input only (give the reference \
                 first: gpumetrics REF DIST); with one input only the no-reference metrics can \
                 run: {}",
                needing.join(", "),
                if needing.len() == 1 { "needs" } else { "need" },
                available.join(", ")
            ));
        }
    }
    Ok(chosen.join("+"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_flags_type() {
        gst::init().unwrap();
        let names = available();
        assert!(names.contains(&"psnr".to_string()), "{names:?}");
        assert!(names.contains(&"ms-ssim".to_string()), "{names:?}");
        assert_eq!(parse("all", false).unwrap(), names.join("+"));
        assert_eq!(parse("psnr, msssim,psnr", false).unwrap(), "psnr+ms-ssim");
        assert!(
            parse("lpips", false)
                .unwrap_err()
                .contains("unknown metric `lpips`")
        );
        assert!(parse(",", false).is_err());
        // A named set is a name of the flags type too, but not among `all`'s metrics.
        assert_eq!(sets(), ["aom-ctc"]);
        assert!(!names.contains(&"aom-ctc".to_string()));
        assert_eq!(parse("aom-ctc", false).unwrap(), "aom-ctc");
        assert_eq!(parse("psnr,AOM_CTC", false).unwrap(), "psnr+aom-ctc");
        assert!(
            parse("aom-ctc", true)
                .unwrap_err()
                .contains("need a reference")
        );
    }

    #[test]
    fn one_input_gets_the_no_reference_metrics() {
        gst::init().unwrap();
        let nr = no_reference();
        assert!(nr.contains(&"siti".to_string()), "{nr:?}");
        assert!(!nr.contains(&"psnr".to_string()), "{nr:?}");
        assert_eq!(parse("all", true).unwrap(), nr.join("+"));
        assert_eq!(parse(&default_list(true), true).unwrap(), nr.join("+"));
        assert_eq!(parse(&default_list(false), false).unwrap(), "psnr");
        assert_eq!(parse("siti", true).unwrap(), "siti");
        let e = parse("psnr,siti,ssim", true).unwrap_err();
        assert!(e.starts_with("psnr, ssim need a reference input"), "{e}");
        assert!(e.ends_with(&format!("can run: {}", nr.join(", "))), "{e}");
        assert!(parse("vmaf", true).unwrap_err().starts_with("vmaf needs a"));
        assert!(parse("psnr", false).is_ok());
    }
}
