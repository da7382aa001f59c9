//! `gridspool-shepherd`: runs one task on an execution host as its owner and reports how it
//! ended. Started by `sched_d` directly or over ssh; see `gridspool::launch::shepherd`.

fn main() -> std::process::ExitCode {
    gridspool::cli::multicall::run(&gridspool::cli::multicall::SHEPHERD_COMMAND)
}
