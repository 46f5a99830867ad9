//! # outcore-testkit — generators and test helpers
//!
//! [`gen`] writes the synthetic graphs used by tests and benchmarks (Graph500
//! Kronecker, 2-D lattice, Erdős–Rényi, path) as binary or text edge lists.

pub mod gen;
pub mod reference;
pub mod rng;
