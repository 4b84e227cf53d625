//! Property test of the frame-validation path (issue 10): random layouts, plane offsets,
//! strides and mapping sizes, as a hostile or buggy producer could state them in a
//! `GstVideoMeta`. A frame is accepted exactly when every plane's last read byte lies inside
//! the mapping, and an accepted frame is measured by the CPU backend without a panic or a
//! NaN. The number of cases is bounded ([`DEFAULT_CASES`]; `PROPTEST_CASES` overrides it) so
//! that CI stays fast.

use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
    PlaneOffsets,
};
use proptest::prelude::*;

/// The acceptance rule, restated in 128-bit arithmetic that cannot overflow.
fn fits(layout: &FrameLayout, planes: &PlaneOffsets, size: usize) -> bool {
    let n = layout.format.n_planes();
    planes.n_planes >= n
        && (0..n).all(|i| {
            let (offset, stride) = (planes.offsets[i] as i128, planes.strides[i] as i128);
            let row = layout.min_row_bytes(i) as i128;
            let rows = layout.plane_rows(i) as i128;
            stride > 0
                && stride >= row
                && stride <= i32::MAX as i128
                && offset + (rows - 1) * stride + row <= size as i128
        })
}

/// A layout with its tight plane offsets and strides (what a well-behaved producer sends).
fn tight(layout: &FrameLayout) -> (Vec<usize>, Vec<i64>, usize) {
    let mut offsets = vec![];
    let mut strides = vec![];
    let mut at = 0usize;
    for i in 0..layout.format.n_planes() {
        let row = layout.min_row_bytes(i);
        offsets.push(at);
        strides.push(row as i64);
        at += row * layout.plane_rows(i) as usize;
    }
    (offsets, strides, at)
}

/// One way of bending a stated layout.
#[derive(Clone, Debug)]
enum Bend {
    None,
    /// Stride of plane `i` times `k`, plus `add` (may go negative).
    Stride(usize, i64, i64),
    /// Offset of plane `i` moved to `size - back`.
    OffsetNearEnd(usize, usize),
    /// Offset of plane `i` plus `add`.
    Offset(usize, usize),
    /// The stated layout is of a frame `k` times larger (a meta claiming 256x192 on 64x48).
    Larger(u32),
    /// Fewer planes than the format needs.
    DropPlane,
    /// A huge stride (1 << 20, as in the issue) or an extreme one.
    HugeStride(usize, i64),
}

fn bend() -> impl Strategy<Value = Bend> {
    prop_oneof![
        4 => Just(Bend::None),
        1 => (0..4usize, 1..4i64, -8..64i64).prop_map(|(i, k, a)| Bend::Stride(i, k, a)),
        1 => (0..4usize, 0..64usize).prop_map(|(i, b)| Bend::OffsetNearEnd(i, b)),
        1 => (0..4usize, 0..4096usize).prop_map(|(i, a)| Bend::Offset(i, a)),
        1 => (2..5u32).prop_map(Bend::Larger),
        1 => Just(Bend::DropPlane),
        1 => (
            0..4usize,
            prop_oneof![
                Just(1i64 << 20),
                Just(i32::MAX as i64),
                Just(i64::MAX),
                Just(i64::MIN),
                Just(-1i64)
            ]
        )
            .prop_map(|(i, s)| Bend::HugeStride(i, s)),
    ]
}

fn layout_strategy() -> impl Strategy<Value = FrameLayout> {
    (0..PixelFormat::ALL.len(), 1..48u32, 1..40u32).prop_map(|(f, width, height)| FrameLayout {
        format: PixelFormat::ALL[f],
        width,
        height,
    })
}

/// Cases of the property when `PROPTEST_CASES` is unset. The variable overrides the number
/// the test sets (proptest 1.2 and later let `PROPTEST_*` variables take precedence over a
/// test's configuration; `proptest_cases_sets_the_number_of_cases` checks it).
const DEFAULT_CASES: u32 = 400;

