//! One file per command.

pub mod build;
pub mod embed;
pub mod eval;
pub mod frame;
pub mod graph;
pub mod inspect;
pub mod search;
pub mod site;
pub mod unpack;
pub mod upgrade;
