//! The checked-in man pages and completions are exactly what the generator makes from the
//! option tables (`gridspool::cli::generated_docs`). `GRIDSPOOL_BLESS=1 cargo test docs` rewrites them.

use std::path::Path;

#[test]
fn generated_docs_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("GRIDSPOOL_BLESS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (rel, content) in gridspool::cli::generated_docs::generated_files() {
        let path = root.join(&rel);
        let current = std::fs::read_to_string(&path).ok();
        if current.as_deref() == Some(content.as_str()) {
            continue;
        }
        if bless {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).expect("create directory");
            }
            std::fs::write(&path, &content).expect("write generated file");
        } else {
            stale.push(rel);
        }
    }
    assert!(
        stale.is_empty(),
        "generated files are stale or missing: {}\nregenerate them with: GRIDSPOOL_BLESS=1 cargo test --test tests docs",
        stale.join(", ")
    );
}

#[test]
fn every_command_has_its_files_and_help_text() {
    let files = gridspool::cli::generated_docs::generated_files();
    for doc in gridspool::cli::generated_docs::all_commands() {
        for rel in [
            format!("man/{}.1", doc.name),
            format!("completions/{}.bash", doc.name),
            format!("completions/_{}", doc.name),
            format!("completions/{}.fish", doc.name),
        ] {
            assert!(files.iter().any(|(p, _)| *p == rel), "{rel} not generated");
        }
        let help = gridspool::compat::docs::help_text(&doc);
        assert!(help.starts_with(&format!("SGE 8.1.9\nusage: {} ", doc.name)));
    }
}

/// The bash completions at least parse.
#[test]
fn bash_completions_are_valid_bash() {
    for (rel, content) in gridspool::cli::generated_docs::generated_files() {
        if !rel.ends_with(".bash") {
            continue;
        }
        let out = std::process::Command::new("bash")
            .args(["-n", "-c", &content])
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "{rel}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The README's chart is the FBSNG example of `docs/sim/` replayed as it is now
/// (`GRIDSPOOL_BLESS=1` redraws it).
#[test]
fn the_readme_chart_is_the_fbsng_example_replayed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("docs/sim");
    let jobs = gridspool::sim::workload::load(&dir.join("fbsng-70-30.txt")).expect("workload");
    let config = gridspool::config::ClusterConfig::load(&dir.join("fbsng-70-30.yaml"))
        .expect("configuration");
    let replay = gridspool::sim::replay::replay(&config, &jobs);
    let report = gridspool::sim::report::report("fbsng-70-30.yaml", &config, &replay);
    let tmp = tempfile::tempdir().expect("tempdir");
    let drawn = tmp.path().join("shares.svg");
    gridspool::sim::charts::shares(&drawn, &report.name, &report.shares).expect("chart");
    let drawn = std::fs::read_to_string(&drawn).expect("drawn");
    let chart = dir.join("shares-fbsng-70-30.svg");
    if std::env::var_os("GRIDSPOOL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&chart, &drawn).expect("write the chart");
    }
    let checked_in = std::fs::read_to_string(&chart).unwrap_or_default();
    assert!(
        checked_in == drawn,
        "{} is stale: GRIDSPOOL_BLESS=1 cargo test --test tests docs",
        chart.display()
    );
}
