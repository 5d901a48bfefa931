//! Checkpoint readers: a [`Checkpoint`] is a set of named tensors (element type, shape, little-endian
//! bytes) read from a safetensors file, a PyTorch checkpoint (zip or legacy layout) or a numpy `.npz`.
//!
//! - [`safetensors`]: through the `safetensors` crate; the tensors borrow the file's bytes.
//! - [`torch_zip`] and [`torch_legacy`]: the two layouts `torch.save` writes. Their pickles are read
//!   by a restricted reader (`pickle.rs`) that builds a plain data graph and never runs anything: it
//!   knows the globals a `state_dict` uses (`torch.rs`) and refuses every other one by name. Strides,
//!   storage offsets, storages shared between tensors and big-endian files are honoured; contiguous
//!   little-endian tensors borrow the file's bytes.
//! - [`npz`]: a zip of `.npy` files.
//! - a state dict written with Python's `pickle` (storages as `_load_from_bytes` calls), read by
//!   [`torch_legacy`].
//!
//! Every reader checks sizes against the bytes present before allocating, and [`Limits`] bounds what
//! a small hostile file can make it do.
//!
//! ```no_run
//! let bytes = std::fs::read("model.safetensors").unwrap();
//! let ckpt = ember_convert::weights::Checkpoint::parse(&bytes).unwrap();
//! for (name, t) in ckpt.iter() {
//!     println!("{name} {} {:?}", t.dtype(), t.shape());
//! }
//! let w: Vec<f32> = ckpt.get("fc.weight").unwrap().to_f32().unwrap();
//! # let _ = w;
//! ```

pub(crate) mod archive;
mod element;
mod gather;
pub mod npy;
pub mod npz;
pub(crate) mod pickle;
pub mod safetensors;
mod torch;
pub mod torch_legacy;
mod torch_storage;
pub mod torch_zip;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub use element::ElementType;

use crate::ConvertError;

/// The file formats a [`Checkpoint`] is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Hugging Face safetensors.
    Safetensors,
    /// `torch.save`'s zip layout (PyTorch 1.6 and later): `<archive>/data.pkl`, `<archive>/data/N`.
    TorchZip,
    /// `torch.save(..., _use_new_zipfile_serialization=False)`: pickles followed by raw storages.
    TorchLegacy,
    /// numpy's `np.savez` / `np.savez_compressed`.
    Npz,
    /// A state dict written with Python's `pickle.dump` rather than `torch.save`: its storages are
    /// `torch.storage._load_from_bytes` calls holding legacy-layout files.
    TorchPickle,
}

impl Format {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Safetensors => "safetensors",
            Format::TorchZip => "PyTorch zip checkpoint",
            Format::TorchLegacy => "PyTorch legacy checkpoint",
            Format::Npz => "numpy npz",
            Format::TorchPickle => "pickled PyTorch state dict",
        }
    }

    /// The format of `bytes`, told from their content (not the file name): `None` if none fits.
    pub fn detect(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
            return Some(if torch_zip::is_torch_archive(bytes) {
                Format::TorchZip
            } else {
                Format::Npz
            });
        }
        // Safetensors first: its header length may start with the bytes of a pickle's PROTO (a
        // 640-byte header is 80 02 00 ...), while a pickle never has a plausible length and `{`.
        if safetensors::looks_safetensors(bytes) {
            return Some(Format::Safetensors);
        }
        if torch_legacy::looks_legacy(bytes) {
            return Some(Format::TorchLegacy);
        }
        if bytes.first() == Some(&0x80) && bytes.get(1).is_some_and(|&v| (2..=5).contains(&v)) {
            return Some(Format::TorchPickle);
        }
        None
    }
}

