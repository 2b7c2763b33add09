//! The executor's fused CPU kernels: LayerNorm, GeLU, bias and residual passes, and causal
//! attention, each one pass over contiguous rows with no temporary arrays, written so that the
//! compiler vectorises them (sums in `LANES` independent lanes, a branch-free `exp`).
//!
//! Only the executor ([`crate::block::exec::design`]) calls these. The unsharded reference keeps its
//! own plain kernels and ndarray's `dot` ([`mod@crate::block::reference`]), so a mistake here shows up as a
//! verification failure instead of being shared by both sides. The simple kernels of
//! [`crate::block::ops`] stay as they were for the other callers (the labs, the GPU layout tests).
//!
//! Rounding: every kernel computes the same formula as the reference, in another order (lane
//! sums instead of one running sum, GeLU as `x·σ(2u)` instead of `½x(1 + tanh u)`, an `exp` within
//! 2 ulps of the correctly rounded value, a bias added before the product's sum instead of after).
//! Each of these changes the result by a few ε per element, far inside the verification's
//! `16·ε·√K` ([`crate::block::verify`]), and the tests below bound each kernel against its reference.

use crate::block::ops::{
    attention_by_head, gemm_into, row_blocks, AttnCache, LnCache, QkvLayout, ATTN_BLOCK_ROWS,
    LN_EPS,
};
use crate::dtype::Element;
use ndarray::{s, Array1, Array2, ArrayView2, ArrayViewMut2};
use rayon::prelude::*;
use std::any::TypeId;

/// Independent accumulators of a vectorised sum (16 f32 = one AVX-512 register, two AVX ones).
const LANES: usize = 16;

/// Rows per task of the row-parallel kernels: fixed, so that results do not depend on the number
/// of threads.
const ROW_CHUNK: usize = 32;

/// Elements per task of the element-wise kernels (same reason).
const ELEM_CHUNK: usize = 1 << 14;

/// The arithmetic the kernels need, with an `exp` the compiler can vectorise.
trait Fast: Element {
    fn exp_fast(self) -> Self;
}

impl Fast for f32 {
    /// `exp` by `2^k · p(r)`, `r = x − k·ln2` (Cody–Waite), `p` the degree-7 Taylor polynomial
    /// (truncation 5e-9 relative on |r| ≤ ln2/2, below f32's ε/2 = 6e-8); `x` clamped to
    /// `[−87, 88]`, where `2^k` is a normal number (only GeLU's and the softmax's arguments reach
    /// the clamp, and there the result is 0 or ∞ to working precision anyway).
    #[inline(always)]
    fn exp_fast(self) -> f32 {
        const LN2_HI: f32 = 0.693_145_75; // 16 significant bits: k·LN2_HI is exact for |k| ≤ 128
        const LN2_LO: f32 = 1.428_606_8e-6;
        const MAGIC: f32 = 12_582_912.0; // 1.5·2²³: adding it rounds to an integer
        let x = self.clamp(-87.0, 88.0);
        let kf = x * std::f32::consts::LOG2_E + MAGIC;
        let k = kf.to_bits().wrapping_sub(MAGIC.to_bits());
        let kr = kf - MAGIC;
        let r = x - kr * LN2_HI - kr * LN2_LO;
        let p = 1.0
            + r * (1.0
                + r * (0.5
                    + r * (1.0 / 6.0
                        + r * (1.0 / 24.0
                            + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
        p * f32::from_bits(k.wrapping_add(127) << 23)
    }
}

/// `1/n!` for `n = 0..=13`.
const INV_FACTORIAL: [f64; 14] = {
    let mut c = [1.0; 14];
    let mut n = 1;
    while n < 14 {
        c[n] = c[n - 1] / n as f64;
        n += 1;
    }
    c
};

impl Fast for f64 {
    /// As for f32, with the degree-13 Taylor polynomial (truncation 4e-18 relative) and `x`
    /// clamped to `[−708, 709]`.
    #[inline(always)]
    fn exp_fast(self) -> f64 {
        const LN2_HI: f64 = 6.931_471_803_691_238e-1; // fdlibm's split of ln 2
        const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
        const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5·2⁵²
        let x = self.clamp(-708.0, 709.0);
        let kf = x * std::f64::consts::LOG2_E + MAGIC;
        let k = kf.to_bits().wrapping_sub(MAGIC.to_bits());
        let kr = kf - MAGIC;
        let r = x - kr * LN2_HI - kr * LN2_LO;
        let mut p = INV_FACTORIAL[13];
        for &c in INV_FACTORIAL[..13].iter().rev() {
            p = p * r + c;
        }
        p * f64::from_bits(k.wrapping_add(1023) << 52)
    }
}

/// `x` as a slice of `U` when `T` is `U`.
fn cast<T: 'static, U: 'static>(x: &[T]) -> Option<&[U]> {
    // SAFETY: `T` and `U` are the same type (same TypeId), so the slice is reinterpreted as itself.
    (TypeId::of::<T>() == TypeId::of::<U>())
        .then(|| unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<U>(), x.len()) })
}

fn cast_mut<T: 'static, U: 'static>(x: &mut [T]) -> Option<&mut [U]> {
    // SAFETY: as `cast`; the borrow is unique and moves into the result.
    (TypeId::of::<T>() == TypeId::of::<U>())
        .then(|| unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<U>(), x.len()) })
}

/// Defines a kernel twice from one body, for the baseline x86-64 (SSE2, 4 f32 lanes a register)
/// and compiled for AVX-512 (16 lanes), and runs the AVX-512 copy when the CPU has it. Closures
/// written in the body (the rayon tasks, the per-row closures) inherit the target feature, so the
/// whole kernel uses the wide registers, not only what the compiler chose to inline into it.
///
/// The values are the same bit for bit on both copies: wider registers, the same operations in
/// the same order per lane (no FMA, which would round differently; the compiler never
/// reassociates float sums). `wide_kernels_give_the_baseline_bits` checks it.
macro_rules! wide_kernel {
    ($(#[$m:meta])* fn $name:ident<$F:ident: Fast>($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        fn $name<$F: Fast>($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                $(#[$m])*
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512<$F: Fast>($($arg: $ty),*) $body
                if wide_registers() {
                    // SAFETY: the CPU supports AVX-512F (`wide_registers` checked it).
                    return unsafe { avx512::<$F>($($arg),*) };
                }
            }
            $body
        }
    };
}

/// Whether the kernels run their AVX-512 copy: the CPU has AVX-512F (and, in the tests, the
/// baseline copy is not forced on this thread).
#[cfg(target_arch = "x86_64")]
fn wide_registers() -> bool {
    #[cfg(test)]
    if plain::forced() {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx512f")
}

/// Forces the kernels onto their baseline copy, for the test that compares the two.
#[cfg(test)]
mod plain {
    use std::cell::Cell;

    thread_local! {
        static FORCED: Cell<bool> = const { Cell::new(false) };
    }

    pub(super) fn forced() -> bool {
        FORCED.with(Cell::get)
    }

    /// Runs `f` on a thread pool of its own whose threads run every kernel on its baseline
    /// copy (the kernels' row tasks run on the pool's threads, so a flag on the caller's thread
    /// alone would not reach them).
    pub(super) fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .start_handler(|_| FORCED.with(|c| c.set(true)))
            .build()
            .expect("a two-thread pool for the baseline kernels")
            .install(f)
    }
}

