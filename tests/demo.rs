//! `cargo run --release`: the demo says what the cell is in words before it runs anything.

use std::process::Command;

#[test]
fn the_demo_says_what_the_cell_is_in_one_line_not_yaml_fragments() {
    let root = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_gridspool-demo"))
        .env("GRIDSPOOL_DEMO_ROOT", root.path())
        .output()
        .expect("run the demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What it prints before it starts submitting.
    let head: Vec<&str> = stdout
        .lines()
        .take_while(|l| !l.starts_with("submitting"))
        .collect();
    let host = gridspool::identity::short_hostname();
    let config = root.path().join("default/config.yaml");
    let cell: Vec<&&str> = head
        .iter()
        .filter(|l| l.starts_with("the cell: "))
        .collect();
    assert_eq!(cell.len(), 1, "{stdout}");
    assert!(
        cell[0].starts_with(&format!("the cell: host {host} (")),
        "{}",
        cell[0]
    );
    assert!(cell[0].contains("; queue all.q;"), "{}", cell[0]);
    assert!(
        cell[0].ends_with(&format!("(configuration: {})", config.display())),
        "{}",
        cell[0]
    );
    // No line of YAML out of its file.
    for line in &head {
        let t = line.trim_start();
        assert!(
            !(t.starts_with("- ") || t.starts_with("name:") || t.starts_with("slots:")),
            "a bare YAML fragment: {line:?}\n{stdout}"
        );
    }
    assert!(stdout.contains("all jobs finished"), "{stdout}");
}
