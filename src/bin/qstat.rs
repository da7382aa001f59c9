fn main() -> std::process::ExitCode {
    gridspool::cli::qstat::main(std::env::args().skip(1).collect())
}
