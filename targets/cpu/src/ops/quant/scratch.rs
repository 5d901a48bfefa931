//! A kernel's scratch bytes carved into typed regions: the sizes asked for ([`bytes_for`]) and the
//! regions taken ([`take`]), each 64-byte aligned (a cache line) wherever the scratch starts.

use core::mem::size_of;

/// Alignment of every region.
const ALIGN: usize = 64;

/// Bytes to ask for so that [`take`] finds `count` elements of `T`, aligned, wherever it starts.
pub(crate) fn bytes_for<T>(count: usize) -> usize {
    count.saturating_mul(size_of::<T>()).saturating_add(ALIGN)
}

/// Takes `count` elements of `T` from the front of `rest` (after skipping to the next 64-byte
/// boundary); `None` when `rest` is too short.
pub(crate) fn take<'a, T: bytemuck::Pod>(
    rest: &mut &'a mut [u8],
    count: usize,
) -> Option<&'a mut [T]> {
    let skip = rest.as_ptr().align_offset(ALIGN);
    let bytes = count.checked_mul(size_of::<T>())?;
    if skip.checked_add(bytes)? > rest.len() {
        return None;
    }
    let all = core::mem::take(rest);
    let (mine, tail) = all[skip..].split_at_mut(bytes);
    *rest = tail;
    // Aligned to 64 (so to `T`), a whole number of `T`: the cast cannot fail.
    bytemuck::try_cast_slice_mut(mine).ok()
}
