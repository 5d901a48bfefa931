//! What a session keeps for a model with shape variants (`ember convert --dim`): the view of the
//! variant that runs, and what each variant served.

use crate::format::MAX_VARIANTS;
use crate::kernels::{entry::VARIANTS, has};
use crate::Model;

/// What one shape variant of the model has served in a session ([`Session::variant_use`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct VariantUse {
    /// Runs of the variant so far.
    pub runs: u32,
    /// Highest activation byte a run of the variant touched (0 before its first run).
    pub peak_bytes: u32,
}

/// What a session keeps for a model with shape variants.
pub(super) struct VariantState<'a, const E: u64> {
    /// The variant that runs, when it is not the session's model's own.
    pub(super) view: Option<Model<'a, E>>,
    /// Runs and peak of each variant.
    pub(super) uses: [VariantUse; MAX_VARIANTS],
}

/// Updates the [`VariantUse`] of the variant that runs, for a model with variants (`own`: the
/// session's model's own variant, which runs when there is no view).
pub(super) fn note_use<const E: u64>(
    variants: &mut Option<VariantState<'_, E>>,
    own: usize,
    f: impl FnOnce(&mut VariantUse),
) {
    if let Some(state) = variants.as_mut().filter(|_| has::<E>(VARIANTS)) {
        let v = state.view.as_ref().map_or(own, Model::variant_index);
        if let Some(u) = state.uses.get_mut(v) {
            f(u);
        }
    }
}
