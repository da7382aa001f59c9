fn main() -> std::process::ExitCode {
    gridspool::cli::qalter::main(std::env::args().skip(1).collect())
}
