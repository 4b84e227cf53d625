// SPDX-License-Identifier: MPL-2.0
//! The `GstGpuMetricsMeta` custom meta on each compared distorted buffer (with
//! `attach-meta`); see [`crate::meta`].

use super::{Env, Pair, Sink};
use crate::gpumetrics::CAT;
use crate::meta;

pub(crate) struct BufferMeta;

impl Sink for BufferMeta {
    fn record(&mut self, env: &Env<'_>, pair: &mut Pair<'_>) -> Result<(), gst::ErrorMessage> {
        if env.settings.attach_meta {
            // Free when the element holds the only reference; otherwise copies the buffer
            // struct and shares the memory.
            if let Err(e) = meta::add(pair.buffer.make_mut(), pair.record) {
                gst::warning!(CAT, obj = env.element, "could not attach meta: {e}");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use gst::prelude::*;

    use super::super::tests::pair_of;
    use super::*;
    use crate::gpumetrics::settings::Settings;

    #[test]
    fn attaches_the_record_when_asked_without_touching_the_memory() {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let mut settings = Settings::default();
        for attach in [true, false] {
            settings.attach_meta = attach;
            let env = Env {
                element: &element,
                settings: &settings,
            };
            let (record, scores, mut buffer) = pair_of(2, 40.0);
            let memory = buffer.peek_memory(0).as_ptr();
            let mut pair = Pair {
                record: &record,
                scores: &scores,
                buffer: &mut buffer,
                arrived: std::time::Instant::now(),
            };
            BufferMeta.record(&env, &mut pair).unwrap();
            assert_eq!(buffer.peek_memory(0).as_ptr(), memory);
            assert_eq!(meta::get(&buffer), attach.then_some(record));
        }
    }
}
