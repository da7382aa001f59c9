fn main() -> std::process::ExitCode {
    gridspool::cli::run_with_text_args("qhost", gridspool::cli::qhost::main)
}
