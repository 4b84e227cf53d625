use super::super::Configured;
use super::*;
use crate::engine::{BackendChoice, Engine, EngineConfig};
use crate::format::PixelFormat;
use crate::frame::{Frame, HostFrame, Plane};

fn at(format: PixelFormat, width: u32, height: u32) -> FrameLayout {
    FrameLayout {
        format,
        width,
        height,
    }
}

fn config(options: Options) -> EngineConfig {
    EngineConfig {
        metrics: FLAG,
        backend: BackendChoice::Cpu,
        options,
        ..Default::default()
    }
}

#[test]
fn visibility_tables_and_windows_as_libvmaf_sets_them_up() {
    // BT.1886 at a threshold of 0.019: the highest 10-bit code at which a step of 1..4
    // codes is visible (values that reproduce libvmaf's scores, engine/tests/cambi_reference.rs).
    let g = Geometry::new(1920, 1080, 8, &CambiSettings::default()).unwrap();
    assert_eq!(&g.tvi[..4], &[178, 305, 432, 559]);
    assert_eq!((g.vlt, g.band_base, g.band_size), (0, 0, 564));
    assert_eq!((g.window, g.mask_index, g.anti_dither), (33, 21, true));
    assert_eq!(g.scales[0], (1920, 1080));
    // The v1 options: 0.06 cd/m² is code 78; the speed-up halves scale 0 and the window.
    let g = Geometry::new(1920, 1080, 10, &CambiSettings::vmaf_v1()).unwrap();
    assert_eq!((g.vlt, g.band_base, g.band_size), (78, 67, 497));
    assert_eq!((g.window, g.anti_dither), (17, false));
    assert_eq!(
        g.scales,
        [(960, 540), (480, 270), (240, 135), (120, 68), (60, 34)]
    );
    // Below 1920x1080 the speed-up does not apply.
    let g = Geometry::new(1920, 1079, 10, &CambiSettings::vmaf_v1()).unwrap();
    assert_eq!((g.window, g.scales[0]), (33, (1920, 1079)));
    // 4K: the window as given; an encoding size larger than the input is the input's.
    let s = CambiSettings {
        enc_width: 7680,
        enc_height: 4320,
        ..Default::default()
    };
    let g = Geometry::new(3840, 2160, 10, &s).unwrap();
    assert_eq!((g.window, g.enc_width, g.enc_height), (65, 3840, 2160));
    // PQ has other thresholds.
    let s = CambiSettings {
        eotf: Eotf::Pq,
        ..Default::default()
    };
    let g = Geometry::new(1920, 1080, 10, &s).unwrap();
    assert_ne!(&g.tvi[..4], &[178, 305, 432, 559]);
}

#[test]
fn frames_cambi_cannot_measure_get_a_note() {
    let s = CambiSettings::default();
    let e = Geometry::new(200, 200, 8, &s).unwrap_err();
    assert!(e.contains("at least 216"), "{e}");
    // One side of 216 is enough (window 3 here, still within the 14x1 coarsest scale).
    assert!(Geometry::new(216, 16, 8, &s).is_ok());
    assert!(Geometry::new(300, 40, 8, &s).is_ok());
    let e = Geometry::new(4000, 10, 8, &s).unwrap_err();
    assert!(e.contains("coarsest scale"), "{e}");
    // 8K's window (131) is past libvmaf's table unless the speed-up halves it.
    let e = Geometry::new(7680, 4320, 10, &s).unwrap_err();
    assert!(e.contains("too large"), "{e}");
    let fast = CambiSettings {
        high_res_speedup: 2160,
        ..s
    };
    assert!(Geometry::new(7680, 4320, 10, &fast).is_ok());
    let bad = CambiSettings {
        enc_width: 100,
        ..s
    };
    assert!(Geometry::new(640, 480, 8, &bad).is_err());

    let cfg = config(Options::new());
    for (layout, words) in [
        (at(PixelFormat::Rgb, 320, 240), "cambi measures luma"),
        (at(PixelFormat::I420, 200, 200), "at least 216"),
    ] {
        let e = Engine::new(&cfg, layout, layout).unwrap();
        let notes = e.metric_notes();
        assert!(notes.len() == 1 && notes[0].contains(words), "{notes:?}");
    }
}

