//! A heap buffer whose start is 16-byte aligned, for blobs read from files and arenas on hosts.

use alloc::vec::Vec;

/// A zero-initialised byte buffer that starts on a 16-byte boundary (backed by `u128`s).
#[derive(Clone, Debug, Default)]
pub struct AlignedBuf {
    words: Vec<u128>,
    len: usize,
}

impl AlignedBuf {
    /// `len` zero bytes.
    pub fn zeroed(len: usize) -> Self {
        AlignedBuf {
            words: alloc::vec![0u128; len.div_ceil(16)],
            len,
        }
    }

    /// An aligned copy of `bytes` (for a blob read from a file).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut buf = Self::zeroed(bytes.len());
        buf.as_mut_bytes().copy_from_slice(bytes);
        buf
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    /// The bytes, writable.
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}
