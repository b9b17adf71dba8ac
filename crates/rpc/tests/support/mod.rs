//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod chain;
pub mod json;
pub mod order;
