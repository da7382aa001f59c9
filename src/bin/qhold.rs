fn main() -> std::process::ExitCode {
    gridspool::cli::qhold::main(std::env::args().skip(1).collect())
}
