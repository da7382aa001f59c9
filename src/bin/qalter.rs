fn main() -> std::process::ExitCode {
    gridspool::cli::run_with_text_args("qalter", gridspool::cli::qalter::main)
}
