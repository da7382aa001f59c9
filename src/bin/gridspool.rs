//! `gridspool`: every command in one program, dispatched on the name of the link it is started
//! through (`qsub`, `sched_d`, `gridspool-shepherd`, …); what installations ship
//! (`gridspool::cli::multicall`).

fn main() -> std::process::ExitCode {
    gridspool::cli::multicall::main()
}
