//! SFCS canonical envelope (work in progress).
