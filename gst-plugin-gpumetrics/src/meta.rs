// SPDX-License-Identifier: MPL-2.0
//! The `GstGpuMetricsMeta` custom buffer meta.
//!
//! Registered with `gst_meta_register_custom()`, so any language reads it without this crate:
//!
//! ```c
//! GstCustomMeta *m = gst_buffer_get_custom_meta (buf, "GstGpuMetricsMeta");
//! GstStructure *s = gst_custom_meta_get_structure (m);
//! gdouble y; gst_structure_get_double (s, "psnr-y", &y);
//! ```
//!
//! The structure (named `GstGpuMetricsMeta`) holds exactly the fields of the per-pair
//! `gpumetrics` message (see [`crate::message`]). The meta has no tags and is copied along
//! when the buffer is copied or transformed (the scores describe the frame, not its layout).

use crate::message::FrameScores;

/// Registered name of the custom meta (also the name of its structure).
pub const META_NAME: &str = "GstGpuMetricsMeta";

/// Registers the custom meta (idempotent). Called by the plugin's init; call it yourself
/// only to attach the meta without having loaded the plugin. GStreamer must be initialised.
pub fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if gst::meta::CustomMeta::is_registered(META_NAME) {
            return;
        }
        gst::meta::CustomMeta::register_with_transform(
            META_NAME,
            &[],
            |dest: &mut gst::BufferRef, meta: &gst::meta::CustomMeta, _src, _type| {
                let s = meta.structure().to_owned();
                match gst::meta::CustomMeta::add(dest, META_NAME) {
                    Ok(mut m) => {
                        let d = m.mut_structure();
                        for (name, value) in s.iter() {
                            d.set_value(name, value.clone());
                        }
                        true
                    }
                    Err(_) => false,
                }
            },
        );
    });
}

/// Attaches `scores` to `buffer` as `GstGpuMetricsMeta`, replacing an existing one.
pub fn add(buffer: &mut gst::BufferRef, scores: &FrameScores) -> Result<(), gst::glib::BoolError> {
    register();
    if let Ok(existing) = gst::meta::CustomMeta::from_mut_buffer(buffer, META_NAME) {
        existing.remove()?;
    }
    let mut meta = gst::meta::CustomMeta::add(buffer, META_NAME)?;
    scores.write_into(meta.mut_structure());
    Ok(())
}

/// Reads the scores attached to `buffer`, if it carries a `GstGpuMetricsMeta`.
pub fn get(buffer: &gst::BufferRef) -> Option<FrameScores> {
    if !gst::meta::CustomMeta::is_registered(META_NAME) {
        return None;
    }
    let meta = gst::meta::CustomMeta::from_buffer(buffer, META_NAME).ok()?;
    FrameScores::from_structure(meta.structure()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_get_copy() {
        gst::init().unwrap();
        let scores = FrameScores {
            frame: 3,
            pts: Some(gst::ClockTime::ZERO),
            running_time: Some(gst::ClockTime::ZERO),
            duration: Some(gst::ClockTime::from_mseconds(33)),
            scores: ["psnr-y", "psnr-avg"]
                .into_iter()
                .map(|n| gpumetrics_engine::metric::field(n).unwrap())
                .zip([f64::INFINITY, 50.0])
                .collect(),
        };
        let mut buf = gst::Buffer::with_size(16).unwrap();
        assert!(get(&buf).is_none());
        add(buf.get_mut().unwrap(), &scores).unwrap();
        assert_eq!(get(&buf).unwrap(), scores);
        // Copies keep the meta.
        let copy = buf.copy();
        assert_eq!(get(&copy).unwrap(), scores);
        // Replacing keeps a single meta.
        let mut s2 = scores.clone();
        s2.frame = 4;
        add(buf.get_mut().unwrap(), &s2).unwrap();
        assert_eq!(get(&buf).unwrap().frame, 4);
        assert_eq!(buf.iter_meta::<gst::Meta>().count(), 1);
    }
}
