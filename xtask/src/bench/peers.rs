//! The peer engines' process (`xtask/bench/peers.py`: onnxruntime and tract in the venv's Python), driven
//! one JSON request per line, so that it loads each model once and the bench can alternate between it and
//! Ember round by round.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

/// An engine the peer process times, by the name its protocol uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    /// onnxruntime with one intra-op thread.
    OrtSingle,
    /// onnxruntime with its default thread count.
    OrtDefault,
    /// tract (its Python API runs on the calling thread).
    Tract,
}

impl Peer {
    pub fn name(self) -> &'static str {
        match self {
            Peer::OrtSingle => "ort-1",
            Peer::OrtDefault => "ort-default",
            Peer::Tract => "tract",
        }
    }
}

/// What loading a model told: its input's name, and why an engine could not load it.
pub struct Loaded {
    pub input: String,
    pub errors: Vec<(String, String)>,
    pub versions: Value,
}

/// A peer's time on a model, and on the one-op model right after.
pub struct Timed {
    pub median_us: f64,
    pub baseline_us: f64,
}

/// A running `peers.py`; dropping it closes its stdin, which ends it.
pub struct Peers {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Peers {
    pub fn start(python: &Path, script: &Path) -> Result<Peers> {
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {}", script.display()))?;
        let stdin = child.stdin.take().context("peers.py has no stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("peers.py has no stdout")?);
        Ok(Peers {
            child,
            stdin: Some(stdin),
            stdout,
        })
    }

    /// Sends one request and returns its answer; an `{"error": ...}` answer is an error.
    fn request(&mut self, req: &Value) -> Result<Value> {
        let stdin = self.stdin.as_mut().context("peers.py's stdin is closed")?;
        writeln!(stdin, "{req}").context("peers.py stopped (cannot write to it)")?;
        stdin.flush()?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            bail!("peers.py stopped (see its error above)");
        }
        let reply: Value = serde_json::from_str(&line)
            .with_context(|| format!("peers.py answered something else than JSON: {line}"))?;
        match reply.get("error").and_then(Value::as_str) {
            Some(e) => Err(anyhow!("{e}")),
            None => Ok(reply),
        }
    }

    /// Loads the model the next [`Peers::time`] calls run.
    pub fn load(&mut self, onnx: &Path, input: &Path) -> Result<Loaded> {
        self.load_as("load", onnx, input)
    }

    /// Loads the one-op model whose time, measured right after each [`Peers::time`] of a model, is the
    /// per-call cost subtracted from it.
    pub fn baseline(&mut self, onnx: &Path, input: &Path) -> Result<Loaded> {
        self.load_as("baseline", onnx, input)
    }

    fn load_as(&mut self, cmd: &str, onnx: &Path, input: &Path) -> Result<Loaded> {
        let r = self.request(&json!({"cmd": cmd, "onnx": onnx, "input": input}))?;
        let errors = r
            .get("errors")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("?").to_string()))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Loaded {
            input: r
                .get("input")
                .and_then(Value::as_str)
                .context("peers.py's load answer has no input name")?
                .to_string(),
            errors,
            versions: r.get("versions").cloned().unwrap_or(Value::Null),
        })
    }

    /// The median time of `peer` on the loaded model, and right after on the baseline model, in µs.
    pub fn time(
        &mut self,
        peer: Peer,
        budget_s: f64,
        max_runs: usize,
        warmup: usize,
    ) -> Result<Timed> {
        let r = self.request(&json!({
            "cmd": "time", "engine": peer.name(), "budget_s": budget_s, "max_runs": max_runs,
            "warmup": warmup,
        }))?;
        let us = |k: &str| {
            r.get(k)
                .and_then(Value::as_f64)
                .with_context(|| format!("peers.py's time answer has no {k}"))
        };
        Ok(Timed {
            median_us: us("median_us")?,
            baseline_us: us("baseline_us")?,
        })
    }

    /// Each engine's first output against onnxruntime's (one thread), as
    /// `max |diff| / max(1, max |onnxruntime|)`; Ember's from `ember_output` (a `.npy` file).
    pub fn compare(&mut self, ember_output: Option<&Path>) -> Result<Value> {
        self.request(&json!({"cmd": "compare", "ember_output": ember_output}))
    }
}

impl Drop for Peers {
    fn drop(&mut self) {
        drop(self.stdin.take());
        // It ends when its stdin closes; nothing to report if it had already stopped.
        let _ = self.child.wait();
    }
}
