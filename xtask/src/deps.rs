//! `cargo xtask deps`: the import graph between the source files of each crate, and its circles.
//!
//! A file depends on another when it names an item of the other's module: in a `use` declaration
//! (`use lower::Table;` from the parent of `lower` too) or in a path in code that starts with `crate`,
//! `super` or `self` (a parent calling `child::f()` is a module using its parts). A path is
//! resolved to the deepest module it names (`crate::ops::nn::conv::Conv2dParams` ->
//! `ops/nn/conv.rs`), and where that module only re-exports the name (`pub use crate::schema::DType;`),
//! on to the file that defines it: a file importing `crate::Error` depends on `error.rs`, not on
//! `lib.rs`; the re-exporting file depends on nothing by it. Inline modules (`mod tests { .. }`)
//! belong to their file; items under `#[cfg(test)]` are left out (a test may drive its module through
//! the ones above it). A circle is a set of files that reach each other through these edges
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
    /// The names each module defines (items and inline modules).
    defines: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// The names each module brings in with `use`, to the path they name there.
    aliases: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    /// The paths each module glob-imports (`use x::*`).
    globs: BTreeMap<Vec<String>, Vec<Vec<String>>>,
}

/// What a file names and declares, each with the module (inside the file) it is in.
struct Collector {
    module: Vec<String>,
    paths: Vec<(Vec<String>, Vec<String>)>,
    defines: Vec<(Vec<String>, String)>,
    aliases: Vec<(Vec<String>, String, Vec<String>)>,
    globs: Vec<(Vec<String>, Vec<String>)>,
}