/// Calls `$f::<f32>` or `$f::<f64>` on the slices reinterpreted as that type (every [`Element`]
/// is one of the two).
macro_rules! dispatch {
    ($f:ident, [$($r:ident),*], [$($w:ident),*] $(, $extra:expr)*) => {{
        if TypeId::of::<T>() == TypeId::of::<f32>() {
            if let ($(Some($r),)* $(Some($w),)*) =
                ($(cast::<T, f32>($r),)* $(cast_mut::<T, f32>($w),)*)
            {
                $f::<f32>($($r,)* $($w,)* $($extra),*)
            }
        } else if let ($(Some($r),)* $(Some($w),)*) =
            ($(cast::<T, f64>($r),)* $(cast_mut::<T, f64>($w),)*)
        {
            $f::<f64>($($r,)* $($w,)* $($extra),*)
        }
    }};
}

/// A lane sum: `LANES` running sums, then added pairwise.
#[inline(always)]
fn lane_sum<F: Fast>(acc: [F; LANES], tail: F) -> F {
    let mut a = acc;
    let mut w = LANES / 2;
    while w > 0 {
        for i in 0..w {
            a[i] += a[i + w];
        }
        w /= 2;
    }
    a[0] + tail
}

/// The largest element (−∞ for none) in `LANES` running maxima. A maximum is exact, so this is
/// the one-by-one fold's value: NaNs are skipped as `max` skips them, and where it could return
/// +0 or −0 the softmax that subtracts it gives the same values either way. (A single running
/// maximum is a chain of dependent instructions the compiler cannot split.)
#[inline(always)]
fn max_of<F: Fast>(x: &[F]) -> F {
    let mut acc = [F::neg_infinity(); LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            acc[i] = acc[i].max(c[i]);
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(F::neg_infinity(), |m, &v| m.max(v));
    acc.iter().fold(tail, |m, &v| m.max(v))
}

#[inline(always)]
fn sum<F: Fast>(x: &[F]) -> F {
    let mut acc = [F::zero(); LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            acc[i] += c[i];
        }
    }
    let tail = chunks.remainder().iter().fold(F::zero(), |a, &v| a + v);
    lane_sum(acc, tail)
}

#[inline(always)]
fn dot<F: Fast>(x: &[F], y: &[F]) -> F {
    let mut acc = [F::zero(); LANES];
    let (mut cx, mut cy) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
    for (a, b) in (&mut cx).zip(&mut cy) {
        for i in 0..LANES {
            acc[i] += a[i] * b[i];
        }
    }
    let tail = cx
        .remainder()
        .iter()
        .zip(cy.remainder())
        .fold(F::zero(), |a, (&u, &v)| a + u * v);
    lane_sum(acc, tail)
}

#[inline(always)]
fn sq_dev<F: Fast>(x: &[F], mean: F) -> F {
    let mut acc = [F::zero(); LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            let d = c[i] - mean;
            acc[i] += d * d;
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(F::zero(), |a, &v| a + (v - mean) * (v - mean));
    lane_sum(acc, tail)
}

/// The elements of a standard-layout array (every array the executor makes is one).
fn elems<T: Element>(a: &Array2<T>) -> &[T] {
    a.as_slice().unwrap_or(&[])
}

fn elems_mut<T: Element>(a: &mut Array2<T>) -> &mut [T] {
    a.as_slice_mut().unwrap_or(&mut [])
}

/// `a` in standard layout (a copy only when it is not one), so that an in-place kernel sees
/// its elements in row order.
fn make_standard<T: Element>(a: &mut Array2<T>) {
    if !a.is_standard_layout() {
        *a = standard(a.view());
    }
}

/// A copy in standard layout when `a` is not one.
fn standard<T: Element>(a: ArrayView2<'_, T>) -> Array2<T> {
    a.as_standard_layout().into_owned()
}

/// An array of `rows·cols` elements, not zeroed, for a kernel that writes every element once.
type Uninit<T> = ndarray::Array2<std::mem::MaybeUninit<T>>;

/// Whether `T` is one of the two types the kernels specialise (every `Element` today); the
/// kernels that write uninitialised buffers fall back to [`crate::block::ops`] otherwise.
fn is_f32_or_f64<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<f32>() || TypeId::of::<T>() == TypeId::of::<f64>()
}

/// An array for a kernel that writes every element: a buffer of an earlier run from
/// [`recycle`]'s pool when one of that size is there (its memory already mapped: no page faults),
/// else a fresh allocation.
fn uninit<T: Element>(rows: usize, cols: usize) -> Uninit<T> {
    if let Some(v) = pool::take::<T>(rows * cols) {
        let mut v = std::mem::ManuallyDrop::new(v);
        let (ptr, len, cap) = (v.as_mut_ptr(), v.len(), v.capacity());
        // SAFETY: `MaybeUninit<T>` has the size and alignment of `T`, so the allocation of
        // `cap` `T`s is one of `cap` `MaybeUninit<T>`s with the same layout; `v` is not dropped
        // (ManuallyDrop), so the new Vec is the allocation's only owner.
        let v = unsafe { Vec::from_raw_parts(ptr.cast::<std::mem::MaybeUninit<T>>(), len, cap) };
        if let Ok(a) = Array2::from_shape_vec((rows, cols), v) {
            return a;
        }
    }
    Array2::uninit((rows, cols))
}

/// Hands arrays the executor no longer needs to the pool that [`uninit`] draws from, as a
/// framework's caching allocator keeps a step's memory for the next (PyTorch's on a GPU): the
/// activations a layer saved for its backward, once the backward has read them. Without it a
/// run's memory goes back to the system and the next run's kernels page-fault it in again.
pub fn recycle<T: Element>(arrays: impl IntoIterator<Item = Array2<T>>) {
    for a in arrays {
        let (v, offset) = a.into_raw_vec_and_offset();
        if offset == Some(0) {
            pool::give(v);
        }
    }
}

/// The buffer pool behind [`uninit`] and [`recycle`]: whole buffers of one length and type,
/// at most [`pool::LIMIT_BYTES`] in all (beyond that a recycled buffer is freed).
mod pool {
    use std::any::Any;
    use std::sync::Mutex;

    /// What the pool keeps at most: a few steps of GPT-2-small activations at TP 6.
    pub(super) const LIMIT_BYTES: usize = 256 << 20;

    struct Pool {
        bufs: Vec<(usize, Box<dyn Any + Send>)>,
        bytes: usize,
    }

    static POOL: Mutex<Pool> = Mutex::new(Pool {
        bufs: Vec::new(),
        bytes: 0,
    });

    /// A pooled buffer of exactly `len` elements of `T`, if there is one.
    pub(super) fn take<T: Send + 'static>(len: usize) -> Option<Vec<T>> {
        if len == 0 {
            return None;
        }
        let mut p = POOL.lock().ok()?;
        let i = p.bufs.iter().rposition(|(_, b)| {
            b.downcast_ref::<Vec<T>>()
                .is_some_and(|v: &Vec<T>| v.len() == len)
        })?;
        let (bytes, b) = p.bufs.swap_remove(i);
        p.bytes -= bytes;
        b.downcast::<Vec<T>>().ok().map(|b| *b)
    }

    pub(super) fn give<T: Send + 'static>(v: Vec<T>) {
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if v.is_empty() {
            return;
        }
        if let Ok(mut p) = POOL.lock() {
            if p.bytes + bytes <= LIMIT_BYTES {
                p.bytes += bytes;
                p.bufs.push((bytes, Box::new(v)));
            }
        }
    }
}

