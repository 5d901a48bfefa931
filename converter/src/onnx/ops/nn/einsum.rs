//! ONNX `Einsum` (opset 12), lowered to existing kinds. The equation (`"bhqd,bhkd->bhqk"`; letters,
//! at most one `...` per term, spaces ignored; without `->` the output is the ellipsis and then the
//! letters used once, sorted) is planned here:
//!
//! 1. a letter repeated in one term takes the diagonal: a Transpose of the two axes to the end, a free
//!    Reshape joining them, and a Slice of step `n + 1`;
//! 2. a letter of one operand only that the output lacks is summed out (Reduce Sum);
//! 3. operands are contracted left to right, two at a time: the letters both have and the output
//!    (or a later operand) needs are batch dims, those it does not are contracted. Each operand is
//!    transposed to `[batch, own, contracted]`, reshaped to `[batch, M, K]` / `[batch, K, N]` and
//!    multiplied (MatMul, which broadcasts the batch dims, or FullyConnected when the other operand is
//!    a constant and there are no batch dims); with nothing contracted the product is a broadcasting
//!    Mul instead;
//! 4. a Transpose puts the result's axes in the output's order.
//!
//! The transposes and reshapes move any dtype, so a transpose or diagonal runs on every type; the sums
//! and contractions are FLOAT only (as Reduce and MatMul are), and the error names the equation.

use std::collections::BTreeMap;
use std::fmt;

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::nn::reduce::ReduceOp;

use crate::ir::op::Slice;
use crate::ir::{DType, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// The label of an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Label {
    /// Dim `i` of the ellipsis, counted over the widest ellipsis of the equation (a narrower one
    /// stands for its last dims, numpy's right alignment).
    Ellipsis(usize),
    /// A letter.
    Letter(char),
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Ellipsis(i) => write!(f, "...[{i}]"),
            Label::Letter(c) => write!(f, "{c}"),
        }
    }
}

/// A parsed equation: the labels of each input's axes, of the output's, and the size of each label.
#[derive(Debug, PartialEq)]
struct Equation {
    inputs: Vec<Vec<Label>>,
    output: Vec<Label>,
    sizes: BTreeMap<Label, usize>,
}

/// One term's labels, `None` where its ellipsis is.
fn parse_term(term: &str) -> Result<Vec<Option<char>>, String> {
    let mut labels = Vec::new();
    let mut rest = term;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("...") {
            if labels.contains(&None) {
                return Err(format!("term \"{term}\" has more than one \"...\""));
            }
            labels.push(None);
            rest = after;
        } else if c.is_ascii_alphabetic() {
            labels.push(Some(c));
            rest = &rest[1..];
        } else {
            return Err(format!(
                "term \"{term}\" has '{c}', which is not a letter or \"...\""
            ));
        }
    }
    Ok(labels)
}

/// Expands a term's ellipsis into `width` ellipsis labels (the last `width` of `widest`).
fn expand(term: &[Option<char>], width: usize, widest: usize) -> Vec<Label> {
    let mut labels = Vec::new();
    for l in term {
        match l {
            Some(c) => labels.push(Label::Letter(*c)),
            None => labels.extend((widest - width..widest).map(Label::Ellipsis)),
        }
    }
    labels
}

