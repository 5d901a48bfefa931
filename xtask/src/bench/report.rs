//! The Markdown report of `cargo xtask bench`: the machine, the method, one table per thread setting
//! (raw and compute-only figures, ratios), the per-call costs, and a memory table.

use std::collections::HashMap;

use serde_json::Value;

use super::peers::Peer;
use super::{Engine, Kind, Row};

/// What the report says about the run itself.
pub struct Meta {
    pub cpu: String,
    pub cores: usize,
    pub date: String,
    pub load: String,
    /// peers.py's versions (onnxruntime, tract, python).
    pub versions: Value,
    /// The kernel table Ember ran (`cpu-avx2`, ...).
    pub kernels: String,
    pub rounds: usize,
    pub budget_s: f64,
    pub max_runs: usize,
    /// Models that could not be had, and why.
    pub skipped: Vec<String>,
    /// Each peer's per-call cost: the median of its one-op times over the run.
    pub per_call: HashMap<Peer, f64>,
}

/// Footnotes for cells without a figure: each distinct reason once, numbered.
struct Notes(Vec<String>);

impl Notes {
    fn cite(&mut self, text: String) -> String {
        let n = match self.0.iter().position(|t| *t == text) {
            Some(i) => i + 1,
            None => {
                self.0.push(text);
                self.0.len()
            }
        };
        format!("n/a [{n}]")
    }
}

pub fn render(meta: &Meta, rows: &[Row]) -> String {
    let version = |k: &str| {
        meta.versions
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("not available")
            .to_string()
    };
    let overhead = rows.iter().find(|r| r.kind == Kind::Overhead);
    let workers = rows
        .iter()
        .find_map(|r| r.ember_workers)
        .map_or("one per core".to_string(), |w| format!("{w}"));
    let mut notes = Notes(
        meta.skipped
            .iter()
            .map(|m| format!("Not measured: {m}"))
            .collect(),
    );
    let mut s = String::from("# Ember benchmark\n\n");
    s.push_str(&format!(
        "Machine: {}, {} cores; {}; load average {}.\n\n",
        meta.cpu, meta.cores, meta.date, meta.load
    ));
    s.push_str(&format!(
        "Engines: Ember (`ember bench`, release build, kernel table `{}`), onnxruntime {} and tract {} \
         (Python {}, `xtask/bench/peers.py`). Each model runs {} round(s); a round times every engine in \
         turn, each for about {:.0} ms (at least 3 calls, at most {}) after warm-up calls, and a figure is \
         the median of an engine's round medians. Latency in µs for one inference, batch 1, the same input \
         file for every engine.\n\n",
        meta.kernels,
        version("onnxruntime"),
        version("tract"),
        version("python"),
        meta.rounds,
        meta.budget_s * 1e3,
        meta.max_runs,
    ));
    s.push_str(
        "Ember is timed in-process. onnxruntime and tract are timed from Python, which adds a fixed cost \
         to every call: \"compute\" is the median over rounds of the peer's time minus what the same \
         engine takes for a one-op model (an Add on one element) timed right after it, under the same \
         load (see \"Per-call cost\"). That cost includes the engine's own fixed work \
         per run, not only Python's, so the compute figures slightly favour the peers. The ratios divide \
         Ember's figure by the peer's compute figure: below 1, Ember is faster; where that figure is under \
         10% of the peer's raw time it is within the per-call cost's spread, and a note replaces the \
         ratio. tract's Python API has \
         no thread setting: it runs on one thread in both tables.\n\n",
    );

    let networks: Vec<&Row> = rows.iter().filter(|r| r.kind == Kind::Network).collect();
    let single_ops: Vec<&Row> = rows.iter().filter(|r| r.kind == Kind::SingleOp).collect();
    s.push_str("## 1 thread\n\n");
    s.push_str(&speed_table(
        &networks,
        Engine::EmberSingle,
        Peer::OrtSingle,
        &mut notes,
    ));
    s.push_str(&format!(
        "\n## All threads (Ember: {workers} workers; onnxruntime: its default)\n\n"
    ));
    s.push_str(&speed_table(
        &networks,
        Engine::EmberAll,
        Peer::OrtDefault,
        &mut notes,
    ));
    if !single_ops.is_empty() {
        s.push_str("\n## Single-op models (converter/tests/models/ops), 1 thread\n\n");
        s.push_str(&speed_table(
            &single_ops,
            Engine::EmberSingle,
            Peer::OrtSingle,
            &mut notes,
        ));
    }

    s.push_str(
        "\n## Per-call cost (one-op model: Add on one float)\n\n\
         What a call costs besides compute. The peers' figure is the median of the one-op times taken \
         right after each of their measurements (each measurement subtracts its own); Ember's is \
         in-process, for comparison.\n\n| engine | µs per call |\n| --- | --- |\n",
    );
    for (label, e) in [
        ("Ember, 1 thread (in-process)", Engine::EmberSingle),
        ("Ember, all threads (in-process)", Engine::EmberAll),
    ] {
        let cell = match overhead.map(|r| r.times.get(&e)) {
            Some(Some(Ok(t))) => us(*t),
            Some(Some(Err(why))) => notes.cite(format!("one-op, {label}: {why}")),
            _ => "-".to_string(),
        };
        s.push_str(&format!("| {label} | {cell} |\n"));
    }
    for (label, p) in [
        ("onnxruntime, 1 thread (Python)", Peer::OrtSingle),
        ("onnxruntime, default threads (Python)", Peer::OrtDefault),
        ("tract (Python)", Peer::Tract),
    ] {
        let cell = meta.per_call.get(&p).map_or("-".to_string(), |t| us(*t));
        s.push_str(&format!("| {label} | {cell} |\n"));
    }

    s.push_str(
        "\n## Memory and outputs\n\n\
         `plan / lower bound`: Ember's planned activation bytes over the largest sum of tensors live at \
         one step; `plan / greedy`: over those of TFLM's greedy-by-size planner (Ember keeps the better \
         plan, so at most 1.00). Outputs: the first output's max |difference| from onnxruntime's \
         (1 thread), over max(1, max |onnxruntime|).\n\n\
         | model | ops | arena bytes | lower bound | blob bytes | plan / lower bound | plan / greedy | \
         Ember vs onnxruntime | tract vs onnxruntime |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in networks.iter().chain(&single_ops) {
        s.push_str(&memory_row(r, &mut notes));
    }

    if !notes.0.is_empty() {
        s.push_str("\n## Notes\n\n");
        for (i, n) in notes.0.iter().enumerate() {
            s.push_str(&format!("{}. {}\n", i + 1, super::tflm::one_line(n)));
        }
    }
    s
}

