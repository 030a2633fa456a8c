//! The command end to end: the JSON rows, the figure selection, bad options.

use std::process::Command;

use serde_json::Value;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_parley-bench"))
        .args(args)
        .output()
        .expect("parley-bench runs")
}

#[test]
fn json_rows_carry_value_baseline_and_ratio() {
    let out = bench(&["--quick", "--reps", "1", "--only", "4,7,10-rust", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).expect("a JSON array");
    let rows = rows.as_array().expect("an array");
    let ids: Vec<&Value> = rows.iter().map(|r| &r["id"]).collect();
    assert_eq!(
        ids,
        [&Value::from(4), &Value::from(7), &Value::from("10-rust")]
    );
    for row in &rows[..2] {
        let (v, b, r) = (
            row["value"].as_f64().unwrap(),
            row["baseline"].as_f64().unwrap(),
            row["ratio"].as_f64().unwrap(),
        );
        assert!(v > 0.0 && b > 0.0, "{row}");
        assert!((r - v / b).abs() < 1e-9 * r.max(1.0), "{row}");
        assert!(row["pass"].is_boolean(), "{row}");
        assert!(row["unit"].as_str().unwrap().starts_with("us/"), "{row}");
    }
    assert!(rows[2]["baseline"].is_null() && rows[2]["value"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_table_names_target_and_verdict() {
    let out = bench(&["--quick", "--reps", "1", "--only", "8"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("8 "))
        .expect("a row for figure 8");
    assert!(line.contains("<= 1.2x"), "{line}");
    assert!(line.contains("PASS") || line.contains("FAIL"), "{line}");
    assert!(text.contains("baseline: the generic call"), "{text}");
}

#[test]
fn unknown_figures_are_refused() {
    let out = bench(&["--only", "99"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown figure `99`"));
}

/// Figure 22 measures both sides in one run once the engine has the guards
/// switch (SPEC §15), and until then says why it was skipped.
#[test]
fn figure_22_compares_the_guards_on_and_off() {
    let out = bench(&["--quick", "--reps", "1", "--only", "22", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).expect("a JSON array");
    let row = &rows[0];
    assert_eq!(row["id"], Value::from(22), "{row}");
    assert_eq!(row["target"], "<= 1.1x", "{row}");
    match row["skipped"].as_str() {
        Some(why) => assert!(why.contains("no guards profile switch"), "{row}"),
        None => {
            let (v, b) = (row["value"].as_f64(), row["baseline"].as_f64());
            assert!(v > Some(0.0) && b > Some(0.0), "{row}");
            assert!(row["pass"].is_boolean(), "{row}");
            assert_eq!(row["detail"]["settings_on"]["guards"], true, "{row}");
        }
    }
}

/// Figure 24 measures `get_digest` against `get_thread` of the same thread.
#[test]
fn figure_24_compares_the_digest_with_the_whole_thread() {
    let out = bench(&["--quick", "--reps", "1", "--only", "24", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).expect("a JSON array");
    let row = &rows[0];
    assert_eq!(row["id"], Value::from(24), "{row}");
    assert_eq!(row["target"], "<= 0.3x", "{row}");
    let (v, b) = (row["value"].as_f64(), row["baseline"].as_f64());
    assert!(v > Some(0.0) && b > Some(0.0), "{row}");
    assert!(row["pass"].is_boolean(), "{row}");
    assert!(
        row["detail"]["thread_json_bytes"].as_u64() > row["detail"]["digest_json_bytes"].as_u64()
    );
}

/// Figures 25 and 26 measure `export_claim` against `get_claim` and `import_claim`
/// against a post; an engine without the provenance profile skips them, saying so.
#[test]
fn figures_25_and_26_compare_export_and_import_with_their_baselines() {
    let out = bench(&["--quick", "--reps", "1", "--only", "25,26", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).expect("a JSON array");
    let targets = [(25, "<= 3x"), (26, "<= 2x")];
    for (row, (id, target)) in rows.as_array().expect("rows").iter().zip(targets) {
        assert_eq!(row["id"], Value::from(id), "{row}");
        assert_eq!(row["target"], target, "{row}");
        match row["skipped"].as_str() {
            Some(why) => assert!(why.contains("SPEC §18.3"), "{row}"),
            None => {
                let (v, b) = (row["value"].as_f64(), row["baseline"].as_f64());
                assert!(v > Some(0.0) && b > Some(0.0), "{row}");
                assert!(row["pass"].is_boolean(), "{row}");
            }
        }
    }
    assert_eq!(rows.as_array().map(Vec::len), Some(2));
}
