//! `listsync explore`: serves stateright's Explorer for one configuration on 127.0.0.1, to step
//! through the model's states by hand.

use anyhow::{Result, bail};
use listsync_model::{ListModel, configs};
use stateright::Model;
use std::process::ExitCode;

/// Runs `listsync explore CONFIG --port P`.
pub fn run(config: &str, port: u16) -> Result<ExitCode> {
    let Some(c) = configs::by_name(config) else {
        let names: Vec<_> = configs::all().iter().map(|c| c.name().to_owned()).collect();
        bail!(
            "unknown configuration '{config}'; known: {}",
            names.join(", ")
        );
    };
    eprintln!("listsync explore: {config} on http://127.0.0.1:{port}/ (Ctrl-C to stop)");
    ListModel::new(c.scenario)
        .checker()
        .serve(("127.0.0.1", port));
    Ok(ExitCode::SUCCESS)
}