/// A peer's compute figure below this share of its raw time is not measured: it is the small
/// difference of two figures whose spread is larger than itself (onnxruntime's per-call time on the
/// one-op model ranged from 3.7 to 6.3 µs over four runs on one machine), so its ratio would be noise.
const MEASURABLE: f64 = 0.1;

fn speed_table(rows: &[&Row], ember: Engine, ort: Peer, notes: &mut Notes) -> String {
    let mut s = String::from(
        "| model | ops | Ember | onnxruntime | onnxruntime compute | tract | tract compute | \
         Ember / onnxruntime | Ember / tract |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        let mut cell = |e: Engine, what: &str| match r.times.get(&e) {
            Some(Ok(t)) => (us(*t), Some(*t)),
            Some(Err(why)) => (notes.cite(format!("{}, {what}: {why}", r.name)), None),
            None => ("-".to_string(), None),
        };
        let (e_cell, e) = cell(ember, "Ember");
        let (o_cell, o) = cell(Engine::Peer(ort), "onnxruntime");
        let (t_cell, t) = cell(Engine::Peer(Peer::Tract), "tract");
        let compute = |raw: Option<f64>, peer: Peer| raw.and(r.compute.get(&peer).copied());
        let (oc, tc) = (compute(o, ort), compute(t, Peer::Tract));
        let shown = |c: Option<f64>| match c {
            Some(c) if c > 0.0 => us(c),
            Some(_) => "≤ 0".to_string(),
            None => "-".to_string(),
        };
        let mut ratio = |c: Option<f64>, raw: Option<f64>, what: &str| {
            match (e, c, raw) {
            (Some(e), Some(c), Some(raw)) if c > 0.0 && c < MEASURABLE * raw => notes.cite(format!(
                "{}, {what}: its compute figure ({} µs) is under {:.0}% of its time per call ({} µs), \
                 within the spread of the per-call cost it is the difference from, so no ratio is \
                 given; Ember's whole in-process call takes {} µs.",
                r.name,
                us(c),
                MEASURABLE * 100.0,
                us(raw),
                us(e)
            )),
            (Some(e), Some(c), _) if c > 0.0 => format!("{:.2}", e / c),
            _ => "-".to_string(),
        }
        };
        let (o_ratio, t_ratio) = (ratio(oc, o, "onnxruntime"), ratio(tc, t, "tract"));
        s.push_str(&format!(
            "| {} | {} | {e_cell} | {o_cell} | {} | {t_cell} | {} | {o_ratio} | {t_ratio} |\n",
            r.name,
            ops(r),
            shown(oc),
            shown(tc),
        ));
    }
    s
}

