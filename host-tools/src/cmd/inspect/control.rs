//! Control flow in `ember inspect`: the ops of a loop's body and of an `If`'s branches indented under
//! their head, and each loop's plan nested in the model's: its bound, and the arena bytes its body's
//! own buffers (those living within one iteration) take.

use ember_core::format::Storage;
use ember_core::schema::control::{ControlOp, Trip};
use ember_core::{Model, OpKind};

/// How deep each op sits in loops and branches, and the loops as `(head, end, bound)`.
pub struct Nesting {
    /// By op.
    pub depth: Vec<usize>,
    loops: Vec<(usize, usize, ember_core::schema::control::LoopBound)>,
}

/// The nesting of `model`'s ops.
pub fn nesting(model: &Model<'_>) -> Nesting {
    let n = model.op_count();
    let mut depth = vec![0; n];
    let mut loops = Vec::new();
    for i in 0..n {
        let Some(OpKind::Control(c)) = model.op(i).map(|o| o.kind) else {
            continue;
        };
        let inner = match c {
            ControlOp::Loop { end, bound } => {
                loops.push((i, end as usize, bound));
                i + 1..end as usize
            }
            ControlOp::Branch { to, .. } => i + 1..to as usize,
            _ => continue,
        };
        for d in depth.iter_mut().take(inner.end.min(n)).skip(inner.start) {
            *d += 1;
        }
    }
    Nesting { depth, loops }
}

/// Prints each loop's plan: its bound, and where its body's own buffers sit in the arena.
pub fn print_plans(model: &Model<'_>, nesting: &Nesting) {
    for &(head, end, bound) in &nesting.loops {
        let trip = match bound.trip {
            Trip::Constant => format!("{} iterations", bound.max_trip),
            Trip::Input => format!("a run-time trip count of at most {}", bound.max_trip),
            Trip::Unbounded => format!("at most {} iterations (--max-trip)", bound.max_trip),
        };
        let cond = if bound.cond {
            ", while its condition holds"
        } else {
            ""
        };
        // The buffers written inside the body that live within one iteration.
        let (mut lo, mut hi, mut count) = (usize::MAX, 0, 0);
        for t in (0..model.tensor_count()).filter_map(|i| model.tensor(i)) {
            let Storage::Arena { offset } = t.storage else {
                continue;
            };
            let (first, last) = (t.first_use as usize, t.last_use as usize);
            if first > head && t.last_use != u32::MAX && last < end {
                let bytes = ember_core::byte_size(t.dtype, &t.dims).unwrap_or(0) as usize;
                lo = lo.min(offset as usize);
                hi = hi.max(offset as usize + bytes);
                count += 1;
            }
        }
        let body = if count == 0 {
            "no buffers of its own".to_string()
        } else {
            format!(
                "{count} buffers of its own in arena bytes {lo}..{hi} ({} B)",
                hi - lo
            )
        };
        println!(
            "  loop at ops {head}..={end} ({}): {trip}{cond}; body ops {}..{end}, planned once: {body}",
            model.op_name(head).unwrap_or("-"),
            head + 1
        );
    }
}
