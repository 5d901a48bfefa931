//! The scratch bytes of a [`Workspace`](ember_core::Workspace) as f32 regions. Each op's plan lists the
//! lengths of its buffers once; its scratch function asks for [`bytes_for`] them (each length plus room
//! to start on a cache line) and its kernel carves the same list with [`Carve::take_all`], so that the
//! kernel uses exactly what the scratch function promised.

/// f32 values of slack per region: enough to move its start to a 64-byte boundary.
const SLACK: usize = 16;

/// Scratch f32 values to ask for a buffer of `len` values.
const fn region(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        len + SLACK
    }
}

/// Scratch bytes to ask for buffers of these lengths (f32 values).
pub(crate) fn bytes_for(lens: &[usize]) -> usize {
    lens.iter().map(|&l| region(l)).sum::<usize>() * 4
}

/// `len` rounded up to a whole number of 64-byte lines (the stride of per-worker parts of a buffer).
pub(crate) const fn line_stride(len: usize) -> usize {
    len.div_ceil(SLACK) * SLACK
}

/// Scratch being cut into regions, front to back.
pub(crate) struct Carve<'a> {
    rest: &'a mut [f32],
}

impl<'a> Carve<'a> {
    /// The scratch bytes as f32 (a 4-byte aligned start, as `Workspace` scratch is 16-byte aligned;
    /// otherwise none).
    pub(crate) fn new(bytes: &'a mut [u8]) -> Self {
        let whole = bytes.len() / 4 * 4;
        let rest = bytemuck::try_cast_slice_mut(&mut bytes[..whole]).unwrap_or_default();
        Carve { rest }
    }

    /// The buffers of lengths `lens`, in order, as [`bytes_for`] counted them; `None` when the scratch is
    /// too short.
    pub(crate) fn take_all<const N: usize>(
        &mut self,
        lens: [usize; N],
    ) -> Option<[&'a mut [f32]; N]> {
        let mut out: [&'a mut [f32]; N] = core::array::from_fn(|_| Default::default());
        for (slot, len) in out.iter_mut().zip(lens) {
            *slot = self.take(len)?;
        }
        Some(out)
    }

    /// The next buffer of `len` values, starting on a 64-byte boundary (the slack that [`bytes_for`]
    /// counts allows it); `None` when the scratch is too short.
    fn take(&mut self, len: usize) -> Option<&'a mut [f32]> {
        if len == 0 {
            return Some(&mut []);
        }
        let misalign = (self.rest.as_ptr() as usize / 4) % SLACK;
        let skip = (SLACK - misalign) % SLACK;
        let rest = core::mem::take(&mut self.rest);
        if rest.len() < len + SLACK {
            self.rest = rest;
            return None;
        }
        let (region, rest) = rest.split_at_mut(len + SLACK);
        self.rest = rest;
        Some(&mut region[skip..][..len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    #[test]
    fn buffers_are_cache_aligned_and_fit_what_was_asked() {
        let lens = [10, 0, 33, 50];
        let need = bytes_for(&lens);
        assert_eq!(need, 4 * (10 + 33 + 50 + 3 * SLACK));
        // A u32 buffer seen as bytes: 4-byte aligned like a Workspace's scratch (a Vec<u8> may start
        // anywhere, and under Miri it does).
        let mut words = vec![0u32; (need + 16) / 4];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
        for offset in [0, 4, 8, 12, 16] {
            let mut carve = Carve::new(&mut bytes[offset..][..need]);
            let parts = carve.take_all(lens).unwrap();
            for (part, len) in parts.into_iter().zip(lens) {
                assert_eq!(part.len(), len);
                assert!(len == 0 || (part.as_ptr() as usize).is_multiple_of(64));
                part.fill(1.0);
            }
        }
        assert!(Carve::new(&mut bytes[..need - 4]).take_all(lens).is_none());
    }
}
