//! Several GPUs in one host: how many CUDA devices there are, how many gpumetrics engines
//! of this process run on each (a process-wide registry the CUDA backend joins while it
//! lives), and the device `device-id=-1` / `--device auto` picks ([`auto`]): the one with
//! the fewest engines, then the most free memory ([`choose`]). A choice counts as an engine
//! of its device until that engine starts (at the first frames), so that elements or
//! monitor channels started together spread instead of all taking the emptiest device.
//!
//! Nothing here panics or fails where no CUDA driver is installed: there are then no
//! devices, and [`auto`] says why it falls back to device 0.

use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::CudaContext;

/// What [`choose`] knows of one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLoad {
    /// gpumetrics engines of this process on the device.
    pub engines: usize,
    /// Free device memory in bytes; `None` when it could not be read (counted as none free).
    pub free_bytes: Option<u64>,
}

/// The device with the most free capacity: the fewest engines, then the most free memory,
/// then the lowest index; `None` without devices.
pub fn choose(loads: &[DeviceLoad]) -> Option<usize> {
    loads
        .iter()
        .enumerate()
        .min_by(|(ia, a), (ib, b)| {
            a.engines
                .cmp(&b.engines)
                .then(b.free_bytes.unwrap_or(0).cmp(&a.free_bytes.unwrap_or(0)))
                .then(ia.cmp(ib))
        })
        .map(|(i, _)| i)
}

/// Live engines per CUDA device index (grown as devices are used).
static ENGINES: LazyLock<Mutex<Vec<usize>>> = LazyLock::new(Default::default);

/// Engines of this process running on CUDA device `device` now.
pub fn live_engines(device: u32) -> usize {
    ENGINES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(device as usize)
        .copied()
        .unwrap_or(0)
}

/// Devices [`auto`] chose whose engine has not started yet, and when: a choice counts as an
/// engine on its device until the first engine there starts (it takes the oldest such
/// choice) or [`RESERVED_FOR`] passes. So that channels or elements started at the same
/// moment, none with an engine yet, do not all choose the same device.
static RESERVED: LazyLock<Mutex<Vec<(usize, Instant)>>> = LazyLock::new(Default::default);

/// How long a choice of [`auto`] waits for its engine (an element that never gets caps
/// holds none).
pub const RESERVED_FOR: Duration = Duration::from_secs(60);

/// Choices of [`auto`] on `device` still waiting for their engine.
pub fn reserved(device: u32) -> usize {
    let mut r = RESERVED.lock().unwrap_or_else(|e| e.into_inner());
    prune(&mut r);
    r.iter().filter(|(d, _)| *d == device as usize).count()
}

fn prune(r: &mut Vec<(usize, Instant)>) {
    r.retain(|(_, at)| at.elapsed() < RESERVED_FOR);
}

/// An engine's place in the registry: counted on its device from [`Registered::new`] until
/// dropped.
#[derive(Debug)]
pub(crate) struct Registered(usize);

impl Registered {
    pub(crate) fn new(device: usize) -> Registered {
        // The oldest choice of this device waiting for its engine is this engine's (lock
        // order: RESERVED, then ENGINES, as in `auto`).
        let mut reserved = RESERVED.lock().unwrap_or_else(|e| e.into_inner());
        prune(&mut reserved);
        if let Some(i) = reserved.iter().position(|(d, _)| *d == device) {
            reserved.remove(i);
        }
        let mut counts = ENGINES.lock().unwrap_or_else(|e| e.into_inner());
        if counts.len() <= device {
            counts.resize(device + 1, 0);
        }
        counts[device] += 1;
        Registered(device)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut counts = ENGINES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = counts.get_mut(self.0) {
            *c = c.saturating_sub(1);
        }
    }
}

/// Runs `f` with the CUDA driver, or says why there is none usable (no libcuda, no
/// symbols, cuInit failing); never panics.
fn with_driver<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    // SAFETY: only tries to load the driver library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("the CUDA driver library (libcuda.so) was not found".into());
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err("the CUDA driver is unusable (missing symbols?)".into()))
}

/// The number of CUDA devices; 0 without a usable driver.
pub fn device_count() -> usize {
    cuda_device_count().unwrap_or(0)
}

/// The number of CUDA devices, or why it cannot be known.
pub fn cuda_device_count() -> Result<usize, String> {
    with_driver(|| {
        CudaContext::device_count()
            .map(|n| n.max(0) as usize)
            .map_err(|e| format!("cannot query CUDA devices: {e}"))
    })
}

/// Free memory of CUDA device `device` in bytes, read in its primary context; the calling
/// thread's current context is left as it was.
fn free_memory(device: usize) -> Result<u64, String> {
    with_driver(|| {
        use cudarc::driver::result::ctx;
        let before = ctx::get_current().ok().flatten();
        let context = CudaContext::new(device).map_err(|e| format!("device {device}: {e}"))?;
        let info = context
            .mem_get_info()
            .map_err(|e| format!("device {device}: {e}"));
        // SAFETY: `before` was current on this thread a moment ago and is still alive (the
        // caller holds it); a null context unbinds.
        let _ = unsafe { ctx::set_current(before.unwrap_or(std::ptr::null_mut())) };
        info.map(|(free, _)| free as u64)
    })
}

/// What [`auto`] picked, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoChoice {
    /// The CUDA device index.
    pub device: u32,
    /// Whether a device was found; `false`: device 0 as without `auto` (the CUDA backend
    /// will not open, `auto` falls back to the CPU).
    pub found: bool,
    /// One line for a log: the devices' loads, or why there are none.
    pub reason: String,
}