impl Collector {
    /// Keeps a path: which paths name a module of the crate is for [`Graph::resolve`] to say.
    fn push(&mut self, segments: Vec<String>) {
        if !segments.is_empty() {
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
                if let Some(last) = path.last() {
                    self.aliases
                        .push((self.module.clone(), last.clone(), path.clone()));
                }
                self.push(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                self.aliases
                    .push((self.module.clone(), r.rename.to_string(), path.clone()));
                self.push(path);
            }
            syn::UseTree::Glob(_) => {
                self.globs.push((self.module.clone(), prefix.clone()));
                self.push(prefix.clone());
            }
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
        // A re-export (`pub use`, `pub(crate) use`) only forwards names: who names them through it
        // depends on the file that defines them, and the forwarding file depends on nothing by it
        // (a parent re-exporting its child's items is the child's face, not a use of the child).
        let paths = self.paths.len();
        self.use_tree(&mut Vec::new(), &u.tree);
        if !matches!(u.vis, syn::Visibility::Inherited) {
            self.paths.truncate(paths);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        // In code, only paths from the crate's root or this module's parents count: a module naming
        // its own child modules in code (`npz::read(..)`) is a module using its parts, and one
        // segment names something in scope (or is the `crate` of `pub(crate)`), whose `use` counted.
        let explicit = matches!(
            p.segments.first().map(|s| s.ident.to_string()).as_deref(),
            Some("crate" | "super" | "self")
        );
        if p.segments.len() > 1 && explicit {
            self.push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test_only(item) {
            // A test may exercise its module through the ones above it.
            return;
        }
        let name = match item {
            syn::Item::Const(i) => Some(&i.ident),
            syn::Item::Enum(i) => Some(&i.ident),
            syn::Item::Fn(i) => Some(&i.sig.ident),
            syn::Item::Macro(i) => i.ident.as_ref(),
            syn::Item::Mod(i) => Some(&i.ident),
            syn::Item::Static(i) => Some(&i.ident),
            syn::Item::Struct(i) => Some(&i.ident),
            syn::Item::Trait(i) => Some(&i.ident),
            syn::Item::Type(i) => Some(&i.ident),
            syn::Item::Union(i) => Some(&i.ident),
            _ => None,
        };
        if let Some(name) = name {
            self.defines.push((self.module.clone(), name.to_string()));
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        // Items inside a function body are not the module's: only their paths count.
        let defined = self.defines.len();
        syn::visit::visit_block(self, b);
        self.defines.truncate(defined);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.module.pop();
    }
}

/// Whether an item is compiled for tests only (`#[cfg(test)]`).
fn is_test_only(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => return false,
    };
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|arg| arg == "test")
    })
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

/// The folder an `automod::dir!([vis] "folder")` item names, relative to its crate's root.
fn automod_dir(item: &syn::Item) -> Option<String> {
    let syn::Item::Macro(m) = item else {
        return None;
    };
    let segments: Vec<String> = m
        .mac
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    if segments != ["automod", "dir"] {
        return None;
    }
    // The tokens are an optional visibility and one string literal (no escapes in a path).
    let tokens = m.mac.tokens.to_string();
    let (_, rest) = tokens.split_once('"')?;
    rest.split_once('"').map(|(folder, _)| folder.to_string())
}

/// The modules `automod::dir!` declares for `folder` (relative to the crate root above `file`):
/// one per `.rs` file but `mod.rs`, `lib.rs` and `main.rs`, by name, sorted.
fn automod_files(file: &Path, folder: &str) -> Result<Vec<(String, PathBuf)>> {
    let crate_root = file
        .ancestors()
        .find(|d| d.join("Cargo.toml").is_file())
        .with_context(|| format!("no Cargo.toml above {}", file.display()))?;
    let dir = crate_root.join(folder);
    let mut found = Vec::new();
    for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string);
        let is_rs = path.extension().is_some_and(|e| e == "rs");
        match stem {
            Some(stem) if is_rs && !matches!(stem.as_str(), "mod" | "lib" | "main") => {
                found.push((stem, path));
            }
            _ => {}
        }
    }
    found.sort();
    Ok(found)
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
        let mut named = Vec::new();
        for (file, ast) in &files {
            let mut c = Collector {
                module: Vec::new(),
                paths: Vec::new(),
                defines: Vec::new(),
                aliases: Vec::new(),
                globs: Vec::new(),
            };
            let base = graph.module_of(file);
            c.visit_file(ast);
            let within = |inner: Vec<String>| -> Vec<String> {
                let mut here = base.clone();
                here.extend(inner);
                here
            };
            for (inner, name) in c.defines {
                graph.defines.entry(within(inner)).or_default().insert(name);
            }
            for (inner, name, path) in c.aliases {
                graph
                    .aliases
                    .entry(within(inner))
                    .or_default()
                    .insert(name, path);
            }
            for (inner, path) in c.globs {
                graph.globs.entry(within(inner)).or_default().push(path);
            }
            for (inner, segments) in c.paths {
                named.push((file.clone(), within(inner), segments));
            }
        }
        for (file, here, segments) in named {
            let Some((target, name)) = graph.resolve(&here, &segments, 0) else {
                continue;
            };
            if target != file {
                graph.edges.entry((file, target)).or_default().insert(name);
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
            if let Some(folder) = automod_dir(item) {
                // `automod::dir!(pub "src/ops/nn")`: a module per file of that folder (of the crate).
                for (name, path) in automod_files(file, &folder)? {
                    let mut child = module.to_vec();
                    child.push(name);
                    self.walk(&path, child, files)?;
                }
                continue;
            }
            let syn::Item::Mod(m) = item else { continue };
            if is_test_only(item) {
                continue;
            }
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

    /// The file that defines what `segments` names from module `here`, and the name it takes: the
    /// deepest module the path names, then, where that module only imports the name (a re-export),
    /// the file the import names, and so on.
    fn resolve(
        &self,
        here: &[String],
        segments: &[String],
        depth: usize,
    ) -> Option<(PathBuf, String)> {
        let mut abs: Vec<String> = Vec::new();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => rest = &rest[1..],
            Some("self" | "super") => abs = here.to_vec(),
            // A path from a child module in scope (`use lower::Table;` in the parent of `lower`);
            // anything else (another crate, a local item) is not a file of this crate.
            Some(first) => {
                let mut child = here.to_vec();
                child.push(first.to_owned());
                if !self.modules.contains_key(&child) {
                    return None;
                }
                abs = here.to_vec();
            }
            None => return None,
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
        let mut module = abs.clone();
        let mut name = rest.first().cloned();
        for (i, seg) in rest.iter().enumerate() {
            abs.push(seg.clone());
            match self.modules.get(&abs) {
                Some(f) => {
                    best = f.clone();
                    module = abs.clone();
                    name = rest.get(i + 1).cloned();
                }
                None => break,
            }
        }
        let Some(name) = name else {
            // The path names a module itself.
            let last = module.last().cloned().unwrap_or_else(|| "crate".to_owned());
            return Some((best, last));
        };
        // A re-export: follow it to the file that defines the name (a few steps at most).
        let defined = self.defines.get(&module).is_some_and(|d| d.contains(&name));
        if !defined && depth < 8 {
            if let Some(path) = self.aliases.get(&module).and_then(|a| a.get(&name)) {
                if let Some(found) = self.resolve(&module, path, depth + 1) {
                    return Some(found);
                }
            }
            for glob in self.globs.get(&module).into_iter().flatten() {
                let Some(source) = self.module_path(&module, glob) else {
                    continue;
                };
                let has = self.defines.get(&source).is_some_and(|d| d.contains(&name))
                    || self
                        .aliases
                        .get(&source)
                        .is_some_and(|a| a.contains_key(&name));
                if has {
                    let mut path = glob.clone();
                    path.push(name.clone());
                    if let Some(found) = self.resolve(&module, &path, depth + 1) {
                        return Some(found);
                    }
                }
            }
        }
        Some((best, name))
    }

    /// The module a path names from module `here`, if it names one of this crate.
    fn module_path(&self, here: &[String], segments: &[String]) -> Option<Vec<String>> {
        let mut abs = match segments.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            _ => here.to_vec(),
        };
        for seg in segments {
            match seg.as_str() {
                "crate" | "self" => {}
                "super" => {
                    abs.pop()?;
                }
                _ => abs.push(seg.clone()),
            }
        }
        self.modules.contains_key(&abs).then_some(abs)
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
            ("lib.rs", "pub mod schema; pub mod ops; pub mod top;"),
            ("schema.rs", "pub struct P;"),
            ("ops/mod.rs", "pub mod conv; pub mod pool; pub use crate::schema::P; use pool::g;"),
            ("ops/conv.rs", "use super::P; use super::pool::g; fn f() {}\n#[cfg(test)] mod tests { use super::*; use crate::top::T; }"),
            ("top.rs", "use crate::ops::conv::f; pub struct T;"),
            ("ops/pool.rs", "pub fn g() {}"),
        ]);
        let graph = Graph::read(&dir.join("lib.rs")).unwrap();
        assert!(graph.circles().is_empty(), "{:?}", graph.edges);
        let has = |a: &str, b: &str| graph.edges.contains_key(&(dir.join(a), dir.join(b)));
        // `super::P` is the schema's, through the re-export, which makes no edge of its own.
        assert!(has("ops/conv.rs", "schema.rs"));
        assert!(!has("ops/conv.rs", "ops/mod.rs"));
        assert!(!has("ops/mod.rs", "schema.rs"));
        assert!(has("ops/conv.rs", "ops/pool.rs"));
        assert!(
            has("ops/mod.rs", "ops/pool.rs"),
            "a path from a child module in scope"
        );
        assert!(!has("ops/conv.rs", "ops/conv.rs"));
        assert!(
            !has("ops/conv.rs", "top.rs"),
            "a test module may use what is above its file"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn automod_folders_are_modules_and_their_imports_count() {
        // `automod::dir!` declares a module per file of the folder, relative to the crate's root.
        let dir = tree(
            "automod",
            &[
                ("Cargo.toml", "[package]"),
                ("src/lib.rs", "pub mod ops; pub struct T;"),
                ("src/ops/mod.rs", "automod::dir!(pub \"src/ops\");"),
                ("src/ops/a.rs", "use crate::ops::b::g; pub fn f() {}"),
                ("src/ops/b.rs", "pub fn g() { let _ = crate::ops::a::f; }"),
                ("src/ops/notes.txt", "not a module"),
            ],
        );
        let graph = Graph::read(&dir.join("src/lib.rs")).unwrap();
        let module = |m: &[&str]| {
            graph
                .modules
                .get(&m.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .cloned()
        };
        assert_eq!(module(&["ops", "a"]), Some(dir.join("src/ops/a.rs")));
        assert_eq!(module(&["ops", "b"]), Some(dir.join("src/ops/b.rs")));
        assert_eq!(
            graph.circles().len(),
            1,
            "a.rs and b.rs use each other: {:?}",
            graph.edges
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
