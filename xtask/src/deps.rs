//! `cargo xtask deps`: the import graph between the source files of each crate, and its circles.
//!
//! A file depends on another when it names an item of the other's module: in a `use` declaration or
//! in a path in code that starts with `crate`, `super` or `self`. A path is resolved to the deepest
//! module it names that has a file (`crate::ops::nn::conv::Conv2dParams` -> `ops/nn/conv.rs`), so a
//! re-export counts where it is written: a file importing `crate::format::DType` depends on
//! `format/mod.rs`, which depends on wherever `DType` is defined. Inline modules (`mod tests { .. }`)
//! belong to their file. A circle is a set of files that reach each other through these edges
//! (a strongly connected component of more than one file); the check fails on any, naming the edges
//! and the names that make each one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use syn::visit::Visit;

/// The crates whose source trees must have no circle, by their root file.
pub const ROOTS: &[&str] = &[
    "core/src/lib.rs",
    "converter/src/lib.rs",
    "targets/cpu/src/lib.rs",
    "targets/cortex-m/src/lib.rs",
    "targets/gpu/src/lib.rs",
    "testkit/src/lib.rs",
    "host-tools/src/main.rs",
    "xtask/src/main.rs",
];

/// One crate's files and the edges between them.
#[derive(Default)]
pub struct Graph {
    /// Module path (`["ops", "nn", "conv"]`, empty for the root) to its file.
    modules: BTreeMap<Vec<String>, PathBuf>,
    /// `(from, to)` file edges, each with the names that make it.
    edges: BTreeMap<(PathBuf, PathBuf), BTreeSet<String>>,
}

/// Every path a file names from its own crate, with the module it was named in.
struct Collector {
    module: Vec<String>,
    paths: Vec<(Vec<String>, Vec<String>)>,
}

impl Collector {
    fn push(&mut self, segments: Vec<String>) {
        if matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super" | "self")
        ) {
            self.paths.push((self.module.clone(), segments));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" {
                    path.push(n.ident.to_string());
                }
                self.push(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                self.push(path);
            }
            syn::UseTree::Glob(_) => self.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.module.pop();
    }
}

/// The directory where the child modules of the module in `file` live.
fn child_dir(file: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") => dir,
        Some(stem) => dir.join(stem),
        None => dir,
    }
}

/// The value of a `#[path = "..."]` attribute.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

impl Graph {
    /// Reads the crate whose root file is `root`, following its `mod` declarations.
    pub fn read(root: &Path) -> Result<Graph> {
        let mut graph = Graph::default();
        let mut files = Vec::new();
        graph.walk(root, Vec::new(), &mut files)?;
        for (file, ast) in &files {
            let mut c = Collector {
                module: Vec::new(),
                paths: Vec::new(),
            };
            let base = graph.module_of(file);
            c.visit_file(ast);
            for (inner, segments) in c.paths {
                let mut here = base.clone();
                here.extend(inner);
                let Some((target, name)) = graph.resolve(&here, &segments) else {
                    continue;
                };
                if &target != file {
                    graph
                        .edges
                        .entry((file.clone(), target))
                        .or_default()
                        .insert(name);
                }
            }
        }
        Ok(graph)
    }

    fn module_of(&self, file: &Path) -> Vec<String> {
        self.modules
            .iter()
            .filter(|(_, f)| f.as_path() == file)
            .map(|(m, _)| m.clone())
            .min_by_key(Vec::len)
            .unwrap_or_default()
    }

    fn walk(
        &mut self,
        file: &Path,
        module: Vec<String>,
        files: &mut Vec<(PathBuf, syn::File)>,
    ) -> Result<()> {
        let text =
            fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        let ast =
            syn::parse_file(&text).with_context(|| format!("cannot parse {}", file.display()))?;
        self.modules.insert(module.clone(), file.to_path_buf());
        self.walk_items(file, &child_dir(file), &module, &ast.items, files)?;
        files.push((file.to_path_buf(), ast));
        Ok(())
    }

