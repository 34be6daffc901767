//! The cache's reads and fills, on tokio's paused clock.