/// Parses `equation` for inputs of dims `dims`.
fn parse(equation: &str, dims: &[Vec<usize>]) -> Result<Equation, String> {
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((_, r)) if r.contains("->") => return Err("\"->\" appears twice".into()),
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let terms = lhs
        .split(',')
        .map(parse_term)
        .collect::<Result<Vec<_>, _>>()?;
    if terms.len() != dims.len() {
        return Err(format!(
            "it has {} input terms for {} inputs",
            terms.len(),
            dims.len()
        ));
    }
    // The ellipsis of each term, and the widest.
    let mut widths = Vec::new();
    for (i, (term, d)) in terms.iter().zip(dims).enumerate() {
        let letters = term.iter().filter(|l| l.is_some()).count();
        let width = if term.contains(&None) {
            d.len().checked_sub(letters)
        } else {
            (d.len() == letters).then_some(0)
        };
        widths.push(width.ok_or_else(|| {
            format!(
                "input {i} has rank {} but its term has {letters} letters{}",
                d.len(),
                if term.contains(&None) {
                    " and \"...\""
                } else {
                    ""
                }
            )
        })?);
    }
    let widest = widths.iter().copied().max().unwrap_or(0);
    let inputs: Vec<Vec<Label>> = terms
        .iter()
        .zip(&widths)
        .map(|(t, &w)| expand(t, w, widest))
        .collect();
    let mut sizes: BTreeMap<Label, usize> = BTreeMap::new();
    for (i, (labels, d)) in inputs.iter().zip(dims).enumerate() {
        for (&l, &n) in labels.iter().zip(d) {
            match sizes.get(&l).copied() {
                None => {
                    sizes.insert(l, n);
                }
                Some(m) if m == n => {}
                // Ellipsis dims broadcast as numpy's do.
                Some(1) if matches!(l, Label::Ellipsis(_)) => {
                    sizes.insert(l, n);
                }
                Some(_) if matches!(l, Label::Ellipsis(_)) && n == 1 => {}
                Some(m) => {
                    return Err(format!(
                        "'{l}' is {m} long in one place and {n} in input {i}"
                    ))
                }
            }
        }
    }
    let output = match rhs {
        Some(r) => {
            let term = parse_term(r)?;
            if widest > 0 && !term.contains(&None) {
                return Err("the inputs have \"...\" but the output does not".into());
            }
            let out = expand(&term, widest, widest);
            for (i, l) in out.iter().enumerate() {
                if out[..i].contains(l) {
                    return Err(format!("the output has '{l}' twice"));
                }
                if !sizes.contains_key(l) {
                    return Err(format!("the output's '{l}' is in no input"));
                }
            }
            out
        }
        None => {
            let mut count: BTreeMap<Label, usize> = BTreeMap::new();
            for l in inputs.iter().flatten() {
                *count.entry(*l).or_default() += 1;
            }
            // Ellipsis labels sort first, then the letters by their code.
            count
                .into_iter()
                .filter(|&(l, n)| matches!(l, Label::Ellipsis(_)) || n == 1)
                .map(|(l, _)| l)
                .collect()
        }
    };
    Ok(Equation {
        inputs,
        output,
        sizes,
    })
}

/// A value and the labels of its axes.
#[derive(Clone, Debug)]
struct Operand {
    id: TensorId,
    labels: Vec<Label>,
}

/// Imports `Einsum`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let equation = ctx
        .attr_string("equation")?
        .ok_or_else(|| ctx.err("attribute equation is required"))?;
    let n = ctx.node.input.len();
    let ids = (0..n)
        .map(|i| ctx.input(i, "Inputs"))
        .collect::<Result<Vec<_>, _>>()?;
    let dims: Vec<Vec<usize>> = ids.iter().map(|&i| ctx.shape(i)).collect();
    let eq =
        parse(&equation, &dims).map_err(|e| ctx.err(format!("equation \"{equation}\": {e}")))?;
    let mut lower = Lowering { ctx, equation };
    let mut operands = Vec::new();
    let inputs = ids.clone();
    for (i, (id, labels)) in ids.into_iter().zip(eq.inputs.iter()).enumerate() {
        let op = lower.diagonals(
            Operand {
                id,
                labels: labels.clone(),
            },
            i,
        )?;
        // Labels no other operand and not the output have are summed out now.
        let elsewhere = |l: &Label| {
            eq.output.contains(l)
                || eq
                    .inputs
                    .iter()
                    .enumerate()
                    .any(|(j, t)| j != i && t.contains(l))
        };
        operands.push(lower.sum_out(op, elsewhere, i)?);
    }
    let mut rest = operands.into_iter();
    // The term count equals the input count, at least one.
    let mut acc = rest
        .next()
        .ok_or_else(|| lower.ctx.err("Einsum needs an input"))?;
    let later: Vec<Operand> = rest.collect();
    for (i, b) in later.iter().enumerate() {
        let mut keep = eq.output.clone();
        for l in later[i + 1..].iter().flat_map(|o| &o.labels) {
            if !keep.contains(l) {
                keep.push(*l);
            }
        }
        acc = lower.contract(acc, b.clone(), &keep, i + 1)?;
    }
    let y = lower.arrange(acc, &eq.output, "output")?;
    let y = if inputs.contains(&y) {
        // Nothing was computed ("ij->ij"): the output is a copy of the input, not the input's
        // own value renamed.
        let shape = lower.ctx.shape(y);
        lower
            .ctx
            .emit_tmp("identity", Op::Reshape { shape }, vec![y])?
    } else {
        y
    };
    lower.ctx.finish(y)
}

