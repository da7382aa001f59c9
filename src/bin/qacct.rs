fn main() -> std::process::ExitCode {
    gridspool::cli::qacct::main(std::env::args().skip(1).collect())
}