/// Budgets of the readers: what a file may make them do before they give up with an error naming
/// the budget. The defaults fit any real checkpoint; a hostile file that is small stays small.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest `data.pkl` a zip checkpoint may inflate, in bytes (the other pickles are read in place).
    pub max_pickle_bytes: usize,
    /// Most memo entries of one pickle.
    pub max_memo: usize,
    /// Most values on the pickle stack at once.
    pub max_stack: usize,
    /// Deepest nesting of containers (and of open marks) in a pickle, and of dicts holding tensors.
    pub max_depth: usize,
    /// Longest string (a name, a key, a global; protocol 2 also writes `bytes` as a latin-1 string,
    /// so a plain-pickled storage is one) in bytes.
    pub max_str_bytes: usize,
    /// Most tensors in a checkpoint.
    pub max_tensors: usize,
    /// Most dimensions of a tensor.
    pub max_rank: usize,
    /// Most elements of all tensors together.
    pub max_elements: u64,
    /// Bytes the readers may copy on top of the file for views that are not a plain slice of their
    /// storage (strided, expanded, big-endian): `copy_factor` times the file's size plus
    /// `copy_slack`. Contiguous little-endian tensors cost nothing.
    pub copy_factor: u64,
    /// See [`Limits::copy_factor`].
    pub copy_slack: u64,
    /// Most container visits while collecting the tensors of a pickle (shared containers are visited
    /// once per reference, so a "memo bomb" of containers referring to each other hits this).
    pub max_visits: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_pickle_bytes: 1 << 30,
            max_memo: 1 << 20,
            max_stack: 1 << 20,
            max_depth: 64,
            max_str_bytes: 1 << 24,
            max_tensors: 1 << 20,
            max_rank: 32,
            max_elements: 1 << 40,
            copy_factor: 2,
            copy_slack: 1 << 20,
            max_visits: 1 << 24,
        }
    }
}

impl Limits {
    /// The copy budget for a file of `len` bytes.
    pub(crate) fn copy_budget(&self, len: usize) -> u64 {
        (len as u64)
            .saturating_mul(self.copy_factor)
            .saturating_add(self.copy_slack)
    }
}

/// The bytes of a tensor: a slice of the file, or a shared buffer the reader made (decompressed,
/// gathered or byte-swapped).
#[derive(Clone)]
pub(crate) enum Bytes<'a> {
    Borrowed(&'a [u8]),
    Shared(Arc<Vec<u8>>, std::ops::Range<usize>),
}

impl<'a> Bytes<'a> {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Borrowed(b) => b,
            Bytes::Shared(buf, r) => &buf[r.clone()],
        }
    }

    /// The bytes `range` of these (which the caller checked), sharing the buffer.
    fn sub(&self, range: std::ops::Range<usize>) -> Bytes<'a> {
        match self {
            Bytes::Borrowed(b) => Bytes::Borrowed(&b[range]),
            Bytes::Shared(buf, r) => {
                Bytes::Shared(buf.clone(), r.start + range.start..r.start + range.end)
            }
        }
    }
}

/// One tensor of a checkpoint: element type, shape and row-major little-endian bytes.
#[derive(Clone)]
pub struct Tensor<'a> {
    dtype: ElementType,
    shape: Vec<usize>,
    data: Bytes<'a>,
}

impl std::fmt::Debug for Tensor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .field("bytes", &self.data.as_slice().len())
            .finish()
    }
}

impl PartialEq for Tensor<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.dtype == other.dtype && self.shape == other.shape && self.bytes() == other.bytes()
    }
}

/// Number of elements of `shape`, or `None` on overflow.
pub(crate) fn numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

impl<'a> Tensor<'a> {
    /// A tensor over `data` (row-major, little-endian), which must hold exactly the bytes of `shape`.
    pub fn borrowed(
        dtype: ElementType,
        shape: Vec<usize>,
        data: &'a [u8],
    ) -> Result<Self, ConvertError> {
        check_len(dtype, &shape, data.len())?;
        Ok(Tensor {
            dtype,
            shape,
            data: Bytes::Borrowed(data),
        })
    }

