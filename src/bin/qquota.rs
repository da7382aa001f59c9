fn main() -> std::process::ExitCode {
    gridspool::cli::multicall::run(&gridspool::cli::multicall::QQUOTA)
}