/// The elements of an [`Uninit`] array, as `MaybeUninit<U>` when `T` is `U`.
fn uninit_elems<T: Element, U: 'static>(
    a: &mut Uninit<T>,
) -> Option<&mut [std::mem::MaybeUninit<U>]> {
    a.as_slice_mut()
        .and_then(cast_mut::<std::mem::MaybeUninit<T>, std::mem::MaybeUninit<U>>)
}

// ---------------------------------------------------------------------------------------------
// Matrix products.

/// `a · b` on the thread pool, into a new array that is not zeroed first (gemm writes every
/// element of it).
pub fn matmul<T: Element>(a: ArrayView2<'_, T>, b: ArrayView2<'_, T>) -> Array2<T> {
    let (m, n) = (a.nrows(), b.ncols());
    if a.ncols() == 0 || a.ncols() != b.nrows() {
        let mut out = Array2::<T>::zeros((m, n));
        gemm_into(a, b, out.view_mut(), false, T::one(), true);
        return out;
    }
    let mut out = uninit::<T>(m, n);
    // SAFETY: `out` is a standard-layout m×n array (fresh or pooled, not initialised); the view over it is used only as
    // gemm's destination with `read_dst = false` (alpha 0: gemm stores, never loads, every
    // destination element, k > 0 checked above), so every element is written before
    // `assume_init` and nothing reads the uninitialised memory.
    unsafe {
        let dst = ArrayViewMut2::from_shape_ptr((m, n), out.as_mut_ptr().cast::<T>());
        gemm_into(a, b, dst, false, T::one(), true);
        out.assume_init()
    }
}

/// `x · w + bias` (`bias` a `[1, n]` row): the bias is written first and the product added to
/// it, so there is no separate pass over the output.
pub fn linear_bias<T: Element>(
    x: ArrayView2<'_, T>,
    w: ArrayView2<'_, T>,
    bias: ArrayView2<'_, T>,
) -> Array2<T> {
    let (m, n) = (x.nrows(), w.ncols());
    let bias = standard(bias);
    let b = elems(&bias);
    let mut out = if b.len() == n {
        let mut v = pool::take::<T>(m * n).unwrap_or_default();
        v.clear();
        v.reserve(m * n);
        for _ in 0..m {
            v.extend_from_slice(b);
        }
        Array2::from_shape_vec((m, n), v).unwrap_or_else(|_| Array2::zeros((m, n)))
    } else {
        Array2::zeros((m, n))
    };
    gemm_into(x, w, out.view_mut(), true, T::one(), true);
    out
}

// ---------------------------------------------------------------------------------------------
// Element-wise and row-wise kernels.

/// Column sums, as a `[1, n]` matrix (a bias gradient): each block of `ROW_CHUNK` rows summed
/// in row order on the thread pool, the blocks' sums added in block order (what
/// [`layer_norm_backward_residual_in_place`] computes of its output, bit for bit).
pub fn col_sum<T: Element>(x: ArrayView2<'_, T>) -> Array2<T> {
    let x = x.as_standard_layout();
    let n = x.ncols();
    let mut out = Array2::<T>::zeros((1, n));
    if let (Some(xs), Some(o), true) = (x.as_slice(), out.as_slice_mut(), n > 0) {
        let partials: Vec<Vec<T>> = xs
            .par_chunks(n * ROW_CHUNK)
            .map(|block| {
                let mut p = vec![T::zero(); n];
                block.chunks_exact(n).for_each(|row| add_row(&mut p, row));
                p
            })
            .collect();
        partials.iter().for_each(|p| add_row(o, p));
    }
    out
}

/// `acc ← acc + row`, element by element (nothing when `acc` is empty).
#[inline(always)]
fn add_row<T: Element>(acc: &mut [T], row: &[T]) {
    acc.iter_mut().zip(row).for_each(|(a, &v)| *a += v);
}

/// `z ← (x + z) + bias` in place: the residual and the row-parallel bias after `g`, one pass.
pub fn residual_bias_in_place<T: Element>(
    z: &mut Array2<T>,
    x: ArrayView2<'_, T>,
    bias: ArrayView2<'_, T>,
) {
    make_standard(&mut *z);
    let x = x.as_standard_layout();
    let bias = standard(bias);
    let n = z.ncols().max(1);
    let (xs, b) = (x.as_slice().unwrap_or(&[]), elems(&bias));
    if b.len() != z.ncols() || xs.len() != z.len() {
        // Shapes from a validated plan always match; keep ndarray's broadcasting otherwise.
        *z += &x;
        *z += &bias;
        return;
    }
    let zs = elems_mut(z);
    dispatch!(residual_bias_rows, [xs, b], [zs], n);
}

wide_kernel! {
    /// [`residual_bias_in_place`] on the elements: rows of `n`, `ROW_CHUNK` rows a task.
    fn residual_bias_rows<F: Fast>(xs: &[F], b: &[F], z: &mut [F], n: usize) {
        z.par_chunks_mut(n * ROW_CHUNK)
            .zip(xs.par_chunks(n * ROW_CHUNK))
            .for_each(|(zc, xc)| {
                for (zr, xr) in zc.chunks_exact_mut(n).zip(xc.chunks_exact(n)) {
                    residual_row(zr, xr, b);
                }
            });
    }
}

/// `a ← a + b` in place (the residual gradient).
pub fn add_in_place<T: Element>(a: &mut Array2<T>, b: ArrayView2<'_, T>) {
    make_standard(&mut *a);
    let b = b.as_standard_layout();
    match b.as_slice() {
        Some(bs) if bs.len() == a.len() => elems_mut(a)
            .par_chunks_mut(ELEM_CHUNK)
            .zip(bs.par_chunks(ELEM_CHUNK))
            .for_each(|(ac, bc)| ac.iter_mut().zip(bc).for_each(|(x, &y)| *x += y)),
        _ => *a += &b,
    }
}

/// LayerNorm over the last axis, `y = (x − mean)/sqrt(var + eps) · γ + β` (biased variance), one
/// pass per row for the statistics and one for the outputs.
pub fn layer_norm<T: Element>(
    x: ArrayView2<'_, T>,
    gamma: ArrayView2<'_, T>,
    beta: ArrayView2<'_, T>,
) -> (Array2<T>, LnCache<T>) {
    if !is_f32_or_f64::<T>() {
        return crate::block::ops::layer_norm(x, gamma, beta);
    }
    let x = x.as_standard_layout();
    let (t, h) = x.dim();
    layer_norm_of(LnSrc::Rows(x.as_slice().unwrap_or(&[])), t, h, gamma, beta)
}

