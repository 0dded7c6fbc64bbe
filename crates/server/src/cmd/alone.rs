//! Running a command alone, as `EXEC`, a script and `SYNC` do: out of the
//! engine's gate (or taking it alone would wait for this very batch), then
//! in it exclusively; back in afterwards, for the rest of the batch.

use super::Ctx;
use tiercache_engine::ExclusivePass;

/// The gate held alone; [`Alone::rejoin`] gives it back.
pub(crate) struct Alone<'e> {
    pass: ExclusivePass<'e>,
    was_inside: bool,
}

impl<'e> Alone<'e> {
    /// Waits until every other batch has left the gate, and keeps them out.
    pub(crate) async fn take(ctx: &mut Ctx<'_, 'e>) -> Alone<'e> {
        let gate = ctx.engine.gate();
        let was_inside = ctx.client.seat.is_inside();
        gate.leave(&mut ctx.client.seat);
        Alone {
            pass: gate.exclusive().await,
            was_inside,
        }
    }

    /// Lets the others in, and this batch back in if it was.
    pub(crate) async fn rejoin(self, ctx: &mut Ctx<'_, 'e>) {
        drop(self.pass);
        if self.was_inside {
            ctx.engine.gate().enter(&mut ctx.client.seat).await;
        }
    }
}