fn memory_row(r: &Row, notes: &mut Notes) -> String {
    let f = match &r.ember {
        Ok(f) => f,
        Err(why) => {
            let n = notes.cite(format!("{}, Ember: {why}", r.name));
            return format!(
                "| {} | - | {n} | - | - | - | - | - | {} |\n",
                r.name,
                diff(r, "tract", notes)
            );
        }
    };
    let int = |k: &str| {
        f.get(k)
            .and_then(Value::as_u64)
            .map_or("-".to_string(), |v| v.to_string())
    };
    let num = |k: &str| f.get(k).and_then(Value::as_f64);
    let act = num("activation_bytes");
    let per = |d: Option<f64>| match (act, d) {
        (Some(a), Some(d)) if d > 0.0 => format!("{:.2}", a / d),
        _ => "-".to_string(),
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        r.name,
        ops(r),
        int("arena_bytes"),
        int("lower_bound_bytes"),
        int("blob_bytes"),
        per(num("lower_bound_bytes")),
        per(num("greedy_activation_bytes")),
        diff(r, "ember", notes),
        diff(r, "tract", notes),
    )
}

/// Scaled output differences above this get a note: more than rounding.
const DIFF_NOTE: f64 = 1e-2;

fn diff(r: &Row, engine: &str, notes: &mut Notes) -> String {
    let Some(d) = r
        .agreement
        .as_ref()
        .and_then(|a| a.get(engine))
        .and_then(Value::as_f64)
    else {
        return "-".to_string();
    };
    if d <= DIFF_NOTE {
        return format!("{d:.1e}");
    }
    let who = if engine == "ember" { "Ember" } else { engine };
    let note = notes.cite(format!(
        "{}: {who}'s output differs from onnxruntime's by {d:.1e} of its scale. A few quantization steps \
         are expected between int8 implementations; a difference near 1 means the engine computes \
         something else, and its time is not comparable.",
        r.name
    ));
    format!("{d:.1e} ({})", note.trim_start_matches("n/a "))
}

fn ops(r: &Row) -> String {
    r.ember
        .as_ref()
        .ok()
        .and_then(|f| f.get("ops"))
        .and_then(Value::as_u64)
        .map_or("-".to_string(), |n| n.to_string())
}

/// A latency in µs: two decimals under 10, one under 100, then whole µs with thousands separated.
fn us(t: f64) -> String {
    if t < 10.0 {
        format!("{t:.2}")
    } else if t < 100.0 {
        format!("{t:.1}")
    } else {
        let digits = format!("{t:.0}");
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    }
}