/// The importer's state while it emits the plan.
struct Lowering<'c, 'n> {
    ctx: &'c mut NodeCtx<'n>,
    equation: String,
}

impl Lowering<'_, '_> {
    fn emit(
        &mut self,
        suffix: &str,
        op: Op,
        inputs: Vec<TensorId>,
    ) -> Result<TensorId, ConvertError> {
        self.ctx.emit_tmp(suffix, op, inputs)
    }

    /// An error unless `id` is FLOAT (what `what` computes in).
    fn require_float(&self, id: TensorId, what: &str) -> Result<(), ConvertError> {
        let dtype = self.ctx.graph().tensor(id).dtype;
        if dtype == DType::F32 {
            return Ok(());
        }
        Err(self.ctx.err(format!(
            "equation \"{}\" {what}, which Ember computes in FLOAT only; the inputs are {}",
            self.equation,
            dtype.name()
        )))
    }

    /// `x` reshaped to `shape` (nothing emitted when it has it).
    fn reshape(
        &mut self,
        x: TensorId,
        shape: Vec<usize>,
        suffix: &str,
    ) -> Result<TensorId, ConvertError> {
        if self.ctx.shape(x) == shape {
            return Ok(x);
        }
        self.emit(suffix, Op::Reshape { shape }, vec![x])
    }

