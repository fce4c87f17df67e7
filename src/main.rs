use std::process::ExitCode;

fn main() -> ExitCode {
    kdelta::main()
}
