//! Fuzzes the jobs.yaml loader: any bytes must either load or produce diagnostics, never panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Context, SourceFile};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let images = ImageTable::bundled();
    let context = Context {
        tool: "fuzz",
        images: &images,
        count_trigger_files: None,
    };
    let _ = config::load(SourceFile::new("jobs.yaml", text), &context);
});
