//! Workflows (docs/COMMANDS.md "Workflows"): the TOML schema, the planner that decides what a
//! run still has to do (input hashes, cascade, reconciliation of interrupted steps, gates,
//! effects), and the runner that executes steps under a run lock and records `begin`/`finish`
//! around each.

pub mod external;
pub mod lock;
pub mod next;
pub mod plan;
pub mod runner;
pub mod schema;
pub mod trust;

pub use schema::{StepDef, Workflow, load};
