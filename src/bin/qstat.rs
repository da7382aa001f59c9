fn main() -> std::process::ExitCode {
    gridspool::cli::multicall::run("qstat")
}
