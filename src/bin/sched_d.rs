fn main() -> std::process::ExitCode {
    gridspool::cli::sched_d::main()
}
