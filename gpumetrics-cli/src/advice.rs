//! What the command's user can do about an element error: the element's message ends with
//! its fix in pipeline terms (`use backend=cpu`, `insert videoscale ...`), and its
//! `gpumetrics-error` details keep the engine's problem, its kind and that advice apart.
//! The command says the fix with its own flags instead.

use gst::prelude::*;

/// The text of an error message of the pipeline: the element's message with the command's
/// advice in place of the element's (where the element's details allow), then its source
/// and debug text.
pub(crate) fn error_text(e: &gst::message::Error) -> String {
    let src = e
        .src()
        .map(|s| s.path_string().to_string())
        .unwrap_or_default();
    let message = rewrite(&e.error().to_string(), e.details());
    match e.debug() {
        Some(d) if !d.is_empty() => format!("{message} ({src}; {d})"),
        _ => format!("{message} ({src})"),
    }
}

/// `message` with the element's advice (`details`' `advice`) replaced by the command's for
/// the error's `kind`, or left out where the command has none to give.
fn rewrite(message: &str, details: Option<&gst::StructureRef>) -> String {
    let Some(d) = details.filter(|d| d.name() == "gpumetrics-error") else {
        return message.to_string();
    };
    let ours = d.get::<&str>("kind").ok().and_then(advice);
    let Some(theirs) = d.get::<&str>("advice").ok() else {
        return match ours {
            Some(a) => format!("{message}; {a}"),
            None => message.to_string(),
        };
    };
    match (message.rfind(theirs), ours) {
        (Some(at), Some(a)) => format!("{}{a}{}", &message[..at], &message[at + theirs.len()..]),
        (Some(at), None) => {
            let before = message[..at].trim_end_matches([';', ' ', '.']);
            format!("{before}{}", &message[at + theirs.len()..])
        }
        (None, _) => message.to_string(),
    }
}

/// The command's fix for an engine error of `kind` (`EngineError::kind`).
fn advice(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "size-mismatch" => "add --scale to scale the distorted video to the reference's size",
        "cuda-unavailable" => "use --backend cpu (or --backend auto to fall back to it)",
        "cuda" => "check the driver and --device, or use --backend cpu",
        "needs-reference" => "give a reference file, or name no-reference metrics in --metrics",
        "device-frame-on-cpu" => "use --backend cuda (or --backend auto)",
        "unsupported-transfer" => "leave ssimulacra2 and butteraugli out of --metrics",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn details(kind: &str, advice: Option<&str>) -> gst::Structure {
        let mut s = gst::Structure::builder("gpumetrics-error")
            .field("kind", kind)
            .field("problem", "the problem")
            .build();
        if let Some(a) = advice {
            s.set("advice", a);
        }
        s
    }

    #[test]
    fn the_elements_advice_becomes_the_commands() {
        gst::init().unwrap();
        let element = "use backend=cpu (or backend=auto to fall back)";
        let message = format!("Measuring frame 3 failed: CUDA backend unavailable: x; {element}");
        let text = rewrite(&message, Some(&details("cuda-unavailable", Some(element))));
        assert_eq!(
            text,
            "Measuring frame 3 failed: CUDA backend unavailable: x; use --backend cpu (or \
             --backend auto to fall back to it)"
        );
        // Advice the command has no flag for is left out, not given in pipeline terms.
        let element = "convert one input first (e.g. insert `videoconvert`) before dist_sink";
        let message = format!("Cannot compare ref_sink with dist_sink: formats differ; {element}");
        assert_eq!(
            rewrite(
                &message,
                Some(&details("incompatible-formats", Some(element)))
            ),
            "Cannot compare ref_sink with dist_sink: formats differ"
        );
        // No details, or another element's: the message as it is.
        assert_eq!(rewrite("x; y", None), "x; y");
        let other = gst::Structure::new_empty("other");
        assert_eq!(rewrite("x; y", Some(&other)), "x; y");
    }
}
