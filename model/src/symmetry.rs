//! Symmetry reduction over interchangeable clients (placeholder: identity until relabelling lands).

use listsync_core::world::World;

/// The canonical representative of a state's symmetry class.
pub fn representative(w: &World) -> World {
    w.clone()
}
