//! A session's side of shape variants: switching (by index, by dims, by input shapes with padding),
//! writing an input smaller than its variant's shape, what each variant served, and the arena a
//! smaller variant leaves to the application.

use super::variants::{note_use, VariantUse};
use super::Session;
use crate::kernels::{entry::VARIANTS, has};
use crate::model::{round_up, Fit};
use crate::{Error, Model};

impl<'a, const E: u64> Session<'a, E> {
    /// The shape variant that runs (an index of [`Model::variant_dims`]; 0 for a model with one
    /// shape).
    pub fn variant(&self) -> usize {
        self.model().variant_index()
    }

    /// Runs variant `i` from now on (`Error::NoVariant` if the model has none such). Allocates nothing;
    /// the inputs must be written again, in the variant's shapes.
    // (Out of line, as `set_dims`: firmware that switches from several places keeps one copy.)
    #[inline(never)]
    pub fn set_variant(&mut self, i: usize) -> Result<(), Error> {
        if i == self.variant() {
            return Ok(());
        }
        let own = self.model.variant_index();
        match &mut self.variants {
            Some(state) if has::<E>(VARIANTS) => {
                let view = self.model.variant(i)?;
                state.view = (i != own).then_some(view);
                state.current = i;
                Ok(())
            }
            _ => Err(Error::NoVariant { variants: 1 }),
        }
    }

    /// Runs the variant whose named dims are `dims` (in the order of [`Model::dim_name`]), and returns
    /// its index; `Error::NoVariant` when the model was not converted for them.
    #[inline(never)]
    pub fn set_dims(&mut self, dims: &[u32]) -> Result<usize, Error> {
        let i = self.model.find_variant(dims).ok_or(Error::NoVariant {
            variants: self.model.variant_count(),
        })?;
        self.set_variant(i)?;
        Ok(i)
    }

    /// Runs the variant that takes graph inputs of these shapes (one per input, in order): the one
    /// with exactly these shapes, else the smallest that covers them where the model declares how to
    /// pad ([`Model::variant_covering`]); `Error::NoVariant` when none does. The inputs are then
    /// written with [`Session::write_input`] in their own shapes.
    pub fn set_input_shapes(&mut self, shapes: &[&[u32]]) -> Result<Fit, Error> {
        let fit = self
            .model
            .variant_covering(shapes)
            .ok_or(Error::NoVariant {
                variants: self.model.variant_count(),
            })?;
        self.set_variant(fit.variant)?;
        Ok(fit)
    }

    /// Writes graph input `index` from `bytes`, a row-major tensor of `shape` in the input's dtype
    /// (little-endian): the current variant's shape, or a smaller one on any axes, which is padded
    /// at the end of each with the model's pad value for the input (`Error::NoPadValue` if it
    /// declares none). Allocates nothing.
    pub fn write_input(&mut self, index: usize, shape: &[u32], bytes: &[u8]) -> Result<(), Error> {
        let pad = self.model.pad_value(index);
        let mut t = self.input(index)?;
        if shape == t.dims() {
            let dst = t.bytes_mut();
            if dst.len() != bytes.len() {
                return Err(Error::WrongLength {
                    expected: dst.len(),
                    got: bytes.len(),
                });
            }
            dst.copy_from_slice(bytes);
            return Ok(());
        }
        let pad = pad.ok_or(Error::NoPadValue { input: index })?;
        let (dtype, dims) = (t.dtype(), t.record.dims.clone());
        crate::ops::array::pad::pad_end_bytes(
            dtype.size(),
            &crate::ops::element::scalar_bytes(dtype, pad),
            bytes,
            shape,
            t.bytes_mut(),
            &dims,
        )
    }

    /// What variant `i` has served so far: its runs and its peak (`None` past the model's variants).
    pub fn variant_use(&self, i: usize) -> Option<VariantUse> {
        match &self.variants {
            Some(state) => state.uses.get(i).copied(),
            None => None,
        }
        .filter(|_| i < self.model.variant_count())
    }

    /// The activation bytes the current variant's plan leaves free (the tail of the region planned
    /// for the largest variant), for the application's own use between runs: no run of this variant
    /// reads or writes them. Empty for the largest variant.
    pub fn spare_mut(&mut self) -> &mut [u8] {
        let used = round_up(self.model().plan().activation_bytes as usize);
        self.activations.get_mut(used..).unwrap_or(&mut [])
    }

    /// Counts a run of the current variant.
    pub(super) fn count_run(&mut self) {
        note_use(&mut self.variants, |u| u.runs = u.runs.saturating_add(1));
    }

    /// The current variant's view, when it is not the model's own, moved out of the session while a
    /// run walks it (the session's own fields change meanwhile); [`Session::put_view`] puts it back.
    /// Nothing in a run reads [`Session::model`] in between (the variant's index stays in
    /// `VariantState::current`).
    pub(super) fn take_view(&mut self) -> Option<Model<'a, E>> {
        match &mut self.variants {
            Some(state) if has::<E>(VARIANTS) => state.view.take(),
            _ => None,
        }
    }

    /// Puts back the view [`Session::take_view`] moved out.
    pub(super) fn put_view(&mut self, view: Option<Model<'a, E>>) {
        if let Some(state) = &mut self.variants {
            if view.is_some() {
                state.view = view;
            }
        }
    }

    /// The current variant's view, when it is not the model's own, as a value: a run walks it while
    /// the session's own fields change.
    pub(super) fn view(&self) -> Option<Model<'a, E>> {
        match &self.variants {
            Some(state) if has::<E>(VARIANTS) => state.view.clone(),
            _ => None,
        }
    }
}
