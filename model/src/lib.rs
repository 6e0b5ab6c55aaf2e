//! The stateright model (under construction).
