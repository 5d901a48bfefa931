//! Shape variants: one blob that runs a model at several input shapes (`--dim`), with one weights
//! section and one arena (`docs/format.md`, "Shape variants").
//!
//! Each variant is converted on its own from the import on, so shape inference, folding, lowering
//! and planning see its concrete shapes. Their weights are then merged: a weight tensor whose bytes are
//! stored already (by another variant, or as the start of a longer tensor, as a position table sliced
//! per length is) points at those bytes. The variant that needs the most arena goes into the blob's
//! main sections, so that a reader without variants runs it, and the arena is sized for it.

use std::collections::HashMap;

use ember_core::format::write::{write_blob, BlobParts, VariantBody, VariantParts};
use ember_core::format::{ArenaPlan, ModelInfo, Storage, ALIGN, MAX_VARIANTS, MAX_VARIANT_DIMS};

use crate::{ConvertError, ConvertOptions, Converted, LoweredGraph};

/// One dim of a `--shape` that may use named dims: a number, or the name of a `--dim`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeDim {
    /// This size in every variant.
    Fixed(usize),
    /// The named dim's value in each variant.
    Named(String),
}

/// One shape variant of a converted blob.
#[derive(Clone, Debug, PartialEq)]
pub struct VariantReport {
    /// The named dims' values.
    pub dims: Vec<(String, usize)>,
    /// Its memory plan.
    pub arena: ArenaPlan,
    /// Its op count.
    pub ops: usize,
    /// Its graph inputs with their (ONNX-layout) shapes.
    pub inputs: Vec<(String, Vec<usize>)>,
    /// Whether it is the largest, in the blob's main sections.
    pub largest: bool,
}

