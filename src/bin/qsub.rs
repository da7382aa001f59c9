fn main() -> std::process::ExitCode {
    gridspool::cli::qsub::main(std::env::args().skip(1).collect())
}
