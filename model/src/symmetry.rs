//! Symmetry reduction over interchangeable clients: the representative of a state is core's
//! canonical renumbering of its clients ([`World::canonical`]). Only configurations whose
//! clients share one configuration and have no client-specific script use it; stateright applies
//! it in depth-first search only.
//!
//! The graph recorder ([`crate::graph`]) renumbers each successor before the checker asks for
//! its representative; the last one is remembered per thread so that it is computed once.

use listsync_core::machine::ClientMachine;
use listsync_core::world::World;
use std::any::Any;
use std::cell::RefCell;

thread_local! {
    /// The last state renumbered on this thread (its fingerprint) and its canonical
    /// renumbering (a `World<C>` of the model's client machine), until the checker asks for it.
    static LAST: RefCell<Option<(u64, Box<dyn Any>)>> = const { RefCell::new(None) };
}

/// The canonical representative of a state's symmetry class.
pub fn representative<C: ClientMachine>(w: &World<C>) -> World<C> {
    LAST.with_borrow_mut(|last| match last.take() {
        Some((state, canonical)) if state == crate::graph::hash(w) => canonical
            .downcast::<World<C>>()
            .map_or_else(|_| w.canonical(), |c| *c),
        _ => w.canonical(),
    })
}

/// The canonical renumbering of `w` (whose fingerprint is `state`), remembered on this thread
/// for the next [`representative`] of the same state.
pub fn canonical_remembered<C: ClientMachine>(w: &World<C>, state: u64) -> World<C> {
    let canonical = w.canonical();
    LAST.set(Some((state, Box::new(canonical.clone()))));
    canonical
}
