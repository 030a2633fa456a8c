//! One row per figure: the figure, the baseline measured in the same run, their
//! ratio, and the target the ratio (or, for memory, the value) is held to.

use serde_json::{json, Value};

/// What a row must satisfy to pass.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// `ratio >= x`.
    RatioAtLeast(f64),
    /// `ratio <= x`.
    RatioAtMost(f64),
    /// `value <= x` (a figure without a baseline).
    ValueAtMost(f64),
    /// `value - baseline <= x`, in the row's unit: a latency held to a margin over
    /// a latency measured alongside it.
    AboveAtMost(f64),
    /// Informational: no target.
    None,
}

impl Target {
    /// The target back from its [`Target::text`].
    fn parse(text: &str) -> Target {
        let number = |t: &str| t.trim().parse::<f64>().ok();
        if let Some(x) = text.strip_prefix(">= ").and_then(|t| t.strip_suffix('x')) {
            return number(x).map_or(Target::None, Target::RatioAtLeast);
        }
        if let Some(rest) = text.strip_prefix("<= +") {
            let value = rest.split_whitespace().next().and_then(number);
            return value.map_or(Target::None, Target::AboveAtMost);
        }
        if let Some(rest) = text.strip_prefix("<= ") {
            if let Some(x) = rest.strip_suffix('x').and_then(number) {
                return Target::RatioAtMost(x);
            }
            let value = rest.split_whitespace().next().and_then(number);
            return value.map_or(Target::None, Target::ValueAtMost);
        }
        Target::None
    }

    fn text(self, unit: &str) -> String {
        match self {
            Target::RatioAtLeast(x) => format!(">= {x}x"),
            Target::RatioAtMost(x) => format!("<= {x}x"),
            Target::ValueAtMost(x) => format!("<= {x} {unit}"),
            Target::AboveAtMost(x) => format!("<= +{x} {unit}"),
            Target::None => "-".into(),
        }
    }
}

/// The outcome of one figure.
#[derive(Debug, Clone)]
pub struct Row {
    /// `"1"` … `"11"`, or `"10-rust"` for the Rust half of figure 10.
    pub id: String,
    pub figure: String,
    /// What the baseline is (shown in the table).
    pub baseline_name: String,
    pub value: Option<f64>,
    pub baseline: Option<f64>,
    pub unit: String,
    pub target: Target,
    /// Why the figure was not measured.
    pub skipped: Option<String>,
    /// Why the figure could not be measured (the run goes on; the exit code says so).
    pub error: Option<String>,
    /// Extra facts for the record (sizes, counts), shown in the JSON only.
    pub detail: Value,
}

impl Row {
    pub fn new(id: &str, figure: &str, baseline_name: &str, unit: &str, target: Target) -> Row {
        Row {
            id: id.into(),
            figure: figure.into(),
            baseline_name: baseline_name.into(),
            value: None,
            baseline: None,
            unit: unit.into(),
            target,
            skipped: None,
            error: None,
            detail: Value::Null,
        }
    }

    pub fn measured(mut self, value: f64, baseline: Option<f64>) -> Row {
        self.value = Some(value);
        self.baseline = baseline;
        self
    }

    pub fn skip(mut self, reason: impl Into<String>) -> Row {
        self.skipped = Some(reason.into());
        self
    }

    pub fn failed(id: &str, error: String) -> Row {
        let mut row = Row::new(id, "(not measured)", "-", "-", Target::None);
        row.error = Some(error);
        row
    }

    pub fn with_detail(mut self, detail: Value) -> Row {
        self.detail = detail;
        self
    }

    pub fn ratio(&self) -> Option<f64> {
        match (self.value, self.baseline) {
            (Some(v), Some(b)) if b > 0.0 => Some(v / b),
            _ => None,
        }
    }

    /// `None` when there is nothing to judge (skipped, or no target).
    pub fn pass(&self) -> Option<bool> {
        let ratio = self.ratio();
        match self.target {
            Target::RatioAtLeast(x) => ratio.map(|r| r >= x),
            Target::RatioAtMost(x) => ratio.map(|r| r <= x),
            Target::ValueAtMost(x) => self.value.map(|v| v <= x),
            Target::AboveAtMost(x) => match (self.value, self.baseline) {
                (Some(v), Some(b)) => Some(v - b <= x),
                _ => None,
            },
            Target::None => None,
        }
    }

    /// A row from its [`Row::to_json`] (a figure measured by a child process).
    pub fn from_json(v: &Value) -> Option<Row> {
        let text = |k: &str| v[k].as_str().map(str::to_string);
        let id = match &v["id"] {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            _ => return None,
        };
        let unit = text("unit")?;
        Some(Row {
            id,
            figure: text("figure")?,
            baseline_name: text("baseline_of")?,
            value: v["value"].as_f64(),
            baseline: v["baseline"].as_f64(),
            target: Target::parse(&text("target")?),
            unit,
            skipped: text("skipped"),
            error: text("error"),
            detail: v.get("detail").cloned().unwrap_or(Value::Null),
        })
    }

