//! Turning a view of a storage (offset, shape, strides in elements, byte order) into a
//! [`Tensor`]: a slice of the storage when the view is a contiguous little-endian run, otherwise a
//! gathered copy charged to a [`CopyBudget`].

use std::sync::Arc;

use super::{numel, Bytes, ElementType, Limits, Tensor};
use crate::ConvertError;

/// A strided view of a storage, in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct View {
    /// Element index of the view's first element.
    pub offset: usize,
    /// Dims, outermost first.
    pub shape: Vec<usize>,
    /// Step in elements of each dim.
    pub strides: Vec<usize>,
}

impl View {
    /// The contiguous row-major view of `shape` at `offset`.
    pub fn contiguous(offset: usize, shape: Vec<usize>) -> View {
        let mut strides = vec![0; shape.len()];
        let mut step = 1usize;
        for (s, &d) in strides.iter_mut().zip(&shape).rev() {
            *s = step;
            step = step.saturating_mul(d);
        }
        View {
            offset,
            shape,
            strides,
        }
    }

    /// Checks the view against `limits` and a storage of `storage_elems` elements, returning its
    /// element count. Nothing is allocated.
    pub fn check(&self, storage_elems: usize, limits: &Limits) -> Result<usize, String> {
        if self.shape.len() != self.strides.len() {
            return Err(format!(
                "size {:?} and stride {:?} have different ranks",
                self.shape, self.strides
            ));
        }
        if self.shape.len() > limits.max_rank {
            return Err(format!(
                "{} dimensions, more than the budget of {} (Limits::max_rank)",
                self.shape.len(),
                limits.max_rank
            ));
        }
        let n = numel(&self.shape)
            .filter(|&n| n as u64 <= limits.max_elements)
            .ok_or_else(|| {
                format!(
                    "size {:?} has more elements than the budget of {} (Limits::max_elements)",
                    self.shape, limits.max_elements
                )
            })?;
        if n == 0 {
            return Ok(0);
        }
        let last = self
            .shape
            .iter()
            .zip(&self.strides)
            .try_fold(self.offset, |acc, (&d, &s)| {
                (d - 1).checked_mul(s).and_then(|x| acc.checked_add(x))
            });
        match last {
            Some(last) if last < storage_elems => Ok(n),
            _ => Err(format!(
                "size {:?}, stride {:?} at offset {} reach past the storage's {storage_elems} \
                 elements",
                self.shape, self.strides, self.offset
            )),
        }
    }

    /// True when the elements are the run `offset..offset + numel` in row-major order (dims of
    /// size 1 may have any stride).
    pub fn is_contiguous(&self) -> bool {
        let mut step = 1usize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 && s != step {
                return false;
            }
            step = step.saturating_mul(d);
        }
        true
    }
}

/// Bytes the readers may still copy (see [`Limits::copy_factor`]).
pub(crate) struct CopyBudget {
    left: u64,
}

impl CopyBudget {
    pub fn new(limits: &Limits, file_len: usize) -> Self {
        CopyBudget {
            left: limits.copy_budget(file_len),
        }
    }

    /// Charges `bytes`, or says which budget they exceed.
    pub fn take(&mut self, bytes: u64, what: &str) -> Result<(), ConvertError> {
        if bytes > self.left {
            return Err(ConvertError::checkpoint(format!(
                "{what} needs a copy of {bytes} bytes, over the budget left for copies ({} bytes; \
                 Limits::copy_factor and copy_slack: twice the file's size plus 1 MiB by default)",
                self.left
            )));
        }
        self.left -= bytes;
        Ok(())
    }
}

/// The storage a view reads: little-endian unless `big_endian`.
#[derive(Clone)]
pub(crate) struct Storage<'a> {
    pub bytes: Bytes<'a>,
    pub dtype: ElementType,
    pub big_endian: bool,
}

impl<'a> Storage<'a> {
    /// Number of whole elements.
    pub fn elements(&self) -> usize {
        self.bytes.as_slice().len() / (self.dtype.bits() / 8).max(1)
    }

    /// The tensor `view` (which [`View::check`] accepted for this storage) reads; `name` is for
    /// messages.
    pub fn tensor(
        &self,
        view: &View,
        budget: &mut CopyBudget,
        name: &str,
    ) -> Result<Tensor<'a>, ConvertError> {
        let elem = self.dtype.bits() / 8;
        let n = numel(&view.shape).unwrap_or(0);
        if n == 0 {
            // An empty view reads nothing, wherever its offset points.
            return Tensor::owned(self.dtype, view.shape.clone(), Vec::new());
        }
        let swap = self.big_endian && self.dtype.swap_unit() > 1;
        if view.is_contiguous() && !swap {
            let start = view.offset * elem;
            let range = start..start + n * elem;
            return Ok(Tensor {
                dtype: self.dtype,
                shape: view.shape.clone(),
                data: self.bytes.sub(range),
            });
        }
        budget.take((n * elem) as u64, &format!("tensor \"{name}\""))?;
        let out = gather(
            self.bytes.as_slice(),
            elem,
            swap.then_some(self.dtype.swap_unit()),
            view,
        );
        let len = out.len();
        Ok(Tensor::shared(
            self.dtype,
            view.shape.clone(),
            Arc::new(out),
            0..len,
        ))
    }
}