#[test]
fn options_are_checked_as_libvmaf_declares_them() {
    let err = |name: &str, v: &str| {
        let o = Options::new();
        let mut o = o;
        match o.parse(name, v) {
            Err(e) => e.to_string(),
            Ok(()) => match Configured::all(FLAG, &o) {
                Err(e) => e.to_string(),
                Ok(_) => String::new(),
            },
        }
    };
    assert!(err("cambi-enc-width", "100").starts_with("cambi-enc-width: "));
    assert!(err("cambi-enc-height", "720.5").contains("whole"));
    assert!(err("cambi-window-size", "129").contains("outside"));
    assert!(err("cambi-enc-bitdepth", "4").starts_with("cambi-enc-bitdepth"));
    assert_eq!(err("cambi-enc-width", "1280"), "");
    assert_eq!(err("cambi-eotf", "pq"), "");
    assert!(err("cambi-eotf", "hlg").contains("bt1886, pq"));
    let mut o = Options::new();
    o.parse("cambi-high-res-speedup", "1080").unwrap();
    o.parse("cambi-vis-lum-threshold", "0.06").unwrap();
    o.parse("cambi-max-val", "17").unwrap();
    let c = Configured::all(FLAG, &o).unwrap();
    let l = at(PixelFormat::I420, 320, 240);
    let plan = crate::plan::Plan::new(l, l).unwrap();
    let s = c[0].setup(&plan, FLAG);
    assert_eq!(*s.settings::<CambiSettings>(), CambiSettings::vmaf_v1());
}

/// A 320x240 gradient in steps of one 8-bit code, 8 pixels wide: clear banding.
fn bands(w: usize, h: usize) -> Vec<u8> {
    (0..w * h).map(|i| (64 + (i % w) / 8) as u8).collect()
}

#[test]
fn gray_and_yuv_luma_agree_and_chroma_is_ignored() {
    let (w, h) = (320usize, 240usize);
    let luma = bands(w, h);
    let cfg = config(Options::new());
    let gray = at(PixelFormat::Gray8, w as u32, h as u32);
    let mut e = Engine::new(&cfg, gray, gray).unwrap();
    let f = Frame::Host(HostFrame::new(&[Plane {
        data: &luma,
        stride: w,
    }]));
    let s = e.compare(&f, &f).unwrap();
    let g = s.get("cambi").unwrap();
    assert!(g > 5.0, "{g}");
    assert_eq!(s.get("ref-cambi"), Some(g));
    let yuv = at(PixelFormat::I420, w as u32, h as u32);
    let mut e = Engine::new(&cfg, yuv, yuv).unwrap();
    let chroma: Vec<u8> = (0..w * h / 4).map(|i| (i * 7) as u8).collect();
    let f = Frame::Host(HostFrame::new(&[
        Plane {
            data: &luma,
            stride: w,
        },
        Plane {
            data: &chroma,
            stride: w / 2,
        },
        Plane {
            data: &chroma,
            stride: w / 2,
        },
    ]));
    assert_eq!(e.compare(&f, &f).unwrap().get("cambi"), Some(g));
    // A flat frame has none.
    let flat = vec![100u8; w * h];
    let f = Frame::Host(HostFrame::new(&[Plane {
        data: &flat,
        stride: w,
    }]));
    let mut e = Engine::new(&cfg, gray, gray).unwrap();
    assert_eq!(e.compare(&f, &f).unwrap().get("cambi"), Some(0.0));
    // Padded rows read the same.
    let mut padded = vec![0u8; (w + 17) * h];
    for y in 0..h {
        padded[y * (w + 17)..y * (w + 17) + w].copy_from_slice(&luma[y * w..(y + 1) * w]);
    }
    let f = Frame::Host(HostFrame::new(&[Plane {
        data: &padded,
        stride: w + 17,
    }]));
    assert_eq!(e.compare(&f, &f).unwrap().get("cambi"), Some(g));
}

