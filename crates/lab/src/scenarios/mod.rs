//! The six scenarios of `tiercache bench`, one module each. Every module has
//! `pub fn run(ctx: &mut Ctx) -> Result<ScenarioReport, LabError>`, starts
//! the servers it needs through [`Ctx`] and records a setup it
//! cannot run in [`ScenarioReport::skipped`](crate::ScenarioReport).

pub mod batch;
pub mod http_app;
pub mod http_load;
pub mod microcache;
pub mod pages;
pub mod sharding;
pub mod stations;
pub mod stores;

use crate::{Ctx, LabError, Scenario, ScenarioReport};

/// Runs one scenario.
pub fn run(scenario: Scenario, ctx: &mut Ctx) -> Result<ScenarioReport, LabError> {
    match scenario {
        Scenario::Stores => stores::run(ctx),
        Scenario::Stations => stations::run(ctx),
        Scenario::Pages => pages::run(ctx),
        Scenario::Microcache => microcache::run(ctx),
        Scenario::Sharding => sharding::run(ctx),
        Scenario::Batch => batch::run(ctx),
    }
}