/// Copies the elements of `view` (checked) out of `src` in row-major order, reversing each
/// `swap`-byte unit when given.
fn gather(src: &[u8], elem: usize, swap: Option<usize>, view: &View) -> Vec<u8> {
    let n = numel(&view.shape).unwrap_or(0);
    let mut out = Vec::with_capacity(n * elem);
    if n == 0 {
        return out;
    }
    let rank = view.shape.len();
    let mut index = vec![0usize; rank];
    let mut at = view.offset;
    for _ in 0..n {
        let b = &src[at * elem..(at + 1) * elem];
        match swap {
            Some(unit) => b
                .chunks_exact(unit)
                .for_each(|u| out.extend(u.iter().rev())),
            None => out.extend_from_slice(b),
        }
        // Odometer step: the innermost dim that is not at its end moves on; those after it rewind.
        for d in (0..rank).rev() {
            index[d] += 1;
            at += view.strides[d];
            if index[d] < view.shape[d] {
                break;
            }
            at -= view.strides[d] * view.shape[d];
            index[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage(values: &[u8], big_endian: bool, dtype: ElementType) -> Storage<'_> {
        Storage {
            bytes: Bytes::Borrowed(values),
            dtype,
            big_endian,
        }
    }

    #[test]
    fn transposed_view_is_gathered_and_contiguous_one_is_borrowed() {
        let data: Vec<u8> = (0..6).collect();
        let s = storage(&data, false, ElementType::U8);
        let mut budget = CopyBudget::new(&Limits::default(), 0);
        // [[0,1,2],[3,4,5]] transposed: shape [3,2], strides [1,3].
        let t = View {
            offset: 0,
            shape: vec![3, 2],
            strides: vec![1, 3],
        };
        assert_eq!(t.check(6, &Limits::default()), Ok(6));
        let got = s.tensor(&t, &mut budget, "t").unwrap();
        assert_eq!(got.bytes(), &[0, 3, 1, 4, 2, 5]);
        assert!(!got.is_borrowed());
        let row = View::contiguous(3, vec![1, 3]);
        let got = s.tensor(&row, &mut budget, "row").unwrap();
        assert_eq!(got.bytes(), &[3, 4, 5]);
        assert!(got.is_borrowed());
    }

    #[test]
    fn an_empty_view_past_the_storage_reads_nothing() {
        let data = [1u8, 2];
        let s = storage(&data, false, ElementType::U8);
        let mut budget = CopyBudget::new(&Limits::default(), 0);
        let v = View::contiguous(usize::MAX / 2, vec![0, 3]);
        assert_eq!(v.check(2, &Limits::default()), Ok(0));
        let t = s.tensor(&v, &mut budget, "e").unwrap();
        assert_eq!((t.shape(), t.bytes()), (&[0, 3][..], &[][..]));
    }

    #[test]
    fn big_endian_elements_are_swapped_per_unit() {
        let data = [0x3f, 0x80, 0, 0, 0x40, 0, 0, 0]; // 1.0, 2.0 as big-endian f32
        let s = storage(&data, true, ElementType::F32);
        let mut budget = CopyBudget::new(&Limits::default(), 0);
        let got = s
            .tensor(&View::contiguous(0, vec![2]), &mut budget, "x")
            .unwrap();
        assert_eq!(got.to_f32().unwrap(), vec![1.0, 2.0]);
    }

    #[test]
    fn views_past_the_storage_and_huge_sizes_are_refused_before_allocating() {
        let limits = Limits::default();
        let v = View::contiguous(2, vec![3]);
        assert!(v.check(4, &limits).unwrap_err().contains("reach past"));
        let huge = View {
            offset: 0,
            shape: vec![1 << 30, 1 << 30],
            strides: vec![0, 0],
        };
        assert!(huge.check(1, &limits).unwrap_err().contains("max_elements"));
        let expanded = View {
            offset: 0,
            shape: vec![1 << 20, 1 << 4],
            strides: vec![0, 0],
        };
        assert_eq!(expanded.check(1, &limits), Ok(1 << 24));
        let data = [0u8; 4];
        let s = storage(&data, false, ElementType::F32);
        let mut budget = CopyBudget::new(&limits, 1024);
        let err = s.tensor(&expanded, &mut budget, "x").unwrap_err();
        assert!(err.to_string().contains("budget"), "{err}");
    }
}
