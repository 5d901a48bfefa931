//! Static shapes for graph inputs: `--shape` overrides first, then a dynamic leading (batch) dim
//! defaults to 1 with a notice; any other dynamic dim is an error that says how to fix it. A dim is
//! dynamic when it has a name, no value, or the value -1 (what paddle2onnx writes).

use crate::onnx::proto::{data_type, DimensionValue, TypeValue, ValueInfoProto};
use crate::ConvertError;

/// The static shape of graph input `vi`, given the user's override for it, if any.
pub fn input_shape(
    vi: &ValueInfoProto,
    over: Option<&[usize]>,
    notices: &mut Vec<String>,
) -> Result<Vec<usize>, ConvertError> {
    let name = vi.name.as_str();
    let err = |reason: String| ConvertError::Input {
        name: name.to_string(),
        reason,
    };
    let Some(TypeValue::TensorType(tt)) = vi.r#type.as_ref().and_then(|t| t.value.as_ref()) else {
        return Err(err(
            "is not a tensor (sequences, maps and optionals are not supported)".into(),
        ));
    };
    if crate::onnx::tensor::dtype_of(tt.elem_type).is_none() {
        return Err(err(format!(
            "has element type {}; Ember's graph inputs are FLOAT, DOUBLE, BOOL or integer tensors",
            data_type::name(tt.elem_type)
        )));
    }
    let Some(shape) = tt.shape.as_ref() else {
        return match over {
            Some(o) => Ok(o.to_vec()),
            None => Err(err(format!(
                "the model does not give its rank or dims; give them with --shape {name}=d0,d1,..."
            ))),
        };
    };
    // Each dim: Ok(size) when static (0 included: an empty tensor), Err(label) when dynamic.
    let mut dims: Vec<Result<usize, String>> = Vec::with_capacity(shape.dim.len());
    for (i, d) in shape.dim.iter().enumerate() {
        dims.push(match &d.value {
            // paddle2onnx (PaddleOCR's models among others) writes a dynamic dim as -1, which
            // onnxruntime reads as dynamic too.
            Some(DimensionValue::DimValue(-1)) => Err("-1".to_string()),
            Some(DimensionValue::DimValue(v)) => Ok(usize::try_from(*v)
                .map_err(|_| err(format!("dimension {i} has the negative size {v}")))?),
            Some(DimensionValue::DimParam(p)) => Err(p.clone()),
            None => Err("?".to_string()),
        });
    }
    let template = || {
        dims.iter()
            .map(|d| match d {
                Ok(v) => v.to_string(),
                Err(_) => "?".to_string(),
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    if let Some(o) = over {
        if o.len() != dims.len() {
            return Err(err(format!(
                "the override --shape {name}={} has rank {}, but the input has rank {} ([{}])",
                join(o),
                o.len(),
                dims.len(),
                template()
            )));
        }
        for (i, (d, &v)) in dims.iter().zip(o).enumerate() {
            if let Ok(fixed) = d {
                if *fixed != v {
                    return Err(err(format!(
                        "the override --shape {name}={} sets dimension {i} to {v}, but the model fixes \
                         it to {fixed}",
                        join(o)
                    )));
                }
            }
        }
        return Ok(o.to_vec());
    }
    let mut out = Vec::with_capacity(dims.len());
    for (i, d) in dims.iter().enumerate() {
        match d {
            Ok(v) => out.push(*v),
            Err(label) if i == 0 => {
                notices.push(format!(
                    "input \"{name}\": dynamic batch dimension {label} set to 1 (use --shape {name}=...)"
                ));
                out.push(1);
            }
            Err(label) => {
                return Err(err(format!(
                    "dimension {i} ({label}) is dynamic; only a leading batch dimension defaults to 1. \
                     Give the whole shape with --shape {name}={}",
                    template()
                )))
            }
        }
    }
    Ok(out)
}

fn join(dims: &[usize]) -> String {
    dims.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The dtype of graph input `vi` (checked by [`input_shape`] first).
pub fn input_dtype(vi: &ValueInfoProto) -> crate::ir::DType {
    match vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(TypeValue::TensorType(tt)) => {
            crate::onnx::tensor::dtype_of(tt.elem_type).unwrap_or(crate::ir::DType::F32)
        }
        _ => crate::ir::DType::F32,
    }
}