    /// A tensor owning `data` (row-major, little-endian), which must hold exactly the bytes of
    /// `shape`.
    pub fn owned(
        dtype: ElementType,
        shape: Vec<usize>,
        data: Vec<u8>,
    ) -> Result<Tensor<'static>, ConvertError> {
        check_len(dtype, &shape, data.len())?;
        let len = data.len();
        Ok(Tensor {
            dtype,
            shape,
            data: Bytes::Shared(Arc::new(data), 0..len),
        })
    }

    /// An f32 tensor with these values; `values.len()` must be the number of elements of `shape`.
    pub fn from_f32(shape: Vec<usize>, values: &[f32]) -> Result<Tensor<'static>, ConvertError> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor::owned(ElementType::F32, shape, data)
    }

    /// A tensor over `buf[range]`, which the caller checked.
    pub(crate) fn shared(
        dtype: ElementType,
        shape: Vec<usize>,
        buf: Arc<Vec<u8>>,
        range: std::ops::Range<usize>,
    ) -> Self {
        Tensor {
            dtype,
            shape,
            data: Bytes::Shared(buf, range),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> ElementType {
        self.dtype
    }

    /// The dims, outermost first (empty for a scalar).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        // Checked when the tensor was made.
        self.shape.iter().product()
    }

    /// The row-major little-endian bytes.
    pub fn bytes(&self) -> &[u8] {
        self.data.as_slice()
    }

    /// True when the bytes are a slice of the file the checkpoint was parsed from (no copy made).
    pub fn is_borrowed(&self) -> bool {
        matches!(self.data, Bytes::Borrowed(_))
    }

    /// A copy that owns its bytes (free for tensors the reader already made).
    pub fn into_owned(self) -> Tensor<'static> {
        let data = match self.data {
            Bytes::Borrowed(b) => Bytes::Shared(Arc::new(b.to_vec()), 0..b.len()),
            Bytes::Shared(buf, r) => Bytes::Shared(buf, r),
        };
        Tensor {
            dtype: self.dtype,
            shape: self.shape,
            data,
        }
    }

    /// The same tensor with another shape of the same element count (a reshape, no copy).
    pub fn reshaped(mut self, shape: Vec<usize>) -> Result<Self, ConvertError> {
        if numel(&shape) != Some(self.numel()) {
            return Err(ConvertError::checkpoint(format!(
                "cannot reshape a {:?} tensor to {shape:?}",
                self.shape
            )));
        }
        self.shape = shape;
        Ok(self)
    }

    fn elements(&self) -> Result<std::slice::ChunksExact<'_, u8>, ConvertError> {
        if !self.dtype.bits().is_multiple_of(8) {
            return Err(self.cannot("it is packed below a byte"));
        }
        Ok(self.bytes().chunks_exact(self.dtype.bits() / 8))
    }

    /// Every element read by `read` (the dtype's `float_at` or `int_at`), or an error saying `why` one
    /// cannot be.
    fn read_elements<T>(
        &self,
        read: fn(ElementType, &[u8]) -> Option<T>,
        why: &str,
    ) -> Result<Vec<T>, ConvertError> {
        self.elements()?
            .map(|b| read(self.dtype, b).ok_or_else(|| self.cannot(why)))
            .collect()
    }

    fn cannot(&self, why: &str) -> ConvertError {
        ConvertError::checkpoint(format!(
            "a {} tensor cannot be converted: {why}",
            self.dtype
        ))
    }

    /// The values as f32 (rounded to nearest), for the float types.
    pub fn to_f32(&self) -> Result<Vec<f32>, ConvertError> {
        if self.dtype == ElementType::F32 {
            return Ok(self
                .bytes()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect());
        }
        Ok(self.to_f64()?.into_iter().map(|v| v as f32).collect())
    }

    /// The values as f64, for the float types.
    pub fn to_f64(&self) -> Result<Vec<f64>, ConvertError> {
        if !self.dtype.is_float() {
            return Err(self.cannot("it is not a float type"));
        }
        self.read_elements(ElementType::float_at, "bad element")
    }

    /// The values as i64, for the integer types and booleans (a u64 above `i64::MAX` is an error).
    pub fn to_i64(&self) -> Result<Vec<i64>, ConvertError> {
        if !self.dtype.is_integer() && self.dtype != ElementType::Bool {
            return Err(self.cannot("it is not an integer or boolean type"));
        }
        self.read_elements(ElementType::int_at, "a u64 value exceeds i64::MAX")
    }
}

fn check_len(dtype: ElementType, shape: &[usize], len: usize) -> Result<(), ConvertError> {
    let need = numel(shape).and_then(|n| dtype.bytes_for(n as u64));
    if need != Some(len as u64) {
        return Err(ConvertError::checkpoint(format!(
            "a {dtype} tensor of shape {shape:?} needs {} bytes, the data holds {len}",
            need.map_or("too many".to_string(), |n| n.to_string())
        )));
    }
    Ok(())
}

/// A set of named tensors read from one file.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint<'a> {
    format: Option<Format>,
    tensors: BTreeMap<String, Tensor<'a>>,
    notices: Vec<String>,
}

impl<'a> Checkpoint<'a> {
    /// An empty checkpoint (to fill with [`Checkpoint::insert`]), from no file.
    pub fn new() -> Self {
        Checkpoint {
            format: None,
            tensors: BTreeMap::new(),
            notices: Vec::new(),
        }
    }

