//! Throughput of the reference CPU crates on all cores, on the same fixed frames as the
//! engine's throughput bench, printed as table rows: SSIMULACRA2 (`ssimulacra2`, rust-av;
//! `fast-ssim2`) and Butteraugli (`butteraugli`, imazen's port of libjxl).
//!
//!     cargo run --release -p gpumetrics-engine --example bench_crates [-- SECONDS [METRIC]]

use std::time::{Duration, Instant};

fn pattern(w: usize, h: usize, seed: u64) -> Vec<u8> {
    // Smooth image plus noise: closer to video than white noise.
    let mut s = seed | 1;
    (0..w * h * 3)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let (x, y) = ((i / 3) % w, (i / 3) / w);
            let base = 128.0 + 90.0 * ((x as f64 / 37.0).sin() * (y as f64 / 23.0).cos());
            (base + ((s >> 59) as f64 - 16.0)).clamp(0.0, 255.0) as u8
        })
        .collect()
}

fn rate(seconds: f64, mut f: impl FnMut() -> f64) -> (f64, f64) {
    let score = f();
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        f();
        n += 1;
    }
    (n as f64 / start.elapsed().as_secs_f64(), score)
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let only = std::env::args().nth(2);
    let wanted = |m: &str| only.as_deref().is_none_or(|o| o == m);
    println!("| crate | size | threads | pairs/s | score |");
    println!("| --- | --- | --- | --- | --- |");
    for (name, w, h) in [("1080p", 1920usize, 1080usize), ("2160p", 3840, 2160)] {
        let (r, d) = (pattern(w, h, 1), pattern(w, h, 2));
        let lin = |b: &[u8]| {
            let px = b
                .chunks(3)
                .map(|p| [p[0], p[1], p[2]].map(|v| v as f32 / 255.0))
                .collect();
            ssimulacra2::Rgb::new(
                px,
                w,
                h,
                ssimulacra2::TransferCharacteristic::SRGB,
                ssimulacra2::ColorPrimaries::BT709,
            )
            .unwrap()
        };
        let threads = rayon::current_num_threads();
        if wanted("butteraugli") {
            let img = |b: &[u8]| {
                let px = b
                    .chunks(3)
                    .map(|p| butteraugli::RGB8::new(p[0], p[1], p[2]))
                    .collect();
                butteraugli::Img::new(px, w, h)
            };
            let (ri, di) = (img(&r), img(&d));
            let params = butteraugli::ButteraugliParams::default();
            let (fps, score) = rate(seconds, || {
                butteraugli::butteraugli(
                    butteraugli::ImgVec::as_ref(&ri),
                    butteraugli::ImgVec::as_ref(&di),
                    &params,
                )
                .unwrap()
                .score
            });
            println!("| butteraugli 0.9 | {name} | {threads} | {fps:.2} | {score:.4} |");
        }
        if !wanted("ssimulacra2") {
            continue;
        }
        let (fps, score) = rate(seconds, || {
            ssimulacra2::compute_frame_ssimulacra2(lin(&r), lin(&d)).unwrap()
        });
        println!("| ssimulacra2 0.5 | {name} | {threads} | {fps:.2} | {score:.4} |");
        let (fps, score) = rate(seconds, || {
            use fast_ssim2::{PixelDescriptor, PixelSlice};
            let s =
                PixelSlice::new(&r, w as u32, h as u32, w * 3, PixelDescriptor::RGB8_SRGB).unwrap();
            let t =
                PixelSlice::new(&d, w as u32, h as u32, w * 3, PixelDescriptor::RGB8_SRGB).unwrap();
            fast_ssim2::compute_ssimulacra2(&s, &t).unwrap()
        });
        println!("| fast-ssim2 0.9 | {name} | {threads} | {fps:.2} | {score:.4} |");
    }
}
