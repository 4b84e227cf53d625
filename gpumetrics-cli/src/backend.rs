// SPDX-License-Identifier: MPL-2.0
//! Where the metrics run: the CUDA backend when a device is usable (checked here, as the
//! element will check it at its first caps), else the CPU; said on stderr, since the
//! scores' speed and the decoding choices depend on it.

use anyhow::{Result, bail};
use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, FrameLayout, MetricSet, PixelFormat};

use crate::cli::{Args, DeviceArg};
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

/// The CUDA device of a run: `--device N`, device 0 without it, or with `--device auto`
/// the GPU with the most free capacity now (the reason comes with it).
pub struct Device {
    pub index: u32,
    /// `--device auto`: which it chose and why (the records' header says it).
    pub auto: Option<String>,
}

/// Resolves `--device` ([`gpumetrics_engine::devices::auto`] for `auto`; it falls back to
/// device 0 without a CUDA device).
pub fn device(given: Option<DeviceArg>) -> Device {
    match given {
        None => Device {
            index: 0,
            auto: None,
        },
        Some(DeviceArg::Index(index)) => Device { index, auto: None },
        Some(DeviceArg::Auto) => {
            let c = gpumetrics_engine::devices::auto();
            Device {
                index: c.device,
                auto: Some(c.reason),
            }
        }
    }
}

/// Whether the CUDA backend runs (`Ok`: on which device; `Err`: why not), said on stderr;
/// `--backend cuda` without a usable device is an error.
pub fn choose(args: &Args, notes: &Notes) -> Result<Result<Device, String>> {
    let cuda = if args.backend == BackendChoice::Cpu {
        Err("--backend cpu".to_string())
    } else {
        let d = device(args.device);
        cuda_backend_usable(d.index).map(|()| d)
    };
    match (&cuda, args.backend) {
        (Err(e), BackendChoice::Cuda) => bail!(
            "--backend cuda: no usable CUDA device: {e}; use --backend cpu, or --backend auto to fall back"
        ),
        (Ok(d), _) => notes.say(match &d.auto {
            Some(why) => format!("backend: cuda (--device auto: {why})"),
            None => format!("backend: cuda (device {})", d.index),
        }),
        (Err(e), BackendChoice::Auto) => notes.say(if args.verbose {
            format!("backend: cpu (CUDA not usable: {e})")
        } else {
            "backend: cpu (no usable CUDA device; -v says why)".to_string()
        }),
        (Err(_), _) => notes.say("backend: cpu"),
    }
    Ok(cuda)
}

/// The device of each of `n` distorted files' elements: with several CUDA devices
/// (`count`) and no index given (`--device` absent or `auto`), in turn from `first` (round
/// robin); else every one on `first`.
pub fn spread(first: u32, given: Option<DeviceArg>, count: usize, n: usize) -> Vec<u32> {
    let count = count.max(1) as u64;
    let pinned = matches!(given, Some(DeviceArg::Index(_)));
    (0..n as u64)
        .map(|i| {
            if pinned || count == 1 {
                first
            } else {
                ((u64::from(first) + i) % count) as u32
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_files_spread_over_the_gpus_unless_an_index_pins_them() {
        // One GPU (or none): everything on it, as before.
        assert_eq!(spread(0, None, 1, 3), [0, 0, 0]);
        assert_eq!(spread(0, None, 0, 2), [0, 0]);
        // Several: in turn, from the first.
        assert_eq!(spread(0, None, 2, 5), [0, 1, 0, 1, 0]);
        assert_eq!(spread(2, Some(DeviceArg::Auto), 4, 4), [2, 3, 0, 1]);
        // A given index pins them all.
        assert_eq!(spread(1, Some(DeviceArg::Index(1)), 4, 3), [1, 1, 1]);
        assert_eq!(spread(0, None, 8, 0), Vec::<u32>::new());
    }

    #[test]
    fn device_resolves_the_flag() {
        assert_eq!(device(None).index, 0);
        assert!(device(None).auto.is_none());
        assert_eq!(device(Some(DeviceArg::Index(3))).index, 3);
        let auto = device(Some(DeviceArg::Auto));
        let why = auto.auto.expect("auto says why");
        if gpumetrics_engine::devices::device_count() == 0 {
            assert_eq!(auto.index, 0);
            assert!(why.starts_with("no CUDA device"), "{why}");
        } else {
            assert!((auto.index as usize) < gpumetrics_engine::devices::device_count());
        }
    }
}
