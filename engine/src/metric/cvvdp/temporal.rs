//! ColorVideoVDP's temporal channels: three sustained filters (achromatic and the two
//! chromatic channels) and one transient filter (achromatic), each a linear-phase FIR over
//! the last quarter second of frames, made as the reference makes them: a frequency
//! response sampled from 0 to the Nyquist frequency (`exp(−ω^β / σ)`; the transient one
//! centred on 5 Hz), turned into taps by a real inverse DFT of odd length and centred.

use std::sync::LazyLock;

use serde_json::Value;

/// The reference's calibrated parameters (`cvvdp_parameters.json`).
pub(crate) static PARAMETERS: LazyLock<serde_json::Map<String, Value>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("cvvdp_parameters.json"))
        .expect("the reference's cvvdp_parameters.json is a JSON object")
});

/// `name` of the parameters as numbers (an array, or one number).
pub(crate) fn parameter(name: &str) -> Vec<f64> {
    match &PARAMETERS[name] {
        Value::Array(a) => a.iter().map(|v| v.as_f64().expect("a number")).collect(),
        v => vec![v.as_f64().expect("a number")],
    }
}

/// Taps of the filters at `fps` frames per second, `[sustained Y, sustained RG, sustained
/// VY, transient Y]`, each of the same odd length (a quarter second of frames, at least
/// 1), the newest frame last.
pub fn filters(fps: f64) -> [Vec<f32>; 4] {
    let n = ((0.25 * fps / 2.0).ceil() as usize) * 2 + 1;
    let n_omega = n / 2 + 1;
    let (sigma, beta) = (parameter("sigma_tf"), parameter("beta_tf"));
    // The reference samples in float32: ω = linspace(0, fps/2, N_ω).
    let omega: Vec<f32> = (0..n_omega)
        .map(|k| {
            if n_omega == 1 {
                0.0
            } else {
                (fps / 2.0 * k as f64 / (n_omega - 1) as f64) as f32
            }
        })
        .collect();
    let response = |c: usize| -> Vec<f64> {
        omega
            .iter()
            .map(|&w| {
                let w = w as f64;
                if c < 3 {
                    (-w.powf(beta[c]) / sigma[c]).exp()
                } else {
                    let d = w.powf(beta[3]) - 5f64.powf(beta[3]);
                    (-d * d / sigma[3]).exp()
                }
            })
            .collect()
    };
    std::array::from_fn(|c| {
        let r = response(c);
        // irfft of a real spectrum, odd length: r[0] + 2 Σ r[k] cos(2πkt/n), over n.
        let taps: Vec<f64> = (0..n)
            .map(|t| {
                let mut s = r[0];
                for (k, &rk) in r.iter().enumerate().skip(1) {
                    s += 2.0 * rk * (2.0 * std::f64::consts::PI * (k * t) as f64 / n as f64).cos();
                }
                s / n as f64
            })
            .collect();
        // fftshift: the zero-lag tap in the middle.
        (0..n).map(|i| taps[(i + n / 2 + 1) % n] as f32).collect()
    })
}
