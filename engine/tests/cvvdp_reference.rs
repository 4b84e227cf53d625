//! ColorVideoVDP 0.5.7 (gfxdisp/ColorVideoVDP), the reference of the `cvvdp` metric:
//! the values it gave (tests/data/cvvdp/values.json, made by scripts/cvvdp-reference.sh,
//! which runs tests/cvvdp/generate.py in a virtual environment with `cvvdp==0.5.7`) and the
//! clips it measured, made again here from the same integer formulas. That the bytes are
//! the generator's (FNV-1a of each clip, recorded by it) is what lets the metric be checked
//! against the recorded JOD without torch.

mod common;

use serde_json::Value;

fn values() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/cvvdp/values.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (scripts/cvvdp-reference.sh makes it)",
            path.display()
        )
    });
    serde_json::from_str(&text).expect("values.json is JSON")
}

/// One clip of the generator: its size, depth, subsampling and frames.
struct Clip {
    width: u32,
    height: u32,
    frames: u32,
    bits: u32,
    /// 4:4:4 (else 4:2:0, chroma sizes halved downwards as the reference's reader does).
    full_chroma: bool,
}

/// -3..3 from a hash of the sample's place (the generator's `noise`).
fn noise(x: i64, y: i64, t: i64, seed: i64) -> i64 {
    let mask = 0xFFFF_FFFFi64;
    let h =
        ((x * 73_856_093) & mask) ^ ((y * 19_349_663) & mask) ^ ((t * 83_492_791 + seed) & mask);
    h % 7 - 3
}

/// Sample (x, y) of plane `which` of frame t (the generator's `plane`).
fn sample(x: i64, y: i64, t: i64, bits: u32, which: i64, distorted: bool) -> u16 {
    let mut v = match which {
        0 => 16 + (((x * 5 + t * 3) ^ (y * 7)) * 37 % 200),
        1 => 108 + (x * 3 + y * 5 + t * 2) % 40,
        _ => 113 + (x * 2 + y * 3 + t * 7) % 30,
    };
    if distorted {
        v += noise(x, y, t, which) + if which == 0 && t % 4 == 3 { 4 } else { 0 };
    }
    let v = v.clamp(0, 255);
    if bits == 10 {
        (v * 4 + ((x + y + t) & 3)) as u16
    } else {
        v as u16
    }
}

impl Clip {
    /// The clip of a case of the generator's `cases`.
    fn of_case(c: &Value) -> Clip {
        Clip {
            width: c["width"].as_u64().unwrap() as u32,
            height: c["height"].as_u64().unwrap() as u32,
            frames: c["frames"].as_u64().unwrap() as u32,
            bits: c["bit_depth"].as_u64().unwrap() as u32,
            full_chroma: c["subsampling"] == "444",
        }
    }

    /// Its chroma planes' size (halved downwards at 4:2:0, as the reference's reader).
    fn chroma(&self) -> (usize, usize) {
        let (w, h) = (self.width as usize, self.height as usize);
        if self.full_chroma {
            (w, h)
        } else {
            (w / 2, h / 2)
        }
    }

    /// The clip's raw bytes as the generator wrote them (planar, 16-bit little-endian
    /// samples above 8 bits).
    fn bytes(&self, distorted: bool) -> Vec<u8> {
        let (w, h) = (self.width as i64, self.height as i64);
        let (cw, ch, step) = if self.full_chroma {
            (w, h, 1)
        } else {
            (w / 2, h / 2, 2)
        };
        let mut out = Vec::new();
        for t in 0..self.frames as i64 {
            for which in 0..3 {
                let (pw, ph, s) = if which == 0 {
                    (w, h, 1)
                } else {
                    (cw, ch, step)
                };
                for y in 0..ph {
                    for x in 0..pw {
                        let v = sample(x * s, y * s, t, self.bits, which, distorted);
                        if self.bits > 8 {
                            out.extend_from_slice(&v.to_le_bytes());
                        } else {
                            out.push(v as u8);
                        }
                    }
                }
            }
        }
        out
    }
}

fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn the_clips_are_the_generators_bytes() {
    let v = values();
    assert_eq!(v["reference"], "cvvdp 0.5.7");
    let cases = v["cases"].as_array().expect("cases");
    assert!(cases.len() >= 6);
    for c in cases {
        let clip = Clip::of_case(c);
        for (side, distorted) in [("reference", false), ("distorted", true)] {
            let got = format!("{:016x}", fnv1a64(&clip.bytes(distorted)));
            assert_eq!(
                got, c["fnv1a64"][side],
                "{} {side}: the clip differs from the generator's",
                c["name"]
            );
        }
        // JOD values of growing spans, each within the scale (10 = no visible difference).
        let jod = c["jod"].as_array().unwrap();
        assert_eq!(jod.last().unwrap()["frames"], c["frames"]);
        for j in jod {
            let v = j["jod"].as_f64().unwrap();
            assert!((0.0..=10.0).contains(&v), "{}: {v}", c["name"]);
        }
    }
}

/// Every display model of the reference: pixels per degree, black level, reflected light and
/// the light of the recorded display-encoded triples (the reference in float32: 1e-5
/// relative).
#[test]
fn display_models_equal_the_references() {
    use gpumetrics_engine::metric::cvvdp::display::Display;
    let v = values();
    let triples: Vec<[f32; 3]> = v["triples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let t: Vec<f32> = t
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            [t[0], t[1], t[2]]
        })
        .collect();
    let displays = v["displays"].as_array().unwrap();
    assert!(displays.len() >= 6);
    let close = |a: f64, b: f64, rel: f64| (a - b).abs() <= rel * b.abs().max(1e-3);
    for d in displays {
        let name = d["name"].as_str().unwrap();
        let model = Display::named(name).unwrap();
        assert!(
            close(model.ppd, d["ppd"].as_f64().unwrap(), 1e-12),
            "{name}: ppd {}",
            model.ppd
        );
        let (black, refl) = model.black_and_reflection();
        assert!(
            close(black, d["black"].as_f64().unwrap(), 1e-12),
            "{name}: black {black}"
        );
        assert!(
            close(refl, d["reflection"].as_f64().unwrap(), 1e-12),
            "{name}: reflection {refl}"
        );
        for (t, want) in triples.iter().zip(d["light"].as_array().unwrap()) {
            let got = model.forward(*t);
            for c in 0..3 {
                let w = want[c].as_f64().unwrap();
                assert!(
                    close(got[c] as f64, w, 1e-5),
                    "{name}: {t:?} channel {c}: {} here, {w} in the reference",
                    got[c]
                );
            }
        }
    }
    for name in [
        "standard_fhd",
        "standard_4k",
        "standard_hdr_pq",
        "standard_hdr_hlg",
        "standard_hdr_linear",
    ] {
        assert!(displays.iter().any(|d| d["name"] == name), "{name}");
    }
}

/// The temporal filters' taps at frame rates from 1 to 120 (the reference in float32: 1e-5
/// of the largest tap).
#[test]
fn temporal_filters_equal_the_references() {
    use gpumetrics_engine::metric::cvvdp::temporal::filters;
    let v = values();
    let rates = v["temporal_filters"].as_array().unwrap();
    assert!(rates.len() >= 6);
    for r in rates {
        let fps = r["fps"].as_f64().unwrap();
        let got = filters(fps);
        for (c, want) in r["taps"].as_array().unwrap().iter().enumerate() {
            let want: Vec<f64> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            assert_eq!(got[c].len(), want.len(), "{fps} fps, filter {c}");
            let scale = want.iter().fold(0f64, |m, x| m.max(x.abs()));
            for (t, (g, w)) in got[c].iter().zip(&want).enumerate() {
                assert!(
                    (*g as f64 - w).abs() <= 1e-5 * scale,
                    "{fps} fps, filter {c}, tap {t}: {g} here, {w} in the reference"
                );
            }
        }
    }
}

