// SPDX-License-Identifier: MPL-2.0
//! Metric names, read from the element's `metrics` flags type (`gstgpumetrics::Metrics`)
//! rather than written down here, so that a metric added to the element is offered by the
//! command (and by `--metrics all`) without a change to it.

use gst::glib;
use gst::prelude::*;

/// The nicks of the element's metrics flags, in flag order (e.g. `psnr`, `ssim`, ...).
pub fn available() -> Vec<String> {
    let class = glib::FlagsClass::with_type(gstgpumetrics::Metrics::static_type())
        .expect("Metrics is a flags type");
    class
        .values()
        .iter()
        .map(|v| v.nick().to_string())
        .collect()
}

/// Turns `--metrics` (`psnr,ssim` or `all`) into the element's string form (`psnr+ssim`).
pub fn parse(list: &str) -> Result<String, String> {
    let available = available();
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
        let canon = available
            .iter()
            .find(|a| a.replace('-', "") == name.replace(['-', '_'], ""))
            .ok_or_else(|| {
                format!(
                    "unknown metric `{name}`: choose from {} or all",
                    available.join(", ")
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
        assert_eq!(parse("all").unwrap(), names.join("+"));
        assert_eq!(parse("psnr, msssim,psnr").unwrap(), "psnr+ms-ssim");
        assert!(
            parse("lpips")
                .unwrap_err()
                .contains("unknown metric `lpips`")
        );
        assert!(parse(",").is_err());
    }
}