/// Every engine that has no figure for the one-op model or a network, as "model, engine: why".
pub fn missing(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.kind != Kind::SingleOp) {
        let mut times: Vec<_> = r.times.iter().collect();
        times.sort_by_key(|(e, _)| format!("{e:?}"));
        for (e, t) in times {
            if let Err(why) = t {
                out.push(format!("{}, {e:?}: {why}", r.name));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    /// A row with these raw times; each peer's compute figure is its raw time minus `per_call`'s.
    fn row(name: &str, kind: Kind, times: &[(Engine, Result<f64, &str>)]) -> Row {
        let per_call = per_call();
        Row {
            name: name.into(),
            kind,
            ember: Ok(
                json!({"ops": 9, "arena_bytes": 2560, "activation_bytes": 2560,
                "lower_bound_bytes": 2560, "greedy_activation_bytes": 2560, "blob_bytes": 15552}),
            ),
            times: times
                .iter()
                .map(|(e, t)| (*e, t.map_err(String::from)))
                .collect::<HashMap<_, _>>(),
            compute: times
                .iter()
                .filter_map(|(e, t)| match (e, t) {
                    (Engine::Peer(p), Ok(t)) => Some((*p, t - per_call[p])),
                    _ => None,
                })
                .collect(),
            agreement: Some(json!({"ember": 1.5e-7, "tract": 2e-7})),
            ember_workers: Some(2),
        }
    }

    fn per_call() -> HashMap<Peer, f64> {
        HashMap::from([
            (Peer::OrtSingle, 16.0),
            (Peer::OrtDefault, 17.0),
            (Peer::Tract, 10.0),
        ])
    }

    fn meta() -> Meta {
        Meta {
            cpu: "Test CPU".into(),
            cores: 2,
            date: "2026-01-01 00:00 UTC".into(),
            load: "0.1 0.1 0.1 at the start, 0.2 0.2 0.2 at the end".into(),
            versions: json!({"onnxruntime": "1.32.0", "tract": "0.23.9", "python": "3.11.2"}),
            kernels: "cpu-avx2".into(),
            rounds: 3,
            budget_s: 0.4,
            max_runs: 200,
            skipped: Vec::new(),
            per_call: per_call(),
        }
    }

    const ORT1: Engine = Engine::Peer(Peer::OrtSingle);
    const TRACT: Engine = Engine::Peer(Peer::Tract);

    fn one_op() -> Row {
        row("one-op", Kind::Overhead, &[(Engine::EmberSingle, Ok(0.7))])
    }

    #[test]
    fn peers_lose_their_per_call_cost_and_ratios_use_compute() {
        let rows = [
            one_op(),
            row(
                "digits",
                Kind::Network,
                &[
                    (Engine::EmberSingle, Ok(40.0)),
                    (ORT1, Ok(36.0)),
                    (TRACT, Ok(90.0)),
                ],
            ),
        ];
        let r = render(&meta(), &rows);
        assert!(
            r.contains("Machine: Test CPU, 2 cores; 2026-01-01 00:00 UTC"),
            "{r}"
        );
        // onnxruntime 36 - 16 = 20 (ratio 2.00), tract 90 - 10 = 80 (ratio 0.50).
        assert!(
            r.contains("| digits | 9 | 40.0 | 36.0 | 20.0 | 90.0 | 80.0 | 2.00 | 0.50 |"),
            "{r}"
        );
        assert!(r.contains("| Ember, 1 thread (in-process) | 0.70 |"), "{r}");
        assert!(
            r.contains("| onnxruntime, 1 thread (Python) | 16.0 |"),
            "{r}"
        );
        assert!(missing(&rows).is_empty());
    }

    #[test]
    fn a_missing_figure_is_a_numbered_note_and_a_smoke_failure() {
        let rows = [
            one_op(),
            row(
                "big",
                Kind::Network,
                &[
                    (
                        Engine::EmberSingle,
                        Err("cannot convert: dimension 0 is -1"),
                    ),
                    (ORT1, Ok(1000.0)),
                    (TRACT, Err("tract is not installed")),
                ],
            ),
        ];
        let r = render(&meta(), &rows);
        assert!(
            r.contains("| big | 9 | n/a [1] | 1,000 | 984 | n/a [2] | - | - | - |"),
            "{r}"
        );
        assert!(
            r.contains("1. big, Ember: cannot convert: dimension 0 is -1"),
            "{r}"
        );
        assert_eq!(missing(&rows).len(), 2);
    }

    #[test]
    fn compute_at_or_below_zero_has_no_ratio() {
        let rows = [
            one_op(),
            row(
                "tiny",
                Kind::Network,
                &[(Engine::EmberSingle, Ok(1.0)), (ORT1, Ok(15.5))],
            ),
        ];
        let r = render(&meta(), &rows);
        assert!(
            r.contains("| tiny | 9 | 1.00 | 15.5 | ≤ 0 | - | - | - | - |"),
            "{r}"
        );
    }

    #[test]
    fn a_compute_figure_within_the_per_call_noise_has_no_ratio() {
        // 16.3 µs raw minus the one-op model's 16 µs: 0.3 µs, 2% of the call.
        let rows = [
            one_op(),
            row(
                "tiny",
                Kind::Network,
                &[(Engine::EmberSingle, Ok(1.0)), (ORT1, Ok(16.3))],
            ),
        ];
        let r = render(&meta(), &rows);
        assert!(
            r.contains("| tiny | 9 | 1.00 | 16.3 | 0.30 | - | - | n/a [1] | - |"),
            "{r}"
        );
        assert!(
            r.contains("1. tiny, onnxruntime: its compute figure (0.30 µs) is under 10%"),
            "{r}"
        );
    }

    #[test]
    fn an_output_that_differs_beyond_rounding_is_noted() {
        let mut r = row("qdq", Kind::Network, &[(ORT1, Ok(30.0))]);
        r.agreement = Some(json!({"ember": 3e-3, "tract": 1.0}));
        let text = render(&meta(), &[one_op(), r]);
        assert!(text.contains("| 3.0e-3 | 1.0e0 ([1]) |"), "{text}");
        assert!(text.contains("1. qdq: tract's output differs"), "{text}");
    }

    #[test]
    fn latencies_read_well() {
        assert_eq!(us(0.712), "0.71");
        assert_eq!(us(40.96), "41.0");
        assert_eq!(us(154_509.4), "154,509");
        assert_eq!(us(975.0), "975");
    }
}