#[test]
fn samples_beyond_the_depth_are_clamped_not_read_out_of_range() {
    let (w, h) = (256usize, 216usize);
    // 10-bit samples in 16-bit cells, every other one with stray high bits.
    let data: Vec<u8> = (0..w * h)
        .flat_map(|i| {
            let v: u16 = if i % 2 == 0 {
                0xffff
            } else {
                256 + (i % w / 8) as u16
            };
            v.to_le_bytes()
        })
        .collect();
    let clamped: Vec<u8> = data
        .chunks(2)
        .flat_map(|c| u16::from_le_bytes([c[0], c[1]]).min(1023).to_le_bytes())
        .collect();
    let layout = at(PixelFormat::Gray16Le, w as u32, h as u32);
    let s = CambiSettings {
        enc_bitdepth: 10,
        ..Default::default()
    };
    let mut cpu = CambiCpu::new(&layout, &s).unwrap();
    // Gray16 is 16-bit: depth 16 reads all bits. Use the 10-bit path through I420_10.
    let l10 = at(PixelFormat::I420_10Le, w as u32, h as u32);
    let mut cpu10 = CambiCpu::new(&l10, &s).unwrap();
    let chroma = vec![0u8; w * h / 2];
    let score = |cpu: &mut CambiCpu, luma: &[u8], layout: &FrameLayout| {
        let planes = [
            Plane {
                data: luma,
                stride: 2 * w,
            },
            Plane {
                data: &chroma,
                stride: w,
            },
            Plane {
                data: &chroma,
                stride: w,
            },
        ];
        let n = layout.format.n_planes();
        let f = HostFrame::new(&planes[..n]);
        let p = f.validate(layout, "test").unwrap();
        cpu.score(&p)
    };
    let a = score(&mut cpu10, &data, &l10);
    let b = score(&mut cpu10, &clamped, &l10);
    assert_eq!(a, b);
    assert!(score(&mut cpu, &data, &layout).is_finite());
}

/// Decodes a reference clip's luma planes (8-bit 4:2:0, or 10-bit as 16-bit cells).
fn reference_frames(clip: &str, pix_fmt: &str, w: usize, h: usize, bps: usize) -> Vec<Vec<u8>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../tests/data/cambi/{clip}.mkv"));
    let out = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-threads", "1", "-i"])
        .arg(&path)
        .args(["-f", "rawvideo", "-pix_fmt", pix_fmt, "-"])
        .output()
        .expect("ffmpeg is needed (scripts/setup-deps.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frame = (w * h + 2 * w.div_ceil(2) * h.div_ceil(2)) * bps;
    out.stdout
        .chunks(frame)
        .map(|f| f[..w * h * bps].to_vec())
        .collect()
}

fn libvmaf(clip_run: &str) -> Vec<f64> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../tests/data/cambi/{clip_run}.csv"));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect()
}

/// The crate's CAMBI API with the VMAF v1 models' settings (and an encoding size) against
/// libvmaf's `--feature cambi=cambi_high_res_speedup=1080:cambi_vis_lum_threshold=0.06:
/// cambi_max_val=17.0` (tests/data/cambi/, see engine/tests/cambi_reference.rs).
#[test]
fn the_vmaf_api_with_v1_settings_equals_libvmaf() {
    for (clip, run, pix, bps, format, enc) in [
        ("hd", "v1", "yuv420p", 1, PixelFormat::I420, None),
        (
            "hd",
            "enc720v1",
            "yuv420p",
            1,
            PixelFormat::I420,
            Some((1280, 720)),
        ),
        (
            "hdband",
            "v1",
            "yuv420p10le",
            2,
            PixelFormat::I420_10Le,
            None,
        ),
        ("natural", "v1", "yuv420p", 1, PixelFormat::I420, None),
    ] {
        let (w, h) = if clip == "natural" {
            (320, 240)
        } else {
            (1920, 1080)
        };
        let mut s = CambiSettings::vmaf_v1();
        if let Some((ew, eh)) = enc {
            (s.enc_width, s.enc_height) = (ew, eh);
        }
        let layout = at(format, w as u32, h as u32);
        let mut cpu = CambiCpu::new(&layout, &s).unwrap();
        let want = libvmaf(&format!("{clip}.{run}"));
        let frames = reference_frames(clip, pix, w, h, bps);
        assert_eq!(frames.len(), want.len());
        let chroma = vec![0u8; w * h];
        for (luma, want) in frames.iter().zip(want) {
            let cs = w.div_ceil(2) * bps;
            let f = HostFrame::new(&[
                Plane {
                    data: luma,
                    stride: w * bps,
                },
                Plane {
                    data: &chroma,
                    stride: cs,
                },
                Plane {
                    data: &chroma,
                    stride: cs,
                },
            ]);
            let p = f.validate(&layout, "test").unwrap();
            let got = cpu.score(&p);
            assert!((got - want).abs() < 1e-6, "{clip}.{run}: {got} vs {want}");
        }
    }
}