    pub fn to_json(&self) -> Value {
        let id = self
            .id
            .parse::<u64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(self.id.clone()));
        let mut obj = json!({
            "id": id,
            "figure": self.figure,
            "value": self.value,
            "baseline": self.baseline,
            "baseline_of": self.baseline_name,
            "unit": self.unit,
            "ratio": self.ratio(),
            "target": self.target.text(&self.unit),
            "pass": self.pass(),
        });
        if let Some(reason) = &self.skipped {
            obj["skipped"] = json!(reason);
        }
        if let Some(error) = &self.error {
            obj["error"] = json!(error);
        }
        if !self.detail.is_null() {
            obj["detail"] = self.detail.clone();
        }
        obj
    }
}

fn number(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(x) if x >= 1000.0 => format!("{x:.0}"),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// The human table: one line per figure, then one line per baseline description.
pub fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<7} {:<46} {:>11} {:>11} {:<8} {:>8} {:>10} {:<6}\n",
        "#", "figure", "value", "baseline", "unit", "ratio", "target", "result"
    );
    for row in rows {
        let result = match (&row.skipped, row.pass()) {
            _ if row.error.is_some() => "ERROR",
            (Some(_), _) => "SKIP",
            (None, Some(true)) => "PASS",
            (None, Some(false)) => "FAIL",
            (None, None) => "-",
        };
        out.push_str(&format!(
            "{:<7} {:<46} {:>11} {:>11} {:<8} {:>8} {:>10} {:<6}\n",
            row.id,
            row.figure,
            number(row.value),
            number(row.baseline),
            row.unit,
            row.ratio().map_or("-".into(), |r| format!("{r:.2}x")),
            row.target.text(&row.unit),
            result
        ));
    }
    out.push('\n');
    for row in rows {
        match (&row.error, &row.skipped) {
            (Some(error), _) => out.push_str(&format!("{:<7} error: {error}\n", row.id)),
            (None, Some(reason)) => out.push_str(&format!("{:<7} skipped: {reason}\n", row.id)),
            (None, None) => {
                out.push_str(&format!("{:<7} baseline: {}\n", row.id, row.baseline_name))
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_and_verdicts() {
        let row = Row::new("1", "f", "b", "posts/s", Target::RatioAtLeast(0.7))
            .measured(70.0, Some(100.0));
        assert!((row.ratio().unwrap() - 0.7).abs() < 1e-12);
        assert_eq!(row.pass(), Some(true));
        let row =
            Row::new("4", "f", "b", "us", Target::RatioAtMost(4.0)).measured(50.0, Some(10.0));
        assert_eq!(row.pass(), Some(false));
        let row = Row::new("11", "f", "-", "MiB", Target::ValueAtMost(256.0)).measured(300.0, None);
        assert_eq!(row.pass(), Some(false));
        assert_eq!(row.ratio(), None);
        let row = Row::new("12", "f", "b", "ms", Target::AboveAtMost(1.0)).measured(1.4, Some(0.5));
        assert_eq!(row.pass(), Some(true));
        let row = Row::new("12", "f", "b", "ms", Target::AboveAtMost(1.0)).measured(1.6, Some(0.5));
        assert_eq!(row.pass(), Some(false));
        let row = Row::new("9", "f", "b", "posts/s", Target::RatioAtLeast(0.5)).skip("no binary");
        assert_eq!(row.pass(), None);
        assert_eq!(row.to_json()["skipped"], "no binary");
    }

    #[test]
    fn rows_come_back_from_their_json() {
        let rows = [
            Row::new("1", "f", "b", "posts/s", Target::RatioAtLeast(0.7)).measured(7.0, Some(9.0)),
            Row::new("4", "f", "b", "us/post", Target::RatioAtMost(4.0)).measured(40.5, Some(10.0)),
            Row::new("11", "f", "-", "MiB", Target::ValueAtMost(256.0)).measured(8.25, None),
            Row::new("12", "f", "b", "ms", Target::AboveAtMost(1.0)).measured(0.9, Some(0.4)),
            Row::new("9", "f", "b", "posts/s", Target::RatioAtLeast(0.5)).skip("no binary"),
            Row::failed("10-rust", "boom".into()),
        ];
        for row in rows {
            let back = Row::from_json(&row.to_json()).unwrap();
            assert_eq!(back.to_json(), row.to_json());
            assert_eq!(back.pass(), row.pass());
        }
    }

    #[test]
    fn json_ids_are_numbers_when_numeric() {
        let row = Row::new("3", "f", "b", "u", Target::None);
        assert_eq!(row.to_json()["id"], 3);
        let row = Row::new("10-rust", "f", "b", "u", Target::None);
        assert_eq!(row.to_json()["id"], "10-rust");
        assert!(table(&[row]).contains("10-rust"));
    }
}
