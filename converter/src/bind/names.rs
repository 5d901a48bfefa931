//! How checkpoint names meet initializer names: exact first, then up to the prefixes that wrappers
//! add (`model.`, `module.` from `DataParallel`, `_orig_mod.` from `torch.compile`), then through the
//! user's `--rename` rules (a plain prefix `FROM=TO`, or `re:PATTERN=REPLACEMENT`).

use std::collections::HashMap;

use regex::Regex;

use crate::ConvertError;

/// Prefixes stripped (repeatedly, in any order) before comparing names.
pub const WRAPPER_PREFIXES: [&str; 3] = ["model.", "module.", "_orig_mod."];

/// `name` without the wrapper prefixes at its start.
pub fn strip_wrappers(mut name: &str) -> &str {
    while let Some(rest) = WRAPPER_PREFIXES.iter().find_map(|p| name.strip_prefix(p)) {
        name = rest;
    }
    name
}

/// A `--rename` rule, applied to checkpoint names.
#[derive(Clone, Debug)]
pub struct Rename {
    pattern: Pattern,
    to: String,
    text: String,
}

#[derive(Clone, Debug)]
enum Pattern {
    Prefix(String),
    Regex(Regex),
}

impl Rename {
    /// Parses `FROM=TO` (a name starting with `FROM` has it replaced by `TO`) or
    /// `re:PATTERN=REPLACEMENT` (the `regex` crate's syntax; `$1`, `${name}` in the replacement). The
    /// first `=` separates the two sides (write `\x3D` for a `=` in a pattern). A rule that renames a
    /// tensor to the empty name drops it (it is then neither bound nor reported unused).
    pub fn parse(arg: &str) -> Result<Rename, ConvertError> {
        let bad = |why: String| ConvertError::bind(format!("--rename {arg:?}: {why}"));
        let (lhs, to) = arg
            .split_once('=')
            .ok_or_else(|| bad("expected FROM=TO or re:PATTERN=REPLACEMENT".into()))?;
        let pattern = match lhs.strip_prefix("re:") {
            Some(re) => Pattern::Regex(Regex::new(re).map_err(|e| bad(e.to_string()))?),
            None => Pattern::Prefix(lhs.to_string()),
        };
        Ok(Rename {
            pattern,
            to: to.to_string(),
            text: arg.to_string(),
        })
    }

    /// The renamed name, or `None` when the rule does not apply.
    pub fn apply(&self, name: &str) -> Option<String> {
        match &self.pattern {
            Pattern::Prefix(p) => name
                .strip_prefix(p.as_str())
                .map(|r| format!("{}{r}", self.to)),
            Pattern::Regex(re) => re
                .is_match(name)
                .then(|| re.replace(name, self.to.as_str()).into_owned()),
        }
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// `name` through every rule in order (each applies to the previous one's result); `None` when no
/// rule applies.
pub fn rename(rules: &[Rename], name: &str) -> Option<String> {
    let mut out: Option<String> = None;
    for r in rules {
        if let Some(n) = r.apply(out.as_deref().unwrap_or(name)) {
            out = Some(n);
        }
    }
    out
}

/// How an initializer found its tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// Same name.
    Exact,
    /// Same name once the wrapper prefixes are stripped from both.
    Prefix,
    /// Through the `--rename` rules (then exactly or up to the wrapper prefixes).
    Rename,
}

impl Match {
    /// A word for reports.
    pub fn name(self) -> &'static str {
        match self {
            Match::Exact => "exact",
            Match::Prefix => "prefix",
            Match::Rename => "rename",
        }
    }
}

/// Checkpoint names indexed for the three kinds of match.
pub struct Index<'c> {
    exact: HashMap<&'c str, &'c str>,
    stripped: HashMap<&'c str, Vec<&'c str>>,
    renamed: HashMap<String, Vec<&'c str>>,
    renamed_stripped: HashMap<String, Vec<&'c str>>,
    /// Names a rule renamed to the empty name.
    pub dropped: Vec<&'c str>,
}

impl<'c> Index<'c> {
    /// Indexes `names` (checkpoint tensor names) under `rules`.
    pub fn new(names: impl Iterator<Item = &'c str>, rules: &[Rename]) -> Self {
        let mut ix = Index {
            exact: HashMap::new(),
            stripped: HashMap::new(),
            renamed: HashMap::new(),
            renamed_stripped: HashMap::new(),
            dropped: Vec::new(),
        };
        for n in names {
            ix.exact.insert(n, n);
            ix.stripped.entry(strip_wrappers(n)).or_default().push(n);
            if let Some(r) = rename(rules, n) {
                if r.is_empty() {
                    ix.dropped.push(n);
                    continue;
                }
                ix.renamed_stripped
                    .entry(strip_wrappers(&r).to_string())
                    .or_default()
                    .push(n);
                ix.renamed.entry(r).or_default().push(n);
            }
        }
        ix
    }

    /// True when a rule dropped `name`.
    pub fn is_dropped(&self, name: &str) -> bool {
        self.dropped.contains(&name)
    }

