//! int8 lookup table: any element-wise function of an int8 tensor, as a 256-entry int8 table indexed by
//! the input value (TFLM's and CMSIS-NN's int8 `Tanh` and `Logistic` take the same approach). The converter
//! computes the table ([`table`]) from the function's f32 kernel between the input's dequantization
//! and the output's quantization, so the int8 op gives exactly what `Dequantize -> f32 op -> Quantize`
//! gives, with no arithmetic at run time: one indexed copy per element.

use crate::ops::entry::{out, DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::quant::dequantize::{dequantize, DequantizeParams};
use crate::ops::quant::quantize::{quantize, QuantizeParams};
use crate::ops::shape::{dims_fit, require, same_dims, shape_error, Checked};
use crate::ops::{In, Out};
use crate::schema::DType;
use crate::Error;

/// Entries of a table: one per int8 value.
pub const TABLE_LEN: usize = 256;

/// Checks that `y` has the shape of `x` and that `table` is `[256]`.
pub fn validate(x: &[usize], table: &[usize], y: &[usize]) -> Result<(), Error> {
    check(x, table, y).map_err(shape_error)
}

/// [`validate`] as a [`Checked`](crate::ops::shape::Checked).
pub(crate) fn check(x: &[usize], table: &[usize], y: &[usize]) -> Checked {
    dims_fit(x)?;
    require(
        same_dims(x, y),
        "int8 lookup table output shape differs from input",
    )?;
    require(
        table == [TABLE_LEN],
        "int8 lookup table is not 256 entries long (dims [256])",
    )
}

/// `y[i] = table[x[i] + 128]`: the table's entry for each input value, `-128` at index 0.
pub fn lut(x: In<'_, i8>, table: In<'_, i8>, y: Out<'_, i8>) {
    // Validation gives a 256-entry table; as an array, every `u8` index is in bounds with no check.
    let Ok(table) = <&[i8; TABLE_LEN]>::try_from(table.data) else {
        return;
    };
    for (out, &v) in y.data.iter_mut().zip(x.data) {
        *out = table[usize::from((v as u8) ^ 0x80)];
    }
}

/// The table of `f` on int8 values dequantized with `x` and quantized with `y` (converter side): entry
/// `q + 128` is `quantize_y(f(dequantize_x(q)))`, computed by Ember's own [`dequantize`] and
/// [`quantize`] kernels around `f` (an f32 kernel over the 256 values). The quantization rounds as
/// `y.rounding` says: half to even for ONNX's `QuantizeLinear` (what the importer and the PTQ
/// quantizer give), half away from zero for TFLite's; the table then equals the float op followed by
/// that Quantize on every input, bit for bit.
pub fn table(
    x: &DequantizeParams,
    y: &QuantizeParams,
    f: impl FnOnce(In<'_>, Out<'_>),
) -> [i8; TABLE_LEN] {
    let dims = [TABLE_LEN];
    let mut q = [0i8; TABLE_LEN];
    for (i, v) in q.iter_mut().enumerate() {
        *v = (i as i32 + i32::from(i8::MIN)) as i8;
    }
    let mut real = [0f32; TABLE_LEN];
    dequantize(x, In { data: &q, dims: &dims }, Out { data: &mut real, dims: &dims });
    let mut mapped = [0f32; TABLE_LEN];
    f(In { data: &real, dims: &dims }, Out { data: &mut mapped, dims: &dims });
    let mut table = [0i8; TABLE_LEN];
    quantize(y, In { data: &mapped, dims: &dims }, Out { data: &mut table, dims: &dims });
    table
}

/// Signature of an int8 lookup-table kernel.
pub type QuantLutFn = fn(In<'_, i8>, In<'_, i8>, Out<'_, i8>);

/// The [`Kernels::quant_lut`](crate::Kernels::quant_lut) entry, which runs
/// [`OpKind::QuantLut`](crate::OpKind::QuantLut).
pub struct QuantLut;

impl KernelEntry for QuantLut {
    type Kernel = QuantLutFn;
    const REFERENCE: QuantLutFn = lut;
    const STUB: QuantLutFn = |_, _, _| {};
}

impl OpEntry for QuantLut {
    type Params = ();
    // Checked below, with messages that name the table.
    const DTYPES: DTypes = DTypes::Own;

    fn validate(_p: &(), o: &impl Operands) -> Checked {
        require(
            o.dtype(0) == DType::I8 && o.out_dtype() == DType::I8,
            "int8 lookup table op needs an I8 input and output",
        )?;
        require(
            o.dtype(1) == DType::I8,
            "int8 lookup table must be an I8 tensor",
        )?;
        check(o.dims(0), o.dims(1), o.out_dims())?;
        // The kernel reads the table in place: a weight tensor of exactly 256 bytes.
        let table: &[i8] = o.weight_values(
            1,
            [
                "int8 lookup table must be a weight tensor",
                "int8 lookup table runs past the weights section",
                "int8 lookup table is not i8-aligned",
            ],
        )?;
        require(
            table.len() == TABLE_LEN,
            "int8 lookup table does not hold 256 bytes",
        )
    }

    fn infer_dtype(_p: &(), _x: &[DType]) -> Result<DType, &'static str> {
        Ok(DType::I8)
    }

    #[inline(always)]
    fn run(kernel: QuantLutFn, _p: &(), a: OpArgs<'_, '_>) -> Result<(), Error> {
        kernel(a.x(0)?, a.x(1)?, out(a.y)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::quant::quantize::Rounding;

    #[test]
    fn copies_the_entry_of_each_value() {
        let table: [i8; TABLE_LEN] = core::array::from_fn(|i| (255 - i) as u8 as i8);
        let x = [-128i8, -1, 0, 1, 127];
        let mut y = [0i8; 5];
        lut(
            In { data: &x, dims: &[5] },
            In { data: &table, dims: &[TABLE_LEN] },
            Out { data: &mut y, dims: &[5] },
        );
        // Entry `x + 128` of a table that counts down from 255 (-1 as i8).
        assert_eq!(y, [-1, -128, 127, 126, 0]);
    }

    #[test]
    fn a_short_table_writes_nothing_instead_of_panicking() {
        let mut y = [7i8; 2];
        lut(
            In { data: &[1, 2], dims: &[2] },
            In { data: &[0; 10], dims: &[10] },
            Out { data: &mut y, dims: &[2] },
        );
        assert_eq!(y, [7, 7]);
    }

    #[test]
    fn the_identity_table_gives_the_input_back() {
        let p = DequantizeParams { scale: 0.05, zero_point: 3 };
        let q = QuantizeParams { scale: 0.05, zero_point: 3, rounding: Rounding::HalfToEven };
        let t = table(&p, &q, |x, y| y.data.copy_from_slice(x.data));
        for (i, &v) in t.iter().enumerate() {
            assert_eq!(i32::from(v), i as i32 - 128);
        }
    }

    #[test]
    fn validation_names_the_table() {
        assert!(check(&[1, 4], &[256], &[1, 4]).is_ok());
        assert_eq!(
            check(&[1, 4], &[255], &[1, 4]),
            Err("int8 lookup table is not 256 entries long (dims [256])")
        );
        assert_eq!(
            check(&[1, 4], &[256], &[1, 5]),
            Err("int8 lookup table output shape differs from input")
        );
    }
}
