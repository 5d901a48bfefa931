//! Shape variants (`ember convert --dim`): the variant table of a blob, checked at parse; a variant's
//! view of the model; the lookups by dims and by input shapes (with padding, `--pad`); and the pad
//! values. `docs/format.md`, "Shape variants", describes the records.

use super::tables::RecordTable;
use super::{Model, Tables};
use crate::format::{
    ArenaPlan, SectionKind, Span, VariantRecord, VariantTables, MAX_VARIANTS, MAX_VARIANT_DIMS,
};
use crate::kernels::{entry::VARIANTS, has};
use crate::Error;

/// The variant a session runs for its inputs' shapes ([`Model::variant_covering`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fit {
    /// The variant's index.
    pub variant: usize,
    /// Whether some input is smaller than the variant's and is padded to it.
    pub padded: bool,
}

impl<'b, const E: u64> Model<'b, E> {
    /// Checks the variant table of a model parsed from its main sections (the largest variant), and
    /// every variant as [`Model::validate`] checks the largest; returns their kernel-table entries
    /// and sets which variant the main sections are. The tables of the variants must follow one
    /// another in the VariantTables section (each starts at or after the end of the one before, in
    /// the order info, tensors, ops, variant by variant), which is how `ember convert` writes them
    /// and what rules out overlaps with one comparison per table.
    pub(super) fn validate_variants(&mut self) -> Result<u64, Error> {
        let bad = |reason| Error::BadSection {
            kind: SectionKind::Variants as u32,
            reason,
        };
        let count = self.variant_count();
        let names = self.dim_count().unwrap_or(0);
        if count == 0 || count > MAX_VARIANTS || names == 0 || names > MAX_VARIANT_DIMS {
            return Err(bad("not 1 to 16 variants of 1 to 4 named dims"));
        }
        let mut seen = [[0u32; MAX_VARIANT_DIMS]; MAX_VARIANTS];
        let mut cursor = 0u64;
        let mut largest = None;
        let mut entries = 0;
        for i in 0..count {
            let r = self.variant_record(i).filter(|r| r.dims.len() == names);
            let mut dims = [0u32; MAX_VARIANT_DIMS];
            if let Some(r) = &r {
                dims[..names].copy_from_slice(&r.dims);
            }
            let Some(r) = r.filter(|_| !seen[..i].contains(&dims)) else {
                return Err(bad(
                    "a variant record does not decode, lacks a dim or repeats dims",
                ));
            };
            seen[i] = dims;
            if let Some(t) = r.tables {
                for s in [t.info, t.tensors, t.ops] {
                    if (s.offset as u64) < cursor {
                        return Err(bad("variant tables overlap or are out of order"));
                    }
                    cursor = s.offset as u64 + s.len as u64;
                }
            } else if largest.replace(i).is_some() {
                largest = None;
                break;
            }
            let v = self.view(i, r.tables)?;
            let (p, q) = (v.info.arena, self.info.arena);
            let (vi, si) = (&v.info, &self.info);
            if p.persistent_bytes != q.persistent_bytes
                || p.activation_bytes > q.activation_bytes
                || p.scratch_bytes > q.scratch_bytes
                || vi.inputs.len() != si.inputs.len()
                || vi.outputs.len() != si.outputs.len()
            {
                return Err(bad(
                    "a variant needs more arena than the largest, or has other inputs or outputs",
                ));
            }
            if r.tables.is_some() {
                entries |= v.validate()?;
            }
        }
        self.variant = largest.ok_or(bad("not exactly one variant in the main sections"))?;
        Ok(entries)
    }

