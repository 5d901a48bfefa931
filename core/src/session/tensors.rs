//! The views a session hands out of its graph inputs and outputs, typed by the tensor's dtype.

use crate::format::TensorRecord;
use crate::ops::element::Element;
use crate::schema::DType;
use crate::Error;

/// A writable view of a graph input.
pub struct TensorMut<'s> {
    pub(super) record: TensorRecord,
    pub(super) bytes: &'s mut [u8],
}

impl TensorMut<'_> {
    /// Dimensions (as the source model declared them, e.g. NCHW for an ONNX image input).
    pub fn dims(&self) -> &[u32] {
        &self.record.dims
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.record.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.record.dtype.size()
    }

    /// True if the tensor holds no elements.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The elements as f32, writable in place.
    pub fn as_f32_mut(&mut self) -> Result<&mut [f32], Error> {
        if self.record.dtype != DType::F32 {
            return Err(Error::WrongDType {
                expected: self.record.dtype,
                got: DType::F32,
            });
        }
        bytemuck::try_cast_slice_mut(self.bytes).map_err(|_| Error::Unsupported {
            reason: "tensor is not f32-aligned",
        })
    }

    /// The elements as `T` (whose dtype must be the tensor's; Bool tensors are read as `u8`).
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T], Error> {
        check_dtype::<T>(self.record.dtype)?;
        bytemuck::try_cast_slice_mut(self.bytes).map_err(|_| Error::Unsupported {
            reason: "tensor bytes are not aligned for their dtype",
        })
    }

    /// The raw little-endian bytes, writable (for inputs of any dtype, e.g. from a `.npy` file).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes
    }

    /// Copies `values` in; the length must match.
    pub fn write_f32(&mut self, values: &[f32]) -> Result<(), Error> {
        let dst = self.as_f32_mut()?;
        if dst.len() != values.len() {
            return Err(Error::WrongLength {
                expected: dst.len(),
                got: values.len(),
            });
        }
        dst.copy_from_slice(values);
        Ok(())
    }
}

/// A read-only view of a graph output.
pub struct TensorRef<'s> {
    pub(super) record: TensorRecord,
    pub(super) bytes: &'s [u8],
}

impl<'s> TensorRef<'s> {
    /// Dimensions (as the source model declared them).
    pub fn dims(&self) -> &[u32] {
        &self.record.dims
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.record.dtype
    }

    /// The elements as f32.
    pub fn as_f32(&self) -> Result<&'s [f32], Error> {
        if self.record.dtype != DType::F32 {
            return Err(Error::WrongDType {
                expected: self.record.dtype,
                got: DType::F32,
            });
        }
        bytemuck::try_cast_slice(self.bytes).map_err(|_| Error::Unsupported {
            reason: "tensor is not f32-aligned",
        })
    }

    /// The elements as `T` (whose dtype must be the tensor's; Bool tensors are read as `u8`).
    pub fn as_slice<T: Element>(&self) -> Result<&'s [T], Error> {
        check_dtype::<T>(self.record.dtype)?;
        bytemuck::try_cast_slice(self.bytes).map_err(|_| Error::Unsupported {
            reason: "tensor bytes are not aligned for their dtype",
        })
    }

    /// The raw little-endian bytes.
    pub fn bytes(&self) -> &'s [u8] {
        self.bytes
    }

    /// Copies the elements out; the length must match.
    pub fn read_f32(&self, out: &mut [f32]) -> Result<(), Error> {
        let src = self.as_f32()?;
        if src.len() != out.len() {
            return Err(Error::WrongLength {
                expected: src.len(),
                got: out.len(),
            });
        }
        out.copy_from_slice(src);
        Ok(())
    }
}

fn check_dtype<T: Element>(dtype: DType) -> Result<(), Error> {
    let same = T::DTYPE == dtype || (T::DTYPE == DType::U8 && dtype == DType::Bool);
    if same {
        Ok(())
    } else {
        Err(Error::WrongDType {
            expected: dtype,
            got: T::DTYPE,
        })
    }
}
