fn main() -> std::process::ExitCode {
    gridspool::cli::run_with_text_args("qacct", gridspool::cli::qacct::main)
}
