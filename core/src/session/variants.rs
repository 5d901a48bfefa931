//! What a session keeps for a model with shape variants (`ember convert --dim`): the view of the
//! variant that runs, and what each variant served (`switching.rs` switches).

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
    /// The variant that runs, when it is not the session's model's own (a run moves it out while it
    /// walks the ops, and back).
    pub(super) view: Option<Model<'a, E>>,
    /// The index of the variant that runs.
    pub(super) current: usize,
    /// Runs and peak of each variant.
    pub(super) uses: [VariantUse; MAX_VARIANTS],
}

/// Updates the [`VariantUse`] of the variant that runs, for a model with variants.
pub(super) fn note_use<const E: u64>(
    variants: &mut Option<VariantState<'_, E>>,
    f: impl FnOnce(&mut VariantUse),
) {
    if let Some(state) = variants.as_mut().filter(|_| has::<E>(VARIANTS)) {
        if let Some(u) = state.uses.get_mut(state.current) {
            f(u);
        }
    }
}