    /// `x` with its axes in the order `order` (a permutation of its labels).
    fn arrange(
        &mut self,
        x: Operand,
        order: &[Label],
        suffix: &str,
    ) -> Result<TensorId, ConvertError> {
        let perm: Vec<usize> = order
            .iter()
            .filter_map(|l| x.labels.iter().position(|m| m == l))
            .collect();
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(x.id);
        }
        self.emit(suffix, Op::Transpose { perm }, vec![x.id])
    }

    /// `x` with each repeated label replaced by the diagonal of its two axes (moved to the end).
    fn diagonals(&mut self, mut x: Operand, index: usize) -> Result<Operand, ConvertError> {
        while let Some((p, q)) = (0..x.labels.len()).find_map(|q| {
            x.labels[..q]
                .iter()
                .position(|l| *l == x.labels[q])
                .map(|p| (p, q))
        }) {
            let label = x.labels[p];
            let mut order: Vec<Label> = Vec::new();
            let mut perm: Vec<usize> = Vec::new();
            for (i, l) in x.labels.iter().enumerate() {
                if i != p && i != q {
                    order.push(*l);
                    perm.push(i);
                }
            }
            perm.extend([p, q]);
            let dims = self.ctx.shape(x.id);
            let n = dims[p];
            let moved = if perm.iter().enumerate().all(|(i, &v)| i == v) {
                x.id
            } else {
                self.emit(
                    &format!("in{index}.diagonal_axes"),
                    Op::Transpose { perm: perm.clone() },
                    vec![x.id],
                )?
            };
            let mut joined: Vec<usize> = perm[..perm.len() - 2].iter().map(|&i| dims[i]).collect();
            let rank = joined.len() + 1;
            let mut size = joined.clone();
            joined.push(n * n);
            size.push(n);
            let flat = self.reshape(moved, joined, &format!("in{index}.diagonal_flat"))?;
            let mut step = vec![1; rank];
            step[rank - 1] = i64::try_from(n + 1).map_err(|_| self.ctx.err("dim too large"))?;
            let slice = Slice {
                start: vec![0; rank],
                step,
                size,
            };
            let id = self.emit(&format!("in{index}.diagonal"), Op::Slice(slice), vec![flat])?;
            order.push(label);
            x = Operand { id, labels: order };
        }
        Ok(x)
    }

    /// `x` summed over the labels `keep` refuses.
    fn sum_out(
        &mut self,
        x: Operand,
        keep: impl Fn(&Label) -> bool,
        index: usize,
    ) -> Result<Operand, ConvertError> {
        let axes: Vec<usize> = (0..x.labels.len())
            .filter(|&i| !keep(&x.labels[i]))
            .collect();
        if axes.is_empty() {
            return Ok(x);
        }
        self.require_float(x.id, "sums over axes")?;
        let labels = x.labels.iter().filter(|l| keep(l)).copied().collect();
        let op = Op::Reduce {
            op: ReduceOp::Sum,
            axes,
            keepdims: false,
        };
        let id = self.emit(&format!("in{index}.sum"), op, vec![x.id])?;
        Ok(Operand { id, labels })
    }

    /// The product of `a` and `b` summed over the labels they share that `keep` lacks; its labels are
    /// those of `keep` that either has.
    fn contract(
        &mut self,
        a: Operand,
        b: Operand,
        keep: &[Label],
        index: usize,
    ) -> Result<Operand, ConvertError> {
        let contracted: Vec<Label> = (a.labels.iter())
            .filter(|l| b.labels.contains(l) && !keep.contains(l))
            .copied()
            .collect();
        if contracted.is_empty() {
            return self.multiply(a, b, keep, index);
        }
        self.require_float(a.id, "contracts axes")?;
        self.require_float(b.id, "contracts axes")?;
        // A constant goes second, where it can be a FullyConnected layer's weights.
        let g = self.ctx.graph();
        let (a, b) = if g.is_const(a.id) && !g.is_const(b.id) {
            (b, a)
        } else {
            (a, b)
        };
        let (in_a, in_b) = (
            |l: &Label| a.labels.contains(l),
            |l: &Label| b.labels.contains(l),
        );
        let batch: Vec<Label> = keep
            .iter()
            .filter(|l| in_a(l) && in_b(l))
            .copied()
            .collect();
        let m: Vec<Label> = keep
            .iter()
            .filter(|l| in_a(l) && !in_b(l))
            .copied()
            .collect();
        let n: Vec<Label> = keep
            .iter()
            .filter(|l| !in_a(l) && in_b(l))
            .copied()
            .collect();
        let size_of = |x: &Operand, dims: &[usize], l: &Label| {
            x.labels.iter().position(|m| m == l).map_or(1, |i| dims[i])
        };
        let (da, db) = (self.ctx.shape(a.id), self.ctx.shape(b.id));
        let sizes = |x: &Operand, dims: &[usize], ls: &[Label]| -> Vec<usize> {
            ls.iter().map(|l| size_of(x, dims, l)).collect()
        };
        let (m_dims, n_dims) = (sizes(&a, &da, &m), sizes(&b, &db, &n));
        let k: usize = sizes(&a, &da, &contracted).iter().product();
        let (mm, nn): (usize, usize) = (m_dims.iter().product(), n_dims.iter().product());
        let at_order: Vec<Label> = [&batch[..], &m, &contracted].concat();
        let bt_order: Vec<Label> = [&batch[..], &contracted, &n].concat();
        let (a_batch, b_batch) = (sizes(&a, &da, &batch), sizes(&b, &db, &batch));
        let b_const = self.ctx.graph().is_const(b.id);
        let at = self.arrange(a, &at_order, &format!("step{index}.a_axes"))?;
        let bt = self.arrange(b, &bt_order, &format!("step{index}.b_axes"))?;
        let a2 = self.reshape(
            at,
            [&a_batch[..], &[mm, k]].concat(),
            &format!("step{index}.a_matrix"),
        )?;
        let b2 = self.reshape(
            bt,
            [&b_batch[..], &[k, nn]].concat(),
            &format!("step{index}.b_matrix"),
        )?;
        let y = if batch.is_empty() && b_const {
            // Weights [N, K] (a constant: the transpose folds).
            let w = self.emit(
                &format!("step{index}.weights"),
                Op::Transpose { perm: vec![1, 0] },
                vec![b2],
            )?;
            let fc = Op::FullyConnected {
                act: Activation::None,
            };
            self.emit(&format!("step{index}.fully_connected"), fc, vec![a2, w])?
        } else {
            self.emit(&format!("step{index}.matmul"), Op::MatMul, vec![a2, b2])?
        };
        let ys = self.ctx.shape(y);
        let shape = [&ys[..ys.len() - 2], &m_dims, &n_dims].concat();
        let id = self.reshape(y, shape, &format!("step{index}.unflatten"))?;
        Ok(Operand {
            id,
            labels: [batch, m, n].concat(),
        })
    }

    /// The broadcasting product of `a` and `b`, which share no label to sum over: each is arranged
    /// in `keep`'s order with a 1 for each label it lacks.
    fn multiply(
        &mut self,
        a: Operand,
        b: Operand,
        keep: &[Label],
        index: usize,
    ) -> Result<Operand, ConvertError> {
        let order: Vec<Label> = keep
            .iter()
            .filter(|l| a.labels.contains(l) || b.labels.contains(l))
            .copied()
            .collect();
        let mut aligned = Vec::new();
        for (x, name) in [(a, "a"), (b, "b")] {
            let own: Vec<Label> = order
                .iter()
                .filter(|l| x.labels.contains(l))
                .copied()
                .collect();
            let dims = self.ctx.shape(x.id);
            let shape: Vec<usize> = order
                .iter()
                .map(|l| x.labels.iter().position(|m| m == l).map_or(1, |i| dims[i]))
                .collect();
            let moved = self.arrange(x, &own, &format!("step{index}.{name}_axes"))?;
            aligned.push(self.reshape(moved, shape, &format!("step{index}.{name}_aligned"))?);
        }
        let mul = Op::Binary {
            op: BinaryOp::Mul,
            act: Activation::None,
        };
        let id = self.emit(&format!("step{index}.product"), mul, aligned)?;
        Ok(Operand { id, labels: order })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Label::{Ellipsis as E, Letter as L};

    fn labels(s: &str) -> Vec<Label> {
        s.chars().map(L).collect()
    }

    #[test]
    fn explicit_and_implicit_outputs() {
        let eq = parse("bhqd, bhkd -> bhqk", &[vec![2, 3, 4, 5], vec![2, 3, 6, 5]]).unwrap();
        assert_eq!(eq.inputs, [labels("bhqd"), labels("bhkd")]);
        assert_eq!(eq.output, labels("bhqk"));
        assert_eq!(eq.sizes[&L('k')], 6);
        // Implicit: the letters used once, sorted (uppercase first, by code).
        let eq = parse("ij,jk", &[vec![2, 3], vec![3, 4]]).unwrap();
        assert_eq!(eq.output, labels("ik"));
        let eq = parse("ba,aB", &[vec![2, 3], vec![3, 2]]).unwrap();
        assert_eq!(eq.output, labels("Bb"));
        assert_eq!(parse("ii", &[vec![3, 3]]).unwrap().output, []);
    }

    #[test]
    fn ellipses_align_right_and_broadcast() {
        let eq = parse("...ii->...i", &[vec![7, 3, 5, 5]]).unwrap();
        assert_eq!(eq.inputs[0], [E(0), E(1), L('i'), L('i')]);
        assert_eq!(eq.output, [E(0), E(1), L('i')]);
        let eq = parse("...ij,...jk", &[vec![4, 1, 2, 3], vec![5, 3, 6]]).unwrap();
        assert_eq!(eq.inputs[1], [E(1), L('j'), L('k')]);
        assert_eq!((eq.sizes[&E(0)], eq.sizes[&E(1)]), (4, 5));
        assert_eq!(eq.output, [E(0), E(1), L('i'), L('k')]);
    }

    #[test]
    fn bad_equations_say_what_is_wrong() {
        let err = |e: &str, d: &[Vec<usize>]| parse(e, d).unwrap_err();
        assert!(err("ij->ji", &[vec![2, 3, 4]]).contains("rank 3"));
        assert!(err("ij,jk", &[vec![2, 3], vec![4, 5]]).contains("'j' is 3 long"));
        assert!(err("ij->k", &[vec![2, 3]]).contains("'k' is in no input"));
        assert!(err("ij->ii", &[vec![2, 2]]).contains("twice"));
        assert!(err("...ij->ij", &[vec![2, 3, 4]]).contains("output does not"));
        assert!(err("i1->i", &[vec![2, 3]]).contains("'1'"));
        assert!(err("ij", &[vec![2, 3], vec![3]]).contains("1 input terms for 2"));
    }
}