    /// The checkpoint tensor for the initializer `init`, how it was found, or an error naming the
    /// candidates when several fit equally.
    pub fn find(&self, init: &str) -> Result<Option<(&'c str, Match)>, String> {
        let live = |v: &[&'c str]| -> Vec<&'c str> {
            v.iter().copied().filter(|n| !self.is_dropped(n)).collect()
        };
        if let Some(&n) = self.exact.get(init) {
            if !self.is_dropped(n) {
                return Ok(Some((n, Match::Exact)));
            }
        }
        let stripped = strip_wrappers(init);
        let tiers: [(Vec<&'c str>, Match); 3] = [
            (
                self.stripped.get(stripped).map_or(Vec::new(), |v| live(v)),
                Match::Prefix,
            ),
            (
                self.renamed.get(init).cloned().unwrap_or_default(),
                Match::Rename,
            ),
            (
                self.renamed_stripped
                    .get(stripped)
                    .cloned()
                    .unwrap_or_default(),
                Match::Rename,
            ),
        ];
        for (found, how) in tiers {
            match found.as_slice() {
                [] => continue,
                [one] => return Ok(Some((one, how))),
                many => {
                    return Err(format!(
                        "initializer \"{init}\" fits several checkpoint tensors ({}); rename or \
                         drop all but one with --rename",
                        quoted(many)
                    ))
                }
            }
        }
        Ok(None)
    }
}

/// `"a", "b", "c"`.
pub fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Edit distance between `a` and `b`, giving up (returning `cap`) past `cap`.
fn distance(a: &str, b: &str, cap: usize) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) >= cap {
        return cap;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        if cur.iter().min().is_some_and(|&m| m >= cap) {
            return cap;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()].min(cap)
}

/// Up to three names of `pool` closest to `name`, nearest first: names that end with it (or that it
/// ends with: a prefix the graph or checkpoint adds), then those within an edit distance of about
/// half its length, compared without wrapper prefixes.
pub fn closest<'p>(name: &str, pool: &[&'p str]) -> Vec<&'p str> {
    let target = strip_wrappers(name);
    let cap = target.chars().count() / 2 + 2;
    let mut scored: Vec<(usize, &'p str)> = pool
        .iter()
        .map(|&p| {
            let q = strip_wrappers(p);
            let nested = q.ends_with(&format!(".{target}")) || target.ends_with(&format!(".{q}"));
            let d = if nested {
                0
            } else {
                1 + distance(target, q, cap)
            };
            (d, p)
        })
        .filter(|&(d, _)| d < cap)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_strip_in_any_order() {
        assert_eq!(strip_wrappers("module._orig_mod.fc.weight"), "fc.weight");
        assert_eq!(strip_wrappers("model.model.x"), "x");
        assert_eq!(strip_wrappers("modelx.y"), "modelx.y");
    }

    #[test]
    fn rules_chain_and_regexes_capture() {
        let rules = [
            Rename::parse("backbone.=").unwrap(),
            Rename::parse(r"re:^layer(\d+)\.=block$1.").unwrap(),
        ];
        assert_eq!(
            rename(&rules, "backbone.layer2.w").as_deref(),
            Some("block2.w")
        );
        assert_eq!(rename(&rules, "head.w"), None);
        assert!(Rename::parse("noequals").is_err());
        assert!(Rename::parse("re:(=x").is_err());
    }

    #[test]
    fn index_prefers_exact_then_prefix_then_rename() {
        let names = [
            "model.fc.weight",
            "fc.bias",
            "backbone.conv.weight",
            "extra.num_batches",
        ];
        let rules = [
            Rename::parse("backbone.=").unwrap(),
            Rename::parse(r"re:.*num_batches$=").unwrap(),
        ];
        let ix = Index::new(names.iter().copied(), &rules);
        assert_eq!(ix.find("fc.bias"), Ok(Some(("fc.bias", Match::Exact))));
        assert_eq!(
            ix.find("fc.weight"),
            Ok(Some(("model.fc.weight", Match::Prefix)))
        );
        assert_eq!(
            ix.find("conv.weight"),
            Ok(Some(("backbone.conv.weight", Match::Rename)))
        );
        assert_eq!(ix.find("extra.num_batches"), Ok(None));
        assert_eq!(ix.dropped, vec!["extra.num_batches"]);
        let twins = Index::new(["model.a", "module.a"].into_iter(), &[]);
        assert!(twins.find("a").unwrap_err().contains("several"));
    }

    #[test]
    fn closest_names_come_first() {
        let pool = [
            "conv1.weight",
            "conv2.weight",
            "fc1.bias",
            "totally.different.name",
        ];
        assert_eq!(
            closest("conv1.weights", &pool),
            vec!["conv1.weight", "conv2.weight"]
        );
        let prefixed = ["backbone.fc1.bias", "backbone.conv1.weight", "conv2.weight"];
        assert_eq!(
            closest("conv1.weight", &prefixed)[0],
            "backbone.conv1.weight"
        );
        assert_eq!(distance("kitten", "sitting", 10), 3);
    }
}
