fn main() -> std::process::ExitCode {
    gridspool::cli::qdel::main(std::env::args().skip(1).collect())
}
