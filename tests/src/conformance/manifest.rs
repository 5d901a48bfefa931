//! The allow-list manifest (`tests/conformance/node.txt`): one case a line that must pass, optional
//! flags after the name, `#` comments.
//!
//! ```text
//! # header comment, kept by --regen
//! test_abs
//! test_gelu_tanh_1 rtol=1e-2 atol=1e-5   # loosened: tanh approximation
//! test_conv_with_strides_padding input=x  # W is folded into the model as a constant
//! ```

use std::collections::BTreeMap;

use super::CaseConfig;

/// One manifest line.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Case folder name, e.g. `test_abs`.
    pub case: String,
    /// The flags, parsed.
    pub config: CaseConfig,
    /// The flags as written (kept verbatim by `--regen`), without the trailing comment.
    pub flags: String,
    /// A trailing `# comment`, kept by `--regen`.
    pub comment: String,
}

/// A parsed manifest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifest {
    /// The comment lines before the first entry.
    pub header: Vec<String>,
    /// Entries by case name.
    pub entries: BTreeMap<String, Entry>,
}

impl Manifest {
    /// Parses a manifest; errors name the line.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut m = Manifest::default();
        for (i, line) in text.lines().enumerate() {
            let (body, comment) = match line.find('#') {
                Some(p) => (&line[..p], line[p..].trim()),
                None => (line, ""),
            };
            let mut words = body.split_whitespace();
            let Some(case) = words.next() else {
                if m.entries.is_empty() && !comment.is_empty() {
                    m.header.push(line.to_string());
                }
                continue;
            };
            let flags: Vec<&str> = words.collect();
            let config = parse_flags(&flags).map_err(|e| format!("line {}: {case}: {e}", i + 1))?;
            let entry = Entry {
                case: case.to_string(),
                config,
                flags: flags.join(" "),
                comment: comment.to_string(),
            };
            if m.entries.insert(case.to_string(), entry).is_some() {
                return Err(format!("line {}: {case} is listed twice", i + 1));
            }
        }
        Ok(m)
    }

    /// The config of `case`: its flags if listed, the defaults otherwise.
    pub fn config(&self, case: &str) -> CaseConfig {
        self.entries
            .get(case)
            .map(|e| e.config.clone())
            .unwrap_or_default()
    }

    /// A manifest listing exactly `passing` (case, flag it needed to pass), keeping the header and
    /// the flags and comments of the cases that were already listed, and adding needed flags.
    pub fn regenerate<'a>(
        &self,
        passing: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Manifest {
        let entries = passing
            .into_iter()
            .map(|(c, needed)| {
                let mut e = self.entries.get(c).cloned().unwrap_or_else(|| Entry {
                    case: c.to_string(),
                    config: CaseConfig::default(),
                    flags: String::new(),
                    comment: String::new(),
                });
                if let Some(flag) = needed {
                    if !e.flags.split_whitespace().any(|f| f == flag) {
                        e.flags = [e.flags.as_str(), flag].join(" ").trim().to_string();
                    }
                }
                (c.to_string(), e)
            })
            .collect();
        Manifest {
            header: self.header.clone(),
            entries,
        }
    }

    /// The manifest as text, entries sorted by name.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for h in &self.header {
            s.push_str(h);
            s.push('\n');
        }
        for e in self.entries.values() {
            let mut line = e.case.clone();
            for part in [&e.flags, &e.comment] {
                if !part.is_empty() {
                    line.push(' ');
                    line.push_str(part);
                }
            }
            s.push_str(&line);
            s.push('\n');
        }
        s
    }
}

fn parse_flags(flags: &[&str]) -> Result<CaseConfig, String> {
    let mut cfg = CaseConfig::default();
    for f in flags {
        let (key, value) = f
            .split_once('=')
            .ok_or_else(|| format!("flag `{f}`: expected rtol=X, atol=X or input=[NAME[,NAME]]"))?;
        if key == "input" {
            let names: Vec<String> = value
                .split(',')
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect();
            // `input=` alone: no input at run time, every one folded (MelWeightMatrix's sizes).
            cfg.inputs = Some(names);
            continue;
        }
        let v: f32 = value
            .parse()
            .ok()
            .filter(|v: &f32| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("flag `{f}`: `{value}` is not a non-negative number"))?;
        match key {
            "rtol" => cfg.tol.rtol = v,
            "atol" => cfg.tol.atol = v,
            _ => return Err(format!("unknown flag `{key}` (known: rtol, atol, input)")),
        }
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flags_comments_and_regenerates() {
        let text = "# header\n\ntest_b rtol=1e-2 # why\ntest_a\ntest_d input=x,y\n# dropped\n";
        let m = Manifest::parse(text).unwrap();
        assert_eq!(m.header, vec!["# header"]);
        assert_eq!(m.config("test_b").tol.rtol, 1e-2);
        assert_eq!(m.config("test_a"), CaseConfig::default());
        assert_eq!(
            m.config("test_d").inputs,
            Some(vec!["x".into(), "y".into()])
        );
        let r = m
            .regenerate([
                ("test_c", Some("input=x")),
                ("test_b", Some("input=a")),
                ("test_d", None),
            ])
            .render();
        assert_eq!(
            r,
            "# header\ntest_b rtol=1e-2 input=a # why\ntest_c input=x\ntest_d input=x,y\n"
        );
        // `input=` alone folds every input: no runtime input.
        let none = Manifest::parse("test_a input=\n").unwrap();
        assert_eq!(none.config("test_a").inputs, Some(vec![]));
        assert_eq!(none.render(), "test_a input=\n");
        assert!(Manifest::parse("test_a foo=1").is_err());
        assert!(Manifest::parse("test_a rtol=x").is_err());
        assert!(Manifest::parse("test_a\ntest_a").is_err());
    }
}
