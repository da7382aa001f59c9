fn main() -> std::process::ExitCode {
    gridspool::cli::demo::main()
}
