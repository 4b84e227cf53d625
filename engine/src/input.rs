//! Which input: the one type for "the reference or the distorted input" (a no-reference
//! metric's side, an event's input, the element's unmatched frames).

use crate::color::Colorimetry;
use crate::format::FrameLayout;
use crate::plan::Plan;

/// The reference or the distorted input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Input {
    Reference,
    Distorted,
}

impl Input {
    /// `ref` or `dist` (events, stats files, Prometheus labels).
    pub fn name(self) -> &'static str {
        match self {
            Input::Reference => "ref",
            Input::Distorted => "dist",
        }
    }

    /// This input's name of a no-reference field declared as `[name, ref-name]`: `name`
    /// on the distorted input, `ref-name` on the reference.
    pub(crate) fn field(self, names: [&'static str; 2]) -> &'static str {
        match self {
            Input::Distorted => names[0],
            Input::Reference => names[1],
        }
    }

    /// The input's frame layout in the plan.
    pub(crate) fn layout(self, plan: &Plan) -> &FrameLayout {
        match self {
            Input::Distorted => &plan.distorted,
            Input::Reference => &plan.reference,
        }
    }

    /// The input's colorimetry in the plan.
    pub(crate) fn colorimetry(self, plan: &Plan) -> &Colorimetry {
        match self {
            Input::Distorted => &plan.colorimetry[1],
            Input::Reference => &plan.colorimetry[0],
        }
    }
}
