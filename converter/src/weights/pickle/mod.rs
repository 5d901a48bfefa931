//! A restricted reader of Python pickles (protocols 2 to 5): it turns the opcodes a `state_dict`
//! uses into a plain data graph ([`Heap`]) and runs nothing.
//!
//! Where Python's unpickler imports a global and calls it, this reader asks [`Globals::resolve`]
//! whether the name is one of the few it knows, refuses every other name at once (the message names
//! it), and records a call of a known one as a [`Node::Call`] for the caller to interpret. Persistent
//! ids (`BINPERSID`, how `torch.save` refers to storages) become [`Node::Persistent`]. The opcodes
//! that instantiate arbitrary classes (`INST`, `OBJ`) or use the extension registry (`EXT*`) and
//! out-of-band buffers are refused. The opcode loop is in `opcodes.rs`.
//!
//! Budgets ([`Limits`]): memo entries, stack size, open marks and container nesting, string lengths,
//! the size of a container counting repeated references (a memo bomb), and a check of each call's
//! arguments by [`Globals::check_call`];
//! every length field is checked against the bytes left before anything is allocated, and each
//! opcode does work proportional to the bytes it consumed or the values it pops, so a file of n bytes
//! costs O(n) time and memory.

use std::collections::HashMap;
use std::rc::Rc;

use super::Limits;
use crate::ConvertError;

/// The globals a reader accepts: a small `Copy` enum, one variant per known name.
pub(crate) trait Globals: Copy + std::fmt::Debug {
    /// The known global `module.name`, or `None` to refuse it.
    fn resolve(module: &str, name: &str) -> Option<Self>;
    /// True for a global whose call with no arguments makes an empty dict (`collections.OrderedDict`).
    fn is_dict(self) -> bool;
    /// The accepted names, for the message refusing another.
    fn accepted() -> &'static str;
    /// Checks the arguments of a call of this global as the call is read (a tensor's claimed size
    /// against the budgets, say), so that an absurd claim stops the reader before anything after it.
    fn check_call(
        self,
        _heap: &Heap<Self>,
        _args: &Value<Self>,
        _limits: &Limits,
    ) -> Result<(), String> {
        Ok(())
    }
}

/// A reader that accepts no global at all (the legacy layout's header pickles).
#[derive(Clone, Copy, Debug)]
pub(crate) enum NoGlobals {}

impl Globals for NoGlobals {
    fn resolve(_: &str, _: &str) -> Option<Self> {
        None
    }
    fn is_dict(self) -> bool {
        match self {}
    }
    fn accepted() -> &'static str {
        "none (this part of the file holds plain values)"
    }
}

/// A pickled value. Containers and calls live in the [`Heap`] and are referred to by index, so a
/// value shared through the memo is one node, and dropping the graph never recurses.
#[derive(Clone, Debug)]
pub(crate) enum Value<G> {
    None,
    Bool(bool),
    Int(i128),
    /// A float (its value carries no weights and is not kept).
    Float,
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    Global(G),
    Node(usize),
}

/// A container, or a call of a known global, or a persistent id.
#[derive(Debug)]
pub(crate) enum Node<G> {
    List(Vec<Value<G>>),
    Tuple(Vec<Value<G>>),
    /// Key-value pairs in insertion order (a `dict` or `OrderedDict`).
    Dict(Vec<(Value<G>, Value<G>)>),
    Set(Vec<Value<G>>),
    /// `func(*args)`, not run: `args` is a tuple node.
    Call {
        func: G,
        args: Value<G>,
    },
    /// `persistent_load(pid)`, not run.
    Persistent(Value<G>),
}

/// The nodes of one pickle, with each node's nesting depth and size as a tree (a node reached
/// twice counts twice: the work a walk of it would do).
#[derive(Debug)]
pub(crate) struct Heap<G> {
    nodes: Vec<Node<G>>,
    depth: Vec<usize>,
    size: Vec<u64>,
}

