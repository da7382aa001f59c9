fn main() -> std::process::ExitCode {
    gridspool::cli::run_with_text_args("qhold", gridspool::cli::qhold::main)
}
