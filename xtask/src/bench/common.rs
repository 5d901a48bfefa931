//! What the bench's steps share: its options, the kinds of model and engine, a result row, and how
//! a peer or `ember` is run for its JSON figures.

use std::collections::HashMap;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::peers::Peer;

/// What to measure and how long.
pub struct Options {
    /// CI's smoke run: `digits` and the one-op model, one short round, no fetched models, and a failure
    /// when any engine could not run.
    pub smoke: bool,
    /// Rounds per model.
    pub rounds: usize,
    /// Seconds of timed calls per engine per round (at least 3 calls, at most `max_runs`).
    pub budget_s: f64,
    /// Most timed calls per engine per round.
    pub max_runs: usize,
    /// Only these models (by report name; the one-op model always runs).
    pub only: Option<Vec<String>>,
}

impl Options {
    /// CI's smoke run (see [`Options::smoke`]).
    pub fn smoke() -> Options {
        Options {
            smoke: true,
            rounds: 1,
            budget_s: 0.05,
            max_runs: 20,
            only: Some(vec!["digits".into()]),
        }
    }

    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options {
            smoke: false,
            rounds: 5,
            budget_s: 0.2,
            max_runs: 200,
            only: None,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |what: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("{a} needs {what}"))
            };
            match a.as_str() {
                "--smoke" => o = Options::smoke(),
                "--rounds" => o.rounds = value("a count")?.parse().context("--rounds")?,
                "--budget-ms" => {
                    o.budget_s = value("milliseconds")?
                        .parse::<f64>()
                        .context("--budget-ms")?
                        / 1e3
                }
                "--max-runs" => o.max_runs = value("a count")?.parse().context("--max-runs")?,
                "--only" => {
                    o.only = Some(value("model names")?.split(',').map(String::from).collect())
                }
                other => bail!(
                    "cargo xtask bench: unknown argument {other:?} (expected --smoke, --rounds N, \
                     --budget-ms MS, --max-runs N, --only NAME[,NAME])"
                ),
            }
        }
        o.rounds = o.rounds.max(1);
        Ok(o)
    }
}

/// Which table a model belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The one-op model: what a call costs besides compute.
    Overhead,
    /// A bundled or fetched network (both thread settings).
    Network,
    /// A converter single-op model (one thread).
    SingleOp,
}

/// An engine of the tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// `ember bench --threads 1`.
    EmberSingle,
    /// `ember bench --threads 0` (one worker per core).
    EmberAll,
    Peer(Peer),
}

impl Engine {
    /// The order of a round: each thread setting's engines back to back.
    pub(crate) const ROUND: [Engine; 5] = [
        Engine::EmberSingle,
        Engine::Peer(Peer::OrtSingle),
        Engine::Peer(Peer::Tract),
        Engine::EmberAll,
        Engine::Peer(Peer::OrtDefault),
    ];

    pub(crate) fn runs_for(self, kind: Kind) -> bool {
        match kind {
            // The peers time the one-op model after every model (their per-call cost); Ember's is here.
            Kind::Overhead => matches!(self, Engine::EmberSingle | Engine::EmberAll),
            Kind::Network => true,
            Kind::SingleOp => !matches!(self, Engine::EmberAll | Engine::Peer(Peer::OrtDefault)),
        }
    }
}

/// What the bench learned about one model.
pub struct Row {
    pub name: String,
    pub kind: Kind,
    /// `ember bench --json` of the ONNX model (ops, memory), or why Ember could not convert it.
    pub ember: Result<Value, String>,
    /// Each engine's median of round medians in µs, or why it has none.
    pub times: HashMap<Engine, Result<f64, String>>,
    /// Each peer's compute-only figure: the median over rounds of its time minus its per-call cost
    /// measured right after (see [`Peers::time`]).
    pub compute: HashMap<Peer, f64>,
    /// Each engine's first output against onnxruntime's (see [`Peers::compare`]).
    pub agreement: Option<Value>,
    /// Workers of `ember bench --threads 0`.
    pub ember_workers: Option<u64>,
}

impl Row {
    pub fn time(&self, e: Engine) -> Option<f64> {
        self.times.get(&e).and_then(|t| t.as_ref().ok().copied())
    }
}

/// A file name for a report name (`ops/conv1d` -> `ops_conv1d`).
pub(crate) fn slug(name: &str) -> String {
    name.replace('/', "_")
}

pub(crate) fn json_of(cmd: &mut Command, what: &str) -> Result<Value> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {what}"))?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).with_context(|| format!("{what} printed no JSON: {text}"))
}

pub(crate) fn run_quiet(cmd: &mut Command, what: &str) -> Result<()> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {what}"))?;
    if !out.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}
