//! Symmetry reduction over interchangeable clients: the representative of a state is core's
//! canonical renumbering of its clients ([`World::canonical`]). Only configurations whose
//! clients share one configuration and have no client-specific script use it; stateright applies
//! it in depth-first search only.

use listsync_core::world::World;

/// The canonical representative of a state's symmetry class.
pub fn representative(w: &World) -> World {
    w.canonical()
}
