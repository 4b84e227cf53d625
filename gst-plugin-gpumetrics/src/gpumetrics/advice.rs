// SPDX-License-Identifier: MPL-2.0
//! What a user of the element can do about an engine error, in GStreamer terms. The
//! engine's errors say what is wrong (the command reports them too, with its own flags);
//! the element adds the change to the pipeline or the property that fixes it.

use std::fmt;

use gpumetrics_engine::EngineError;

/// An engine error followed by the element's advice: `{problem}; {what to do}`.
pub(crate) struct Advised<'a>(pub &'a EngineError);

impl fmt::Display for Advised<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        match advice(self.0) {
            Some(a) => write!(f, "; {a}"),
            None => Ok(()),
        }
    }
}

/// The `gpumetrics-error` details of an element error caused by `e` (GStreamer's error
/// details, `gst_message_parse_error_details`): `kind` (`EngineError::kind`), `problem` (the
/// engine's text, which says what is wrong and nothing about GStreamer) and, where there is
/// one, `advice` (the element's fix, the text after the problem in the message). The
/// `gpumetrics` command gives its own flags' advice from `kind` instead.
pub(crate) fn details(e: &EngineError) -> gst::Structure {
    let mut s = gst::Structure::builder("gpumetrics-error")
        .field("kind", e.kind())
        .field("problem", e.to_string())
        .build();
    if let Some(a) = advice(e) {
        s.set("advice", a);
    }
    s
}

/// The fix for `e` in a pipeline, where there is one to name.
pub(crate) fn advice(e: &EngineError) -> Option<String> {
    Some(match e {
        EngineError::SizeMismatch { ref_w, ref_h, .. } => format!(
            "scale one input to the other's size first (e.g. insert \
             `videoscale ! video/x-raw,width={ref_w},height={ref_h}` before dist_sink)"
        ),
        EngineError::IncompatibleFormats { reference, .. } => format!(
            "convert one input first (e.g. insert `videoconvert ! video/x-raw,format={reference}` \
             before dist_sink)"
        ),
        EngineError::CudaUnavailable(_) => {
            "use backend=cpu (or backend=auto to fall back)".to_string()
        }
        EngineError::Cuda(_) => "check the driver and device-id, or use backend=cpu".to_string(),
        EngineError::NeedsReference { .. } => {
            "link ref_sink, or set metrics to those that need none".to_string()
        }
        EngineError::DeviceFrameOnCpu { .. } => {
            "use backend=cuda or put cudadownload before the pad".to_string()
        }
        EngineError::UnsupportedTransfer { .. } => {
            "convert it first (e.g. `videoconvert ! video/x-raw,colorimetry=bt709`) or leave \
             ssimulacra2 and butteraugli out of `metrics`"
                .to_string()
        }
        EngineError::InvalidFrame(_)
        | EngineError::Unsupported(_)
        | EngineError::InvalidOption { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_details_keep_the_problem_and_the_advice_apart() {
        gst::init().unwrap();
        let e = EngineError::CudaUnavailable("no driver".into());
        let d = details(&e);
        assert_eq!(d.name(), "gpumetrics-error");
        assert_eq!(d.get::<&str>("kind").unwrap(), "cuda-unavailable");
        assert_eq!(d.get::<&str>("problem").unwrap(), e.to_string());
        assert_eq!(
            d.get::<&str>("advice").unwrap(),
            "use backend=cpu (or backend=auto to fall back)"
        );
        assert!(!details(&EngineError::Unsupported("x".into())).has_field("advice"));
    }

    #[test]
    fn the_element_adds_the_pipelines_fix() {
        let e = EngineError::SizeMismatch {
            ref_w: 64,
            ref_h: 48,
            dist_w: 32,
            dist_h: 24,
        };
        let text = Advised(&e).to_string();
        assert!(
            text.starts_with("reference is 64x48 but distorted is 32x24"),
            "{text}"
        );
        assert!(
            text.contains("videoscale ! video/x-raw,width=64,height=48"),
            "{text}"
        );
        let e = EngineError::CudaUnavailable("no driver".into());
        assert!(
            Advised(&e)
                .to_string()
                .ends_with("no driver; use backend=cpu (or backend=auto to fall back)")
        );
        // Errors without a pipeline fix are the engine's text alone.
        let e = EngineError::InvalidFrame("ref_sink: too short".into());
        assert_eq!(Advised(&e).to_string(), e.to_string());
    }
}
