fn main() -> std::process::ExitCode {
    gridspool::cli::sim::main()
}