    /// Reads `bytes`, telling the format from the content, with the default [`Limits`].
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ConvertError> {
        Self::parse_with(bytes, &Limits::default())
    }

    /// Reads `bytes` with these budgets.
    pub fn parse_with(bytes: &'a [u8], limits: &Limits) -> Result<Self, ConvertError> {
        let Some(format) = Format::detect(bytes) else {
            return Err(ConvertError::checkpoint(unknown_format(bytes)));
        };
        let mut ckpt = match format {
            Format::Safetensors => safetensors::read(bytes)?,
            Format::TorchZip => torch_zip::read(bytes, limits)?,
            Format::TorchLegacy => torch_legacy::read(bytes, limits)?,
            Format::Npz => npz::read(bytes, limits)?,
            Format::TorchPickle => torch_legacy::read_pickle(bytes, limits)?,
        };
        ckpt.format = Some(format);
        Ok(ckpt)
    }

    /// The format it was read from (`None` for one built in code).
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// Adds a tensor; a second tensor of the same name is an error.
    pub fn insert(&mut self, name: impl Into<String>, t: Tensor<'a>) -> Result<(), ConvertError> {
        let name = name.into();
        if self.tensors.contains_key(&name) {
            return Err(ConvertError::checkpoint(format!(
                "two tensors are named \"{name}\""
            )));
        }
        self.tensors.insert(name, t);
        Ok(())
    }

    /// The tensor of this name.
    pub fn get(&self, name: &str) -> Option<&Tensor<'a>> {
        self.tensors.get(name)
    }

    /// Removes and returns the tensor of this name.
    pub fn remove(&mut self, name: &str) -> Option<Tensor<'a>> {
        self.tensors.remove(name)
    }

    /// Tensor names in sorted order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// Tensors by name, in sorted order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor<'a>)> {
        self.tensors.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// True when there are no tensors.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Things the reader noticed that the user may want to know (values that are not tensors and
    /// were skipped, byte order conversions, ...).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    pub(crate) fn notice(&mut self, n: String) {
        self.notices.push(n);
    }

    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> Checkpoint<'static> {
        Checkpoint {
            format: self.format,
            tensors: self
                .tensors
                .into_iter()
                .map(|(n, t)| (n, t.into_owned()))
                .collect(),
            notices: self.notices,
        }
    }
}

impl Default for Checkpoint<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// Reads the checkpoint at `path` (any format, told from the content). The tensors own their bytes;
/// to avoid that copy, read the file yourself and keep the bytes alive for [`Checkpoint::parse`].
pub fn read_file(path: &Path) -> Result<Checkpoint<'static>, ConvertError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ConvertError::checkpoint(format!("cannot read {}: {e}", path.display())))?;
    Checkpoint::parse(&bytes)
        .map(Checkpoint::into_owned)
        .map_err(|e| in_file(e, path))
}

/// Prefixes a checkpoint error's message with the file it is about.
pub fn in_file(e: ConvertError, path: &Path) -> ConvertError {
    match e {
        ConvertError::Checkpoint { reason } => {
            ConvertError::checkpoint(format!("{}: {reason}", path.display()))
        }
        other => other,
    }
}

fn unknown_format(bytes: &[u8]) -> String {
    let head: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let tar = bytes.get(257..262) == Some(b"ustar");
    format!(
        "not a checkpoint Ember reads (first bytes {}){}; it reads safetensors, PyTorch checkpoints \
         (torch.save's zip and legacy layouts) and numpy .npz",
        head.join(" "),
        if tar {
            ": a tar archive, PyTorch's pre-1.0 layout, which Ember does not read; load and \
             re-save it with a current PyTorch"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_safetensors_header_that_starts_like_a_pickle_is_still_safetensors() {
        // A 640-byte header: its length's first bytes are 0x80 0x02, a pickle's PROTO 2.
        let mut header = br#"{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#.to_vec();
        header.resize(640, b' ');
        let mut file = 640u64.to_le_bytes().to_vec();
        file.extend(header);
        file.push(7);
        assert_eq!(&file[..2], &[0x80, 0x02]);
        assert_eq!(Format::detect(&file), Some(Format::Safetensors));
        let ckpt = Checkpoint::parse(&file).unwrap();
        assert_eq!(ckpt.get("x").unwrap().to_i64().unwrap(), vec![7]);
        assert_eq!(Format::detect(b"\x80\x02]."), Some(Format::TorchPickle));
        assert_eq!(Format::detect(b"hello"), None);
    }
}
