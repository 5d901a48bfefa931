//! Unit tests of the restricted pickle reader on hand-written opcode streams.

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
