//! The cluster commands of a server without cluster support (as Redis
//! with `cluster-enabled no`): `CLUSTER`, `READONLY`, `READWRITE` and
//! `ASKING` all answer that cluster support is disabled, so cluster-aware
//! clients fall back to a single node.

use super::{Args, Ctx, Flow};

/// Redis's reply with cluster support off.
const DISABLED: &str = "ERR This instance has cluster support disabled";

pub async fn run(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    ctx.error(DISABLED);
    Flow::Continue
}