/// Whether `name` can name a dim: a letter or `_`, then letters, digits and `_`.
fn is_dim_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl ConvertOptions {
    /// Parses a `--dim` argument: `NAME=V1,V2,...` (`W=160,320,640`), or `NAME=LO..=HI:x2` for the
    /// doubling sequence from `LO` up to `HI` (`S=16..=128:x2` is 16, 32, 64, 128).
    pub fn parse_dim(arg: &str) -> Result<(String, Vec<usize>), String> {
        let usage = || {
            format!(
                "--dim {arg:?}: expected NAME=V1,V2,... or NAME=LO..=HI:x2, for example --dim \
                 W=160,320,640 or --dim S=16..=128:x2"
            )
        };
        let (name, values) = arg.split_once('=').ok_or_else(usage)?;
        if !is_dim_name(name) {
            return Err(format!(
                "--dim {arg:?}: {name:?} is not a dim name (a letter or _, then letters, digits, _)"
            ));
        }
        let number = |s: &str| s.trim().parse::<usize>().ok().filter(|&v| v > 0);
        let values: Vec<usize> = match values.split_once("..=") {
            Some((lo, rest)) => {
                let (hi, step) = rest.split_once(":x").ok_or_else(usage)?;
                let (lo, hi, step) = (
                    number(lo).ok_or_else(usage)?,
                    number(hi).ok_or_else(usage)?,
                    number(step).filter(|&s| s >= 2).ok_or_else(usage)?,
                );
                std::iter::successors(Some(lo), |&v| v.checked_mul(step))
                    .take_while(|&v| v <= hi)
                    .take(MAX_VARIANTS + 1)
                    .collect()
            }
            None => values
                .split(',')
                .map(|v| number(v).ok_or_else(usage))
                .collect::<Result<_, _>>()?,
        };
        if values.is_empty() || values.len() > MAX_VARIANTS {
            return Err(format!(
                "--dim {arg:?}: gives {} values; a dim takes 1 to {MAX_VARIANTS}",
                values.len()
            ));
        }
        if (1..values.len()).any(|i| values[..i].contains(&values[i])) {
            return Err(format!("--dim {arg:?}: a value is given twice"));
        }
        Ok((name.to_string(), values))
    }

    /// Adds a `--shape` argument, `NAME=d0,d1,...` where a dim is a number or the name of a `--dim`
    /// (`x=1,3,48,W`): to [`ConvertOptions::shapes`] when every dim is a number, else to
    /// [`ConvertOptions::dim_shapes`].
    pub fn add_shape(&mut self, arg: &str) -> Result<(), String> {
        if let Ok(shape) = Self::parse_shape(arg) {
            self.shapes.push(shape);
            return Ok(());
        }
        let (name, dims) = arg
            .rsplit_once('=')
            .filter(|(name, _)| !name.is_empty())
            .ok_or_else(|| {
                format!(
                    "--shape {arg:?}: expected NAME=DIMS, for example --shape input=1,3,224,224 \
                     (or input=1,3,H,W with --dim H=... --dim W=...)"
                )
            })?;
        let dims = dims
            .split(',')
            .map(|d| {
                let d = d.trim();
                match d.parse::<usize>() {
                    Ok(n) => Ok(ShapeDim::Fixed(n)),
                    Err(_) if is_dim_name(d) => Ok(ShapeDim::Named(d.to_string())),
                    Err(_) => Err(format!(
                        "--shape {arg:?}: {d:?} is neither a size nor a dim name given with --dim"
                    )),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.dim_shapes.push((name.to_string(), dims));
        Ok(())
    }

    /// The options of each shape variant, with the values of the named dims: every combination of
    /// the `--dim` values (the first dim varying slowest), each `--shape` with names made concrete.
    pub fn variant_options(&self) -> Result<Vec<(Vec<usize>, ConvertOptions)>, ConvertError> {
        let err = |reason: String| ConvertError::Dims { reason };
        if self.dims.len() > MAX_VARIANT_DIMS {
            return Err(err(format!(
                "{} dims are named with --dim; variants vary at most {MAX_VARIANT_DIMS}",
                self.dims.len()
            )));
        }
        for (i, (name, _)) in self.dims.iter().enumerate() {
            if self.dims[..i].iter().any(|(n, _)| n == name) {
                return Err(err(format!("--dim {name} is given twice")));
            }
            let used = self
                .dim_shapes
                .iter()
                .any(|(_, d)| d.contains(&ShapeDim::Named(name.clone())));
            if !used {
                return Err(err(format!(
                    "--dim {name} is used by no --shape: give the inputs it sizes as --shape \
                     INPUT=...,{name},..."
                )));
            }
        }
        for (input, dims) in &self.dim_shapes {
            for d in dims {
                if let ShapeDim::Named(name) = d {
                    if !self.dims.iter().any(|(n, _)| n == name) {
                        return Err(err(format!(
                            "--shape {input}=... uses {name}, which no --dim gives values: add \
                             --dim {name}=V1,V2,..."
                        )));
                    }
                }
            }
        }
        let count = self
            .dims
            .iter()
            .try_fold(1usize, |n, (_, v)| n.checked_mul(v.len()))
            .filter(|&n| n <= MAX_VARIANTS)
            .ok_or_else(|| {
                err(format!(
                    "the --dim values make more than {MAX_VARIANTS} variants (every combination \
                     is one)"
                ))
            })?;
        let mut out = Vec::with_capacity(count);
        for k in 0..count {
            // Mixed radix, the last dim fastest.
            let mut rest = k;
            let mut values = vec![0; self.dims.len()];
            for (slot, (_, v)) in values.iter_mut().zip(&self.dims).rev() {
                *slot = v[rest % v.len()];
                rest /= v.len();
            }
            let value = |name: &str| {
                self.dims
                    .iter()
                    .position(|(n, _)| n == name)
                    .map_or(0, |i| values[i])
            };
            let mut opts = ConvertOptions {
                dims: Vec::new(),
                dim_shapes: Vec::new(),
                pads: Vec::new(),
                ..self.clone()
            };
            for (input, dims) in &self.dim_shapes {
                let shape = dims
                    .iter()
                    .map(|d| match d {
                        ShapeDim::Fixed(n) => *n,
                        ShapeDim::Named(name) => value(name),
                    })
                    .collect();
                opts.shapes.push((input.clone(), shape));
            }
            out.push((values, opts));
        }
        Ok(out)
    }

    /// `W=160,H=48`: the named dims of variant `values`.
    fn variant_label(&self, values: &[usize]) -> String {
        self.dims
            .iter()
            .zip(values)
            .map(|((n, _), v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Converts every variant of `opts` with `one` (a model's import or build, then [`crate::lower_graph`])
/// and writes one blob of them.
pub(crate) fn convert(
    opts: &ConvertOptions,
    mut one: impl FnMut(&ConvertOptions) -> Result<LoweredGraph, ConvertError>,
) -> Result<Converted, ConvertError> {
    let variants = opts.variant_options()?;
    let mut graphs = Vec::with_capacity(variants.len());
    for (values, o) in &variants {
        graphs.push(one(o).map_err(|e| ConvertError::Variant {
            dims: opts.variant_label(values),
            source: Box::new(e),
        })?);
    }
    // The largest: the most arena, the later of equals (values are usually given ascending).
    let need = |g: &LoweredGraph| {
        let a = g.lowered.arena;
        u64::from(a.persistent_bytes) + u64::from(a.activation_bytes) + u64::from(a.scratch_bytes)
    };
    let largest = (0..graphs.len())
        .max_by_key(|&i| (need(&graphs[i]), i))
        .ok_or_else(|| ConvertError::internal("no shape variant"))?;

    // Every variant runs in the largest's regions: make them hold the most any variant needs.
    let mut arena = graphs[largest].lowered.arena;
    for g in &graphs {
        let a = g.lowered.arena;
        if a.persistent_bytes != arena.persistent_bytes {
            return Err(ConvertError::internal(
                "shape variants plan different persistent state",
            ));
        }
        arena.activation_bytes = arena.activation_bytes.max(a.activation_bytes);
        arena.scratch_bytes = arena.scratch_bytes.max(a.scratch_bytes);
    }
    graphs[largest].lowered.arena = arena;

    // One weights section: the largest's as it is, then what the others add.
    let mut pool = WeightPool::new(graphs[largest].lowered.weights.clone());
    for t in &graphs[largest].lowered.tensors {
        if let Storage::Weights { offset } = t.storage {
            pool.register(offset as usize, weight_len(t)?);
        }
    }
    for (i, g) in graphs.iter_mut().enumerate() {
        if i == largest {
            continue;
        }
        let l = &mut g.lowered;
        for t in &mut l.tensors {
            if let Storage::Weights { offset } = t.storage {
                let start = offset as usize;
                let bytes = l
                    .weights
                    .get(start..start + weight_len(t)?)
                    .ok_or_else(|| ConvertError::internal("a weight runs past its section"))?;
                let offset = u32::try_from(pool.place(bytes))
                    .map_err(|_| ConvertError::limit("weights past 4 GiB"))?;
                t.storage = Storage::Weights { offset };
            }
        }
    }

    let infos = graphs
        .iter()
        .map(LoweredGraph::info)
        .collect::<Result<Vec<ModelInfo<'static>>, _>>()?;
    let bodies: Vec<(
        heapless::Vec<u32, MAX_VARIANT_DIMS>,
        Option<VariantBody<'_>>,
    )> = variants
        .iter()
        .zip(&graphs)
        .zip(&infos)
        .enumerate()
        .map(|(i, (((values, _), g), info))| {
            let dims = values
                .iter()
                .map(|&v| u32::try_from(v).unwrap_or(u32::MAX))
                .collect();
            let body = (i != largest).then(|| VariantBody {
                info,
                tensors: &g.lowered.tensors,
                ops: &g.lowered.ops,
            });
            (dims, body)
        })
        .collect();
    let dim_names: Vec<&str> = opts.dims.iter().map(|(n, _)| n.as_str()).collect();
    let main = &graphs[largest];
    let pads = pad_indices(opts, &main.report.inputs)?;
    let names = main.names();
    let blob = write_blob(&BlobParts {
        info: &infos[largest],
        tensors: &main.lowered.tensors,
        ops: &main.lowered.ops,
        weights: &pool.bytes,
        names: opts.keep_names.then_some(names.as_slice()),
        variants: Some(VariantParts {
            dim_names: &dim_names,
            variants: &bodies,
            pads: &pads,
        }),
    })
    .map_err(|e| ConvertError::limit(format!("writing the blob: {e}")))?;

    let mut report = main.report.clone();
    report.arena = arena;
    report.blob_bytes = blob.len();
    report.weights_bytes = pool.bytes.len();
    report.variants = variants
        .iter()
        .zip(&graphs)
        .enumerate()
        .map(|(i, ((values, _), g))| VariantReport {
            dims: opts
                .dims
                .iter()
                .zip(values)
                .map(|((n, _), &v)| (n.clone(), v))
                .collect(),
            arena: g.lowered.arena,
            ops: g.lowered.ops.len(),
            inputs: g.report.inputs.clone(),
            largest: i == largest,
        })
        .collect();
    Ok(Converted { blob, report })
}

/// `--pad` by graph input index; an error names an input the model does not have.
fn pad_indices(
    opts: &ConvertOptions,
    inputs: &[(String, Vec<usize>)],
) -> Result<Vec<(u32, f64)>, ConvertError> {
    opts.pads
        .iter()
        .map(|(name, value)| {
            let k = inputs.iter().position(|(n, _)| n == name).ok_or_else(|| {
                let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
                ConvertError::Dims {
                    reason: format!(
                        "--pad {name}=...: the model has no input {name:?}; its inputs are {}",
                        names.join(", ")
                    ),
                }
            })?;
            Ok((k as u32, *value))
        })
        .collect()
}

/// `--pad` without `--dim` is an error: padding chooses between shape variants.
pub(crate) fn no_pads(opts: &ConvertOptions) -> Result<(), ConvertError> {
    match opts.pads.first() {
        Some((name, _)) => Err(ConvertError::Dims {
            reason: format!(
                "--pad {name}=... pads an input to a larger shape variant, and the blob has one \
                 shape: give the shapes with --dim NAME=V1,V2,... and a --shape that uses NAME"
            ),
        }),
        None => Ok(()),
    }
}

/// Bytes of weight tensor `t`.
fn weight_len(t: &ember_core::format::TensorRecord) -> Result<usize, ConvertError> {
    ember_core::byte_size(t.dtype, &t.dims)
        .map(|n| n as usize)
        .ok_or_else(|| ConvertError::limit("a weight tensor over 4 GiB"))
}

/// Bytes compared when looking a weight up: a tensor is found by its first bytes, so that a shorter
/// tensor that starts the same finds the longer one.
const KEY_BYTES: usize = 64;

/// The shared weights section, with every stored tensor findable by its first bytes.
struct WeightPool {
    bytes: Vec<u8>,
    /// `(offset, len)` of the stored tensors, by the hash of their first `KEY_BYTES` (or all) bytes.
    stored: HashMap<u64, Vec<(usize, usize)>>,
}

impl WeightPool {
    fn new(bytes: Vec<u8>) -> Self {
        WeightPool {
            bytes,
            stored: HashMap::new(),
        }
    }

    fn key(bytes: &[u8]) -> u64 {
        crate::fnv1a64(&bytes[..bytes.len().min(KEY_BYTES)])
    }

    fn register(&mut self, offset: usize, len: usize) {
        if let Some(bytes) = self.bytes.get(offset..offset + len) {
            let key = Self::key(bytes);
            self.stored.entry(key).or_default().push((offset, len));
        }
    }

    /// The offset of `bytes` in the section: where they are stored already (alone or as the start of
    /// a longer tensor), else appended, 16-aligned.
    fn place(&mut self, bytes: &[u8]) -> usize {
        if bytes.is_empty() {
            return 0;
        }
        let key = Self::key(bytes);
        let found = self.stored.get(&key).and_then(|candidates| {
            candidates.iter().find_map(|&(offset, len)| {
                (len >= bytes.len() && self.bytes.get(offset..offset + bytes.len()) == Some(bytes))
                    .then_some(offset)
            })
        });
        if let Some(offset) = found {
            return offset;
        }
        let offset = self.bytes.len().next_multiple_of(ALIGN);
        self.bytes.resize(offset, 0);
        self.bytes.extend_from_slice(bytes);
        self.register(offset, bytes.len());
        offset
    }
}