    /// Variant `i`'s view: from its tables in the VariantTables section, or (`None`) the main
    /// sections'. Nothing is validated again (parsing checked every variant).
    pub(super) fn view(
        &self,
        i: usize,
        tables: Option<VariantTables>,
    ) -> Result<Model<'b, E>, Error> {
        let section = self.variants.map_or(&[][..], |v| v.tables);
        let part = |s: Span| {
            let start = s.offset as usize;
            start
                .checked_add(s.len as usize)
                .and_then(|end| section.get(start..end))
                .ok_or(Error::BadSection {
                    kind: SectionKind::VariantTables as u32,
                    reason: "a variant's table runs past the section",
                })
        };
        let table = |s| RecordTable::new(part(s)?, SectionKind::VariantTables);
        let tables = match tables {
            None => self.own,
            Some(t) => Tables {
                info: part(t.info)?,
                tensors: table(t.tensors)?,
                ops: table(t.ops)?,
                // Names are kept for the largest variant only.
                names: None,
            },
        };
        Model::assemble(
            self.blob,
            self.weights,
            self.minor,
            self.entries,
            self.own,
            self.variants,
            i,
            tables,
        )
    }

    /// Record `i` of the variant table (after the names record). (Not inlined: parsing, switching
    /// and the dims lookups share one copy of the decoder.)
    #[inline(never)]
    pub(super) fn variant_record(&self, i: usize) -> Option<VariantRecord> {
        use crate::format::compact::{Compact, Reader};
        let bytes = self.variants.as_ref()?.table.record(i.checked_add(1)?)?;
        VariantRecord::read(&mut Reader::new(bytes))
    }

    /// How many dims the variants vary (the length of the names record).
    pub(super) fn dim_count(&self) -> Option<usize> {
        let names = self.variants.as_ref()?.table.record(0)?;
        crate::format::compact::Reader::new(names).len()
    }

    /// How many shape variants the blob has (1 for a blob converted without `--dim`).
    pub fn variant_count(&self) -> usize {
        self.variants
            .as_ref()
            .map_or(1, |v| v.table.count.saturating_sub(1))
    }

    /// The variant this view runs ([`Model::variant`] switches).
    pub fn variant_index(&self) -> usize {
        self.variant
    }

    /// The named dims' values of variant `i`, in the order of [`Model::dim_name`] (empty for a blob
    /// with one shape); `None` if there is no variant `i`.
    pub fn variant_dims(&self, i: usize) -> Option<heapless::Vec<u32, MAX_VARIANT_DIMS>> {
        match self.variants {
            None => (i == 0).then(heapless::Vec::new),
            Some(_) => self.variant_record(i).map(|r| r.dims),
        }
    }

    /// Name of the `k`th named dim (`--dim NAME=...` at conversion), if it decodes as UTF-8.
    pub fn dim_name(&self, k: usize) -> Option<&'b str> {
        let mut r = crate::format::compact::Reader::new(self.variants.as_ref()?.table.record(0)?);
        let count = r.len()?;
        let mut name = None;
        for _ in 0..=k.min(count.checked_sub(1)?) {
            name = Some(r.bytes()?);
        }
        (k < count).then_some(core::str::from_utf8(name?).ok()?)
    }

    /// The variant whose named dims are `dims` (in the order of [`Model::dim_name`]).
    pub fn find_variant(&self, dims: &[u32]) -> Option<usize> {
        (0..self.variant_count()).find(|&i| self.variant_dims(i).is_some_and(|d| d == dims))
    }

    /// The value graph input `input` may be padded with to reach a larger variant's shape (`ember
    /// convert --pad NAME=VALUE`), or `None` when the model declares none for it: then a session
    /// needs the input in a variant's exact shape.
    pub fn pad_value(&self, input: usize) -> Option<f64> {
        use crate::format::compact::{Compact, Reader};
        let mut r = Reader::new(self.variants.as_ref()?.table.record(0)?);
        for _ in 0..r.len()? {
            r.bytes()?;
        }
        // Optional trailing data: `(input index, value)` pairs.
        for _ in 0..r.len()? {
            let (index, value) = (u32::read(&mut r)?, f64::read(&mut r)?);
            if index as usize == input {
                return Some(value);
            }
        }
        None
    }

    /// The variant that takes graph inputs of these shapes (one per input, in order): one whose
    /// inputs have exactly these shapes, else, where every input that differs has a pad value
    /// ([`Model::pad_value`]) and fits in the variant's shape on every axis, the one of those with
    /// the smallest activation plan (`padded` then says so). `None` when no variant fits.
    pub fn variant_covering(&self, shapes: &[&[u32]]) -> Option<Fit> {
        let mut best: Option<(u32, usize)> = None;
        for i in 0..self.variant_count() {
            let Ok(v) = self.variant(i) else { continue };
            if v.inputs().len() != shapes.len() {
                continue;
            }
            let mut exact = true;
            let fits = v
                .inputs()
                .iter()
                .zip(shapes)
                .enumerate()
                .all(|(k, (&id, &want))| {
                    let Some(t) = v.tensor(id as usize) else {
                        return false;
                    };
                    if t.dims.as_slice() == want {
                        return true;
                    }
                    exact = false;
                    self.pad_value(k).is_some()
                        && t.dims.len() == want.len()
                        && t.dims.iter().zip(want).all(|(&have, &need)| need <= have)
                });
            if fits && exact {
                return Some(Fit {
                    variant: i,
                    padded: false,
                });
            }
            let bytes = v.plan().activation_bytes;
            if fits && best.is_none_or(|(b, _)| bytes < b) {
                best = Some((bytes, i));
            }
        }
        best.map(|(_, variant)| Fit {
            variant,
            padded: true,
        })
    }

    /// The view of variant `i` (`Error::NoVariant` if there is none): its tensors, ops and plan, over
    /// the same weights. Switching reads two record-table heads and one info record; it allocates
    /// nothing and validates nothing again (parsing checked every variant).
    pub fn variant(&self, i: usize) -> Result<Model<'b, E>, Error> {
        let tables = match self.variants {
            None if i == 0 => None,
            _ => {
                self.variant_record(i)
                    .ok_or(Error::NoVariant {
                        variants: self.variant_count(),
                    })?
                    .tables
            }
        };
        self.view(i, tables)
    }

    /// The largest variant's memory plan: what [`Model::arena_bytes`] sizes, from any variant's view.
    pub fn largest_plan(&self) -> ArenaPlan {
        match self.variants {
            Some(v) if has::<E>(VARIANTS) => v.plan,
            _ => self.info.arena,
        }
    }
}
