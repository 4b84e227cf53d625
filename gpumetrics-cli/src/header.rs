// SPDX-License-Identifier: MPL-2.0
//! The header of the JSON outputs: what was measured and how (the inputs, backend, device,
//! version, metrics, models and options), as libvmaf's output carries its version, model
//! and settings, so that a file of scores says where its numbers came from.

use gpumetrics_engine::metric::{self, OptionValue};
use serde::Serialize;
use serde_json::Value;

use crate::input::Input;
use crate::options::Given;

/// One input as the discoverer saw it.
#[derive(Serialize, Debug)]
#[serde(rename_all = "kebab-case")]
pub struct InputInfo {
    /// As given on the command line (path or URI).
    pub given: String,
    pub uri: String,
    pub width: u32,
    pub height: u32,
    /// `30000/1001`; `null` for a variable or unknown frame rate.
    pub framerate: Option<String>,
    /// Nanoseconds; `null` when unknown (live).
    pub duration: Option<u64>,
    /// The coded format's caps name (`video/x-h264`).
    pub codec: Option<String>,
}

impl InputInfo {
    pub fn of(input: &Input) -> InputInfo {
        InputInfo {
            given: input.given.clone(),
            uri: input.uri.clone(),
            width: input.width,
            height: input.height,
            framerate: input
                .framerate
                .map(|f| format!("{}/{}", f.numer(), f.denom())),
            duration: input.duration.map(gst::ClockTime::nseconds),
            codec: input.codec(),
        }
    }
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "kebab-case")]
pub struct Inputs {
    /// `null` with one input (measured alone).
    pub reference: Option<InputInfo>,
    pub distorted: Distorted,
}

/// The distorted input: an object, or with several (`gpumetrics REF D1 D2 ...`) an array
/// of them in the order given (the records' `distorted` is each one's `given`).
#[derive(Serialize, Debug)]
#[serde(untagged)]
pub enum Distorted {
    One(InputInfo),
    Several(Vec<InputInfo>),
}

/// How the frames were chosen and paired.
#[derive(Serialize, Debug)]
#[serde(rename_all = "kebab-case")]
pub struct RunSettings {
    pub pairing: Option<&'static str>,
    /// Distorted frames skipped at the start (negative: reference frames).
    pub offset: i64,
    /// Every N-th pair scored (the element's `subsample`).
    pub every: u64,
    pub frames: Option<u64>,
    pub scale: bool,
    pub roi: Option<String>,
    /// `--window` in nanoseconds.
    pub window: Option<u64>,
    pub alerts: Vec<String>,
    /// The `--fail` rules (and `--fail-below`s) as given.
    pub fail: Vec<String>,
}

/// The header record.
#[derive(Serialize, Debug)]
#[serde(rename_all = "kebab-case")]
pub struct Header {
    /// The command's version (the element's: they are built together).
    pub version: &'static str,
    pub inputs: Inputs,
    /// `cpu` or `cuda`: where the metrics ran.
    pub backend: &'static str,
    /// CUDA device index; `null` on the CPU. With several distorted files, the first's.
    pub device: Option<u32>,
    /// `--device auto`: the device it chose and why (each device's gpumetrics engines and
    /// free memory); `null` otherwise.
    pub device_auto: Option<String>,
    /// Several distorted files on CUDA: each file's device, in the order given (they
    /// spread over the GPUs); `null` otherwise.
    pub devices: Option<Vec<u32>>,
    /// Threads of the CPU backend; `null` on CUDA.
    pub threads: Option<usize>,
    /// Per input (reference, distorted): `software` or the NVIDIA decoder element.
    pub decoding: Vec<String>,
    /// The metrics, in the element's order.
    pub metrics: Vec<String>,
    /// The fields a record can have (the CSV columns), in record order.
    pub fields: Vec<&'static str>,
    /// The model of each model-based metric that runs (`vmaf`: its `vmaf-model`).
    pub models: serde_json::Map<String, Value>,
    /// Every metric option with the value the run used (given, or the default).
    pub options: serde_json::Map<String, Value>,
    pub run: RunSettings,
    /// What a `null` score means.
    pub null_scores: &'static str,
}

/// The meaning of a `null` score, for the header (and the README says the same).
pub const NULL_SCORES: &str = "+inf: a PSNR of identical planes, which has no finite value \
                               (the table shows inf)";

/// An option's value as JSON (a number, a bool, the choice's nick, the text).
fn option_json(spec: &metric::OptionSpec, v: &OptionValue) -> Value {
    match v {
        OptionValue::Bool(b) => Value::Bool(*b),
        OptionValue::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        _ => Value::String(spec.format(v)),
    }
}

/// Every registry option with its value in this run, by name.
pub fn options(given: &[Given]) -> serde_json::Map<String, Value> {
    metric::options()
        .map(|spec| {
            let v = given
                .iter()
                .find(|(s, _)| s.name == spec.name)
                .map_or_else(|| spec.default_value(), |(_, v)| v.clone());
            (spec.name.to_string(), option_json(spec, &v))
        })
        .collect()
}

/// The models of the metrics that run: VMAF's `vmaf-model` when `vmaf` is one of them.
pub fn models(
    metrics: &[String],
    options: &serde_json::Map<String, Value>,
) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    if metrics.iter().any(|m| m == "vmaf")
        && let Some(model) = options.get("vmaf-model")
    {
        out.insert("vmaf".into(), model.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_have_the_values_of_the_run() {
        let spec = metric::option_spec("butteraugli-intensity").unwrap();
        let all = options(&[(spec, OptionValue::Float(203.0))]);
        assert_eq!(all.len(), metric::options().count());
        assert_eq!(all["butteraugli-intensity"], 203.0);
        let model = metric::option_spec("vmaf-model").unwrap();
        assert_eq!(
            all["vmaf-model"],
            Value::String(model.format(&model.default_value()))
        );
        assert_eq!(all["ssim-chroma"], false);
        let m = models(&["psnr".into(), "vmaf".into()], &all);
        assert_eq!(m["vmaf"], all["vmaf-model"]);
        assert!(models(&["psnr".into()], &all).is_empty());
    }
}
