//! The opcode loop of the restricted pickle reader: one arm per opcode a protocol 2-5 pickle of a
//! state dict uses, and the refusals of those that would instantiate classes or name globals
//! indirectly.

use std::rc::Rc;

use super::{fail, Globals, Machine, Node, Value};
use crate::ConvertError;

impl<G: Globals> Machine<'_, '_, G> {
    /// Runs opcodes until STOP and returns the value it pops.
    pub(super) fn run(&mut self) -> Result<Value<G>, ConvertError> {
        loop {
            let at = self.pos;
            let op = self.array::<1>()?[0];
            match op {
                // PROTO, FRAME: the whole pickle is in memory, so frames need no handling.
                0x80 => {
                    let v = self.array::<1>()?[0];
                    if v > 5 {
                        return Err(fail(at, format!("pickle protocol {v} (newest known is 5)")));
                    }
                }
                0x95 => {
                    self.array::<8>()?;
                }
                b'.' => {
                    let root = self.pop()?;
                    return Ok(root);
                }
                b'(' => {
                    if self.marks.len() >= self.limits.max_depth {
                        return Err(fail(
                            at,
                            format!(
                                "more than {} open marks (Limits::max_depth)",
                                self.limits.max_depth
                            ),
                        ));
                    }
                    self.marks.push(self.stack.len());
                }
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let v = self.top()?.clone();
                    self.push(v)?;
                }
                // Constants and numbers.
                b'N' => self.push(Value::None)?,
                0x88 => self.push(Value::Bool(true))?,
                0x89 => self.push(Value::Bool(false))?,
                b'J' => {
                    let v = i32::from_le_bytes(self.array()?);
                    self.push(Value::Int(i128::from(v)))?
                }
                b'K' => {
                    let v = self.array::<1>()?[0];
                    self.push(Value::Int(i128::from(v)))?
                }
                b'M' => {
                    let v = u16::from_le_bytes(self.array()?);
                    self.push(Value::Int(i128::from(v)))?
                }
                0x8a => {
                    let n = self.len_field::<1>()?;
                    let b = self.take(n)?.to_vec();
                    self.int(&b)?
                }
                0x8b => {
                    let n = self.len_field::<4>()?;
                    let b = self.take(n)?.to_vec();
                    self.int(&b)?
                }
                b'G' => {
                    self.array::<8>()?;
                    self.push(Value::Float)?
                }
                // Strings and bytes.
                b'X' => {
                    let n = self.len_field::<4>()?;
                    let s = self.string(n)?;
                    self.push(Value::Str(s))?
                }
                0x8c => {
                    let n = self.len_field::<1>()?;
                    let s = self.string(n)?;
                    self.push(Value::Str(s))?
                }
                0x8d => {
                    let n = self.len_field::<8>()?;
                    let s = self.string(n)?;
                    self.push(Value::Str(s))?
                }
                // Python 2 `str`: torch.load decodes these as UTF-8 too.
                b'T' => {
                    let n = self.len_field::<4>()?;
                    let s = self.string(n)?;
                    self.push(Value::Str(s))?
                }
                b'U' => {
                    let n = self.len_field::<1>()?;
                    let s = self.string(n)?;
                    self.push(Value::Str(s))?
                }
                b'B' | b'C' | 0x8e | 0x96 => {
                    let n = match op {
                        b'C' => self.len_field::<1>()?,
                        b'B' => self.len_field::<4>()?,
                        _ => self.len_field::<8>()?,
                    };
                    let b = Rc::from(self.take(n)?);
                    self.push(Value::Bytes(b))?
                }
                // Containers.
                b']' => {
                    let v = self.new_node(Node::List(Vec::new()), &[])?;
                    self.push(v)?
                }
                b'}' => {
                    let v = self.new_node(Node::Dict(Vec::new()), &[])?;
                    self.push(v)?
                }
                0x8f => {
                    let v = self.new_node(Node::Set(Vec::new()), &[])?;
                    self.push(v)?
                }
                b')' => {
                    let v = self.new_node(Node::Tuple(Vec::new()), &[])?;
                    self.push(v)?
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop()?);
                    }
                    items.reverse();
                    let v = self.new_seq(Node::Tuple, items)?;
                    self.push(v)?
                }
                b't' => {
                    let items = self.pop_mark()?;
                    let v = self.new_seq(Node::Tuple, items)?;
                    self.push(v)?
                }
                b'l' => {
                    let items = self.pop_mark()?;
                    let v = self.new_seq(Node::List, items)?;
                    self.push(v)?
                }
                0x91 => {
                    let items = self.pop_mark()?;
                    let v = self.new_seq(Node::Set, items)?;
                    self.push(v)?
                }
                b'd' => {
                    let items = self.pop_mark()?;
                    let v = self.new_node(Node::Dict(Vec::new()), &[])?;
                    let Value::Node(id) = v else { unreachable!() };
                    self.set_items(id, items)?;
                    self.push(v)?
                }
                b'a' => {
                    let item = self.pop()?;
                    let id = self.top_node("APPEND", |n| matches!(n, Node::List(_)))?;
                    self.extend(id, vec![item])?
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    let id = self.top_node("APPENDS", |n| matches!(n, Node::List(_)))?;
                    self.extend(id, items)?
                }
                0x90 => {
                    let items = self.pop_mark()?;
                    let id = self.top_node("ADDITEMS", |n| matches!(n, Node::Set(_)))?;
                    self.extend(id, items)?
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    let id = self.top_node("SETITEM", |n| matches!(n, Node::Dict(_)))?;
                    self.set_items(id, vec![k, v])?
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    let id = self.top_node("SETITEMS", |n| matches!(n, Node::Dict(_)))?;
                    self.set_items(id, items)?
                }
                // Memo: BINPUT, LONG_BINPUT, MEMOIZE, PUT; BINGET, LONG_BINGET, GET.
                b'q' | b'r' | 0x94 | b'p' => {
                    let i = self.memo_index(op, at)?;
                    self.memo_put(i)?
                }
                b'h' | b'j' | b'g' => {
                    let i = self.memo_index(op, at)?;
                    self.memo_get(i)?
                }
                // Globals, calls, persistent ids.
                b'c' => {
                    let module = self.line()?.to_string();
                    let name = self.line()?.to_string();
                    self.global(&module, &name)?
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Value::Str(module), Value::Str(name)) = (module, name) else {
                        return Err(fail(at, "STACK_GLOBAL of values that are not strings"));
                    };
                    self.global(&module, &name)?
                }
                b'R' | 0x81 => {
                    let args = self.pop()?;
                    let func = self.pop()?;
                    self.call(func, args, if op == b'R' { "REDUCE" } else { "NEWOBJ" })?
                }
                0x92 => {
                    let kwargs = self.pop()?;
                    let args = self.pop()?;
                    let cls = self.pop()?;
                    let empty = matches!(&kwargs, Value::Node(id)
                        if matches!(self.heap.node(*id), Node::Dict(p) if p.is_empty()));
                    if !empty {
                        return Err(fail(at, "NEWOBJ_EX with keyword arguments"));
                    }
                    self.call(cls, args, "NEWOBJ_EX")?
                }
                b'b' => {
                    // The state of an OrderedDict (its `_metadata`) or of a tensor (Python
                    // attributes) carries no weights: it is checked to be data and dropped.
                    let _state = self.pop()?;
                    self.top_node("BUILD", |n| matches!(n, Node::Dict(_) | Node::Call { .. }))?;
                }
                b'Q' => {
                    let pid = self.pop()?;
                    let v = self.new_node(Node::Persistent(pid.clone()), &[pid])?;
                    self.push(v)?
                }
                b'P' => {
                    let pid: Rc<str> = Rc::from(self.line()?);
                    let v = self.new_node(Node::Persistent(Value::Str(pid)), &[])?;
                    self.push(v)?
                }
                b'i' | b'o' => {
                    return Err(fail(
                        at,
                        format!(
                        "opcode {} instantiates a class, which a state_dict never does; refused",
                        if op == b'i' { "INST" } else { "OBJ" }
                    ),
                    ))
                }
                0x82..=0x84 => {
                    return Err(fail(
                        at,
                        "opcode EXT (the copyreg extension registry) names a global indirectly; \
                         refused",
                    ))
                }
                0x97 | 0x98 => {
                    return Err(fail(
                        at,
                        "out-of-band buffers (protocol 5) are not part of a checkpoint; refused",
                    ))
                }
                other => {
                    return Err(fail(
                        at,
                        format!(
                            "opcode 0x{other:02x} is not one a protocol 2-5 state_dict uses \
                             (corrupt, or a protocol 0/1 text pickle)"
                        ),
                    ))
                }
            }
        }
    }

    /// The memo index of the memo opcode `op` (at byte `at`): one byte (BINPUT, BINGET), four
    /// little-endian bytes (LONG_BINPUT, LONG_BINGET), a text line (PUT, GET), or the next free
    /// index (MEMOIZE).
    fn memo_index(&mut self, op: u8, at: usize) -> Result<u32, ConvertError> {
        match op {
            b'q' | b'h' => Ok(u32::from(self.array::<1>()?[0])),
            b'r' | b'j' => Ok(u32::from_le_bytes(self.array()?)),
            0x94 => u32::try_from(self.memo.len()).map_err(|_| fail(at, "memo index overflow")),
            _ => {
                let bad = if op == b'p' {
                    "PUT with a bad index"
                } else {
                    "GET with a bad index"
                };
                self.line()?.parse::<u32>().map_err(|_| fail(at, bad))
            }
        }
    }
}
