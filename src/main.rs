use std::process::ExitCode;

use clap::Parser;

use toolforge_jobs::cli::{Cli, run};

#[tokio::main]
async fn main() -> ExitCode {
    run(&Cli::parse()).await.into()
}
