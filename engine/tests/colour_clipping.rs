//! Legal limited-range Y'CbCr whose R'G'B' leaves [0, 1] (issue 20): under PQ and HLG the
//! linear-light metrics clip R'G'B' to [0, 1] before the EOTF, as such a display does, so
//! their scores stay of the order of the same codes' scores under BT.709. Before, the PQ
//! EOTF took R' ≈ 1.7 (Y' 235, Cb = Cr = 240) past its pole: on these frames SSIMULACRA2 was
//! −4.0e8 and Butteraugli 6.5e5 under PQ, 46 and 10.3 under HLG (70 and 3.4 under BT.709).

mod common;

use common::synthetic::{bt2100, out_of_range_frames, planes};
use gpumetrics_engine::{
    BackendChoice, Colorimetry, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet,
    PixelFormat, Transfer,
};

/// `ssimulacra2`, `butteraugli`, `butteraugli-3norm` of the out-of-range pair (`identical`:
/// the reference against itself), both tagged `c`, on the CPU backend.
fn scores(format: PixelFormat, c: Colorimetry, identical: bool) -> [f64; 3] {
    let (w, h) = (96, 64);
    let l = FrameLayout {
        format,
        width: w as u32,
        height: h as u32,
    };
    let cfg = EngineConfig {
        metrics: MetricSet::SSIMULACRA2 | MetricSet::BUTTERAUGLI,
        backend: BackendChoice::Cpu,
        ..Default::default()
    };
    let (r, d, strides, offsets) = out_of_range_frames(format, w, h);
    let d = if identical { &r } else { &d };
    let (rp, dp) = (
        planes(&offsets, &strides, &r),
        planes(&offsets, &strides, d),
    );
    let s = Engine::builder(&cfg, l, l)
        .colorimetry(c, c)
        .build()
        .unwrap()
        .compare(
            &Frame::Host(HostFrame::new(&rp)),
            &Frame::Host(HostFrame::new(&dp)),
        )
        .unwrap();
    ["ssimulacra2", "butteraugli", "butteraugli-3norm"].map(|f| s.get(f).unwrap())
}

#[test]
fn pq_and_hlg_scores_stay_bounded_on_out_of_range_rgb() {
    // Measured: SSIMULACRA2 70.2 / 71.7 under BT.709 (I420 / P010), 58.3 / 57.4 under PQ,
    // 65.1 / 63.9 under HLG; Butteraugli 3.36 / 3.94, 4.74 / 4.38, 3.74 / 3.56; 3-norm
    // 1.75 / 1.80, 2.16 / 2.26, 1.85 / 1.90.
    for format in [PixelFormat::I420, PixelFormat::P010_10Le] {
        let sdr = scores(format, Colorimetry::default(), false);
        println!("{format:?} bt709: {sdr:?}");
        for (name, transfer) in [("pq", Transfer::Pq), ("hlg", Transfer::Hlg)] {
            let s = scores(format, bt2100(transfer), false);
            println!("{format:?} {name}: {s:?}");
            let [s2, ba, ba3] = s;
            assert!(
                (55.0..100.0).contains(&s2) && (s2 - sdr[0]).abs() <= 15.0,
                "{format:?} {name}: ssimulacra2 {s2} (bt709 {})",
                sdr[0]
            );
            assert!(
                ba > 0.0 && ba < 5.0 && ba <= 1.5 * sdr[1],
                "{format:?} {name}: butteraugli {ba} (bt709 {})",
                sdr[1]
            );
            assert!(
                ba3 > 0.0 && ba3 < 2.5 && ba3 <= 1.5 * sdr[2],
                "{format:?} {name}: butteraugli-3norm {ba3} (bt709 {})",
                sdr[2]
            );
            assert_eq!(
                scores(format, bt2100(transfer), true),
                [100.0, 0.0, 0.0],
                "{format:?} {name}: identical frames"
            );
        }
    }
}
