//! The block as one program: the op vocabulary ([`op::Op`]), the placements every op's tensors
//! have on each rank ([`placement`]), and the check that the program is consistent
//! ([`check::check_placements`]). The schedule ([`crate::trace::schedule`]) writes the program
//! out for a configuration; every executor walks it.

pub mod check;
pub mod op;
pub mod placement;

pub use op::{BlockPart, Op, OpKind, Role};
pub use placement::{Placement, PlacementKind, TensorPlacement};