    fn walk_items(
        &mut self,
        file: &Path,
        dir: &Path,
        module: &[String],
        items: &[syn::Item],
        files: &mut Vec<(PathBuf, syn::File)>,
    ) -> Result<()> {
        for item in items {
            let syn::Item::Mod(m) = item else { continue };
            let mut child = module.to_vec();
            child.push(m.ident.to_string());
            let name = m.ident.to_string();
            match &m.content {
                Some((_, inner)) => {
                    self.modules.insert(child.clone(), file.to_path_buf());
                    self.walk_items(file, &dir.join(&name), &child, inner, files)?;
                }
                None => {
                    let path = match path_attr(&m.attrs) {
                        Some(p) => file.parent().unwrap_or(Path::new("")).join(p),
                        None => {
                            let flat = dir.join(format!("{name}.rs"));
                            if flat.exists() {
                                flat
                            } else {
                                dir.join(&name).join("mod.rs")
                            }
                        }
                    };
                    if path.exists() {
                        self.walk(&path, child, files)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The file of the deepest module `segments` names from module `here`, and the name it takes.
    fn resolve(&self, here: &[String], segments: &[String]) -> Option<(PathBuf, String)> {
        let mut abs: Vec<String> = Vec::new();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => rest = &rest[1..],
            _ => abs = here.to_vec(),
        }
        while let Some(first) = rest.first() {
            match first.as_str() {
                "self" => {}
                "super" => {
                    abs.pop()?;
                }
                _ => break,
            }
            rest = &rest[1..];
        }
        let mut best = self.modules.get(&abs)?.clone();
        let mut name = rest.first().cloned().unwrap_or_else(|| "*".to_owned());
        for (i, seg) in rest.iter().enumerate() {
            abs.push(seg.clone());
            match self.modules.get(&abs) {
                Some(f) => {
                    best = f.clone();
                    name = rest.get(i + 1).cloned().unwrap_or_else(|| seg.clone());
                }
                None => break,
            }
        }
        Some((best, name))
    }

    /// The circles: sets of more than one file that reach each other, each with its edges.
    pub fn circles(&self) -> Vec<Vec<(PathBuf, PathBuf, Vec<String>)>> {
        let files: Vec<&PathBuf> = self
            .modules
            .values()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let index: BTreeMap<&PathBuf, usize> =
            files.iter().enumerate().map(|(i, f)| (*f, i)).collect();
        let mut next = vec![Vec::new(); files.len()];
        for (from, to) in self.edges.keys() {
            if let (Some(&a), Some(&b)) = (index.get(from), index.get(to)) {
                next[a].push(b);
            }
        }
        let mut out = Vec::new();
        for component in strongly_connected(&next) {
            if component.len() < 2 {
                continue;
            }
            let members: BTreeSet<usize> = component.iter().copied().collect();
            let edges = self
                .edges
                .iter()
                .filter(|((from, to), _)| {
                    members.contains(&index[from]) && members.contains(&index[to])
                })
                .map(|((from, to), names)| {
                    (from.clone(), to.clone(), names.iter().cloned().collect())
                })
                .collect();
            out.push(edges);
        }
        out
    }

    /// Files read and edges found.
    pub fn size(&self) -> (usize, usize) {
        let files: BTreeSet<&PathBuf> = self.modules.values().collect();
        (files.len(), self.edges.len())
    }
}

/// Tarjan's algorithm, iteratively: the strongly connected components of the graph `next`.
fn strongly_connected(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = next.len();
    let (mut order, mut low) = (vec![UNSEEN; n], vec![0; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut out, mut counter) = (Vec::new(), Vec::new(), 0);
    for start in 0..n {
        if order[start] != UNSEEN {
            continue;
        }
        // (node, index of the next successor to look at)
        let mut work = vec![(start, 0)];
        order[start] = counter;
        low[start] = counter;
        counter += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&(v, i)) = work.last() {
            if let Some(&w) = next[v].get(i) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if order[w] == UNSEEN {
                    order[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(component);
            }
        }
    }
    out
}

/// `cargo xtask deps`: fails when a crate of [`ROOTS`] has a circle, and prints each one.
pub fn check(root: &Path) -> Result<()> {
    let mut found = 0;
    for crate_root in ROOTS {
        let graph = Graph::read(&root.join(crate_root))?;
        let (files, edges) = graph.size();
        let circles = graph.circles();
        eprintln!(
            "{crate_root}: {files} files, {edges} import edges, {} circle(s)",
            circles.len()
        );
        for (i, circle) in circles.iter().enumerate() {
            eprintln!("  circle {}:", i + 1);
            for (from, to, names) in circle {
                let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
                eprintln!("    {} -> {}: {}", rel(from), rel(to), names.join(", "));
            }
        }
        found += circles.len();
    }
    if found > 0 {
        bail!(
            "{found} import circle(s) between source files: move what both sides use into a module \
             below them (see docs/adding-an-op.md for the layers)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ember-deps-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for (path, text) in files {
            let p = dir.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn finds_a_circle_through_a_use_and_a_path_in_code() {
        let dir = tree(
            "circle",
            &[
                ("lib.rs", "mod a; pub mod b;"),
                ("a.rs", "use crate::b::inner::X;\npub struct Y;"),
                ("b/mod.rs", "pub mod inner;"),
                (
                    "b/inner.rs",
                    "pub struct X; fn f() { let _ = crate::a::Y; }",
                ),
            ],
        );
        let graph = Graph::read(&dir.join("lib.rs")).unwrap();
        let circles = graph.circles();
        assert_eq!(circles.len(), 1, "{:?}", graph.edges);
        let files: BTreeSet<String> = circles[0]
            .iter()
            .map(|(from, _, _)| from.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        assert_eq!(
            files,
            BTreeSet::from(["a.rs".to_owned(), "b/inner.rs".to_owned()])
        );
        let names: Vec<&Vec<String>> = circles[0].iter().map(|(_, _, n)| n).collect();
        assert!(names.contains(&&vec!["X".to_owned()]));
        assert!(names.contains(&&vec!["Y".to_owned()]));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn super_and_inline_test_modules_resolve_to_their_files() {
        // `super::*` in an inline test module is the file itself: no edge. `super::sibling` from a
        // child file is its sibling; a re-export points down only.
        let dir = tree("layers", &[
            ("lib.rs", "pub mod schema; pub mod ops;"),
            ("schema.rs", "pub struct P;"),
            ("ops/mod.rs", "pub mod conv; pub mod pool; pub use crate::schema::P;"),
            ("ops/conv.rs", "use super::P; use super::pool::g; fn f() {}\n#[cfg(test)] mod tests { use super::*; }"),
            ("ops/pool.rs", "pub fn g() {}"),
        ]);
        let graph = Graph::read(&dir.join("lib.rs")).unwrap();
        assert!(graph.circles().is_empty(), "{:?}", graph.edges);
        let has = |a: &str, b: &str| graph.edges.contains_key(&(dir.join(a), dir.join(b)));
        assert!(has("ops/conv.rs", "ops/mod.rs"));
        assert!(has("ops/conv.rs", "ops/pool.rs"));
        assert!(has("ops/mod.rs", "schema.rs"));
        assert!(!has("ops/conv.rs", "ops/conv.rs"));
        let _ = fs::remove_dir_all(&dir);
    }
}
