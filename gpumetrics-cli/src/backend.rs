// SPDX-License-Identifier: MPL-2.0
//! Where the metrics run: the CUDA backend when a device is usable (checked here, as the
//! element will check it at its first caps), else the CPU; said on stderr, since the
//! scores' speed and the decoding choices depend on it.

use anyhow::{Result, bail};
use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, FrameLayout, MetricSet, PixelFormat};

use crate::cli::Args;
use crate::notes::Notes;

/// Whether the element's CUDA backend can run here: the engine opens its CUDA context for a
/// tiny frame, exactly what the element does at its first caps. The error says why not.
fn cuda_backend_usable(device: u32) -> Result<(), String> {
    let layout = FrameLayout {
        format: PixelFormat::I420,
        width: 64,
        height: 64,
    };
    let config = EngineConfig {
        metrics: MetricSet::PSNR,
        backend: BackendChoice::Cuda,
        device_id: device,
        ..Default::default()
    };
    Engine::new(&config, layout, layout)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Whether the CUDA backend runs (`Err`: why not), said on stderr; `--backend cuda`
/// without a usable device is an error.
pub fn choose(args: &Args, notes: &Notes) -> Result<Result<(), String>> {
    let cuda = if args.backend == BackendChoice::Cpu {
        Err("--backend cpu".to_string())
    } else {
        cuda_backend_usable(args.device)
    };
    match (&cuda, args.backend) {
        (Err(e), BackendChoice::Cuda) => bail!(
            "--backend cuda: no usable CUDA device: {e}; use --backend cpu, or --backend auto to fall back"
        ),
        (Ok(()), _) => notes.say(format!("backend: cuda (device {})", args.device)),
        (Err(e), BackendChoice::Auto) => notes.say(if args.verbose {
            format!("backend: cpu (CUDA not usable: {e})")
        } else {
            "backend: cpu (no usable CUDA device; -v says why)".to_string()
        }),
        (Err(_), _) => notes.say("backend: cpu"),
    }
    Ok(cuda)
}