/// [`residual_bias_in_place`] and then [`layer_norm`] of its result, row block by row block
/// while the block is in cache: the same arithmetic, so the same values bit for bit, as the two
/// kernels one after the other (one read of `z` instead of two).
pub fn residual_bias_layer_norm<T: Element>(
    z: &mut Array2<T>,
    x: ArrayView2<'_, T>,
    bias: ArrayView2<'_, T>,
    gamma: ArrayView2<'_, T>,
    beta: ArrayView2<'_, T>,
) -> (Array2<T>, LnCache<T>) {
    make_standard(&mut *z);
    let (t, h) = z.dim();
    let (x, bias_row) = (x.as_standard_layout(), standard(bias));
    if !is_f32_or_f64::<T>() || x.dim() != (t, h) || bias_row.len() != h || !z.is_standard_layout()
    {
        residual_bias_in_place(z, x.view(), bias_row.view());
        return layer_norm(z.view(), gamma, beta);
    }
    let src = LnSrc::Residual {
        z: elems_mut(z),
        x: x.as_slice().unwrap_or(&[]),
        bias: elems(&bias_row),
    };
    layer_norm_of(src, t, h, gamma, beta)
}

/// The rows a LayerNorm reads: `Rows(x)` as they are, or `Residual` computes each row of
/// `z ← (x + z) + bias` in place first ([`residual_row`]) and normalises that.
enum LnSrc<'a, F> {
    Rows(&'a [F]),
    Residual {
        z: &'a mut [F],
        x: &'a [F],
        bias: &'a [F],
    },
}

impl<'a, T: 'static> LnSrc<'a, T> {
    /// The same rows as `U` when `T` is `U`.
    fn cast<U: 'static>(self) -> Option<LnSrc<'a, U>> {
        Some(match self {
            LnSrc::Rows(x) => LnSrc::Rows(cast(x)?),
            LnSrc::Residual { z, x, bias } => LnSrc::Residual {
                z: cast_mut(z)?,
                x: cast(x)?,
                bias: cast(bias)?,
            },
        })
    }

    fn len(&self) -> usize {
        match self {
            LnSrc::Rows(x) => x.len(),
            LnSrc::Residual { z, x, .. } => z.len().min(x.len()),
        }
    }

    /// Cut into blocks of `c` elements (whole rows).
    fn blocks(self, c: usize) -> Vec<LnSrc<'a, T>> {
        match self {
            LnSrc::Rows(x) => x.chunks(c).map(LnSrc::Rows).collect(),
            LnSrc::Residual { z, x, bias } => z
                .chunks_mut(c)
                .zip(x.chunks(c))
                .map(|(z, x)| LnSrc::Residual { z, x, bias })
                .collect(),
        }
    }
}

impl<F: Fast> LnSrc<'_, F> {
    /// Calls `f` on each row of `h` elements, in order (after its residual, if any).
    #[inline(always)]
    fn for_each_row(self, h: usize, mut f: impl FnMut(&[F])) {
        match self {
            LnSrc::Rows(x) => x.chunks_exact(h).for_each(f),
            LnSrc::Residual { z, x, bias } => {
                for (zr, xr) in z.chunks_exact_mut(h).zip(x.chunks_exact(h)) {
                    residual_row(zr, xr, bias);
                    f(zr);
                }
            }
        }
    }
}

/// `z ← (x + z) + bias` on one row.
#[inline(always)]
fn residual_row<T: Element>(z: &mut [T], x: &[T], bias: &[T]) {
    for ((o, &xv), &bv) in z.iter_mut().zip(x).zip(bias) {
        *o = (xv + *o) + bv;
    }
}

/// LayerNorm of `t` rows of `h` read from `src` (`T` is f32 or f64, checked by the callers).
fn layer_norm_of<T: Element>(
    src: LnSrc<'_, T>,
    t: usize,
    h: usize,
    gamma: ArrayView2<'_, T>,
    beta: ArrayView2<'_, T>,
) -> (Array2<T>, LnCache<T>) {
    let (gamma, beta) = (standard(gamma), standard(beta));
    let (g, b) = (elems(&gamma), elems(&beta));
    let mut rstd = Array1::<T>::zeros(t);
    if h == 0 || g.len() != h || b.len() != h || src.len() != t * h {
        // Shapes from a validated plan always match; this keeps the kernel total.
        return (
            Array2::zeros((t, h)),
            LnCache {
                xhat: Array2::zeros((t, h)),
                rstd,
            },
        );
    }
    let (mut y, mut xhat) = (uninit::<T>(t, h), uninit::<T>(t, h));
    let rs = rstd.as_slice_mut().unwrap_or(&mut []);
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        layer_norm_typed::<T, f32>(src, g, b, &mut y, &mut xhat, rs, h);
    } else {
        layer_norm_typed::<T, f64>(src, g, b, &mut y, &mut xhat, rs, h);
    }
    // SAFETY: the shapes were checked above, so `layer_norm_rows` wrote every element of `y` and
    // `xhat` (each block of rows of the source has its block of both, and every element of a
    // row is written); `T` is f32 or f64 (the callers check it), so one of the two branches ran.
    let (y, xhat) = unsafe { (y.assume_init(), xhat.assume_init()) };
    (y, LnCache { xhat, rstd })
}

/// [`layer_norm_rows`] on the arguments as `F` when `T` is `F` (else nothing).
fn layer_norm_typed<T: Element, F: Fast>(
    src: LnSrc<'_, T>,
    g: &[T],
    b: &[T],
    y: &mut Uninit<T>,
    xhat: &mut Uninit<T>,
    rstd: &mut [T],
    h: usize,
) {
    if let (Some(src), Some(g), Some(b), Some(ys), Some(xh), Some(rs)) = (
        src.cast::<F>(),
        cast::<T, F>(g),
        cast::<T, F>(b),
        uninit_elems::<T, F>(y),
        uninit_elems::<T, F>(xhat),
        cast_mut::<T, F>(rstd),
    ) {
        layer_norm_rows(src, g, b, ys, xh, rs, h);
    }
}

wide_kernel! {
    fn layer_norm_rows<F: Fast>(
        src: LnSrc<'_, F>,
        g: &[F],
        b: &[F],
        y: &mut [std::mem::MaybeUninit<F>],
        xhat: &mut [std::mem::MaybeUninit<F>],
        rstd: &mut [F],
        h: usize,
    ) {
        let hn = F::from_f64(h as f64);
        let eps = F::from_f64(LN_EPS);
        let c = h * ROW_CHUNK;
        src.blocks(c)
            .into_par_iter()
            .zip(y.par_chunks_mut(c))
            .zip(xhat.par_chunks_mut(c))
            .zip(rstd.par_chunks_mut(ROW_CHUNK))
            .for_each(|(((sc, yc), hc), rc)| {
                let mut outs = yc
                    .chunks_exact_mut(h)
                    .zip(hc.chunks_exact_mut(h))
                    .zip(rc.iter_mut());
                sc.for_each_row(h, |row| {
                    let Some(((yr, hr), r)) = outs.next() else {
                        return;
                    };
                    let mean = sum(row) / hn;
                    let var = sq_dev(row, mean) / hn;
                    let rs = F::one() / (var + eps).sqrt();
                    *r = rs;
                    // Two loops, not one writing both outputs: that one the compiler did not
                    // vectorise (measured 2x slower).
                    for (&v, xh) in row.iter().zip(hr.iter_mut()) {
                        xh.write((v - mean) * rs);
                    }
                    for (((o, xh), &gv), &bv) in yr.iter_mut().zip(hr.iter()).zip(g).zip(b) {
                        // SAFETY: the loop above wrote every element of this row of `xhat`.
                        let n = unsafe { xh.assume_init() };
                        o.write(n * gv + bv);
                    }
                });
            });
    }
}