/// castleCSF's sensitivity per channel at spatial frequencies and background luminances
/// within and past its table (the reference in float32: 1e-5 relative).
#[test]
fn contrast_sensitivity_equals_the_references() {
    use gpumetrics_engine::metric::cvvdp::csf::AtFrequency;
    let v = values();
    let csf = &v["csf"];
    let floats = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let (rhos, log_ls) = (floats(&csf["rho"]), floats(&csf["log_l_bkg"]));
    let channels = csf["channels"].as_array().unwrap();
    assert_eq!(channels.len(), 4);
    for ch in channels {
        let c = ch["channel"].as_u64().unwrap() as usize;
        for (rho, want) in rhos.iter().zip(ch["s"].as_array().unwrap()) {
            let at = AtFrequency::new(c, *rho as f32);
            for (log_l, w) in log_ls.iter().zip(floats(want)) {
                let got = at.sensitivity(*log_l as f32) as f64;
                assert!(
                    (got - w).abs() <= 1e-5 * w.abs(),
                    "channel {c}, rho {rho}, log L {log_l}: {got} here, {w} in the reference"
                );
            }
        }
    }
}

/// Frame 0 of three clips (both videos) read as the reference reads it: display-encoded RGB
/// (limited range, chroma upsampled bilinearly, the clip's matrix) and, through the display
/// model, DKL (the reference in float32: 1e-5 relative, 1e-6 absolute near 0).
#[test]
fn frames_read_into_dkl_equal_the_references() {
    use gpumetrics_engine::metric::cvvdp::display::{Display, to_dkl};
    use gpumetrics_engine::metric::cvvdp::yuv::{Planes, Subsampling};
    let v = values();
    let cases = v["cases"].as_array().unwrap();
    let colours = v["colours"].as_array().unwrap();
    assert!(colours.len() >= 6);
    for entry in colours {
        let c = cases.iter().find(|c| c["name"] == entry["case"]).unwrap();
        let clip = Clip {
            frames: 1,
            ..Clip::of_case(c)
        };
        let bytes = clip.bytes(entry["side"] == "distorted");
        let samples: Vec<u16> = if clip.bits > 8 {
            bytes
                .chunks(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect()
        } else {
            bytes.iter().map(|&b| b as u16).collect()
        };
        let (w, h) = (clip.width as usize, clip.height as usize);
        let (cw, ch) = clip.chroma();
        let planes = Planes {
            y: &samples[..w * h],
            cb: &samples[w * h..w * h + cw * ch],
            cr: &samples[w * h + cw * ch..w * h + 2 * cw * ch],
            width: w,
            height: h,
            bits: clip.bits,
            subsampling: if clip.full_chroma {
                Subsampling::S444
            } else {
                Subsampling::S420
            },
            bt2020: c["colour_space"] == "2020",
        };
        let rgb = planes.rgb();
        let display = Display::named(c["display"].as_str().unwrap()).unwrap();
        let m = display.rgb_to_dkl().unwrap();
        let close = |a: f32, b: f64| (a as f64 - b).abs() <= 1e-5 * b.abs() + 1e-6;
        for p in entry["pixels"].as_array().unwrap() {
            let (x, y) = (
                p["x"].as_u64().unwrap() as usize,
                p["y"].as_u64().unwrap() as usize,
            );
            let got = rgb[y * w + x];
            let dkl = to_dkl(&m, display.forward(got));
            for k in 0..3 {
                let (want_rgb, want_dkl) =
                    (p["rgb"][k].as_f64().unwrap(), p["dkl"][k].as_f64().unwrap());
                assert!(
                    close(got[k], want_rgb),
                    "{} {} ({x}, {y}) RGB {k}: {} here, {want_rgb} in the reference",
                    entry["case"],
                    entry["side"],
                    got[k]
                );
                assert!(
                    close(dkl[k], want_dkl),
                    "{} {} ({x}, {y}) DKL {k}: {} here, {want_dkl} in the reference",
                    entry["case"],
                    entry["side"],
                    dkl[k]
                );
            }
        }
    }
}

/// The decimated Laplacian pyramid of a plane with detail at every scale, at sizes of every
/// parity: band count, frequencies, level sizes and every sample (the reference in float32:
/// 1e-5 of the level's largest magnitude).
#[test]
fn laplacian_pyramids_equal_the_references() {
    use gpumetrics_engine::metric::cvvdp::pyramid::{Plane, bands, laplacian};
    let v = values();
    let pyramids = v["pyramids"].as_array().unwrap();
    assert!(pyramids.len() >= 5);
    for p in pyramids {
        let (w, h) = (
            p["width"].as_u64().unwrap() as usize,
            p["height"].as_u64().unwrap() as usize,
        );
        let ppd = p["ppd"].as_f64().unwrap();
        let (levels, freqs) = bands(w, h, ppd);
        assert_eq!(levels as u64, p["levels"].as_u64().unwrap(), "{w}x{h}");
        let want_freqs: Vec<f64> = p["freqs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_f64().unwrap())
            .collect();
        assert_eq!(freqs.len(), want_freqs.len());
        for (a, b) in freqs.iter().zip(&want_freqs) {
            assert!((a - b).abs() <= 1e-12 * b.abs(), "{w}x{h}: {a} vs {b}");
        }
        let image = Plane::new(
            w,
            h,
            (0..h)
                .flat_map(|y| {
                    (0..w).map(move |x| {
                        let (x, y) = (x as i64, y as i64);
                        let v = ((x * 7 + y * 3) ^ (x * y)) % 97 + (x / 8 + y / 5) % 13 * 10;
                        v as f32 / 10.0
                    })
                })
                .collect(),
        );
        let (lap, _) = laplacian(&image, levels + 1);
        let want = p["laplacian"].as_array().unwrap();
        assert_eq!(lap.len(), want.len(), "{w}x{h}");
        for (l, (got, want)) in lap.iter().zip(want).enumerate() {
            assert_eq!(
                (got.width as u64, got.height as u64),
                (
                    want["width"].as_u64().unwrap(),
                    want["height"].as_u64().unwrap()
                ),
                "{w}x{h} level {l}"
            );
            let data: Vec<f64> = want["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let scale = data.iter().fold(0f64, |m, x| m.max(x.abs()));
            for (i, (g, x)) in got.data.iter().zip(&data).enumerate() {
                assert!(
                    (*g as f64 - x).abs() <= 1e-5 * scale,
                    "{w}x{h} level {l} sample ({}, {}): {g} here, {x} in the reference",
                    i % got.width,
                    i / got.width
                );
            }
        }
    }
}

/// Weber contrast per band of eight channels of a pair (every 7th sample of each channel's
/// contrast and of both log backgrounds; the reference in float32: 1e-4 of the band's
/// largest magnitude, as the quotient amplifies the pyramid's rounding).
#[test]
fn weber_contrast_pyramids_equal_the_references() {
    use gpumetrics_engine::metric::cvvdp::pyramid::{CHANNELS, Plane, bands, weber_contrast};
    let v = values();
    let cases = v["contrasts"].as_array().unwrap();
    assert!(cases.len() >= 2);
    for p in cases {
        let (w, h) = (
            p["width"].as_u64().unwrap() as usize,
            p["height"].as_u64().unwrap() as usize,
        );
        let (levels, _) = bands(w, h, p["ppd"].as_f64().unwrap());
        assert_eq!(levels as u64, p["levels"].as_u64().unwrap());
        let channels: Vec<Plane> = (0..CHANNELS as i64)
            .map(|c| {
                let data = (0..h as i64)
                    .flat_map(|y| {
                        (0..w as i64).map(move |x| {
                            let mut v = ((x * (3 + c) + y * 5) ^ (x * y + c * 11)) % 89;
                            v = if c < 2 { v * 2 + 1 + c } else { v - 44 };
                            v as f32 / 4.0
                        })
                    })
                    .collect();
                Plane::new(w, h, data)
            })
            .collect();
        let got = weber_contrast(&channels, levels);
        let want = p["bands"].as_array().unwrap();
        assert_eq!(got.len(), want.len());
        let check = |what: String, got: &Plane, want: &Value| {
            let want: Vec<f64> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let got: Vec<f32> = got.data.iter().copied().step_by(7).collect();
            assert_eq!(got.len(), want.len(), "{what}");
            let scale = want.iter().fold(1e-3f64, |m, x| m.max(x.abs()));
            for (i, (g, x)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (*g as f64 - x).abs() <= 1e-4 * scale,
                    "{what} sample {}: {g} here, {x} in the reference",
                    i * 7
                );
            }
        };
        for (b, (band, want)) in got.iter().zip(want).enumerate() {
            for c in 0..CHANNELS {
                check(
                    format!("{w}x{h} band {b} channel {c}"),
                    &band.contrast[c],
                    &want["contrast"][c],
                );
            }
            for s in 0..2 {
                check(
                    format!("{w}x{h} band {b} background {s}"),
                    &band.log_background[s],
                    &want["log_background"][s],
                );
            }
        }
    }
}

/// The masking of one band (`mult-mutual`) at sizes the phase uncertainty blurs and leaves
/// alone: every sample of each channel (the reference in float32: 1e-4 of the channel's
/// largest value, 1e-7 absolute).
#[test]
fn band_masking_equals_the_references() {
    use gpumetrics_engine::metric::cvvdp::masking::{BAND_CHANNELS, band_difference};
    use gpumetrics_engine::metric::cvvdp::pyramid::Plane;
    let v = values();
    let cases = v["maskings"].as_array().unwrap();
    assert!(cases.len() >= 3);
    for m in cases {
        let (w, h) = (
            m["width"].as_u64().unwrap() as usize,
            m["height"].as_u64().unwrap() as usize,
        );
        let plane = |f: &dyn Fn(i64, i64) -> f32| {
            Plane::new(
                w,
                h,
                (0..h as i64)
                    .flat_map(|y| (0..w as i64).map(move |x| (x, y)))
                    .map(|(x, y)| f(x, y))
                    .collect(),
            )
        };
        let test: [Plane; BAND_CHANNELS] = std::array::from_fn(|c| {
            let c = c as i64;
            plane(&|x, y| ((((x * 5 + y * (c + 2)) ^ (x + c)) % 41 - 20) as f64 / 40.0) as f32)
        });
        let reference: [Plane; BAND_CHANNELS] = std::array::from_fn(|c| {
            let c = c as i64;
            plane(&|x, y| ((((x * 3 + y * 7 + c) ^ (y * 2)) % 37 - 18) as f64 / 45.0) as f32)
        });
        let s: [Plane; BAND_CHANNELS] = std::array::from_fn(|c| {
            let c = c as i64;
            plane(&|x, y| (1.0 + ((x + 2 * y + 5 * c) % 23) as f64 * 4.0) as f32)
        });
        let d = band_difference(&test, &reference, &s);
        for (c, want) in m["d"].as_array().unwrap().iter().enumerate() {
            let want: Vec<f64> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let scale = want.iter().fold(0f64, |a, x| a.max(x.abs()));
            for (i, (g, x)) in d[c].data.iter().zip(&want).enumerate() {
                assert!(
                    (*g as f64 - x).abs() <= 1e-4 * scale + 1e-7,
                    "{w}x{h} channel {c} sample ({}, {}): {g} here, {x} in the reference",
                    i % w,
                    i / w
                );
            }
        }
    }
}

/// Pooling to JOD of per-channel, per-frame, per-band differences: images (3 and 4
/// channels), short and longer videos, and differences small enough for the linear part
/// (the reference in float32: 1e-5 JOD).
#[test]
fn pooling_to_jod_equals_the_references() {
    use gpumetrics_engine::metric::cvvdp::pool::jod;
    let v = values();
    let cases = v["poolings"].as_array().unwrap();
    assert!(cases.len() >= 5);
    for p in cases {
        let q: Vec<Vec<Vec<f32>>> = p["q"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                c.as_array()
                    .unwrap()
                    .iter()
                    .map(|f| {
                        f.as_array()
                            .unwrap()
                            .iter()
                            .map(|b| b.as_f64().unwrap() as f32)
                            .collect()
                    })
                    .collect()
            })
            .collect();
        let want = p["jod"].as_f64().unwrap();
        let got = jod(&q) as f64;
        assert!(
            (got - want).abs() <= 1e-5,
            "{} channels × {} frames: {got} here, {want} in the reference",
            q.len(),
            q[0].len()
        );
    }
}

impl Clip {
    /// Frame `t`'s samples (Y, Cb, Cr planes one after the other).
    fn frame_samples(&self, t: u32, distorted: bool) -> Vec<u16> {
        let (w, h) = (self.width as i64, self.height as i64);
        let (cw, ch, step) = if self.full_chroma {
            (w, h, 1)
        } else {
            (w / 2, h / 2, 2)
        };
        let mut out = Vec::new();
        for which in 0..3 {
            let (pw, ph, s) = if which == 0 {
                (w, h, 1)
            } else {
                (cw, ch, step)
            };
            for y in 0..ph {
                for x in 0..pw {
                    out.push(sample(x * s, y * s, t as i64, self.bits, which, distorted));
                }
            }
        }
        out
    }
}

/// The whole metric on each clip of the generator, frame after frame: the JOD after frame
/// k−1 is the reference's on the clip's first k frames (a single frame as an image), within
/// 0.001 JOD (a tenth of the tolerance: the reference computes in float32, and
/// this path gives its values to about 1e-6).
#[test]
fn the_jod_of_each_span_equals_the_references() {
    use gpumetrics_engine::metric::cvvdp::model::Model;
    use gpumetrics_engine::metric::cvvdp::yuv::{Planes, Subsampling};
    let v = values();
    let mut worst = 0f64;
    let mut failed = Vec::new();
    for c in v["cases"].as_array().unwrap() {
        let clip = Clip::of_case(c);
        let (w, h) = (clip.width as usize, clip.height as usize);
        let (cw, ch) = clip.chroma();
        let mut model = Model::new(
            c["display"].as_str().unwrap(),
            w,
            h,
            c["fps"].as_f64().unwrap(),
        )
        .unwrap();
        let mut got = Vec::new();
        for t in 0..clip.frames {
            let mut sides = [true, false].map(|distorted| {
                let s = clip.frame_samples(t, distorted);
                let planes = Planes {
                    y: &s[..w * h],
                    cb: &s[w * h..w * h + cw * ch],
                    cr: &s[w * h + cw * ch..w * h + 2 * cw * ch],
                    width: w,
                    height: h,
                    bits: clip.bits,
                    subsampling: if clip.full_chroma {
                        Subsampling::S444
                    } else {
                        Subsampling::S420
                    },
                    bt2020: c["colour_space"] == "2020",
                };
                Some(model.dkl(&planes.rgb()))
            });
            let (test, reference) = (sides[0].take().unwrap(), sides[1].take().unwrap());
            got.push(model.push(test, reference).jod as f64);
        }
        for j in c["jod"].as_array().unwrap() {
            let k = j["frames"].as_u64().unwrap() as usize;
            let want = j["jod"].as_f64().unwrap();
            let here = got[k - 1];
            eprintln!(
                "{} {k} frames: {here:.6} here, {want:.6} in the reference",
                c["name"]
            );
            worst = worst.max((here - want).abs());
            if (here - want).abs() > 0.001 {
                failed.push(format!(
                    "{} on {k} frames: {here} JOD here, {want} in the reference",
                    c["name"]
                ));
            }
        }
    }
    eprintln!("largest difference: {worst:.2e} JOD");
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Runs the engine (CPU backend, `metrics=cvvdp`, `cvvdp-display` = `display`) on the pairs
/// `frames` gives (reference, distorted bytes of one frame as `planes` lays them out), and
/// returns each pair's `cvvdp` and the summary's pooled JOD.
fn engine_jods(
    backend: gpumetrics_engine::BackendChoice,
    layout: gpumetrics_engine::FrameLayout,
    colorimetry: gpumetrics_engine::Colorimetry,
    (display, fps): (&str, f64),
    frames: usize,
    frame: impl Fn(usize, bool) -> Vec<u8>,
    planes: impl for<'a> Fn(&'a [u8]) -> Vec<gpumetrics_engine::Plane<'a>>,
) -> (Vec<f64>, f64) {
    use gpumetrics_engine::{Engine, EngineConfig, Frame, HostFrame, MetricSet, Options, Pooler};
    let mut options = Options::new();
    options.parse("cvvdp-display", display).unwrap();
    let cfg = EngineConfig {
        metrics: MetricSet::named("cvvdp").unwrap(),
        backend,
        options,
        ..Default::default()
    };
    let mut engine = Engine::builder(&cfg, layout, layout)
        .colorimetry(colorimetry, colorimetry)
        .frame_rate(fps)
        .build()
        .unwrap();
    assert!(engine.needs_every_frame());
    assert_eq!(
        engine.backend_name(),
        match backend {
            gpumetrics_engine::BackendChoice::Cuda => "cuda",
            _ => "cpu",
        }
    );
    let mut pool = Pooler::new();
    let mut jods = Vec::new();
    for t in 0..frames {
        let (r, d) = (frame(t, false), frame(t, true));
        let (rp, dp) = (planes(&r), planes(&d));
        let scores = engine
            .push(
                &Frame::Host(HostFrame::new(&rp)),
                &Frame::Host(HostFrame::new(&dp)),
            )
            .unwrap()
            .expect("cvvdp holds no pair back");
        jods.push(scores.get("cvvdp").expect("a cvvdp field"));
        pool.push(&scores);
    }
    let pooled = pool.summary().get("cvvdp").unwrap().pooled.unwrap();
    (jods, pooled)
}

/// The element's path through the engine: the RGB clips as the reference's `predict` reads
/// uint8 arrays, and the `.yuv` clips as Y'CbCr frames whose caps say BT.601 (the matrix
/// the reference's `.yuv` reader applies to SDR files) or BT.2020 with PQ. Each pair's
/// `cvvdp` is the reference's JOD of the span to it, and the summary's `pooled` that of
/// the whole clip, within 0.001 JOD.
#[test]
fn the_engine_reports_the_references_jod_per_span_and_pooled() {
    engine_on(gpumetrics_engine::BackendChoice::Cpu);
}

/// The same on the CUDA backend (host frames uploaded, then measured).
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_cuda_backend_reports_the_references_jod() {
    engine_on(gpumetrics_engine::BackendChoice::Cuda);
}

fn engine_on(backend: gpumetrics_engine::BackendChoice) {
    use gpumetrics_engine::{Colorimetry, FrameLayout, Matrix, PixelFormat, Plane, Transfer};
    let v = values();
    let mut failed = Vec::new();
    let mut check = |name: &str, jods: &[f64], pooled: f64, want: &[Value]| {
        for j in want {
            let k = j["frames"].as_u64().unwrap() as usize;
            let w = j["jod"].as_f64().unwrap();
            if (jods[k - 1] - w).abs() > 1e-3 {
                failed.push(format!("{name} on {k} frames: {} vs {w}", jods[k - 1]));
            }
        }
        let whole = want.last().unwrap()["jod"].as_f64().unwrap();
        if (pooled - whole).abs() > 1e-3 {
            failed.push(format!("{name}: pooled {pooled} vs {whole}"));
        }
    };
    for c in v["rgb_cases"].as_array().unwrap() {
        let (w, h) = (
            c["width"].as_u64().unwrap() as usize,
            c["height"].as_u64().unwrap() as usize,
        );
        let n = c["frames"].as_u64().unwrap() as usize;
        let frame = |t: usize, distorted: bool| -> Vec<u8> {
            let mut out = Vec::with_capacity(w * h * 3);
            for y in 0..h as i64 {
                for x in 0..w as i64 {
                    for which in 0..3 {
                        out.push(sample(x, y, t as i64, 8, which, distorted) as u8);
                    }
                }
            }
            out
        };
        for (side, distorted) in [("reference", false), ("distorted", true)] {
            let all: Vec<u8> = (0..n).flat_map(|t| frame(t, distorted)).collect();
            assert_eq!(
                format!("{:016x}", fnv1a64(&all)),
                c["fnv1a64"][side],
                "{} {side}: not the generator's clip",
                c["name"]
            );
        }
        let layout = FrameLayout {
            format: PixelFormat::Rgb,
            width: w as u32,
            height: h as u32,
        };
        let (jods, pooled) = engine_jods(
            backend,
            layout,
            Colorimetry::default_for(PixelFormat::Rgb.family()),
            (c["display"].as_str().unwrap(), c["fps"].as_f64().unwrap()),
            n,
            frame,
            |data| {
                vec![Plane {
                    data,
                    stride: 3 * w,
                }]
            },
        );
        check(
            c["name"].as_str().unwrap(),
            &jods,
            pooled,
            c["jod"].as_array().unwrap(),
        );
    }
    for c in v["cases"].as_array().unwrap() {
        let clip = Clip::of_case(c);
        let (w, h) = (clip.width as usize, clip.height as usize);
        let (cw, ch) = clip.chroma();
        let format = match (clip.bits, clip.full_chroma) {
            (8, false) => PixelFormat::I420,
            (8, true) => PixelFormat::Y444,
            (_, false) => PixelFormat::I420_10Le,
            (_, true) => PixelFormat::Y444_10Le,
        };
        let bytes = if clip.bits > 8 { 2 } else { 1 };
        let pq = c["colour_space"] == "2020";
        let colorimetry = Colorimetry {
            matrix: if pq { Matrix::Bt2020 } else { Matrix::Bt601 },
            transfer: if pq { Transfer::Pq } else { Transfer::Bt1886 },
            ..Colorimetry::default()
        };
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let (jods, pooled) = engine_jods(
            backend,
            layout,
            colorimetry,
            (c["display"].as_str().unwrap(), c["fps"].as_f64().unwrap()),
            clip.frames as usize,
            |t, distorted| {
                let s = clip.frame_samples(t as u32, distorted);
                if bytes == 2 {
                    s.iter().flat_map(|v| v.to_le_bytes()).collect()
                } else {
                    s.iter().map(|&v| v as u8).collect()
                }
            },
            |data| common::images::ycbcr_planes(data, w, h, (cw, ch), bytes),
        );
        check(
            c["name"].as_str().unwrap(),
            &jods,
            pooled,
            c["jod"].as_array().unwrap(),
        );
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

/// The `raw` heat map (the distortion map of `map=cvvdp`) of every frame of the RGB heat
/// map clips, against the reference's float32 maps (`heatmap="raw"`): 1e-5 absolute (the
/// maps' values are 0..0.03 here), 1e-3 relative.
#[test]
fn heat_maps_equal_the_references() {
    use gpumetrics_engine::metric::cvvdp::model::Model;
    let v = values();
    let cases = v["heatmaps"].as_array().unwrap();
    assert!(cases.len() >= 2);
    let mut worst = 0f64;
    for c in cases {
        let (w, h, n) = (
            c["width"].as_u64().unwrap() as usize,
            c["height"].as_u64().unwrap() as usize,
            c["frames"].as_u64().unwrap() as usize,
        );
        let mut model = Model::new(
            c["display"].as_str().unwrap(),
            w,
            h,
            c["fps"].as_f64().unwrap(),
        )
        .unwrap();
        let rgb = |t: usize, distorted: bool| -> Vec<[f32; 3]> {
            (0..w * h)
                .map(|i| {
                    let (x, y) = ((i % w) as i64, (i / w) as i64);
                    std::array::from_fn(|k| {
                        sample(x, y, t as i64, 8, k as i64, distorted) as f32 / 255.0
                    })
                })
                .collect()
        };
        let maps = c["maps"].as_array().unwrap();
        assert_eq!(maps.len(), n);
        for (t, want) in maps.iter().enumerate() {
            let (test, reference) = (model.dkl(&rgb(t, true)), model.dkl(&rgb(t, false)));
            let (_, heat) = model.push_with_map(test, reference, true);
            let heat = heat.expect("a heat map");
            let want: Vec<f64> = want
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(heat.len(), want.len());
            for (i, (g, x)) in heat.iter().zip(&want).enumerate() {
                let e = (*g as f64 - x).abs();
                worst = worst.max(e);
                assert!(
                    e <= 1e-5 + 1e-3 * x.abs(),
                    "{} frame {t} pixel ({}, {}): {g} vs {x}",
                    c["name"],
                    i % w,
                    i / w
                );
            }
        }
        let jod = model.jod() as f64;
        let want = c["jod"].as_f64().unwrap();
        assert!(
            (jod - want).abs() <= 1e-3,
            "{}: {jod} vs {want} JOD",
            c["name"]
        );
    }
    eprintln!("heat maps: worst absolute difference {worst:.2e}");
}
