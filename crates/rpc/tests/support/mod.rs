//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod backend;
pub mod chain;
pub mod compare;
pub mod http;
pub mod json;
pub mod order;