impl<G> Heap<G> {
    pub fn node(&self, id: usize) -> &Node<G> {
        &self.nodes[id]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The items of a tuple value, if it is one.
    pub fn tuple<'h>(&'h self, v: &Value<G>) -> Option<&'h [Value<G>]> {
        match v {
            Value::Node(id) => match &self.nodes[*id] {
                Node::Tuple(items) => Some(items),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A loaded pickle: its value, the nodes it refers to, and the offset just past its STOP.
#[derive(Debug)]
pub(crate) struct Pickle<G> {
    pub root: Value<G>,
    pub heap: Heap<G>,
    pub end: usize,
}

/// Short description of a value's kind, for messages.
pub(crate) fn kind<G>(v: &Value<G>, heap: &Heap<G>) -> &'static str {
    match v {
        Value::None => "None",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float => "float",
        Value::Str(_) => "str",
        Value::Bytes(_) => "bytes",
        Value::Global(_) => "global",
        Value::Node(id) => match heap.node(*id) {
            Node::List(_) => "list",
            Node::Tuple(_) => "tuple",
            Node::Dict(_) => "dict",
            Node::Set(_) => "set",
            Node::Call { .. } => "call result",
            Node::Persistent(_) => "persistent id",
        },
    }
}

fn fail(pos: usize, msg: impl std::fmt::Display) -> ConvertError {
    ConvertError::checkpoint(format!("pickle, byte {pos}: {msg}"))
}

/// Reads the pickle starting at `bytes[start]`, up to and including its STOP opcode.
pub(crate) fn load<G: Globals>(
    bytes: &[u8],
    start: usize,
    limits: &Limits,
) -> Result<Pickle<G>, ConvertError> {
    let mut m = Machine::<G> {
        bytes,
        pos: start,
        limits,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        heap: Heap {
            nodes: Vec::new(),
            depth: Vec::new(),
            size: Vec::new(),
        },
    };
    let root = m.run()?;
    Ok(Pickle {
        root,
        heap: m.heap,
        end: m.pos,
    })
}

struct Machine<'b, 'l, G> {
    bytes: &'b [u8],
    pos: usize,
    limits: &'l Limits,
    stack: Vec<Value<G>>,
    /// Stack lengths at each open MARK.
    marks: Vec<usize>,
    memo: HashMap<u32, Value<G>>,
    heap: Heap<G>,
}

impl<G: Globals> Machine<'_, '_, G> {
    fn take(&mut self, n: usize) -> Result<&[u8], ConvertError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| {
                fail(
                    self.pos,
                    format!(
                        "needs {n} more bytes, {} are left (truncated or corrupt)",
                        self.bytes.len() - self.pos
                    ),
                )
            })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ConvertError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    /// A length field of `N` bytes, checked against the bytes left.
    fn len_field<const N: usize>(&mut self) -> Result<usize, ConvertError> {
        let mut a = [0u8; 8];
        a[..N].copy_from_slice(&self.array::<N>()?);
        let n = u64::from_le_bytes(a);
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(fail(
                self.pos,
                format!("a length of {n} bytes, but {left} are left (truncated or hostile)"),
            ));
        }
        Ok(n as usize)
    }

