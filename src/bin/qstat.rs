fn main() -> std::process::ExitCode {
    gridspool::cli::run_with_text_args("qstat", gridspool::cli::qstat::main)
}
