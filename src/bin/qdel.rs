fn main() -> std::process::ExitCode {
    gridspool::cli::run_with_text_args("qdel", gridspool::cli::qdel::main)
}
