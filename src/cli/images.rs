//! `toolforge-jobs images`: the stable pre-built images a job may name, exactly as upstream's `toolforge jobs
//! images` lists them (tabulate's `pretty` table) — the cluster's image table (Toolforge's `image-config` ConfigMap), else the bundled one.

use serde::Serialize;

use crate::cli::live_jobs;
use crate::cli::table::{self, json_line};
use crate::cli::{Error, GlobalArgs, OutputFormat};
use crate::cluster::context::image_table;
use crate::output::{ExitStatus, Printer};

#[derive(Serialize)]
struct ImageRow<'a> {
    short_name: &'a str,
    image: String,
}

pub(crate) async fn run(global: &GlobalArgs, printer: Printer) -> Result<ExitStatus, Error> {
    let (_, _, snapshot) = live_jobs::snapshot(global).await?;
    let images = image_table(&snapshot);
    let rows: Vec<ImageRow<'_>> = images
        .stable_names()
        .filter_map(|short| {
            images.find(short).map(|(_, image)| ImageRow {
                short_name: short,
                image: format!("{}:latest", image.image),
            })
        })
        .collect();
    let text = if global.output == OutputFormat::Json {
        json_line(&rows)?
    } else {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|row| vec![row.short_name.to_owned(), row.image.clone()])
            .collect();
        // Upstream's header for the URL column is `image`, not its intended "Container image URL": its CLI looks
        // the title up under a key the API does not send, and falls back to the API's key.
        table::pretty(&["Short name", "image"], &cells)
    };
    printer.data(&text)?;
    Ok(ExitStatus::Success)
}
