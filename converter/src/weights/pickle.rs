//! A restricted reader of Python pickles (protocols 2 to 5): it turns the opcodes a `state_dict`
//! uses into a plain data graph ([`Heap`]) and runs nothing.
//!
//! Where Python's unpickler imports a global and calls it, this reader asks [`Globals::resolve`]
//! whether the name is one of the few it knows, refuses every other name at once (the message names
//! it), and records a call of a known one as a [`Node::Call`] for the caller to interpret. Persistent
//! ids (`BINPERSID`, how `torch.save` refers to storages) become [`Node::Persistent`]. The opcodes
//! that instantiate arbitrary classes (`INST`, `OBJ`) or use the extension registry (`EXT*`) and
//! out-of-band buffers are refused.
//!
//! Budgets ([`Limits`]): memo entries, stack size, open marks and container nesting, string lengths;
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
        if self.stack.len() <= floor {
            return Err(fail(self.pos, "pops from an empty stack (corrupt pickle)"));
        }
        Ok(self.stack.pop().expect("checked non-empty above"))
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

    fn run(&mut self) -> Result<Value<G>, ConvertError> {
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
                // Memo.
                b'q' => {
                    let i = self.array::<1>()?[0];
                    self.memo_put(u32::from(i))?
                }
                b'r' => {
                    let i = u32::from_le_bytes(self.array()?);
                    self.memo_put(i)?
                }
                0x94 => {
                    let i = u32::try_from(self.memo.len())
                        .map_err(|_| fail(at, "memo index overflow"))?;
                    self.memo_put(i)?
                }
                b'p' => {
                    let i = self.line()?.parse::<u32>();
                    self.memo_put(i.map_err(|_| fail(at, "PUT with a bad index"))?)?
                }
                b'h' => {
                    let i = self.array::<1>()?[0];
                    self.memo_get(u32::from(i))?
                }
                b'j' => {
                    let i = u32::from_le_bytes(self.array()?);
                    self.memo_get(i)?
                }
                b'g' => {
                    let i = self.line()?.parse::<u32>();
                    self.memo_get(i.map_err(|_| fail(at, "GET with a bad index"))?)?
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum TestGlobals {
        OrderedDict,
        Rebuild,
    }

    impl Globals for TestGlobals {
        fn resolve(module: &str, name: &str) -> Option<Self> {
            match (module, name) {
                ("collections", "OrderedDict") => Some(TestGlobals::OrderedDict),
                ("torch._utils", "_rebuild_tensor_v2") => Some(TestGlobals::Rebuild),
                _ => None,
            }
        }
        fn is_dict(self) -> bool {
            self == TestGlobals::OrderedDict
        }
        fn accepted() -> &'static str {
            "collections.OrderedDict, torch._utils._rebuild_tensor_v2"
        }
    }

    fn load_test(b: &[u8]) -> Result<Pickle<TestGlobals>, ConvertError> {
        load(b, 0, &Limits::default())
    }

    #[test]
    fn reads_a_dict_of_ints_strings_and_a_shared_list() {
        // pickle.dumps({'a': 1, 'b': [300, 'x'], 'c': <memo of the list>}, protocol=2) by hand.
        let mut p = vec![0x80, 2, b'}', b'q', 0, b'('];
        p.extend([b'X', 1, 0, 0, 0, b'a', b'K', 1]);
        p.extend([b'X', 1, 0, 0, 0, b'b', b']', b'q', 1, b'(', b'M', 0x2c, 1]);
        p.extend([b'X', 1, 0, 0, 0, b'x', b'e']);
        p.extend([b'X', 1, 0, 0, 0, b'c', b'h', 1, b'u', b'.']);
        let got = load_test(&p).unwrap();
        assert_eq!(got.end, p.len());
        let Value::Node(root) = got.root else {
            panic!()
        };
        let Node::Dict(pairs) = got.heap.node(root) else {
            panic!()
        };
        assert_eq!(pairs.len(), 3);
        assert!(matches!(pairs[0].1, Value::Int(1)));
        // 'b' and 'c' are the same node.
        let (Value::Node(b), Value::Node(c)) = (&pairs[1].1, &pairs[2].1) else {
            panic!()
        };
        assert_eq!(b, c);
        let Node::List(items) = got.heap.node(*b) else {
            panic!()
        };
        assert!(matches!(items[0], Value::Int(300)));
    }

    #[test]
    fn long1_reads_the_torch_magic_number() {
        let magic: i128 = 0x1950a86a20f9469cfc6c;
        let mut p = vec![0x80, 2, 0x8a, 10];
        p.extend(&magic.to_le_bytes()[..10]);
        p.push(b'.');
        assert!(matches!(load_test(&p).unwrap().root, Value::Int(m) if m == magic));
        let neg = [0x80, 2, 0x8a, 2, 0x00, 0xff, b'.'];
        assert!(matches!(load_test(&neg).unwrap().root, Value::Int(-256)));
    }

    #[test]
    fn refuses_unknown_globals_by_name_in_both_forms() {
        let text = b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00echo\x85R.";
        let e = load_test(text).unwrap_err().to_string();
        assert!(e.contains("`os.system`"), "{e}");
        // STACK_GLOBAL with a dotted name under an allowed-looking module.
        let mut p = vec![0x80, 4, 0x8c, 12];
        p.extend(b"torch._utils");
        p.extend([0x8c, 9]);
        p.extend(b"os.system");
        p.extend([0x93, b'.']);
        let e = load_test(&p).unwrap_err().to_string();
        assert!(e.contains("`torch._utils.os.system`"), "{e}");
    }

    #[test]
    fn records_calls_and_makes_ordered_dicts() {
        let mut p = b"\x80\x02ccollections\nOrderedDict\n)R".to_vec();
        p.extend(b"ctorch._utils\n_rebuild_tensor_v2\n(K\x01K\x02tR.");
        // The stack ends with the OrderedDict under the call; STOP pops the call.
        let got = load_test(&p).unwrap();
        let Value::Node(id) = got.root else { panic!() };
        let Node::Call { func, args } = got.heap.node(id) else {
            panic!()
        };
        assert_eq!(*func, TestGlobals::Rebuild);
        assert_eq!(got.heap.tuple(args).unwrap().len(), 2);
        // Node 0 is the empty argument tuple, node 1 the OrderedDict made from it.
        assert!(matches!(got.heap.node(1), Node::Dict(d) if d.is_empty()));
    }

    #[test]
    fn budgets_stop_hostile_shapes_early() {
        let limits = Limits::default();
        // Deep nesting: 100 empty lists appended into each other.
        let mut deep = vec![0x80, 2];
        deep.extend(std::iter::repeat_n(b']', 100));
        deep.extend(std::iter::repeat_n(b'a', 99));
        deep.push(b'.');
        let e = load::<TestGlobals>(&deep, 0, &limits)
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_depth"), "{e}");
        // Marks without end.
        let marks = [vec![0x80, 2], vec![b'('; 100], vec![b'.']].concat();
        let e = load::<TestGlobals>(&marks, 0, &limits)
            .unwrap_err()
            .to_string();
        assert!(e.contains("open marks"), "{e}");
        // A length field claiming more than the file.
        let long = [
            0x80, 2, 0x8e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, b'.',
        ];
        let e = load::<TestGlobals>(&long, 0, &limits)
            .unwrap_err()
            .to_string();
        assert!(e.contains("are left"), "{e}");
        // A sparse memo index is cheap, and the memo count is bounded.
        let small = Limits {
            max_memo: 4,
            ..Limits::default()
        };
        let mut memo = vec![0x80, 2, b'N'];
        for i in 0..5u32 {
            memo.push(b'r');
            memo.extend((u32::MAX - i).to_le_bytes());
        }
        memo.push(b'.');
        let e = load::<TestGlobals>(&memo, 0, &small)
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_memo"), "{e}");
    }

    #[test]
    fn refuses_inst_ext_and_non_global_calls() {
        let inst = b"\x80\x02(ios\nsystem\n.";
        assert!(load_test(inst).unwrap_err().to_string().contains("INST"));
        let ext = b"\x80\x02\x82\x01.";
        assert!(load_test(ext).unwrap_err().to_string().contains("EXT"));
        let call_int = b"\x80\x02K\x01)R.";
        assert!(load_test(call_int)
            .unwrap_err()
            .to_string()
            .contains("not a known global"));
    }
}
