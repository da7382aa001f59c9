//! `gridspool-shepherd`: runs one task on an execution host as its owner and reports how it
//! ended. Started by `sched_d` directly or over ssh; see `gridspool::launch::shepherd`.

fn main() -> std::process::ExitCode {
    // Its arguments are paths in the spool, which sched_d passes; main wants the program name
    // first, as args() gives it.
    gridspool::cli::run_with_text_args("gridspool-shepherd", |args| {
        let mut all = vec!["gridspool-shepherd".to_string()];
        all.extend(args);
        gridspool::launch::shepherd::main(all)
    })
}
