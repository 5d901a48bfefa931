//! One module per subcommand. What several of them use lives in [`common`] (and the checkpoint
//! options of `convert` and `inspect` in [`weights`]), not in one command for the others to import.

pub mod bench;
pub mod common;
pub mod compare;
pub mod convert;
pub mod demo;
pub mod device;
pub mod flash;
pub mod inspect;
pub mod qemu;
pub mod run;
pub mod weights;
