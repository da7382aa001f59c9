//! The harness itself: capture parsing and normalisation.

use crate::support::*;

#[test]
fn dates_normalise_keeping_width() {
    let s = "      2 0.50500 job.sh     sgeuser      r     11/21/2026 22:45:02 all.q@vm";
    let n = normalise_dates(s);
    assert_eq!(n.len(), s.len());
    assert!(n.contains("MM/DD/YYYY hh:mm:ss all.q@vm"));
    assert_eq!(
        normalise_dates("submission_time:            Sat Nov 21 22:45:01 2026\n"),
        "submission_time:            Www Mmm DD hh:mm:ss YYYY\n"
    );
    assert_eq!(
        normalise_dates("<JAT_start_time>2026-11-21T22:45:02</JAT_start_time>"),
        "<JAT_start_time>YYYY-MM-DDThh:mm:ss</JAT_start_time>"
    );
}

#[test]
fn a_new_cell_has_the_default_configuration() {
    let cell = TestCell::new();
    let config = gridspool::config::ClusterConfig::load(&cell.spool.config_path()).expect("config");
    assert_eq!(config.queues[0].name, "all.q");
    assert!(cell.spool.scan_jobs().expect("scan").jobs.is_empty());
}
