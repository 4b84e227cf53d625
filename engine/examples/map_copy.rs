//! What a 1080p distortion map costs on its way to the host, part by part, on this
//! machine's GPU: the device-to-host copy into pinned memory (the readback's) and into
//! pageable memory, the host copy out of pinned memory into the map's buffer
//! (`DistortionMap::copied`), and the map's statistics (`DistortionMap::stats`). Printed as a
//! table of milliseconds per map and GB/s (issue 48: what bounds the rate with a map on).
//!
//!     cargo run --release -p gpumetrics-engine --example map_copy [-- ROUNDS]

use std::time::Instant;

use cudarc::driver::CudaContext;
use gpumetrics_engine::map::DistortionMap;

const W: usize = 1920;
const H: usize = 1080;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(200);
    let n = W * H;
    let bytes = (n * 4) as f64;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let values: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 1e-3).collect();
    let device = stream.clone_htod(&values)?;
    // SAFETY: read only after the copies into it completed (the stream is synchronised).
    let mut pinned = unsafe { ctx.alloc_pinned::<f32>(n) }?;
    let mut pageable = vec![0f32; n];
    let mut rows = Vec::new();
    let mut time = |name: &str, f: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>| {
        f()?;
        let start = Instant::now();
        for _ in 0..rounds {
            f()?;
        }
        let ms = start.elapsed().as_secs_f64() * 1e3 / rounds as f64;
        rows.push((name.to_string(), ms));
        Ok::<(), Box<dyn std::error::Error>>(())
    };
    time(
        "device to pinned host (async copy, synchronised)",
        &mut || {
            stream.memcpy_dtoh(&device, &mut pinned)?;
            stream.synchronize()?;
            Ok(())
        },
    )?;
    time("device to pageable host", &mut || {
        stream.memcpy_dtoh(&device, &mut pageable)?;
        stream.synchronize()?;
        Ok(())
    })?;
    let mut buffer: Vec<f32> = Vec::with_capacity(n);
    time("pinned to the map's buffer (a reused Vec)", &mut || {
        buffer.clear();
        buffer.extend_from_slice(pinned.as_slice()?);
        std::hint::black_box(&buffer);
        Ok(())
    })?;
    time(
        "pinned to the map's buffer, 1 MB blocks on rayon's threads",
        &mut || {
            use rayon::prelude::*;
            let src = pinned.as_slice()?;
            buffer.resize(n, 0.0);
            buffer
                .par_chunks_mut(1 << 18)
                .zip(src.par_chunks(1 << 18))
                .for_each(|(d, s)| d.copy_from_slice(s));
            std::hint::black_box(&buffer);
            Ok(())
        },
    )?;
    time("pinned to a fresh Vec", &mut || {
        let v = pinned.as_slice()?.to_vec();
        std::hint::black_box(&v);
        Ok(())
    })?;
    let map = DistortionMap {
        width: W,
        height: H,
        values: values.clone(),
    };
    time("statistics (rayon)", &mut || {
        std::hint::black_box(map.stats(0.5, true));
        Ok(())
    })?;
    println!(
        "| 1080p f32 map ({:.1} MB), {rounds} rounds | ms | GB/s |",
        bytes / 1e6
    );
    println!("| --- | ---: | ---: |");
    for (name, ms) in rows {
        println!("| {name} | {ms:.3} | {:.1} |", bytes / (ms * 1e-3) / 1e9);
    }
    Ok(())
}
