//! The check every suite makes on its odd cases: that a kernel's `validate` accepts exactly the cases
//! that the definition calls well-formed.

use core::fmt::Debug;

use proptest::prelude::*;

/// Fails unless `verdict` (what `validate` says of an odd case) is `Ok` exactly when `valid` (the
/// definition's word); returns `valid`, whether to go on and run the case.
pub fn validate_agrees<E: Debug>(
    verdict: &Result<(), E>,
    valid: bool,
) -> Result<bool, TestCaseError> {
    prop_assert_eq!(verdict.is_ok(), valid, "validate says {:?}", verdict);
    Ok(valid)
}
