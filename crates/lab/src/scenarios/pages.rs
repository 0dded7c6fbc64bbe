//! The `pages` scenario: being built (issue 7).

use crate::{Ctx, LabError, ScenarioReport};

/// Runs the scenario.
pub fn run(_ctx: &mut Ctx) -> Result<ScenarioReport, LabError> {
    Err(LabError::NotBuilt("pages"))
}