/// LayerNorm backward plus the residual, in place: `dy` becomes `residual + dx` with
/// `dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ · x̂))`, `dx̂ = dy · γ`; returns `(dγ, dβ)` and,
/// when `with_col_sum`, the column sums of the result (the next op's bias gradient), equal bit
/// for bit to [`col_sum`] of it (the same row blocks, added in the same order) without reading
/// it again.
pub fn layer_norm_backward_residual_in_place<T: Element>(
    dy: &mut Array2<T>,
    cache: &LnCache<T>,
    gamma: ArrayView2<'_, T>,
    residual: ArrayView2<'_, T>,
    with_col_sum: bool,
) -> (Array2<T>, Array2<T>, Option<Array2<T>>) {
    make_standard(&mut *dy);
    let h = dy.ncols();
    let residual = residual.as_standard_layout();
    let gamma = standard(gamma);
    let mut dgamma = Array2::<T>::zeros((1, h));
    let mut dbeta = Array2::<T>::zeros((1, h));
    let mut dsum = Array2::<T>::zeros((1, if with_col_sum { h } else { 0 }));
    let res = residual.as_slice().unwrap_or(&[]);
    let (g, xh) = (elems(&gamma), elems(&cache.xhat));
    if let Some(rs) = cache.rstd.as_slice() {
        let (dys, dg, db, ds) = (
            elems_mut(dy),
            elems_mut(&mut dgamma),
            elems_mut(&mut dbeta),
            elems_mut(&mut dsum),
        );
        dispatch!(
            layer_norm_backward_rows,
            [xh, rs, g, res],
            [dys, dg, db, ds],
            h
        );
    }
    (dgamma, dbeta, with_col_sum.then_some(dsum))
}

/// [`layer_norm_backward_residual_in_place`] on a copy: `(residual + dx, dγ, dβ)`.
pub fn layer_norm_backward_residual<T: Element>(
    dy: ArrayView2<'_, T>,
    cache: &LnCache<T>,
    gamma: ArrayView2<'_, T>,
    residual: ArrayView2<'_, T>,
) -> (Array2<T>, Array2<T>, Array2<T>) {
    let mut dx = standard(dy);
    let (dg, db, _) = layer_norm_backward_residual_in_place(&mut dx, cache, gamma, residual, false);
    (dx, dg, db)
}

wide_kernel! {
    #[allow(clippy::too_many_arguments)]
    fn layer_norm_backward_rows<F: Fast>(
        xhat: &[F],
        rstd: &[F],
        g: &[F],
        res: &[F],
        dy: &mut [F],
        dgamma: &mut [F],
        dbeta: &mut [F],
        dsum: &mut [F],
        h: usize,
    ) {
        if h == 0 || g.len() != h || res.len() != dy.len() || xhat.len() != dy.len() {
            return;
        }
        let hn = F::from_f64(h as f64);
        let c = h * ROW_CHUNK;
        let with_sum = dsum.len() == h;
        // Each chunk of rows sums its own dγ, dβ (and the output's column sums); the chunks' sums are
        // added in chunk order.
        let partials: Vec<(Vec<F>, Vec<F>, Vec<F>)> = dy
            .par_chunks_mut(c)
            .zip(xhat.par_chunks(c))
            .zip(rstd.par_chunks(ROW_CHUNK))
            .zip(res.par_chunks(c))
            .map(|(((dyc, xc), rc), resc)| {
                {
                    let (mut dg, mut db) = (vec![F::zero(); h], vec![F::zero(); h]);
                    let mut ds = vec![F::zero(); if with_sum { h } else { 0 }];
                    let mut gx = vec![F::zero(); h];
                    for (((dyr, xr), &r), resr) in dyc
                        .chunks_exact_mut(h)
                        .zip(xc.chunks_exact(h))
                        .zip(rc)
                        .zip(resc.chunks_exact(h))
                    {
                        for ((((o, &d), &gv), dgv), (dbv, &xv)) in gx
                            .iter_mut()
                            .zip(dyr.iter())
                            .zip(g)
                            .zip(dg.iter_mut())
                            .zip(db.iter_mut().zip(xr))
                        {
                            *o = d * gv;
                            *dgv += d * xv;
                            *dbv += d;
                        }
                        let m1 = sum(&gx) / hn;
                        let m2 = dot(&gx, xr) / hn;
                        for (((o, &gv), &xv), &rv) in dyr.iter_mut().zip(&gx).zip(xr).zip(resr) {
                            *o = rv + r * (gv - m1 - xv * m2);
                        }
                        add_row(&mut ds, dyr);
                    }
                    (dg, db, ds)
                }
            })
            .collect();
        for (pg, pb, ps) in partials {
            add_row(dgamma, &pg);
            add_row(dbeta, &pb);
            add_row(dsum, &ps);
        }
    }
}

const GELU_C: f64 = 0.797_884_560_802_865_4; // sqrt(2/π)
const GELU_A: f64 = 0.044_715;

/// GeLU, tanh approximation: `½x(1 + tanh u)`, `u = √(2/π)(x + 0.044715x³)`, computed as
/// `x·σ(2u) = x / (1 + e^{−2u})` (the same function: `½(1 + tanh u) = σ(2u)`).
pub fn gelu<T: Element>(x: ArrayView2<'_, T>) -> Array2<T> {
    if !is_f32_or_f64::<T>() {
        return crate::block::ops::gelu(x);
    }
    let x = x.as_standard_layout();
    let (r, c) = x.dim();
    let Some(xs) = x.as_slice() else {
        return Array2::zeros((r, c));
    };
    let mut out = uninit::<T>(r, c);
    if let (Some(xs), Some(o)) = (cast::<T, f32>(xs), uninit_elems::<T, f32>(&mut out)) {
        gelu_elems(xs, o);
    } else if let (Some(xs), Some(o)) = (cast::<T, f64>(xs), uninit_elems::<T, f64>(&mut out)) {
        gelu_elems(xs, o);
    }
    // SAFETY: `out` has as many elements as `x` (same shape, both standard layout) and
    // `gelu_elems` writes each once; `T` is f32 or f64 (checked first), so one branch ran.
    unsafe { out.assume_init() }
}

wide_kernel! {
    fn gelu_elems<F: Fast>(x: &[F], out: &mut [std::mem::MaybeUninit<F>]) {
        let (c, a) = (F::from_f64(-2.0 * GELU_C), F::from_f64(GELU_A));
        x.par_chunks(ELEM_CHUNK)
            .zip(out.par_chunks_mut(ELEM_CHUNK))
            .for_each(|(xc, oc)| {
                for (o, &v) in oc.iter_mut().zip(xc) {
                    let e = (c * (v + a * v * v * v)).exp_fast();
                    o.write(v / (F::one() + e));
                }
            });
    }
}