/// Set in the environment of [`proptest_cases_sets_the_number_of_cases`]'s child run: each
/// case of the property prints [`CASE_LINE`].
const COUNT_CASES: &str = "GPUMETRICS_COUNT_PROPTEST_CASES";
const CASE_LINE: &str = "frame-validation case";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(DEFAULT_CASES))]

    #[test]
    fn accepted_exactly_when_every_plane_fits(
        layout in layout_strategy(),
        bend in bend(),
        // The mapping: the tight size, minus or plus a few bytes.
        slack in -64..256i64,
        seed in any::<u8>(),
    ) {
        if std::env::var_os(COUNT_CASES).is_some() {
            println!("{CASE_LINE}");
        }
        let (mut offsets, mut strides, tight_size) = tight(&layout);
        let size = (tight_size as i64 + slack).max(0) as usize;
        let n = offsets.len();
        match bend {
            Bend::None => {}
            Bend::Stride(i, k, a) => strides[i % n] = strides[i % n] * k + a,
            Bend::OffsetNearEnd(i, b) => offsets[i % n] = size.saturating_sub(b),
            Bend::Offset(i, a) => offsets[i % n] += a,
            Bend::Larger(k) => {
                let big = FrameLayout { width: layout.width * k, height: layout.height * k, ..layout };
                (offsets, strides, _) = tight(&big);
            }
            Bend::DropPlane => {
                offsets.pop();
                strides.pop();
            }
            Bend::HugeStride(i, s) => strides[i % n] = s,
        }
        let planes = PlaneOffsets::new(&offsets, &strides);
        let data: Vec<u8> = (0..size).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
        let expected = fits(&layout, &planes, size);
        let frame = HostFrame::from_mapped(&data, &layout, &planes, "dist_sink");
        prop_assert_eq!(frame.is_ok(), expected, "{:?} {:?} size {}: {:?}", layout, planes, size,
            frame.as_ref().err());
        match frame {
            Ok(frame) => {
                let config = EngineConfig {
                    metrics: MetricSet::PSNR | MetricSet::SSIM | MetricSet::SSIMULACRA2,
                    backend: BackendChoice::Cpu,
                    device_id: 0,
                    options: gpumetrics_engine::Options::new()
                        .with("ssim-chroma", gpumetrics_engine::OptionValue::Bool(true))
                        .unwrap(),
                };
                let mut engine = Engine::new(&config, layout, layout).unwrap();
                let scores = engine.compare(&Frame::Host(frame), &Frame::Host(frame)).unwrap();
                for (name, v) in scores.iter() {
                    prop_assert!(!v.is_nan(), "{} is NaN", name);
                }
            }
            Err(e) => {
                let msg = e.to_string();
                prop_assert!(msg.contains("dist_sink"), "{}", msg);
            }
        }
    }
}

#[test]
fn the_issue_examples_are_refused_with_the_sizes() {
    // The issue's cases: an I420 64x48 buffer of 1,152 bytes, a meta stride of 1 << 20.
    let layout = FrameLayout {
        format: PixelFormat::I420,
        width: 64,
        height: 48,
    };
    let (offsets, mut strides, size) = tight(&layout);
    assert_eq!(size, 4608);
    let data = vec![0u8; 1152];
    let planes = PlaneOffsets::new(&offsets, &strides);
    let e = HostFrame::from_mapped(&data, &layout, &planes, "dist_sink").unwrap_err();
    assert!(e.to_string().contains("past the 1152 bytes mapped"), "{e}");
    let data = vec![0u8; size];
    strides[0] = 1 << 20;
    let planes = PlaneOffsets::new(&offsets, &strides);
    let e = HostFrame::from_mapped(&data, &layout, &planes, "dist_sink").unwrap_err();
    assert!(e.to_string().contains("stride 1048576"), "{e}");
    // Plane offsets at size - 1.
    let planes = PlaneOffsets::new(&[size - 1, size - 1, size - 1], &[64, 32, 32]);
    let e = HostFrame::from_mapped(&data, &layout, &planes, "ref_sink").unwrap_err();
    assert!(
        e.to_string().contains("ref_sink: plane 0") && e.to_string().contains("4608 bytes"),
        "{e}"
    );
    // Negative strides (bottom-up) are refused.
    let planes = PlaneOffsets::new(&offsets, &[-64, 32, 32]);
    let e = HostFrame::from_mapped(&data, &layout, &planes, "ref_sink").unwrap_err();
    assert!(e.to_string().contains("positive strides"), "{e}");
    // The tight layout itself is accepted, in host and in device memory.
    let planes = PlaneOffsets::new(&offsets, &[64, 32, 32]);
    assert!(HostFrame::from_mapped(&data, &layout, &planes, "ref_sink").is_ok());
    let dev =
        gpumetrics_engine::DeviceFrame::from_mapped(1 << 32, size, &layout, &planes, "ref_sink")
            .unwrap();
    assert_eq!(dev.ptrs[1], (1 << 32) + 3072);
    assert!(
        gpumetrics_engine::DeviceFrame::from_mapped(1 << 32, size - 1, &layout, &planes, "x")
            .is_err()
    );
}

/// The property's cases in a run of this test binary with `PROPTEST_CASES` set to `cases`
/// (or unset).
fn cases_run(cases: Option<&str>) -> usize {
    let mut run = std::process::Command::new(std::env::current_exe().unwrap());
    run.args([
        "accepted_exactly_when_every_plane_fits",
        "--exact",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(COUNT_CASES, "1");
    match cases {
        Some(n) => run.env("PROPTEST_CASES", n),
        None => run.env_remove("PROPTEST_CASES"),
    };
    let out = run.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    stdout.matches(CASE_LINE).count()
}

#[test]
fn proptest_cases_sets_the_number_of_cases() {
    if std::env::var_os(COUNT_CASES).is_some() {
        return; // the child run
    }
    assert_eq!(cases_run(Some("7")), 7);
    assert_eq!(cases_run(None), DEFAULT_CASES as usize);
}
