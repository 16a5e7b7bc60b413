use std::process::ExitCode;

use clap::Parser;

use toolforge_jobs::cli::{Cli, run};

fn main() -> ExitCode {
    run(&Cli::parse()).into()
}