/// GeLU backward in place: `dy ← dy · gelu'(x)`, `gelu'(x) = σ + 2xσ(1 − σ)·√(2/π)(1 +
/// 3·0.044715x²)` with `σ = σ(2u)` (the derivative of `x·σ(2u)`, equal to the tanh form's).
pub fn gelu_backward_in_place<T: Element>(x: ArrayView2<'_, T>, dy: &mut Array2<T>) {
    make_standard(&mut *dy);
    let x = x.as_standard_layout();
    let xs = x.as_slice().unwrap_or(&[]);
    let ds = elems_mut(dy);
    if xs.len() == ds.len() {
        dispatch!(gelu_backward_elems, [xs], [ds]);
    }
}

/// [`gelu_backward_in_place`] on a copy.
pub fn gelu_backward<T: Element>(x: ArrayView2<'_, T>, dy: ArrayView2<'_, T>) -> Array2<T> {
    let mut out = standard(dy);
    gelu_backward_in_place(x, &mut out);
    out
}

wide_kernel! {
    fn gelu_backward_elems<F: Fast>(x: &[F], dy: &mut [F]) {
        let (c, a) = (F::from_f64(GELU_C), F::from_f64(GELU_A));
        let (two, three) = (F::from_f64(2.0), F::from_f64(3.0));
        x.par_chunks(ELEM_CHUNK)
            .zip(dy.par_chunks_mut(ELEM_CHUNK))
            .for_each(|(xc, dc)| {
                for (g, &v) in dc.iter_mut().zip(xc) {
                    let e = (-two * c * (v + a * v * v * v)).exp_fast();
                    let sg = F::one() / (F::one() + e);
                    let d = sg + two * v * sg * (F::one() - sg) * c * (F::one() + three * a * v * v);
                    *g *= d;
                }
            });
    }
}

// ---------------------------------------------------------------------------------------------
// Causal attention.

/// Softmax of a score row over its first `keep` columns (the causal ones), the columns
/// `keep..` of the row set to 0.
fn softmax_row<T: Element>(row: &mut [T], keep: usize) {
    dispatch!(softmax_row_f, [], [row], keep);
}

wide_kernel! {
    fn softmax_row_f<F: Fast>(row: &mut [F], keep: usize) {
        let (live, masked) = row.split_at_mut(keep.min(row.len()));
        masked.iter_mut().for_each(|v| *v = F::zero());
        let max = max_of(live);
        for v in live.iter_mut() {
            *v = (*v - max).exp_fast();
        }
        let inv = F::one() / sum(live);
        live.iter_mut().for_each(|v| *v *= inv);
    }
}

/// `dS = P ⊙ (dP − rowsum(dP ⊙ P)) · scale` over a row's first `keep` columns; the rest of the
/// row is set to 0 (there `P` is 0, so `dS` is too).
fn softmax_backward_row<T: Element>(dp: &mut [T], p: &[T], keep: usize, scale: f64) {
    dispatch!(softmax_backward_row_f, [p], [dp], keep, scale);
}

wide_kernel! {
    fn softmax_backward_row_f<F: Fast>(p: &[F], dp: &mut [F], keep: usize, scale: f64) {
        let scale = F::from_f64(scale);
        let (live, masked) = dp.split_at_mut(keep.min(dp.len()));
        masked.iter_mut().for_each(|v| *v = F::zero());
        let p = &p[..live.len()];
        let d = dot(live, p);
        for (x, &pv) in live.iter_mut().zip(p) {
            *x = pv * (*x - d) * scale;
        }
    }
}

/// Causal multi-head (grouped-query) attention on packed `qkv` `[b·s, (heads + 2·kv)·d]`:
/// the context `[b·s, heads·d]` and the softmax probabilities of every (batch, head), `[s, s]`,
/// which the backward reads. Block by block of query rows against the keys up to the block's
/// last row, the scores written straight into the head's probability matrix (scaled by `1/√d`
/// inside the product), so no score is computed above the diagonal blocks and nothing else is
/// allocated.
pub fn attention<T: Element>(
    qkv: ArrayView2<'_, T>,
    batch: usize,
    seq: usize,
    heads: usize,
    kv_heads: usize,
) -> (Array2<T>, AttnCache<T>) {
    attention_by_head(
        qkv,
        batch,
        seq,
        heads,
        kv_heads,
        |[q, k, v], scale, mut o| {
            let mut p_mem = uninit::<T>(seq, seq);
            for (r0, r1) in row_blocks(seq) {
                // Above the block's keys: zero (a probability of 0, the causal mask).
                for mut row in p_mem.slice_mut(s![r0..r1, r1..]).rows_mut() {
                    if let Some(r) = row.as_slice_mut() {
                        r.fill(std::mem::MaybeUninit::new(T::zero()));
                    }
                }
            }
            {
                // SAFETY: `p_mem` is a standard-layout seq×seq array, and this view over it ends
                // with the block, before `assume_init` below. Every element is written before
                // anything reads it: the columns `r1..` of each row block above, the columns
                // `..r1` by the score product (`read_dst = false` and k = d > 0: gemm stores
                // every destination element without loading it), after which the softmax and the
                // context product read only those scores.
                let mut p = unsafe {
                    ArrayViewMut2::from_shape_ptr((seq, seq), p_mem.as_mut_ptr().cast::<T>())
                };
                for (r0, r1) in row_blocks(seq) {
                    let mut sc = p.slice_mut(s![r0..r1, ..r1]);
                    gemm_into(
                        q.slice(s![r0..r1, ..]),
                        k.slice(s![..r1, ..]).t(),
                        sc.view_mut(),
                        false,
                        scale,
                        false,
                    );
                    for (i, mut row) in sc.rows_mut().into_iter().enumerate() {
                        if let Some(r) = row.as_slice_mut() {
                            softmax_row(r, r0 + i + 1);
                        }
                    }
                    gemm_into(
                        sc.view(),
                        v.slice(s![..r1, ..]),
                        o.slice_mut(s![r0..r1, ..]),
                        false,
                        T::one(),
                        false,
                    );
                }
            }
            // SAFETY: every element of `p_mem` was written (see above).
            unsafe { p_mem.assume_init() }
        },
    )
}

