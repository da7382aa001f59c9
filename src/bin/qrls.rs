fn main() -> std::process::ExitCode {
    gridspool::cli::qrls::main(std::env::args().skip(1).collect())
}
