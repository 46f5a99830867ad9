//! # outcore-testkit — test helpers
//!
//! [`reference`] holds simple in-memory algorithms the engines are checked
//! against; [`gen`] re-exports the generators (crate `outcore-gen`, which the CLI
//! uses for `outcore generate`) for tests that write synthetic graphs.

pub use outcore_gen as gen;
pub mod reference;