/// Attention backward, from `dctx` `[b·s, heads·d]` to `dqkv` (the shape of `qkv`), one task
/// per (batch, KV head) so that a group's query heads add into their KV head's gradient in head
/// order without sharing a buffer between tasks. With `P` the saved probabilities and
/// `S = QKᵀ/√d`: `dV = Pᵀ·dO`, `dP = dO·Vᵀ`, `dS = P ⊙ (dP − rowsum(dP ⊙ P))`, `dQ = dS·K/√d`,
/// `dK = dSᵀ·Q/√d`, block by block of query rows as the forward.
pub fn attention_backward<T: Element>(
    qkv: ArrayView2<'_, T>,
    cache: &AttnCache<T>,
    dctx: ArrayView2<'_, T>,
    batch: usize,
    seq: usize,
    heads: usize,
    kv_heads: usize,
) -> Array2<T> {
    let l = QkvLayout::new(qkv.ncols(), heads, kv_heads);
    let d = l.d;
    let scale_f = 1.0 / (d as f64).sqrt();
    let group = l.group();
    type Grads<T> = (Vec<Array2<T>>, Array2<T>, Array2<T>);
    let per_group: Vec<Grads<T>> = (0..batch * l.kv_heads)
        .into_par_iter()
        .map(|bg| {
            let (b, g) = (bg / l.kv_heads, bg % l.kv_heads);
            let rows = b * seq..(b + 1) * seq;
            let k = qkv.slice(s![rows.clone(), l.k_of_group(g)]);
            let v = qkv.slice(s![rows.clone(), l.v_of_group(g)]);
            let mut dk = Array2::<T>::zeros((seq, d));
            let mut dv = Array2::<T>::zeros((seq, d));
            let mut ds = Array2::<T>::zeros((ATTN_BLOCK_ROWS.min(seq), seq));
            let mut dqs = Vec::with_capacity(group);
            for j in g * group..((g + 1) * group).min(heads) {
                let p = &cache.probs[b * heads + j];
                let q = qkv.slice(s![rows.clone(), l.q(j)]);
                let dout = dctx.slice(s![rows.clone(), j * d..(j + 1) * d]);
                let mut dq = Array2::<T>::zeros((seq, d));
                for (r0, r1) in row_blocks(seq) {
                    let pb = p.slice(s![r0..r1, ..r1]);
                    let db = dout.slice(s![r0..r1, ..]);
                    gemm_into(
                        pb.t(),
                        db,
                        dv.slice_mut(s![..r1, ..]),
                        true,
                        T::one(),
                        false,
                    );
                    let mut dsb = ds.slice_mut(s![..r1 - r0, ..r1]);
                    gemm_into(
                        db,
                        v.slice(s![..r1, ..]).t(),
                        dsb.view_mut(),
                        false,
                        T::one(),
                        false,
                    );
                    for (i, (mut dr, pr)) in dsb.rows_mut().into_iter().zip(pb.rows()).enumerate() {
                        if let (Some(dr), Some(pr)) = (dr.as_slice_mut(), pr.as_slice()) {
                            softmax_backward_row(dr, pr, r0 + i + 1, scale_f);
                        }
                    }
                    gemm_into(
                        dsb.view(),
                        k.slice(s![..r1, ..]),
                        dq.slice_mut(s![r0..r1, ..]),
                        false,
                        T::one(),
                        false,
                    );
                    gemm_into(
                        dsb.t(),
                        q.slice(s![r0..r1, ..]),
                        dk.slice_mut(s![..r1, ..]),
                        true,
                        T::one(),
                        false,
                    );
                }
                dqs.push(dq);
            }
            (dqs, dk, dv)
        })
        .collect();
    let mut dqkv = Array2::<T>::zeros(qkv.dim());
    for (bg, (dqs, dk, dv)) in per_group.into_iter().enumerate() {
        let (b, g) = (bg / l.kv_heads, bg % l.kv_heads);
        let rows = b * seq..(b + 1) * seq;
        for (i, dq) in dqs.iter().enumerate() {
            dqkv.slice_mut(s![rows.clone(), l.q(g * group + i)])
                .assign(dq);
        }
        dqkv.slice_mut(s![rows.clone(), l.k_of_group(g)])
            .assign(&dk);
        dqkv.slice_mut(s![rows, l.v_of_group(g)]).assign(&dv);
    }
    dqkv
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::ops;
    use rand::{Rng, SeedableRng};

    fn rand_mat<T: Element>(r: usize, c: usize, seed: u64, amp: f64) -> Array2<T> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        Array2::from_shape_simple_fn((r, c), || T::from_f64(rng.random_range(-amp..amp)))
    }

    /// Largest |a − b| relative to the largest |b|.
    fn rel<T: Element>(a: &Array2<T>, b: &Array2<T>) -> f64 {
        assert_eq!(a.dim(), b.dim());
        let scale = b
            .iter()
            .fold(0.0f64, |m, v| m.max(Element::to_f64(*v).abs()));
        let err = a.iter().zip(b).fold(0.0f64, |m, (x, y)| {
            m.max((Element::to_f64(*x) - Element::to_f64(*y)).abs())
        });
        err / scale.max(f64::MIN_POSITIVE)
    }

    /// The fused passes give what the kernels they fuse give one after the other, bit for bit
    /// (the walk fuses them only when nothing rounds in between): the residual and bias then
    /// LayerNorm, and the LayerNorm backward's column sums of its output against `col_sum`. Odd
    /// sizes (a last block of 5 rows) and f32, whose sums round at every step.
    #[test]
    fn fused_passes_equal_their_parts_bit_for_bit() {
        fn check<T: Element>() {
            let (t, h) = (3 * ROW_CHUNK + 5, 40);
            let (x, z) = (rand_mat::<T>(t, h, 21, 3.0), rand_mat::<T>(t, h, 22, 3.0));
            let (bias, g, b) = (
                rand_mat::<T>(1, h, 23, 1.0),
                rand_mat::<T>(1, h, 24, 1.0),
                rand_mat::<T>(1, h, 25, 1.0),
            );
            let mut parts = z.clone();
            residual_bias_in_place(&mut parts, x.view(), bias.view());
            let (y0, c0) = layer_norm(parts.view(), g.view(), b.view());
            let mut fused = z.clone();
            let (y, c) =
                residual_bias_layer_norm(&mut fused, x.view(), bias.view(), g.view(), b.view());
            assert_eq!((&fused, &y, &c), (&parts, &y0, &c0));

            let dy = rand_mat::<T>(t, h, 26, 1.0);
            let mut dx = dy.clone();
            let (dg, db, ds) =
                layer_norm_backward_residual_in_place(&mut dx, &c, g.view(), z.view(), true);
            let mut dx0 = dy.clone();
            let (dg0, db0, none) =
                layer_norm_backward_residual_in_place(&mut dx0, &c, g.view(), z.view(), false);
            assert_eq!((&dx, &dg, &db, none), (&dx0, &dg0, &db0, None));
            assert_eq!(ds, Some(col_sum(dx.view())));
        }
        check::<f32>();
        check::<f64>();
    }

    /// A recycled buffer's old values never show through, and the pool hands recycled memory
    /// back: LayerNorm, GeLU, a product, a biased product and attention computed into buffers
    /// filled with NaN give what they give into fresh memory, bit for bit.
    #[test]
    fn recycled_buffers_change_nothing() {
        let (t, h, s) = (41, 52, 70);
        let x = rand_mat::<f64>(t, h, 31, 2.0);
        let (g, b) = (
            rand_mat::<f64>(1, h, 32, 1.0),
            rand_mat::<f64>(1, h, 33, 1.0),
        );
        let w = rand_mat::<f64>(h, h, 34, 1.0);
        let qkv = rand_mat::<f64>(s, 3 * 8, 35, 2.0);
        let run = || {
            (
                layer_norm(x.view(), g.view(), b.view()),
                gelu(x.view()),
                matmul(x.view(), w.view()),
                linear_bias(x.view(), w.view(), b.view()),
                attention(qkv.view(), 1, s, 1, 1),
            )
        };
        let fresh = run();
        let nan = |r, c| Array2::<f64>::from_elem((r, c), f64::NAN);
        recycle((0..6).map(|_| nan(t, h)).chain([nan(s, s), nan(s, 8)]));
        assert_eq!(run(), fresh);
        recycle([nan(3, 1009)]);
        assert_eq!(pool::take::<f64>(3 * 1009).map(|v| v.len()), Some(3 * 1009));
        assert_eq!(pool::take::<f32>(3 * 1009), None, "a buffer keeps its type");
    }

    /// The AVX-512 copies of the kernels ([`wide_kernel`]) give the baseline copies' values bit
    /// for bit: every kernel, in f32 and f64, on row lengths with a tail (771 is not a multiple of
    /// the 16 lanes) and an attention with a partial last block. On a CPU without AVX-512 both
    /// runs take the baseline copy and the test checks nothing more than determinism.
    #[test]
    fn wide_kernels_give_the_baseline_bits() {
        fn all<T: Element>() -> Vec<Array2<T>> {
            let (t, h, s, heads) = (37, 771, 70, 3);
            let x = rand_mat::<T>(t, h, 41, 3.0);
            let y = rand_mat::<T>(t, h, 42, 3.0);
            let (g, b) = (rand_mat::<T>(1, h, 43, 1.5), rand_mat::<T>(1, h, 44, 1.0));
            let (ln, cache) = layer_norm(x.view(), g.view(), b.view());
            let mut z = y.clone();
            let (ln_res, cache_res) =
                residual_bias_layer_norm(&mut z, x.view(), b.view(), g.view(), b.view());
            let mut z2 = y.clone();
            residual_bias_in_place(&mut z2, x.view(), b.view());
            let mut dy = y.clone();
            let (dg, db, ds) =
                layer_norm_backward_residual_in_place(&mut dy, &cache, g.view(), x.view(), true);
            let mut gb = y.clone();
            gelu_backward_in_place(x.view(), &mut gb);
            let qkv = rand_mat::<T>(s, 3 * heads * 16, 45, 2.0);
            let (ctx, attn) = attention(qkv.view(), 1, s, heads, heads);
            let dctx = rand_mat::<T>(s, heads * 16, 46, 1.0);
            let dqkv = attention_backward(qkv.view(), &attn, dctx.view(), 1, s, heads, heads);
            let mut out = vec![ln, cache.xhat, ln_res, cache_res.xhat, z, z2, dy, dg, db];
            out.extend(ds);
            out.extend([gelu(x.view()), gb, ctx, dqkv]);
            out.extend(attn.probs);
            out.push(Array2::from_shape_vec((1, t), cache.rstd.to_vec()).expect("t rstd"));
            out
        }
        #[cfg(target_arch = "x86_64")]
        assert!(
            plain::run(|| !wide_registers()),
            "the pool runs the baseline copies"
        );
        assert_eq!(plain::run(all::<f32>), all::<f32>());
        assert_eq!(plain::run(all::<f64>), all::<f64>());
    }

    #[test]
    fn exp_fast_is_within_two_ulps() {
        for i in -87_000..=88_000 {
            let x = i as f64 / 1000.0;
            let (want, got) = (x.exp(), x.exp_fast());
            assert!((got - want).abs() <= 2.0 * f64::EPSILON * want, "f64 {x}");
            let xf = x as f32;
            let (want, got) = ((xf as f64).exp(), xf.exp_fast() as f64);
            // Normal f32 results only (below 2⁻¹²⁶ the spacing is fixed, not relative).
            if want > f32::MIN_POSITIVE as f64 {
                assert!(
                    (got - want).abs() <= 2.0 * f32::EPSILON as f64 * want,
                    "f32 {xf}"
                );
            }
        }
        assert_eq!(1e6f64.exp_fast(), (709.0f64).exp());
        assert!((-1e6f32).exp_fast() < 1e-37);
    }

    /// Every kernel against the plain one in `ops` on seeded data, f64 and f32. Bounds: f64 to
    /// 1e-13 and f32 to 1e-5 relative — rounding of reordered sums of at most 512 terms (√512·ε
    /// ≈ 3e-15 and 3e-6) with a margin; a wrong index or formula is off by O(1).
    #[test]
    fn kernels_match_the_plain_kernels() {
        fn check<T: Element>(tol: f64) {
            let (t, h) = (37, 48);
            let x = rand_mat::<T>(t, h, 1, 2.0);
            let dy = rand_mat::<T>(t, h, 2, 1.0);
            let res = rand_mat::<T>(t, h, 3, 1.0);
            let g = rand_mat::<T>(1, h, 4, 1.0);
            let b = rand_mat::<T>(1, h, 5, 1.0);
            let (y, c) = layer_norm(x.view(), g.view(), b.view());
            let (y0, c0) = ops::layer_norm(x.view(), g.view(), b.view());
            assert!(rel(&y, &y0) < tol && rel(&c.xhat, &c0.xhat) < tol);
            let (dx, dg, db) = layer_norm_backward_residual(dy.view(), &c, g.view(), res.view());
            let (dx0, dg0, db0) = ops::layer_norm_backward(dy.view(), &c0, g.view());
            assert!(rel(&dx, &(&dx0 + &res)) < tol, "ln dx");
            assert!(rel(&dg, &dg0) < tol && rel(&db, &db0) < tol, "ln dγ dβ");

            let a = rand_mat::<T>(t, 3 * h, 6, 6.0);
            let da = rand_mat::<T>(t, 3 * h, 7, 1.0);
            assert!(rel(&gelu(a.view()), &ops::gelu(a.view())) < tol, "gelu");
            assert!(
                rel(
                    &gelu_backward(a.view(), da.view()),
                    &ops::gelu_backward(a.view(), da.view())
                ) < tol,
                "gelu bwd"
            );

            let w = rand_mat::<T>(h, 20, 8, 1.0);
            let bias = rand_mat::<T>(1, 20, 9, 1.0);
            let mut want = ops::matmul(x.view(), w.view());
            ops::add_row(&mut want, bias.view());
            assert!(rel(&linear_bias(x.view(), w.view(), bias.view()), &want) < tol);
            assert!(rel(&col_sum(x.view()), &ops::col_sum(x.view())) < tol);
            let mut z = dy.clone();
            residual_bias_in_place(&mut z, x.view(), b.view());
            let mut want = &x + &dy;
            want += &b;
            assert!(rel(&z, &want) < tol);

            // Attention: 2 sequences of 150 tokens (three row blocks, the last one short), MHA
            // with 3 heads of 8, and GQA with 4 query heads on 2 KV heads.
            for (heads, kv) in [(3, 3), (4, 2)] {
                let (bt, s, d) = (2, 150, 8);
                let qkv = rand_mat::<T>(bt * s, (heads + 2 * kv) * d, 10, 2.0);
                let dctx = rand_mat::<T>(bt * s, heads * d, 11, 1.0);
                let (ctx, cache) = attention(qkv.view(), bt, s, heads, kv);
                let (ctx0, cache0) = ops::attention(qkv.view(), bt, s, heads, kv, ops::dot);
                assert!(rel(&ctx, &ctx0) < tol, "attention {heads}/{kv}");
                for (p, p0) in cache.probs.iter().zip(&cache0.probs) {
                    assert!(rel(p, p0) < tol, "probs");
                }
                let dq = attention_backward(qkv.view(), &cache, dctx.view(), bt, s, heads, kv);
                let dq0 = ops::attention_backward(
                    qkv.view(),
                    &cache0,
                    dctx.view(),
                    bt,
                    s,
                    heads,
                    kv,
                    ops::dot,
                );
                assert!(rel(&dq, &dq0) < tol, "attention bwd {heads}/{kv}");
            }
        }
        check::<f64>(1e-13);
        check::<f32>(1e-5);
    }
}
