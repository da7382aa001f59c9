//! Issue 12: hostile input to the submission grammar never panics. Words are option names of
//! qsub's and qalter's tables mixed with values that broke parsers before (empty, lone
//! separators, zeros, huge numbers) and arbitrary text; files and scripts are arbitrary bytes.

use super::*;
use crate::compat::options::{OperandMode, Origin, parse, split_words};
use crate::compat::qsub_options::{QALTER_OPTIONS, QSUB_OPTIONS};
use crate::config::ClusterConfig;
use proptest::prelude::*;

const TRICKY: &[&str] = &[
    "",
    ",",
    ",,",
    "-",
    "--",
    "0",
    "0-0",
    "1-3:0",
    "5-1",
    "1-",
    "-1",
    ":",
    "::",
    "=",
    "a=",
    "=b",
    "4294967296",
    "99999999999999999999",
    "1-4294967295:4294967295",
    "@",
    "a@",
    "@b",
    "y",
    "n",
    "yes",
    "\u{feff}",
    "é",
    "\u{fffd}",
    "1.2",
    "1.",
    ".5",
    "h_rt=",
    "h_rt=::",
    "smp",
    "1-2,",
    "x,,y",
    "*",
    "[",
    "\\",
    "'",
    "\"",
    "#",
    "-t",
    "-N",
    "-hold_jid",
];

fn word() -> impl Strategy<Value = String> {
    let names: Vec<String> = QSUB_OPTIONS
        .iter()
        .chain(QALTER_OPTIONS)
        .map(|s| s.name.to_string())
        .collect();
    prop_oneof![
        proptest::sample::select(names),
        proptest::sample::select(TRICKY).prop_map(String::from),
        any::<String>(),
        proptest::collection::vec(any::<u8>(), 0..12)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

proptest! {
    #[test]
    fn options_from_any_words_parse_check_and_fold_or_refuse(
        words in proptest::collection::vec(word(), 0..12),
    ) {
        let config = ClusterConfig::parse(&ClusterConfig::default_text("vm", 2))
            .expect("config");
        let environ = vec![("HOME".to_string(), "/home/u".to_string())];
        let not_utf8 = vec!["BAD".to_string()];
        for (table, prog) in [(QSUB_OPTIONS, "qsub"), (QALTER_OPTIONS, "qalter")] {
            for mode in [OperandMode::StopAtFirst, OperandMode::Interleaved] {
                let Ok(parsed) = parse(table, &words, mode, &Origin::CommandLine) else {
                    continue;
                };
                if parsed.options.iter().any(|o| check_option(o, prog).is_err()) {
                    continue;
                }
                let ctx = FoldContext {
                    config: &config,
                    environ: &environ,
                    environ_not_utf8: &not_utf8,
                    cwd: "/tmp",
                };
                if let Ok(folded) = fold(&parsed.options, ctx) {
                    let _ = verify_against_config(&folded.spec, &config, 1);
                }
            }
        }
    }

    #[test]
    fn option_files_and_scripts_of_any_bytes_read_or_refuse(
        bytes in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        match option_file_text("f", bytes.clone()) {
            Ok(text) => {
                let _ = option_file_words(&text);
            }
            Err(e) => prop_assert_eq!(e.code(), 1),
        }
        for prefix in ["#$", "", "#", "\u{e9}"] {
            match script_directives(&bytes, prefix) {
                Ok(lines) => {
                    for (_, words) in lines {
                        let _ = parse(
                            QSUB_OPTIONS,
                            &words,
                            OperandMode::Interleaved,
                            &Origin::Script(1),
                        );
                    }
                }
                Err(e) => prop_assert_eq!(e.code(), 1),
            }
        }
        let _ = split_words(&String::from_utf8_lossy(&bytes));
    }
}
