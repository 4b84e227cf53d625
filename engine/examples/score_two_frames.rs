// SPDX-License-Identifier: MPL-2.0
//! The smallest program that scores two frames: PSNR and SSIM of one 64×64 I420 pair on
//! the CPU backend. The top-level README.md ("Using the engine from Rust") shows this file
//! verbatim, and the docs test checks that it does.
//!
//!     cargo run -p gpumetrics-engine --example score_two_frames

use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
    Plane,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (width, height) = (64, 64);
    let layout = FrameLayout {
        format: PixelFormat::I420,
        width,
        height,
    };
    let config = EngineConfig {
        metrics: MetricSet::PSNR | MetricSet::SSIM,
        backend: BackendChoice::Cpu,
        ..Default::default()
    };
    let mut engine = Engine::new(&config, layout, layout)?;

    // A gradient as the reference, the same gradient with every fourth luma sample
    // brightened as the distorted frame; grey chroma in both.
    let (w, h) = (width as usize, height as usize);
    let reference: Vec<u8> = (0..w * h).map(|i| (i % w * 4) as u8).collect();
    let distorted: Vec<u8> = reference
        .iter()
        .enumerate()
        .map(|(i, &v)| if i % 4 == 0 { v.saturating_add(8) } else { v })
        .collect();
    let chroma = vec![128u8; (w / 2) * (h / 2)];
    let plane = |data, stride| Plane { data, stride };
    let c = plane(&chroma, w / 2);
    let (r, d) = ([plane(&reference, w), c, c], [plane(&distorted, w), c, c]);

    let scores = engine.compare(
        &Frame::Host(HostFrame::new(&r)),
        &Frame::Host(HostFrame::new(&d)),
    )?;
    println!("backend: {}", engine.backend_name());
    println!("psnr-y: {:.3} dB", scores.get("psnr-y").unwrap_or(f64::NAN));
    println!("ssim: {:.5}", scores.get("ssim").unwrap_or(f64::NAN));
    Ok(())
}
