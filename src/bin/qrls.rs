fn main() -> std::process::ExitCode {
    gridspool::cli::run_with_text_args("qrls", gridspool::cli::qrls::main)
}
