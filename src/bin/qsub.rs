fn main() -> std::process::ExitCode {
    gridspool::cli::run_with_text_args("qsub", gridspool::cli::qsub::main)
}