    /// A text line (protocol 0 forms), without its newline.
    fn line(&mut self) -> Result<&str, ConvertError> {
        let at = self.pos;
        let rest = &self.bytes[self.pos..];
        let max = self.limits.max_str_bytes.min(rest.len());
        let n = rest[..max]
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| fail(at, "a text line without an end within the string budget"))?;
        self.pos += n + 1;
        std::str::from_utf8(&rest[..n]).map_err(|_| fail(at, "a text line that is not UTF-8"))
    }

    fn string(&mut self, n: usize) -> Result<Rc<str>, ConvertError> {
        let at = self.pos;
        if n > self.limits.max_str_bytes {
            return Err(fail(
                at,
                format!(
                    "a string of {n} bytes, over the budget of {} (Limits::max_str_bytes)",
                    self.limits.max_str_bytes
                ),
            ));
        }
        let b = self.take(n)?;
        let s = std::str::from_utf8(b).map_err(|_| fail(at, "a string that is not UTF-8"))?;
        Ok(Rc::from(s))
    }

    fn push(&mut self, v: Value<G>) -> Result<(), ConvertError> {
        if self.stack.len() >= self.limits.max_stack {
            return Err(fail(
                self.pos,
                format!(
                    "more than {} values on the stack (Limits::max_stack)",
                    self.limits.max_stack
                ),
            ));
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> Result<Value<G>, ConvertError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() > floor {
            if let Some(v) = self.stack.pop() {
                return Ok(v);
            }
        }
        Err(fail(self.pos, "pops from an empty stack (corrupt pickle)"))
    }

    fn top(&self) -> Result<&Value<G>, ConvertError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        self.stack[floor..]
            .last()
            .ok_or_else(|| fail(self.pos, "reads an empty stack (corrupt pickle)"))
    }

    fn pop_mark(&mut self) -> Result<Vec<Value<G>>, ConvertError> {
        let at = self
            .marks
            .pop()
            .ok_or_else(|| fail(self.pos, "no MARK to pop to (corrupt pickle)"))?;
        Ok(self.stack.split_off(at))
    }

    /// Depth and tree size of a value.
    fn metrics_of(&self, v: &Value<G>) -> (usize, u64) {
        match v {
            Value::Node(id) => (self.heap.depth[*id], self.heap.size[*id]),
            _ => (0, 1),
        }
    }

    /// Depth and tree size of a node holding `items`, checked against the budgets.
    fn metrics(&self, items: &[Value<G>]) -> Result<(usize, u64), ConvertError> {
        let (depth, size) = items.iter().fold((0, 1u64), |(d, s), v| {
            let (vd, vs) = self.metrics_of(v);
            (d.max(vd), s.saturating_add(vs))
        });
        self.check(depth + 1, size)?;
        Ok((depth + 1, size))
    }

    fn check(&self, depth: usize, size: u64) -> Result<(), ConvertError> {
        if depth > self.limits.max_depth {
            return Err(fail(
                self.pos,
                format!(
                    "containers nested deeper than {} (Limits::max_depth)",
                    self.limits.max_depth
                ),
            ));
        }
        if size > self.limits.max_visits as u64 {
            return Err(fail(
                self.pos,
                format!(
                    "a container that refers to more than {} values counting repeats (a memo \
                     bomb; Limits::max_visits)",
                    self.limits.max_visits
                ),
            ));
        }
        Ok(())
    }

    /// Adds `node` holding `items` (for the metrics only).
    fn new_node(&mut self, node: Node<G>, items: &[Value<G>]) -> Result<Value<G>, ConvertError> {
        let (depth, size) = self.metrics(items)?;
        self.heap.nodes.push(node);
        self.heap.depth.push(depth);
        self.heap.size.push(size);
        Ok(Value::Node(self.heap.nodes.len() - 1))
    }

    fn new_seq(
        &mut self,
        make: fn(Vec<Value<G>>) -> Node<G>,
        items: Vec<Value<G>>,
    ) -> Result<Value<G>, ConvertError> {
        let (depth, size) = self.metrics(&items)?;
        self.heap.nodes.push(make(items));
        self.heap.depth.push(depth);
        self.heap.size.push(size);
        Ok(Value::Node(self.heap.nodes.len() - 1))
    }

    /// Grows the metrics of node `id` by `items` added to it.
    fn grow(&mut self, id: usize, items: &[Value<G>]) -> Result<(), ConvertError> {
        let (depth, size) = self.metrics(items)?;
        let depth = self.heap.depth[id].max(depth);
        let size = self.heap.size[id].saturating_add(size - 1);
        self.check(depth, size)?;
        self.heap.depth[id] = depth;
        self.heap.size[id] = size;
        Ok(())
    }

    /// The node id of the container on top of the stack, which must be `what`.
    fn top_node(&self, what: &str, ok: fn(&Node<G>) -> bool) -> Result<usize, ConvertError> {
        match self.top()? {
            Value::Node(id) if ok(&self.heap.nodes[*id]) => Ok(*id),
            v => Err(fail(
                self.pos,
                format!("{what} on a {}, which is not allowed", kind(v, &self.heap)),
            )),
        }
    }

    /// Adds `items` to the list or set `id`, keeping its depth up to date.
    fn extend(&mut self, id: usize, items: Vec<Value<G>>) -> Result<(), ConvertError> {
        self.grow(id, &items)?;
        match &mut self.heap.nodes[id] {
            Node::List(v) | Node::Set(v) => v.extend(items),
            _ => unreachable!("callers pass a list or set node"),
        }
        Ok(())
    }

    fn set_items(&mut self, id: usize, items: Vec<Value<G>>) -> Result<(), ConvertError> {
        if !items.len().is_multiple_of(2) {
            return Err(fail(self.pos, "SETITEMS with an odd number of values"));
        }
        self.grow(id, &items)?;
        let Node::Dict(pairs) = &mut self.heap.nodes[id] else {
            unreachable!("callers pass a dict node")
        };
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            // Python keeps one entry per key: a later value replaces an earlier one.
            let same = |a: &Value<G>| match (a, &k) {
                (Value::Str(a), Value::Str(b)) => a == b,
                (Value::Int(a), Value::Int(b)) => a == b,
                _ => false,
            };
            match pairs.iter_mut().find(|(a, _)| same(a)) {
                Some(slot) => slot.1 = v,
                None => pairs.push((k, v)),
            }
        }
        Ok(())
    }

    fn memo_put(&mut self, index: u32) -> Result<(), ConvertError> {
        let v = self.top()?.clone();
        if !self.memo.contains_key(&index) && self.memo.len() >= self.limits.max_memo {
            return Err(fail(
                self.pos,
                format!(
                    "more than {} memo entries (Limits::max_memo)",
                    self.limits.max_memo
                ),
            ));
        }
        self.memo.insert(index, v);
        Ok(())
    }

    fn memo_get(&mut self, index: u32) -> Result<(), ConvertError> {
        let v = self
            .memo
            .get(&index)
            .cloned()
            .ok_or_else(|| fail(self.pos, format!("memo entry {index} was never stored")))?;
        self.push(v)
    }

    fn global(&mut self, module: &str, name: &str) -> Result<(), ConvertError> {
        match G::resolve(module, name) {
            Some(g) => self.push(Value::Global(g)),
            None => Err(ConvertError::checkpoint(format!(
                "the pickle refers to the global `{module}.{name}`, which is not one a state_dict \
                 uses; refused, and nothing in the file was run (known globals: {})",
                G::accepted()
            ))),
        }
    }

    /// REDUCE, NEWOBJ and NEWOBJ_EX: a call of a known global, recorded (or, for a dict
    /// constructor with no arguments, made).
    fn call(&mut self, func: Value<G>, args: Value<G>, op: &str) -> Result<(), ConvertError> {
        let Value::Global(g) = func else {
            return Err(fail(
                self.pos,
                format!(
                    "{op} calls a {}, not a known global",
                    kind(&func, &self.heap)
                ),
            ));
        };
        let Some(items) = self.heap.tuple(&args) else {
            return Err(fail(
                self.pos,
                format!(
                    "{op} of {g:?} with {} arguments, not a tuple",
                    kind(&args, &self.heap)
                ),
            ));
        };
        if g.is_dict() {
            if !items.is_empty() {
                return Err(fail(
                    self.pos,
                    format!("{op} of {g:?} with arguments (only the empty form is read)"),
                ));
            }
            let v = self.new_node(Node::Dict(Vec::new()), &[])?;
            return self.push(v);
        }
        g.check_call(&self.heap, &args, self.limits)
            .map_err(|e| fail(self.pos, format!("{op} of {g:?}: {e}")))?;
        let v = self.new_node(
            Node::Call {
                func: g,
                args: args.clone(),
            },
            &[args],
        )?;
        self.push(v)
    }

    fn int(&mut self, b: &[u8]) -> Result<(), ConvertError> {
        if b.len() > 16 {
            return Err(fail(
                self.pos,
                format!("an integer of {} bytes (more than 128 bits)", b.len()),
            ));
        }
        let mut a = [0u8; 16];
        a[..b.len()].copy_from_slice(b);
        if b.last().is_some_and(|&x| x & 0x80 != 0) {
            a[b.len()..].fill(0xff);
        }
        self.push(Value::Int(i128::from_le_bytes(a)))
    }
}

mod opcodes;
#[cfg(test)]
mod tests;
