fn main() -> std::process::ExitCode {
    gridspool::cli::qhost::main(std::env::args().skip(1).collect())
}
