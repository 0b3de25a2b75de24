//! Shared helpers for the npy-serde cross-crate tests: fixture paths and the live-NumPy switch.