/// The device with the most free capacity now ([`choose`] over every device's engines of
/// this process and free memory); device 0 with the reason where there is no CUDA device.
pub fn auto() -> AutoChoice {
    let fallback = |why: String| AutoChoice {
        device: 0,
        found: false,
        reason: format!("no CUDA device to choose from ({why}): device 0"),
    };
    let count = match cuda_device_count() {
        Ok(0) => return fallback("0 CUDA devices found".into()),
        Ok(n) => n,
        Err(e) => return fallback(e),
    };
    // Free memory first (a context per device: slow), then the counts and the choice under
    // the reservations' lock, so that two choices at once see each other.
    let free: Vec<Option<u64>> = (0..count).map(|d| free_memory(d).ok()).collect();
    let mut reserved = RESERVED.lock().unwrap_or_else(|e| e.into_inner());
    prune(&mut reserved);
    let loads: Vec<DeviceLoad> = free
        .into_iter()
        .enumerate()
        .map(|(d, free_bytes)| DeviceLoad {
            engines: live_engines(d as u32) + reserved.iter().filter(|(r, _)| *r == d).count(),
            free_bytes,
        })
        .collect();
    let device = choose(&loads).unwrap_or(0);
    reserved.push((device, Instant::now()));
    AutoChoice {
        device: device as u32,
        found: true,
        reason: describe(device, &loads),
    }
}

/// `device 1 of 2 (engines 3, 1; free MiB 70000, 76000)`.
fn describe(device: usize, loads: &[DeviceLoad]) -> String {
    let engines: Vec<String> = loads.iter().map(|l| l.engines.to_string()).collect();
    let free: Vec<String> = loads
        .iter()
        .map(|l| match l.free_bytes {
            Some(b) => (b >> 20).to_string(),
            None => "?".into(),
        })
        .collect();
    format!(
        "device {device} of {} (gpumetrics engines, started or chosen, per device {}; free MiB {})",
        loads.len(),
        engines.join(", "),
        free.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A choice waits on its device until that device's first engine starts, which takes
    /// it: counted once, not twice. (Device indices far past any GPU: the registry is the
    /// process's, shared with other tests.)
    #[test]
    fn a_choice_counts_until_its_engine_starts() {
        let d = 1000usize;
        RESERVED.lock().unwrap().push((d, Instant::now()));
        RESERVED.lock().unwrap().push((d, Instant::now()));
        assert_eq!(reserved(d as u32), 2);
        let engine = Registered::new(d);
        assert_eq!((reserved(d as u32), live_engines(d as u32)), (1, 1));
        drop(engine);
        assert_eq!((reserved(d as u32), live_engines(d as u32)), (1, 0));
        // An old choice whose engine never came no longer counts.
        if let Some(old) = Instant::now().checked_sub(RESERVED_FOR + Duration::from_secs(1)) {
            RESERVED.lock().unwrap().push((d + 1, old));
            assert_eq!(reserved(d as u32 + 1), 0);
        }
    }

    fn load(engines: usize, free_mib: Option<u64>) -> DeviceLoad {
        DeviceLoad {
            engines,
            free_bytes: free_mib.map(|m| m << 20),
        }
    }

    #[test]
    fn fewest_engines_first_then_most_free_memory() {
        assert_eq!(choose(&[]), None);
        assert_eq!(choose(&[load(5, Some(10))]), Some(0));
        // Engines decide before memory.
        assert_eq!(
            choose(&[load(2, Some(80_000)), load(1, Some(1_000))]),
            Some(1)
        );
        // Equal engines: the most free memory.
        assert_eq!(
            choose(&[
                load(1, Some(30_000)),
                load(1, Some(70_000)),
                load(1, Some(50_000))
            ]),
            Some(1)
        );
        // Memory that could not be read counts as none free.
        assert_eq!(choose(&[load(0, None), load(0, Some(1))]), Some(1));
        // All equal: the lowest index.
        assert_eq!(
            choose(&[load(0, Some(8)), load(0, Some(8)), load(0, Some(8))]),
            Some(0)
        );
        assert_eq!(choose(&[load(3, None), load(3, None)]), Some(0));
    }

    #[test]
    fn the_registry_counts_live_engines_per_device() {
        // A device index no other test's engine uses.
        let d = 977;
        assert_eq!(live_engines(d), 0);
        let a = Registered::new(d as usize);
        let b = Registered::new(d as usize);
        assert_eq!(live_engines(d), 2);
        assert_eq!(live_engines(d - 1), 0);
        drop(a);
        assert_eq!(live_engines(d), 1);
        drop(b);
        assert_eq!(live_engines(d), 0);
    }

    #[test]
    fn the_description_names_each_devices_load() {
        let text = describe(1, &[load(3, Some(70_000)), load(1, None)]);
        assert_eq!(
            text,
            "device 1 of 2 (gpumetrics engines, started or chosen, per device 3, 1; free MiB 70000, ?)"
        );
    }

    /// Without a CUDA driver (this test's machine may have one: then a real device).
    #[test]
    fn auto_never_panics_and_falls_back_to_device_0() {
        let c = auto();
        match cuda_device_count() {
            Ok(n) if n > 0 => {
                assert!(c.found, "{c:?}");
                assert!((c.device as usize) < n, "{c:?}");
            }
            _ => {
                assert_eq!(c.device, 0);
                assert!(!c.found);
                assert!(c.reason.starts_with("no CUDA device"), "{c:?}");
                assert_eq!(device_count(), 0);
            }
        }
    }
}
