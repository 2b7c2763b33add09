//! The block as one program: the op vocabulary ([`op::Op`]), the placements every op's tensors
//! have on each rank ([`placement`]), the program itself ([`program::schedule`], which writes
//! the trace), the typed names of its tensors ([`tensor::TensorName`]), the check that it is consistent ([`check::check_placements`]), the shard plan
//! ([`plan`]), the executors that walk it ([`sharded`], with its precision hook), its fused
//! kernels ([`kernels`]) and the plain ones the labs use ([`ops`]), the plain unsharded
//! reference that is the oracle ([`reference`](mod@reference): it does not share the sharded
//! code path), the verification against it ([`verify`]), and the FLOPs and
//! elements each op does, counted once for every schedule ([`work`]).

pub mod check;
pub mod design;
pub mod kernels;
pub mod op;
pub mod ops;
pub mod placement;
pub mod plan;
pub mod program;
pub mod reference;
pub mod sharded;
pub mod tensor;
pub mod verify;
pub mod work;

pub use op::{BlockPart, Op, OpKind, Role};
pub use placement::{Placement, PlacementKind, TensorPlacement};
pub use tensor::{Activation, TensorName, VocabTensor};
